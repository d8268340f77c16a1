"""Chat messages: user and assistant turns as content blocks, with model, usage and cost.

Headers (title, folder, archive, pin, order) belong to the registry; this module keeps what
was said.  A user's message is stored before anything is sent, so a failure never loses it.

Nothing said is ever deleted.  Retry and edit-and-resend take messages out of the
*conversation* (what the model is sent, what the rebuild learns from, what the chat shows) by
marking them ``superseded_by`` the person's message that was sent again in their place; they
stay readable with ``messages(..., superseded=True)``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from app.base.db import Database, utc_now
from app.base.paths import shown
from app.base.titles import MAX_NAME, one_line
from app.errors import Refused
from app.events import Hub, MessagesSuperseded, MessageStored
from app.store.blocks import KINDS, kind_of, search_text

COMPLETE, STOPPED, FAILED = "complete", "stopped", "failed"


@dataclass(frozen=True, slots=True)
class Usage:
    input: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0
    # The output is Cairn's estimate of what streamed (a reply stopped or cut off before the
    # server counted it), not the server's count; so is any cost worked out from it.
    estimated: bool = False
    # Web searches the server ran (``usage.server_tool_use.web_search_requests``): billed per
    # search.  Not a column: read back from the reply's own blocks.
    web_searches: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.cache_write + other.cache_write,
                     self.cache_read + other.cache_read, self.output + other.output,
                     self.estimated or other.estimated, self.web_searches + other.web_searches)

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"input": self.input, "cache_write": self.cache_write,
                                  "cache_read": self.cache_read, "output": self.output}
        if self.estimated:
            counts["output_estimated"] = True
        if self.web_searches:
            counts["web_searches"] = self.web_searches
        return counts


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
    superseded_by: int | None = None  # out of the conversation: replaced by a retry or an edit

    @property
    def text(self) -> str:
        return "".join(b.get("text", "") for b in self.content if b.get("type") == "text")

    @property
    def from_person(self) -> bool:
        """Something the person sent (text, files), not the tool results of a reply's loop."""
        return self.role == "user" and any(b.get("type") != "tool_result" for b in self.content)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "content": self.content, "status": self.status,
                "error": self.error, "model": self.model,
                "usage": self.usage.to_json() if self.usage else None,
                "cost_usd": self.cost_usd, "created_at": self.created_at,
                "superseded_by": self.superseded_by}


