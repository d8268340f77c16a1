"""Chat messages: user and assistant turns as content blocks, with model, usage and cost.

Headers (title, folder, archive, pin, order) belong to the registry; this module keeps what
was said.  A user's message is stored before anything is sent, so a failure never loses it.

Nothing said is ever deleted.  A chat is a tree (DESIGN §13): each message has a parent (None
for a version of the chat's first message) and the chat a current leaf; the *path* from the
first message down to that leaf is the conversation the chat shows, the model is sent and
the rebuild learns from.  Editing a message of the person's or retrying a reply adds a
sibling (a new version) and shows its branch; the earlier versions stay, one switch away.

A parent is always an earlier message of its chat (a trigger holds it), so ids grow along a
path: the pages of a path are asked for by id, as before there were branches.
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
from app.events import BranchShown, Hub, MessageStored
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
    parent_id: int | None = None  # the message it follows; None: a version of the first one
    # On a path read (``messages``, ``page``, ``path``): which version it is among its
    # siblings (1 = the oldest) and how many there are.  Elsewhere 1 of 1 (not counted).
    version: int = 1
    versions: int = 1

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
                "parent": self.parent_id, "version": self.version, "versions": self.versions}


class _Leaf:
    """The default parent of :meth:`ChatStore.append`: the chat's current leaf."""


LEAF = _Leaf()


