"""Chat messages: user and assistant turns as content blocks, with model, usage and cost.

Headers (title, folder, archive, pin, order) belong to the registry; this module keeps what
was said.  A user's message is stored before anything is sent, so a failure never loses it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from app.db import Database, utc_now

COMPLETE, STOPPED, FAILED = "complete", "stopped", "failed"


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.cache_write + other.cache_write,
                     self.cache_read + other.cache_read, self.output + other.output)

    def to_json(self) -> dict[str, int]:
        return {"input": self.input, "cache_write": self.cache_write,
                "cache_read": self.cache_read, "output": self.output}


@dataclass(frozen=True, slots=True)
class Message:
    id: int
    chat_id: str
    role: str  # user | assistant
    content: list[dict[str, Any]]
    status: str
    error: str | None
    model: str | None
    usage: Usage | None
    cost_usd: float | None
    created_at: str

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "content": self.content, "status": self.status,
                "error": self.error, "model": self.model,
                "usage": self.usage.to_json() if self.usage else None,
                "cost_usd": self.cost_usd, "created_at": self.created_at}


class ChatStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, chat_id: str, role: str, content: list[dict[str, Any]], *,
               status: str = COMPLETE, error: str | None = None, model: str | None = None,
               usage: Usage | None = None, cost_usd: float | None = None) -> Message:
        now = utc_now()
        u = usage or Usage()
        with self._db.write() as conn:
            row_id = conn.execute(
                "INSERT INTO message (chat_id, role, content, status, error, model, input_tokens,"
                " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (chat_id, role, json.dumps(content, ensure_ascii=False), status, error, model,
                 *((u.input, u.cache_write, u.cache_read, u.output) if usage else (None,) * 4),
                 cost_usd, now),
            ).lastrowid
            conn.execute("UPDATE chat SET updated_at = ? WHERE id = ?", (now, chat_id))
        assert row_id is not None
        return Message(row_id, chat_id, role, content, status, error, model, usage, cost_usd, now)

    def messages(self, chat_id: str, *, before: int | None = None,
                 limit: int | None = None) -> list[Message]:
        """The chat's messages, oldest first: all of them, or one page.

        *before* keeps messages with a smaller id; *limit* keeps the newest *limit* of those.
        A long chat opens with ``messages(chat, limit=50)`` and scrolls back with
        ``messages(chat, before=<oldest id shown>, limit=50)``; an empty page is the start.
        Both walk the ``message(chat_id, id)`` index, so a page costs the same in any chat.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative: {limit}")
        where = "chat_id = ?"
        params: list[object] = [chat_id]
        if before is not None:
            where += " AND id < ?"
            params.append(before)
        if limit is None:
            rows = self._db.query(f"SELECT {_COLUMNS} FROM message WHERE {where} ORDER BY id",
                                  params)
        else:
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM message WHERE {where} ORDER BY id DESC LIMIT ?",
                (*params, limit))
            rows.reverse()
        return [_message(r) for r in rows]

    def message_count(self, chat_id: str) -> int:
        """How many messages the chat holds (counted in the index, no message is read)."""
        rows = self._db.query("SELECT count(*) FROM message WHERE chat_id = ?", (chat_id,))
        return int(rows[0][0])

    def last_message_id(self, chat_id: str) -> int | None:
        """The id of the chat's newest message; None for a chat with no messages."""
        rows = self._db.query("SELECT max(id) FROM message WHERE chat_id = ?", (chat_id,))
        return None if rows[0][0] is None else int(rows[0][0])

    def draft(self, chat_id: str) -> str:
        rows = self._db.query("SELECT draft FROM chat WHERE id = ?", (chat_id,))
        return rows[0][0] if rows else ""

    def save_draft(self, chat_id: str, text: str) -> None:
        with self._db.write() as conn:
            conn.execute("UPDATE chat SET draft = ? WHERE id = ?", (text, chat_id))


_COLUMNS = ("id, chat_id, role, content, status, error, model, input_tokens,"
            " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, created_at")


def _message(r: tuple[Any, ...]) -> Message:
    return Message(r[0], r[1], r[2], json.loads(r[3]), r[4], r[5], r[6],
                   Usage(*r[7:11]) if r[7] is not None else None, r[11], r[12])