class ChatStore:
    """What was said in each chat.  With a *hub*, every change is announced there after its
    commit, on the committing thread: ``MessageStored``, ``MessagesSuperseded``."""

    def __init__(self, db: Database, *, hub: Hub | None = None) -> None:
        self._db = db
        self._hub = hub

    def append(self, chat_id: str, role: str, content: list[dict[str, Any]], *,
               status: str = COMPLETE, error: str | None = None, model: str | None = None,
               usage: Usage | None = None, cost_usd: float | None = None) -> Message:
        with self._db.write() as conn:
            message = _insert(conn, chat_id, role, content, status=status, error=error,
                              model=model, usage=usage, cost_usd=cost_usd)
        if self._hub is not None:
            self._hub.emit(MessageStored(chat_id, message.id, role))
        return message

    def messages(self, chat_id: str, *, before: int | None = None, after: int | None = None,
                 limit: int | None = None, superseded: bool = False) -> list[Message]:
        """The chat's conversation, oldest first: all of it, or one page.

        *before* keeps messages with a smaller id, *after* those with a larger one; *limit*
        keeps the newest *limit* of those.  A long chat opens with ``messages(chat, limit=50)``
        and scrolls back with ``messages(chat, before=<oldest id shown>, limit=50)``; an empty
        page is the start.  Pages walk an index of the conversation, so a page costs the same
        in any chat.  ``superseded=True`` adds the messages a retry or an edit replaced.
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative: {limit}")
        where = "chat_id = ?"
        params: list[object] = [chat_id]
        if not superseded:
            where += " AND superseded_by IS NULL"
        if before is not None:
            where += " AND id < ?"
            params.append(before)
        if after is not None:
            where += " AND id > ?"
            params.append(after)
        if limit is None:
            rows = self._db.query(f"SELECT {_COLUMNS} FROM message WHERE {where} ORDER BY id",
                                  params)
        else:
            rows = self._db.query(
                f"SELECT {_COLUMNS} FROM message WHERE {where} ORDER BY id DESC LIMIT ?",
                (*params, limit))
            rows.reverse()
        return [_message(r) for r in rows]

    def page(self, chat_id: str, *, before: int | None = None, limit: int = 50) -> list[Message]:
        """A page of the conversation that starts where a turn starts: at a message of the
        person (or the chat's first message), so a reply is never cut in two between pages.

        At least *limit* messages (fewer at the chat's start), oldest first; a page that
        would open inside a reply reaches back to the person's message that asked for it.
        """
        page = self.messages(chat_id, before=before, limit=limit)
        while len(page) >= limit and page and not page[0].from_person:
            older = self.messages(chat_id, before=page[0].id, limit=max(8, limit // 4))
            if not older:
                break
            cut = next((i for i in range(len(older) - 1, -1, -1) if older[i].from_person), None)
            if cut is not None:
                return older[cut:] + page
            page = older + page
            if len(older) < max(8, limit // 4):
                break  # the chat's start
        return page

    def reaching(self, chat_id: str, message_id: int, *, before: int, limit: int = 50
                 ) -> tuple[list[Message], bool]:
        """What a view showing the conversation from *before* on reads to show the message
        *message_id* (a search result, a find in the chat): the page that ends with it and
        every message from it up to *before*, oldest first; and whether older ones remain."""
        head = self.page(chat_id, before=message_id + 1, limit=limit)
        rest = self.messages(chat_id, after=message_id, before=before)
        return head + rest, len(head) >= limit

    def message(self, chat_id: str, message_id: int) -> Message | None:
        """One message of the chat, superseded or not; None when the chat holds no such id."""
        rows = self._db.query(f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND id = ?",
                              (chat_id, message_id))
        return _message(rows[0]) if rows else None

    def message_count(self, chat_id: str) -> int:
        """How many messages the conversation holds (counted in the index, none is read)."""
        rows = self._db.query("SELECT count(*) FROM message WHERE chat_id = ?"
                              " AND superseded_by IS NULL", (chat_id,))
        return int(rows[0][0])

    def last_message_id(self, chat_id: str) -> int | None:
        """The id of the conversation's newest message; None for a chat with no messages."""
        rows = self._db.query("SELECT max(id) FROM message WHERE chat_id = ?"
                              " AND superseded_by IS NULL", (chat_id,))
        return None if rows[0][0] is None else int(rows[0][0])

    # ----------------------------------------------------------------- sending again

    def retry(self, chat_id: str) -> Message:
        """Take the last reply out of the conversation so that the person's message before it
        can be answered again; returns that message.

        Allowed when the last reply failed, was stopped, or never arrived (a crash mid-turn).
        The reply's messages (its tool rounds too) are kept, ``superseded_by`` the person's
        message.  A complete reply is refused: editing the message sends it again.
        """
        with self._db.write() as conn:
            tail = _tail(conn, chat_id)
            person = next((m for m in tail if m.from_person), None)
            if person is None:
                raise Refused(f"cannot retry in session '{chat_id}': there is no message of "
                              "yours to send again")
            last = tail[0]
            if last.role == "assistant" and last.status == COMPLETE:
                raise Refused(f"cannot retry in session '{chat_id}': the last reply is "
                              "complete; edit your message to send it again")
            replaced = _supersede(conn, chat_id, by=person.id, first=person.id + 1)
        if self._hub is not None and replaced:
            self._hub.emit(MessagesSuperseded(chat_id, replaced, person.id))
        return person

    def resend(self, chat_id: str, message_id: int, text: str) -> Message:
        """Edit-and-resend: store the person's message *message_id* again with *text* (its
        attachments kept) and take it and everything after it out of the conversation, in
        one transaction; returns the new message."""
        verb = f"cannot edit message {message_id} in session '{chat_id}'"
        with self._db.write() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND id = ?",
                                (chat_id, message_id)).fetchall()
            if not rows:
                raise Refused(f"{verb}: no such message")
            old = _message(rows[0])
            if old.superseded_by is not None:
                raise Refused(f"{verb}: it was already replaced by a retry or an edit")
            if not old.from_person:
                raise Refused(f"{verb}: only your own messages can be edited")
            kept = [b for b in old.content if b.get("type") not in ("text", "tool_result")]
            content = ([{"type": "text", "text": text}] if text.strip() else []) + kept
            if not content:
                raise Refused("cannot send an empty message")
            new = _insert(conn, chat_id, "user", content)
            replaced = _supersede(conn, chat_id, by=new.id, first=message_id, before=new.id)
        if self._hub is not None:
            self._hub.emit(MessagesSuperseded(chat_id, replaced, new.id),
                           MessageStored(chat_id, new.id, "user"))
        return new

    # ----------------------------------------------------------------- drafts

    def draft(self, chat_id: str) -> str:
        rows = self._db.query("SELECT draft FROM chat WHERE id = ?", (chat_id,))
        return rows[0][0] if rows else ""

    def save_draft(self, chat_id: str, text: str) -> None:
        with self._db.write() as conn:
            conn.execute("UPDATE chat SET draft = ? WHERE id = ?", (text, chat_id))


_COLUMNS = ("id, chat_id, role, content, status, error, model, input_tokens,"
            " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, created_at,"
            " superseded_by, output_estimated")


def _message(r: tuple[Any, ...]) -> Message:
    content = json.loads(r[3])
    searched = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "server_tool_use"
                   and b.get("name") == "web_search") if "server_tool_use" in r[3] else 0
    return Message(r[0], r[1], r[2], content, r[4], r[5], r[6],
                   Usage(r[7], r[8], r[9], r[10], bool(r[14]), searched)
                   if r[7] is not None else None, r[11], r[12], r[13])