class ChatStore:
    """What was said in each chat.  With a *hub*, every change is announced there after its
    commit, on the committing thread: ``MessageStored``, ``BranchShown``."""

    def __init__(self, db: Database, *, hub: Hub | None = None) -> None:
        self._db = db
        self._hub = hub

    def append(self, chat_id: str, role: str, content: list[dict[str, Any]], *,
               status: str = COMPLETE, error: str | None = None, model: str | None = None,
               usage: Usage | None = None, cost_usd: float | None = None,
               parent: int | None | _Leaf = LEAF) -> Message:
        """Store a message under *parent* (by default the chat's current leaf: the end of the
        shown path).  The chat shows it when its leaf was *parent*; a reply that lands on a
        branch the person switched away from meanwhile stays there, out of the way."""
        with self._db.write() as conn:
            if isinstance(parent, _Leaf):
                parent = _leaf(conn, chat_id)
            message = _insert(conn, chat_id, role, content, status=status, error=error,
                              model=model, usage=usage, cost_usd=cost_usd, parent=parent)
        if self._hub is not None:
            self._hub.emit(MessageStored(chat_id, message.id, role))
        return message

    # ----------------------------------------------------------------- the shown path

    def messages(self, chat_id: str, *, before: int | None = None, after: int | None = None,
                 limit: int | None = None, leaf: int | None = None) -> list[Message]:
        """The chat's shown path, oldest first: all of it, or one page; each message with its
        version and how many versions it has.

        *before* keeps messages with a smaller id, *after* those with a larger one; *limit*
        keeps the newest *limit* of those.  A long chat opens with ``messages(chat, limit=50)``
        and scrolls back with ``messages(chat, before=<oldest id shown>, limit=50)``; an empty
        page is the start.  Ids grow along a path, so *before* and *after* cut the path as
        they cut a chat before branches; a page walks up from the leaf by primary key (a
        page near the end costs the same in any chat; one far back walks the ids above it,
        a few milliseconds at 5,000).  *leaf*: the path ending there instead of the chat's
        current leaf (a running turn's, a search hit's branch).
        """
        if limit is not None and limit < 0:
            raise ValueError(f"limit must not be negative: {limit}")
        with self._db.reading() as conn:
            return _path(conn, chat_id, before=before, after=after, limit=limit, leaf=leaf)

    def path(self, chat_id: str) -> list[Message]:
        """The whole shown path, first message to current leaf."""
        return self.messages(chat_id)

    def page(self, chat_id: str, *, before: int | None = None, limit: int = 50) -> list[Message]:
        """A page of the shown path that starts where a turn starts: at a message of the
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
        """What a view showing the path from *before* on reads to show the message
        *message_id* (a search result, a find in the chat): the page that ends with it and
        every message from it up to *before*, oldest first; and whether older ones remain."""
        head = self.page(chat_id, before=message_id + 1, limit=limit)
        rest = self.messages(chat_id, after=message_id, before=before)
        return head + rest, len(head) >= limit

    def tree(self, chat_id: str) -> list[Message]:
        """Every message of the chat, every branch, oldest first (parents before their
        replies); each with its parent (versions are counted on path reads only)."""
        rows = self._db.query(f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? ORDER BY id",
                              (chat_id,))
        return [_message(r) for r in rows]

    def message(self, chat_id: str, message_id: int) -> Message | None:
        """One message of the chat, on any branch; None when the chat holds no such id."""
        rows = self._db.query(f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND id = ?",
                              (chat_id, message_id))
        return _message(rows[0]) if rows else None

    def message_count(self, chat_id: str) -> int:
        """How many messages the shown path holds (ids only: a walk up the primary key)."""
        rows = self._db.query(
            "WITH RECURSIVE up(id) AS (SELECT leaf_id FROM chat WHERE id = ?"
            " AND leaf_id IS NOT NULL UNION ALL SELECT m.parent_id FROM message AS m"
            " JOIN up ON m.id = up.id WHERE m.parent_id < m.id) SELECT count(*) FROM up",
            (chat_id,))
        return int(rows[0][0])

    def last_message_id(self, chat_id: str) -> int | None:
        """The id of the shown path's last message (the chat's current leaf); None for a chat
        with no messages."""
        rows = self._db.query("SELECT leaf_id FROM chat WHERE id = ?", (chat_id,))
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    leaf = last_message_id

    # ----------------------------------------------------------------- versions

    def versions(self, chat_id: str, message_id: int) -> list[Message]:
        """The versions of message *message_id* (it and its siblings: the messages with the
        same parent), oldest first, each with its number; refused in one sentence when the
        chat holds no such message."""
        with self._db.reading() as conn:
            parent = _parent_of(conn, chat_id, message_id,
                                f"cannot list the versions of message {message_id}")
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND parent_id IS ?"
                " ORDER BY id", (chat_id, parent)).fetchall()
        found = [_message(r) for r in rows]
        return [_numbered(m, n, len(found)) for n, m in enumerate(found, 1)]

    def switch(self, chat_id: str, message_id: int) -> int:
        """Show the branch of message *message_id*: the newest message below it (itself when
        it has none below it; always a leaf) becomes the chat's current leaf, kept.  Returns
        that leaf; ``BranchShown`` says so.  Refused in one sentence (nothing changed) when
        the chat holds no such message."""
        with self._db.write() as conn:
            _parent_of(conn, chat_id, message_id,
                       f"cannot show the branch of message {message_id}")
            leaf = _newest_below(conn, chat_id, message_id)
            before = _leaf(conn, chat_id)
            conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?", (leaf, chat_id))
        if self._hub is not None and before != leaf:
            self._hub.emit(BranchShown(chat_id, leaf, message_id))
        return leaf

    def reveal(self, chat_id: str, message_id: int) -> int:
        """Show the branch holding message *message_id* (a search hit): nothing changes when
        the shown path holds it already; else as :meth:`switch`.  Returns the chat's leaf."""
        with self._db.write() as conn:
            _parent_of(conn, chat_id, message_id, f"cannot show message {message_id}")
            leaf = _leaf(conn, chat_id)
            if leaf is not None and _on_path(conn, leaf, message_id):
                return leaf
            shown = _newest_below(conn, chat_id, message_id)
            conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?", (shown, chat_id))
        if self._hub is not None:
            self._hub.emit(BranchShown(chat_id, shown, message_id))
        return shown

    def on_path(self, chat_id: str, message_id: int) -> bool:
        """Whether the shown path holds message *message_id*."""
        with self._db.reading() as conn:
            leaf = _leaf(conn, chat_id)
            return leaf is not None and _on_path(conn, leaf, message_id)

    # ----------------------------------------------------------------- sending again

    def retry(self, chat_id: str, message_id: int | None = None) -> Message:
        """Make room for a new version of a reply: the person's message it answers becomes
        the end of the shown path, and the new reply (stored by the turn under it) will be
        the old one's sibling.  Returns the person's message.

        *message_id*: a message of the reply to answer again (any of its rounds), or the
        person's message itself; None: the shown path's last reply.  Refused in one sentence
        when there is no message of the person's to answer."""
        verb = f"cannot retry in session '{chat_id}'"
        with self._db.write() as conn:
            if message_id is None:
                tip = _leaf(conn, chat_id)
                if tip is None:
                    raise Refused(f"{verb}: there is no message of yours to send again")
            else:
                _parent_of(conn, chat_id, message_id, f"cannot retry message {message_id}")
                tip = message_id
            person = _asker(conn, tip)
            if person is None:
                raise Refused(f"{verb}: there is no message of yours to send again")
            before = _leaf(conn, chat_id)
            conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?", (person.id, chat_id))
        if self._hub is not None and before != person.id:
            self._hub.emit(BranchShown(chat_id, person.id, person.id))
        return person

    def resend(self, chat_id: str, message_id: int, text: str) -> Message:
        """Edit: store a new version of the person's message *message_id* with *text* (its
        attachments kept) beside it, under the same parent, and show its branch (which ends
        there until the reply comes); returns the new message.  The original and everything
        below it stay, one switch away."""
        verb = f"cannot edit message {message_id} in session '{chat_id}'"
        with self._db.write() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM message WHERE chat_id = ? AND id = ?",
                                (chat_id, message_id)).fetchall()
            if not rows:
                raise Refused(f"{verb}: the session holds no such message")
            old = _message(rows[0])
            if not old.from_person:
                raise Refused(f"{verb}: it is a reply, and only your own messages can be "
                              "edited (retry a reply to get another version of it)")
            kept = [b for b in old.content if b.get("type") not in ("text", "tool_result")]
            content = ([{"type": "text", "text": text}] if text.strip() else []) + kept
            if not content:
                raise Refused("cannot send an empty message")
            new = _insert(conn, chat_id, "user", content, parent=old.parent_id, show=True)
        if self._hub is not None:
            self._hub.emit(MessageStored(chat_id, new.id, "user"),
                           BranchShown(chat_id, new.id, new.id))
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
            " parent_id, output_estimated")

