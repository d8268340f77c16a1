"""Which messages the chat shows (issue 38): find in the chat searches the shown path only.

Search indexes every branch of a chat (a search hit opens the chat on its branch); find in
the chat steps through what the conversation shows, so its matches are cut to the messages
on the shown path: one walk up ``parent_id`` from the chat's leaf by primary key (ids only),
stopping below the oldest match, never a read of the tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.base.db import Database


def on_shown_path(db: Database, chat_id: str, ids: Iterable[int]) -> set[int]:
    """Those of *ids* that are messages on *chat_id*'s shown path."""
    wanted = set(ids)
    if not wanted:
        return set()
    rows = db.query(
        "WITH RECURSIVE up(id) AS (SELECT leaf_id FROM chat WHERE id = ?"
        " AND leaf_id IS NOT NULL UNION ALL SELECT m.parent_id FROM message AS m"
        " JOIN up ON m.id = up.id WHERE m.parent_id IS NOT NULL AND m.parent_id >= ?)"
        " SELECT id FROM up", (chat_id, min(wanted)))
    return wanted & {int(r[0]) for r in rows}
