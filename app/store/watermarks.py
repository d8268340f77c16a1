"""Each chat's knowledge watermark: the last message a successful rebuild covered.

What waits to be learned is what a chat said after its watermark.  A rebuild moves the mark
forward when it saved (or had nothing to learn); nothing else moves it forward.

When the person keeps their text over a rebuild's result ("Keep mine" in the editor), the
rebuild runs again on top: the person's text is saved as the newest version, over versions a
rebuild wrote while they were editing.  Those versions stay in the history, and what the
chats taught is learned again from the person's text: each such chat's watermark goes back
to where it was before that rebuild, and the scheduler runs it.

The watermark a rebuild started from is not stored; it is taken as the chat's last message
stored before the chat's previous saved rebuild result (or the chat's start).  That may
re-read an exchange or two more than needed, which costs a little and adds nothing twice:
an add that duplicates an entry is dropped by the validator.
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


def advance_in(conn: sqlite3.Connection, chat_id: str, message_id: int) -> None:
    """:func:`advance`, inside a transaction the caller holds (a rebuild's result lands in
    one transaction with its watermark)."""
    conn.execute("UPDATE chat SET knowledge_watermark = max(knowledge_watermark, ?)"
                 " WHERE id = ?", (message_id, chat_id))


def chats_with_news(db: Database, chat_ids: Sequence[str]) -> list[str]:
    """Those of *chat_ids* with a message of the conversation (not one a retry or an edit
    replaced) after their watermark."""
    found: list[str] = []
    for start in range(0, len(chat_ids), _BATCH):
        part = list(chat_ids[start:start + _BATCH])
        marks = ", ".join("?" * len(part))
        found += [r[0] for r in db.query(
            f"SELECT c.id FROM chat c WHERE c.id IN ({marks}) AND EXISTS (SELECT 1 FROM"
            " message m WHERE m.chat_id = c.id AND m.superseded_by IS NULL"
            " AND m.id > c.knowledge_watermark)", part)]
    return found


def chats_with_long_replies(db: Database, at_least: int) -> list[str]:
    """Chats with a complete reply after their watermark whose stored content is at least
    *at_least* characters long.

    A reply's stored JSON is longer than its text, so this is a cheap filter, not the
    answer: start-up looks only at these chats to find the ones whose exchanges wait.
    """
    rows = db.query(
        "SELECT DISTINCT c.id FROM chat c JOIN message m ON m.chat_id = c.id"
        " WHERE m.id > c.knowledge_watermark AND m.superseded_by IS NULL"
        " AND m.role = 'assistant' AND m.status = 'complete' AND length(m.content) >= ?",
        (at_least,))
    return [r[0] for r in rows]


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