# Every walk up a path asks parent_id < id, every walk down id > parent: the triggers keep
# it so, and a row damaged by hand can then never make a walk go round a cycle.
# A path's messages, each with its version (its rank among its siblings) and their count:
# both counted in the (chat_id, parent_id, id) index, no row read.
_PATH_COLUMNS = ("m.id, m.chat_id, m.role, m.content, m.status, m.error, m.model,"
                 " m.input_tokens, m.cache_write_tokens, m.cache_read_tokens, m.output_tokens,"
                 " m.cost_usd, m.created_at, m.parent_id, m.output_estimated,"
                 " (SELECT count(*) FROM message AS s WHERE s.chat_id = m.chat_id"
                 "  AND s.parent_id IS m.parent_id AND s.id <= m.id),"
                 " (SELECT count(*) FROM message AS s WHERE s.chat_id = m.chat_id"
                 "  AND s.parent_id IS m.parent_id)")


def _message(r: tuple[Any, ...]) -> Message:
    content = json.loads(r[3])
    searched = sum(1 for b in content if isinstance(b, dict) and b.get("type") == "server_tool_use"
                   and b.get("name") == "web_search") if "server_tool_use" in r[3] else 0
    return Message(r[0], r[1], r[2], content, r[4], r[5], r[6],
                   Usage(r[7], r[8], r[9], r[10], bool(r[14]), searched)
                   if r[7] is not None else None, r[11], r[12], r[13],
                   *((r[15], r[16]) if len(r) > 15 else ()))


def _numbered(m: Message, version: int, versions: int) -> Message:
    from dataclasses import replace

    return replace(m, version=version, versions=versions)


def _leaf(conn: sqlite3.Connection, chat_id: str) -> int | None:
    rows = conn.execute("SELECT leaf_id FROM chat WHERE id = ?", (chat_id,)).fetchall()
    return rows[0][0] if rows else None


def _parent_of(conn: sqlite3.Connection, chat_id: str, message_id: int, verb: str) -> int | None:
    """The parent of a message of the chat; refused in one sentence when it holds none such."""
    rows = conn.execute("SELECT parent_id FROM message WHERE chat_id = ? AND id = ?",
                        (chat_id, message_id)).fetchall()
    if not rows:
        if not conn.execute("SELECT 1 FROM chat WHERE id = ?", (chat_id,)).fetchall():
            raise Refused(f"{verb}: there is no session '{chat_id}'")
        raise Refused(f"{verb}: session '{chat_id}' holds no such message")
    parent: int | None = rows[0][0]
    return parent


def _newest_below(conn: sqlite3.Connection, chat_id: str, message_id: int) -> int:
    """The newest message at or below *message_id*: a leaf (a child is newer than its
    parent, so the newest of a subtree has no child)."""
    rows = conn.execute(
        "WITH RECURSIVE below(id) AS (SELECT ? UNION ALL SELECT m.id FROM message AS m"
        " JOIN below ON m.chat_id = ? AND m.parent_id = below.id AND m.id > below.id)"
        " SELECT max(id) FROM below",
        (message_id, chat_id)).fetchall()
    return int(rows[0][0])