def _insert(conn: sqlite3.Connection, chat_id: str, role: str, content: list[dict[str, Any]], *,
            status: str = COMPLETE, error: str | None = None, model: str | None = None,
            usage: Usage | None = None, cost_usd: float | None = None) -> Message:
    now = utc_now()
    u = usage or Usage()
    row_id = conn.execute(
        "INSERT INTO message (chat_id, role, content, status, error, model, input_tokens,"
        " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, created_at,"
        " output_estimated, search_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (chat_id, role, json.dumps(content, ensure_ascii=False), status, error, model,
         *((u.input, u.cache_write, u.cache_read, u.output) if usage else (None,) * 4),
         cost_usd, now, int(u.estimated), search_text(content)),
    ).lastrowid
    conn.execute("UPDATE chat SET updated_at = ? WHERE id = ?", (now, chat_id))
    assert row_id is not None
    return Message(row_id, chat_id, role, content, status, error, model, usage, cost_usd, now)


def _supersede(conn: sqlite3.Connection, chat_id: str, *, by: int, first: int,
               before: int | None = None) -> tuple[int, ...]:
    """Take the conversation's messages from id *first* on (those before *before* only, when
    given) out of it, superseded by message *by*; returns their ids, oldest first."""
    where = "chat_id = ? AND id >= ? AND superseded_by IS NULL"
    params: tuple[object, ...] = (chat_id, first)
    if before is not None:
        where += " AND id < ?"
        params += (before,)
    ids = tuple(r[0] for r in conn.execute(f"SELECT id FROM message WHERE {where} ORDER BY id",
                                           params))
    conn.execute(f"UPDATE message SET superseded_by = ? WHERE {where}", (by, *params))
    return ids


def _tail(conn: sqlite3.Connection, chat_id: str) -> list[Message]:
    """The conversation from its end back to the person's last message, newest first."""
    found: list[Message] = []
    before = None
    while True:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND superseded_by IS NULL"
            + (" AND id < ?" if before is not None else "") + " ORDER BY id DESC LIMIT 32",
            (chat_id, before) if before is not None else (chat_id,)).fetchall()
        for row in rows:
            found.append(_message(row))
            if found[-1].from_person:
                return found
        if len(rows) < 32:
            return found
        before = found[-1].id


# ===================================================================== the shapes Cairn writes
# Message content as Cairn stores it, block by block, is declared in app/store/blocks.py: what an
# import may bring (anything else is refused), and all a request is built from.

_PLACES = {"user": "a user message", "assistant": "an assistant message"}


class ContentProblem(Exception):
    """Content that is not what Cairn writes: *where* (``content[1].sha256``) and *why*
    ("should be text, not a whole number"), to be said in one sentence."""

    def __init__(self, where: str, why: str) -> None:
        super().__init__(f"{where} {why}")
        self.where = where
        self.why = why


def checked_content(role: str, content: Any) -> list[dict[str, Any]]:
    """*content* (a message of *role*, as parsed JSON) if every block is of a kind declared in
    :mod:`app.store.blocks`, carried by *role*, that a bundle may carry, in its strict schema
    (no other key, no ``cache_control``, no image or document of its own, no URL source).
    Returned with attachment names normalised (one line, no control or bidi character);
    :class:`ContentProblem` for the first block that is not."""
    if not isinstance(content, list):
        raise ContentProblem("content", f"should be a list, not {kind_of(content)}")
    return [_checked_block(role, block, f"content[{j}]") for j, block in enumerate(content)]


def _checked_block(role: str, block: Any, where: str) -> dict[str, Any]:
    from pydantic import ValidationError

    from app.store import block_schemas

    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise ContentProblem(where, "should be an object with a type")
    kind = KINDS.get(block["type"])
    if kind is None:
        raise ContentProblem(where, f"is content Cairn does not write: '{shown(block['type'][:40])}'")
    if role not in kind.roles:
        raise ContentProblem(where, f"is content Cairn does not write in "
                                    f"{_PLACES.get(role, 'this message')}: '{shown(kind.name)}'")
    if not kind.bundle:
        raise ContentProblem(where, f"is content a bundle may not carry: '{shown(kind.name)}'")
    try:
        getattr(block_schemas, kind.schema).model_validate(block)
    except ValidationError as invalid:
        raise _problem(where, block, invalid.errors()[0]) from None
    return _names_normalised(block)


def _problem(where: str, block: dict[str, Any], error: Any) -> ContentProblem:
    from app.store.block_schemas import said

    return ContentProblem(*said(where, block, error))


def _names_normalised(block: dict[str, Any]) -> dict[str, Any]:
    """Attachment names as one line (the chat view and a file name show them)."""
    if block.get("type") == "attachment":
        return {**block, "name": one_line(block["name"], limit=MAX_NAME) or "file"}
    if block.get("type") == "tool_result":
        return {**block, "content": [_names_normalised(b) for b in block["content"]]}
    return block
