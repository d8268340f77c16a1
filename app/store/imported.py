"""History brought from Claude.ai and ChatGPT, as stored (``app.history`` reads the exports and
calls this): chats with their trees of messages written a batch per transaction, and the
source ids an import remembers so that the same export twice adds nothing and a newer one
adds only what is new (the tables of the migration that made them, ``app/base/db.py``).

Imported messages are marked learned (the chat's watermark is its newest imported message):
a rebuild never learns from them unless the person asks.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.base.db import Database, utc_now
from app.base.ids import new_id
from app.store import suggestions as waiting
from app.store.blocks import search_text
from app.store.suggestions import Proposed

if TYPE_CHECKING:
    from app.store.registry.registry import Registry


@dataclass(frozen=True, slots=True)
class NewMessage:
    source_id: str
    parent: str | None  # a source id of the same chat (earlier in the list, or stored before)
    role: str
    content: list[dict[str, Any]]
    created_at: str
    model: str | None


@dataclass(frozen=True, slots=True)
class NewChat:
    source: str
    source_id: str
    title: str
    created_at: str
    updated_at: str
    folder: str | None  # the workspace's folder (None: Ungrouped)
    workspace_id: str | None
    messages: Sequence[NewMessage]  # parents first
    leaf: str | None


@dataclass(frozen=True, slots=True)
class Stored:
    """What storing one chat did: *chat_id*, whether it is new, how many messages were added
    (0: the chat was imported before and has nothing new)."""

    source_id: str
    chat_id: str
    new: bool
    added: int


def known_chats(db: Database, source: str) -> dict[str, str]:
    """The chats of *source* imported before (and still there): source id -> chat id."""
    return {r[0]: r[1] for r in db.query(
        "SELECT i.source_id, i.chat_id FROM imported_chat AS i JOIN chat AS c"
        " ON c.id = i.chat_id WHERE i.source = ?", (source,))}


def known_projects(db: Database, source: str) -> dict[str, str]:
    """The projects of *source* imported before: source id -> workspace id (the workspace
    may have been removed since: the caller checks)."""
    return {r[0]: r[1] for r in db.query(
        "SELECT source_id, workspace_id FROM imported_project WHERE source = ?", (source,))}


def message_sources(db: Database, chat_id: str) -> set[str]:
    """The source ids of the messages chat *chat_id* was given by imports."""
    return {r[0] for r in db.query(
        "SELECT source_id FROM imported_message WHERE chat_id = ?", (chat_id,))}


def remember_project(db: Database, source: str, source_id: str, workspace_id: str) -> None:
    with db.write() as conn:
        conn.execute("INSERT OR REPLACE INTO imported_project (source, source_id, workspace_id)"
                     " VALUES (?, ?, ?)", (source, source_id, workspace_id))


def seen_items(db: Database, source: str, kind: str) -> set[str]:
    return {r[0] for r in db.query(
        "SELECT key FROM imported_item WHERE source = ? AND kind = ?", (source, kind))}


def remember_item(db: Database, source: str, kind: str, key: str) -> None:
    with db.write() as conn:
        conn.execute("INSERT OR IGNORE INTO imported_item (source, kind, key) VALUES (?, ?, ?)",
                     (source, kind, key))


def offer(db: Database, source: str, proposals: Sequence[tuple[str, Proposed]]) -> int:
    """Store *proposals* as suggestions the person accepts or dismisses, each (its key,
    the proposal) offered once ever: a later import offers nothing already offered, even
    when it was dismissed.  How many were new."""
    added = 0
    with db.write() as conn:
        for key, proposal in proposals:
            if conn.execute("INSERT OR IGNORE INTO imported_item (source, kind, key)"
                            " VALUES (?, 'suggestion', ?)", (source, key)).rowcount:
                added += waiting.record(conn, [proposal], chat_id=None, now=utc_now())
    return added


def store_chats(registry: Registry, chats: Sequence[NewChat],
                pending: Sequence[int] = ()) -> list[Stored]:
    """Store a batch of chats in one transaction: each new chat with its messages (every
    branch, its shown leaf), or the messages a chat imported before does not hold yet; the
    in-progress markers *pending* of the blobs its attachments wrote are cleared in the same
    transaction (a crash before it: start-up drops the blobs no record uses).  The registry
    reloads once after (the sidebar sees one ``Reset``)."""
    done: list[Stored] = []
    with registry.writer.changing():
        with registry.writer.writing() as conn:
            for chat in chats:
                done.append(_store(conn, chat))
            for marker in pending:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (marker,))
        if any(d.added or d.new for d in done):
            registry.writer.reload()
    return done


def _store(conn: sqlite3.Connection, chat: NewChat) -> Stored:
    row = conn.execute("SELECT i.chat_id FROM imported_chat AS i JOIN chat AS c"
                       " ON c.id = i.chat_id WHERE i.source = ? AND i.source_id = ?",
                       (chat.source, chat.source_id)).fetchone()
    if row is None:
        chat_id = new_id("ch")
        conn.execute("DELETE FROM imported_chat WHERE source = ? AND source_id = ?",
                     (chat.source, chat.source_id))  # (its chat was removed since)
        conn.execute("INSERT INTO chat (id, title, folder, created_at, updated_at)"
                     " VALUES (?, ?, ?, ?, ?)",
                     (chat_id, chat.title, chat.folder, chat.created_at, chat.updated_at))
        if chat.workspace_id is not None:
            conn.execute(
                "INSERT INTO membership (workspace_id, chat_id, position) SELECT ?, ?,"
                " coalesce(max(position), 0) + 1 FROM membership WHERE workspace_id = ?",
                (chat.workspace_id, chat_id, chat.workspace_id))
        conn.execute("INSERT INTO imported_chat (source, source_id, chat_id, updated)"
                     " VALUES (?, ?, ?, ?)",
                     (chat.source, chat.source_id, chat_id, chat.updated_at))
        known: dict[str, int] = {}
        new = True
        leaf_was_imported = caught_up = True
    else:
        chat_id = row[0]
        known = {r[0]: r[1] for r in conn.execute(
            "SELECT source_id, message_id FROM imported_message WHERE chat_id = ?", (chat_id,))}
        leaf, mark = conn.execute("SELECT leaf_id, knowledge_watermark FROM chat WHERE id = ?",
                                  (chat_id,)).fetchone()
        leaf_was_imported = leaf is None or leaf in set(known.values())
        caught_up = leaf is None or mark >= leaf  # nothing the person said waits
        new = False
    added: list[int] = []
    insert = ("INSERT INTO message (chat_id, role, content, status, model, created_at,"
              " search_text, parent_id) VALUES (?, ?, ?, 'complete', ?, ?, ?, ?)")
    remember = "INSERT INTO imported_message (chat_id, source_id, message_id) VALUES (?, ?, ?)"
    for m in chat.messages:
        if m.source_id in known:
            continue
        parent = known.get(m.parent) if m.parent is not None else None
        message_id = conn.execute(insert, (
            chat_id, m.role, json.dumps(m.content, ensure_ascii=False), m.model, m.created_at,
            search_text(m.content), parent)).lastrowid
        assert message_id is not None
        known[m.source_id] = message_id
        added.append(message_id)
        conn.execute(remember, (chat_id, m.source_id, message_id))
    if added:
        newest = max(added)
        if leaf_was_imported and chat.leaf is not None and chat.leaf in known:
            conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?", (known[chat.leaf], chat_id))
        # Not learned from: the watermark covers what was imported (a chat the person went on
        # with here keeps its own watermark, so what they said is still learned).
        if caught_up:
            conn.execute("UPDATE chat SET knowledge_watermark = ? WHERE id = ?",
                         (newest, chat_id))
        conn.execute("UPDATE imported_chat SET updated = ? WHERE chat_id = ?",
                     (chat.updated_at, chat_id))
        if not new:
            conn.execute("UPDATE chat SET updated_at = max(updated_at, ?) WHERE id = ?",
                         (chat.updated_at, chat_id))
    return Stored(chat.source_id, chat_id, new, len(added))


def unlearned_chats(db: Database, workspace_id: str) -> list[str]:
    """The imported chats of *workspace_id* not learned from yet: their watermark covers
    their imported messages and nothing after them was learned (oldest chat first)."""
    return [r[0] for r in db.query(
        "SELECT c.id FROM chat AS c JOIN membership AS m ON m.chat_id = c.id"
        " WHERE m.workspace_id = ? AND c.archived_at IS NULL"
        " AND EXISTS (SELECT 1 FROM imported_chat AS i WHERE i.chat_id = c.id)"
        " AND c.knowledge_watermark >= (SELECT max(message_id) FROM imported_message AS x"
        " WHERE x.chat_id = c.id)"
        " AND NOT EXISTS (SELECT 1 FROM imported_item AS l WHERE l.source = 'cairn'"
        " AND l.kind = 'learned' AND l.key = c.id)"
        " ORDER BY c.created_at, c.id", (workspace_id,))]


def unmark(db: Database, chat_id: str) -> int:
    """Let the rebuild learn chat *chat_id*'s imported messages (the person asked): its
    watermark goes back to before its first message; the old one is returned, to put back
    with :func:`mark` when the person stops before it was learned."""
    with db.write() as conn:
        row = conn.execute("SELECT knowledge_watermark FROM chat WHERE id = ?",
                           (chat_id,)).fetchone()
        conn.execute("UPDATE chat SET knowledge_watermark = 0 WHERE id = ?", (chat_id,))
    return int(row[0]) if row else 0


def mark(db: Database, chat_id: str, watermark: int, *, learned: bool) -> None:
    """After learning (*learned*: remembered, so it is not offered again), or after a stop
    (the watermark put back where it was, unless a rebuild moved it further)."""
    with db.write() as conn:
        conn.execute("UPDATE chat SET knowledge_watermark = max(knowledge_watermark, ?)"
                     " WHERE id = ?", (watermark, chat_id))
        if learned:
            conn.execute("INSERT OR IGNORE INTO imported_item (source, kind, key)"
                         " VALUES ('cairn', 'learned', ?)", (chat_id,))