def _on_path(conn: sqlite3.Connection, leaf: int, message_id: int) -> bool:
    """Whether *message_id* is *leaf* or above it (a walk up that stops below the id)."""
    rows = conn.execute(
        "WITH RECURSIVE up(id) AS (SELECT ? UNION ALL SELECT m.parent_id FROM message AS m"
        " JOIN up ON m.id = up.id WHERE m.parent_id < m.id AND up.id > ?)"
        " SELECT 1 FROM up WHERE id = ?", (leaf, message_id, message_id)).fetchall()
    return bool(rows)


def _asker(conn: sqlite3.Connection, message_id: int) -> Message | None:
    """The person's message a reply answers: *message_id* itself when it is one, else the
    nearest above it (a reply's rounds and tool results sit between)."""
    at: int | None = message_id
    while at is not None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM message WHERE id = ?", (at,)).fetchall()
        if not rows:
            return None
        message = _message(rows[0])
        if message.from_person:
            return message
        # (ids fall going up: a damaged row can never make this walk go round)
        at = message.parent_id if message.parent_id is not None \
            and message.parent_id < message.id else None
    return None


def _path(conn: sqlite3.Connection, chat_id: str, *, before: int | None, after: int | None,
          limit: int | None, leaf: int | None) -> list[Message]:
    """The path ending at *leaf* (the chat's current one when None), oldest first, cut by
    *before*/*after*/*limit* as :meth:`ChatStore.messages` says."""
    if limit == 0:
        return []
    start: int | None = leaf
    if before is not None:  # the newest message of the path below *before*, walking up to it
        first = conn.execute(
            "WITH RECURSIVE up(id) AS (SELECT coalesce(?, (SELECT leaf_id FROM chat"
            " WHERE id = ?)) UNION ALL SELECT m.parent_id FROM message AS m JOIN up"
            " ON m.id = up.id WHERE m.parent_id < m.id AND up.id >= ?)"
            " SELECT max(id) FROM up WHERE id < ?",
            (start, chat_id, before, before)).fetchall()
        if first[0][0] is None:
            return []
        start = first[0][0]
    # One walk up by primary key from *start* (None: the chat's leaf), *limit* steps at most
    # and never below *after*.
    rows = conn.execute(
        "WITH RECURSIVE up(id, n) AS (SELECT coalesce(?, (SELECT leaf_id FROM chat"
        " WHERE id = ?)), 1 UNION ALL SELECT m.parent_id, up.n + 1"
        " FROM message AS m JOIN up ON m.id = up.id WHERE m.parent_id < m.id"
        " AND m.parent_id > ? AND up.n < ?)"
        f" SELECT {_PATH_COLUMNS} FROM up CROSS JOIN message AS m ON m.id = up.id"
        " WHERE m.chat_id = ? AND m.id > ? ORDER BY m.id",
        (start, chat_id, -1 if after is None else after, 1 << 62 if limit is None else limit,
         chat_id, -1 if after is None else after)).fetchall()
    return [_message(r) for r in rows]


def _insert(conn: sqlite3.Connection, chat_id: str, role: str, content: list[dict[str, Any]], *,
            status: str = COMPLETE, error: str | None = None, model: str | None = None,
            usage: Usage | None = None, cost_usd: float | None = None,
            parent: int | None = None, show: bool = False) -> Message:
    """A message under *parent*; the chat's leaf moves to it when the leaf was *parent* (the
    path grows) or with *show* (a new version, shown at once)."""
    now = utc_now()
    u = usage or Usage()
    row_id = conn.execute(
        "INSERT INTO message (chat_id, role, content, status, error, model, input_tokens,"
        " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd, created_at,"
        " output_estimated, search_text, parent_id)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (chat_id, role, json.dumps(content, ensure_ascii=False), status, error, model,
         *((u.input, u.cache_write, u.cache_read, u.output) if usage else (None,) * 4),
         cost_usd, now, int(u.estimated), search_text(content), parent),
    ).lastrowid
    if show:
        conn.execute("UPDATE chat SET updated_at = ?, leaf_id = ? WHERE id = ?",
                     (now, row_id, chat_id))
    else:
        conn.execute("UPDATE chat SET updated_at = ?, leaf_id = CASE WHEN leaf_id IS ?"
                     " THEN ? ELSE leaf_id END WHERE id = ?", (now, parent, row_id, chat_id))
    assert row_id is not None
    return Message(row_id, chat_id, role, content, status, error, model, usage, cost_usd, now,
                   parent)


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
