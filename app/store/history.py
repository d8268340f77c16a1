"""Every version of every knowledge document, kept for good and stored compactly.

A version is stored either whole (a *keyframe*: its ``text``, ``delta`` NULL) or as a
*delta* against the version before it (``text`` '', ``delta`` the zlib-compressed line
operations that turn the previous text into this one).  A keyframe comes at least every
:data:`KEYFRAME_EVERY` versions, so reading any version applies at most
``KEYFRAME_EVERY - 1`` deltas to the keyframe before it.

Lines are split on ``"\\n"`` only and keep their endings (``"\\r\\n"`` stays, a last line
without a newline stays without, U+2028 and form feeds are ordinary characters), so a
delta is lossless: every version reads back byte for byte.  Each version's length in
characters is stored beside it (``size``), so listing a long history never rebuilds text.

Every reader and writer of ``knowledge_version`` goes through this module.
"""

from __future__ import annotations

import difflib
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.base.lines import split_lines

KEYFRAME_EVERY = 25

# A delta: [[start, end, replacement], ...] against the previous version's lines, in order;
# lines start..end (end excluded) are replaced by the replacement text (its lines joined).
_Op = tuple[int, int, str]


def line_ops(old: Sequence[str], new: Sequence[str]) -> list[_Op]:
    """The changes from the lines *old* to the lines *new*: ``(start, end, replacement)``."""
    # The common head and tail first: most saves change a few lines in the middle, and
    # SequenceMatcher (quadratic at worst) then only sees those.
    head = 0
    limit = min(len(old), len(new))
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    a, b = old[head:len(old) - tail], new[head:len(new) - tail]
    if not a or not b:
        return [(head, head + len(a), "".join(b))] if a or b else []
    ops: list[_Op] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            ops.append((head + i1, head + i2, "".join(b[j1:j2])))
    return ops



def encode(old: str, new: str) -> bytes:
    """The delta that turns *old* into *new*, compressed."""
    ops = line_ops(split_lines(old), split_lines(new))
    raw = json.dumps(ops, ensure_ascii=False, separators=(",", ":"))
    return zlib.compress(raw.encode("utf-8", "surrogatepass"), 9)


def apply(old: str, delta: bytes) -> str:
    """*old* with the delta applied: the text it was encoded towards."""
    ops = json.loads(zlib.decompress(delta).decode("utf-8", "surrogatepass"))
    lines = split_lines(old)
    out: list[str] = []
    at = 0
    for start, end, replacement in ops:
        out.extend(lines[at:start])
        out.append(replacement)
        at = end
    out.extend(lines[at:])
    return "".join(out)


@dataclass(frozen=True, slots=True)
class StoredVersion:
    version: int
    text: str
    source: str
    chat_id: str | None
    saved_at: str


Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def text_of(query: Query | sqlite3.Connection, owner: str, version: int) -> str | None:
    """The text of *owner*'s *version*, rebuilt from its keyframe; None when not stored.

    *query* runs one SELECT (``Database.query``, or a connection inside a transaction)."""
    # One statement: the keyframe at or before the version and the deltas after it, read
    # in one consistent state (on a read connection too).
    run = query.execute if isinstance(query, sqlite3.Connection) else query
    rows = list(run(
        "SELECT version, text, delta FROM knowledge_version WHERE owner = ? AND version <= ?"
        " AND version >= (SELECT version FROM knowledge_version WHERE owner = ?"
        " AND version <= ? AND delta IS NULL ORDER BY version DESC LIMIT 1) ORDER BY version",
        (owner, version, owner, version)))
    if not rows or rows[-1][0] != version:
        return None
    text = str(rows[0][1])
    for _version, _text, delta in rows[1:]:
        text = apply(text, delta)
    return text


def all_versions(conn: sqlite3.Connection, owner: str) -> Iterator[StoredVersion]:
    """Every stored version of *owner*, oldest first, each rebuilt from the one before."""
    text = ""
    for version, full, delta, source, chat_id, saved_at in conn.execute(
            "SELECT version, text, delta, source, chat_id, saved_at FROM knowledge_version"
            " WHERE owner = ? ORDER BY version", (owner,)):
        text = str(full) if delta is None else apply(text, delta)
        yield StoredVersion(version, text, source, chat_id, saved_at)


def add(conn: sqlite3.Connection, owner: str, version: int, text: str, source: str,
        chat_id: str | None, saved_at: str, *, previous: tuple[int, str] | None = None) -> None:
    """Store *version* of *owner*'s document after the ones stored (inside the caller's
    write transaction).  *previous*, when the caller knows it, is the newest stored
    version and its text (else it is read back)."""
    newest = conn.execute(
        "SELECT version FROM knowledge_version WHERE owner = ? AND version < ?"
        " ORDER BY version DESC LIMIT 1", (owner, version)).fetchone()
    base: str | None = None
    if newest is not None and _chain(conn, owner, int(newest[0])) < KEYFRAME_EVERY - 1:
        if previous is not None and previous[0] == newest[0]:
            base = previous[1]
        else:
            base = text_of(conn, owner, int(newest[0]))
    _insert(conn, owner, version, text, source, chat_id, saved_at, base)


def add_all(conn: sqlite3.Connection, owner: str, versions: Iterable[StoredVersion]) -> None:
    """Store a whole history of *owner*, oldest first (an import): the first one, and one
    in every :data:`KEYFRAME_EVERY`, whole, the others as deltas."""
    base: str | None = None
    for n, v in enumerate(versions):
        _insert(conn, owner, v.version, v.text, v.source, v.chat_id, v.saved_at,
                None if n % KEYFRAME_EVERY == 0 else base)
        base = v.text


def _chain(conn: sqlite3.Connection, owner: str, version: int) -> int:
    """How many deltas lead from the last keyframe to *version* (0 on a keyframe)."""
    row = conn.execute(
        "SELECT count(*) FROM knowledge_version WHERE owner = ? AND version <= ? AND version >"
        " (SELECT version FROM knowledge_version WHERE owner = ? AND version <= ?"
        " AND delta IS NULL ORDER BY version DESC LIMIT 1)",
        (owner, version, owner, version)).fetchone()
    return int(row[0])


def _insert(conn: sqlite3.Connection, owner: str, version: int, text: str, source: str,
            chat_id: str | None, saved_at: str, base: str | None) -> None:
    """A keyframe without *base*, else a delta against it (unless the delta would not be
    smaller than the text itself)."""
    delta = encode(base, text) if base is not None else None
    if delta is not None and len(delta) >= len(text):
        delta = None
    conn.execute(
        "INSERT INTO knowledge_version (owner, version, text, delta, size, source, chat_id,"
        " saved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (owner, version, "" if delta is not None else text, delta, len(text), source, chat_id,
         saved_at))
