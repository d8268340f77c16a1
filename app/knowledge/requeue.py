"""When the person keeps their text over a rebuild's result, the rebuild runs again on top.

"Keep mine" in the editor saves the person's text as the newest version, over versions a
rebuild wrote while they were editing.  Those versions stay in the history, and what the
chats taught is learned again from the person's text: each such chat's watermark goes back
to where it was before that rebuild, and the scheduler runs it.

The watermark a rebuild started from is not stored; it is taken as the chat's last message
stored before the chat's previous saved rebuild result (or the chat's start).  That may
re-read an exchange or two more than needed, which costs a little and adds nothing twice:
an add that duplicates an entry is dropped by the validator.
"""

from __future__ import annotations

from app.db import Database


def overwritten(db: Database, owner: str, after: int, upto: int) -> dict[str, int]:
    """The chats whose rebuild results are versions ``after < v <= upto`` of *owner*'s
    document, each with the watermark to learn them again from."""
    rows = db.query(
        "SELECT chat_id, min(saved_at) FROM knowledge_version WHERE owner = ? AND version > ?"
        " AND version <= ? AND source = 'rebuild' AND chat_id IS NOT NULL GROUP BY chat_id",
        (owner, after, upto))
    marks: dict[str, int] = {}
    for chat_id, first in rows:
        before = db.query(
            "SELECT max(saved_at) FROM knowledge_version WHERE chat_id = ? AND source ="
            " 'rebuild' AND saved_at < ?", (chat_id, first))
        since = before[0][0] if before and before[0][0] else None
        if since is None:
            marks[chat_id] = 0
            continue
        last = db.query("SELECT max(id) FROM message WHERE chat_id = ? AND created_at <= ?",
                        (chat_id, since))
        marks[chat_id] = int(last[0][0] or 0) if last else 0
    return marks


def rewind(db: Database, marks: dict[str, int]) -> None:
    """Move each chat's watermark back to its mark (never forward)."""
    if not marks:
        return
    with db.write() as conn:
        for chat_id, mark in marks.items():
            conn.execute("UPDATE chat SET knowledge_watermark = min(knowledge_watermark, ?)"
                         " WHERE id = ?", (mark, chat_id))
