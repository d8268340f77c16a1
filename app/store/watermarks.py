"""Each chat's knowledge watermark: the last message a successful rebuild covered.

What waits to be learned is what a chat said after its watermark.  A rebuild moves the mark
forward when it saved (or had nothing to learn); nothing else moves it forward.

When the person keeps their text over a rebuild's result ("Keep mine" in the editor), the
rebuild runs again on top: the person's text is saved as the newest version, over versions a
rebuild wrote while they were editing.  Those versions stay in the history, and what the
chats taught is learned again from the person's text: each such chat's watermark goes back
to where it was before that rebuild, and the scheduler runs it.

Each version a rebuild saves records the watermark it started from (``covered_from``), so
"Keep mine" learns again exactly what the replaced versions covered.  (Versions saved before
that was recorded fall back to an estimate: the chat's last message stored before its
previous saved rebuild result.)

A chat moved to another workspace before its waiting exchanges were learned keeps where they
were said (``knowledge_origin``): they are learned into the documents of that place, and
the rows go once the watermark passes them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from app.base.db import Database

_BATCH = 500  # ids per query: well under SQLite's variable limit


def watermark(db: Database, chat_id: str) -> int:
    """The last message of *chat_id* a rebuild covered (0: none yet, or no such chat)."""
    rows = db.query("SELECT knowledge_watermark FROM chat WHERE id = ?", (chat_id,))
    return int(rows[0][0]) if rows else 0


def advance(db: Database, chat_id: str, message_id: int) -> None:
    """Move the chat's watermark up to *message_id* (never back)."""
    with db.write() as conn:
        advance_in(conn, chat_id, message_id)


def watermark_in(conn: sqlite3.Connection, chat_id: str) -> int:
    """:func:`watermark`, inside a transaction the caller holds."""
    row = conn.execute("SELECT knowledge_watermark FROM chat WHERE id = ?",
                       (chat_id,)).fetchone()
    return int(row[0]) if row else 0


def advance_in(conn: sqlite3.Connection, chat_id: str, message_id: int) -> None:
    """:func:`advance`, inside a transaction the caller holds (a rebuild's result lands in
    one transaction with its watermark).  Where exchanges now covered were said is no
    longer needed."""
    conn.execute("UPDATE chat SET knowledge_watermark = max(knowledge_watermark, ?)"
                 " WHERE id = ?", (message_id, chat_id))
    conn.execute("DELETE FROM knowledge_origin WHERE chat_id = ? AND upto <= (SELECT"
                 " knowledge_watermark FROM chat WHERE id = ?)", (chat_id, chat_id))


def remember_origin(conn: sqlite3.Connection, chat_id: str, workspace_id: str | None) -> None:
    """The chat leaves *workspace_id* (None: Ungrouped): what it said there and no rebuild
    covered yet is to be learned there (inside the move's transaction)."""
    row = conn.execute(  # (ids grow along a path: its leaf is its newest message)
        "SELECT c.leaf_id, c.knowledge_watermark FROM chat c WHERE c.id = ?",
        (chat_id,)).fetchone()
    if row is None or row[0] is None or row[0] <= row[1]:
        return  # nothing waits: nothing to remember
    conn.execute("INSERT OR IGNORE INTO knowledge_origin (chat_id, upto, workspace_id)"
                 " VALUES (?, ?, ?)", (chat_id, row[0], workspace_id))


def origins(db: Database, chat_id: str) -> list[tuple[int, str | None]]:
    """Where the chat's waiting exchanges were said, when it moved since: ``(upto,
    workspace)`` in message order; messages after the last *upto* belong to where it is."""
    return [(int(upto), ws) for upto, ws in db.query(
        "SELECT upto, workspace_id FROM knowledge_origin WHERE chat_id = ? ORDER BY upto",
        (chat_id,))]


def chats_said_in(db: Database, workspace_ids: Sequence[str]) -> list[str]:
    """Chats elsewhere now with waiting exchanges said in one of *workspace_ids*."""
    found: list[str] = []
    for start in range(0, len(workspace_ids), _BATCH):
        part = list(workspace_ids[start:start + _BATCH])
        marks = ", ".join("?" * len(part))
        found += [r[0] for r in db.query(
            f"SELECT DISTINCT chat_id FROM knowledge_origin WHERE workspace_id IN ({marks})",
            part)]
    return found


def chats_with_news(db: Database, chat_ids: Sequence[str]) -> list[str]:
    """Those of *chat_ids* whose shown path has a message after their watermark (ids grow
    along a path: its leaf is its newest message; another branch's news is not learned)."""
    found: list[str] = []
    for start in range(0, len(chat_ids), _BATCH):
        part = list(chat_ids[start:start + _BATCH])
        marks = ", ".join("?" * len(part))
        found += [r[0] for r in db.query(
            f"SELECT c.id FROM chat c WHERE c.id IN ({marks})"
            " AND c.leaf_id > c.knowledge_watermark", part)]
    return found


def chats_with_long_replies(db: Database, at_least: int) -> list[str]:
    """Chats with a complete reply after their watermark whose stored content is at least
    *at_least* characters long.

    A reply's stored JSON is longer than its text, so this is a cheap filter, not the
    answer: start-up looks only at these chats to find the ones whose exchanges wait.
    """
    rows = db.query(
        "SELECT DISTINCT c.id FROM chat c JOIN message m ON m.chat_id = c.id"
        " WHERE m.id > c.knowledge_watermark AND c.leaf_id > c.knowledge_watermark"
        " AND m.role = 'assistant' AND m.status = 'complete' AND length(m.content) >= ?",
        (at_least,))
    return [r[0] for r in rows]


def overwritten(db: Database, owner: str, after: int, upto: int) -> dict[str, int]:
    """The chats whose rebuild results are versions ``after < v <= upto`` of *owner*'s
    document, each with the watermark to learn them again from."""
    rows = db.query(
        "SELECT chat_id, min(saved_at), min(covered_from), count(*) - count(covered_from)"
        " FROM knowledge_version WHERE owner = ? AND version > ?"
        " AND version <= ? AND source = 'rebuild' AND chat_id IS NOT NULL GROUP BY chat_id",
        (owner, after, upto))
    marks: dict[str, int] = {}
    for chat_id, first, covered_from, unrecorded in rows:
        if not unrecorded:  # what each replaced version covered is recorded: exactly that
            marks[chat_id] = int(covered_from)
            continue
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
