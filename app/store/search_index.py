"""The search index's writes: knowledge entries and a file's text, and rebuilding it all.

The index lives in the same database (migration "Find anything" in :mod:`app.base.db`).
Messages and chat titles are kept by triggers; what needs Python is here, and every function
that writes takes the connection of the write transaction that changes the text, so an index
row never exists without its write, nor a write without its index rows.

A knowledge document is indexed entry by entry (a top-level list item with its sub-items),
under its section.  The split is a small line-based one of its own (the store cannot use the
knowledge package's parser: it sits above the store); it finds the same entries and start
lines as :func:`app.knowledge.document.parse` for the documents Cairn writes (a test holds
both to that), and it indexes text outside any list as an entry of its own, so that nothing
a person wrote is unfindable.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from app.base.db import MIGRATIONS, SEARCH_BRANCHES_TRIGGER, Database, _statements
from app.store.pdf_text import Budget, pdf_text

log = logging.getLogger(__name__)

BlobReader = Callable[[str], bytes]  # a stored file's bytes by its sha256 (``BlobStore.read``)

# A file's text past this is not indexed (a 32 MB log would make the index huge for little).
MAX_FILE_TEXT = 2_000_000
MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"  # around matched words; never in indexed text
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv")

_HEADING = re.compile(r"\ufeff?[ ]{0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_ITEM = re.compile(r"\ufeff?[ ]{0,3}(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_FENCE = re.compile(r"[ ]{0,3}(```|~~~)")
_SIX = {"working style & preferences", "facts", "decisions", "people & contacts",
        "assets & links", "open questions"}


@dataclass(frozen=True, slots=True)
class IndexedEntry:
    section: str  # '' before any section
    text: str
    line: int  # its first line in the document, from 0


def split_entries(text: str) -> list[IndexedEntry]:
    """The document's entries in order: each top-level list item, and each run of other
    text (paragraphs, quotes, code), under the ``##`` heading above it."""
    lines = text.splitlines()
    found: list[IndexedEntry] = []
    section = ""
    current: list[str] = []
    start = 0
    in_item = False
    fence: str | None = None
    blank_before = False

    def close() -> None:
        body = "\n".join(current).strip()
        if body:
            found.append(IndexedEntry(section, _clean(body), start))
        current.clear()

    for number, line in enumerate(lines):
        if fence is not None:  # inside a code block: its lines are text, never structure
            current.append(line)
            if line.strip().startswith(fence):
                fence = None
            continue
        heading = _HEADING.match(line)
        if heading and not line.startswith((" ", "\t")):
            close()
            level, title = len(heading[1]), heading[2].strip()
            if level <= 2 or title.casefold() in _SIX:
                section = title if level >= 2 else ""
            in_item, blank_before = False, False
            continue
        blank = not line.strip()
        indented = line.startswith((" ", "\t"))
        if _ITEM.match(line) and not (in_item and indented) and not line.startswith("    "):
            close()
            start, in_item = number, True
            current.append(line)
        elif blank:
            pass
        elif in_item and (line.startswith((" ", "\t")) or not blank_before):
            current.append(line)  # the item's own lines: indented, or a lazy continuation
        else:
            if in_item or not current or blank_before:
                close()
                start = number
            in_item = False
            current.append(line)
        if (opened := _FENCE.match(line)) is not None:
            fence = opened[1]
        blank_before = blank
    close()
    return found


def _clean(text: str) -> str:
    return text.replace(MARK_OPEN, " ").replace(MARK_CLOSE, " ")


def index_document(conn: sqlite3.Connection, owner: str, text: str, at: str) -> None:
    """Replace *owner*'s knowledge entries in the index with those of *text* (its current
    document), inside the caller's write transaction."""
    _drop_document(conn, owner)
    for entry in split_entries(text):
        n = conn.execute("INSERT INTO search_key (kind, ref, owner, part, at)"
                         " VALUES ('knowledge', ?, ?, ?, ?)",
                         (owner, owner, entry.line, at)).lastrowid
        conn.execute("INSERT INTO search_doc (rowid, title, body, content, kind, owner)"
                     " VALUES (?, ?, ?, '', 'knowledge', ?)",
                     (n, entry.section, entry.text, token(owner)))


def token(ident: str) -> str:
    """An id as the index keeps it in a filter column: one token, as SQL's ``hex()``."""
    return ident.encode("utf-8").hex().upper()


def _drop_document(conn: sqlite3.Connection, owner: str) -> None:
    rows = conn.execute("SELECT n FROM search_key WHERE kind = 'knowledge' AND ref = ?",
                        (owner,)).fetchall()
    for (n,) in rows:
        conn.execute("DELETE FROM search_doc WHERE rowid = ?", (n,))
    conn.execute("DELETE FROM search_key WHERE kind = 'knowledge' AND ref = ?", (owner,))


def index_file_text(conn: sqlite3.Connection, file_id: str, text: str) -> None:
    """A knowledge file's text content beside its name and description (which the
    ``knowledge_file`` triggers keep), inside the caller's write transaction."""
    if not text:
        return
    conn.execute("UPDATE search_doc SET content = ? WHERE rowid ="
                 " (SELECT n FROM search_key WHERE kind = 'file' AND ref = ?)",
                 (_clean(text[:MAX_FILE_TEXT]), file_id))


def file_text(data: bytes, media_type: str, name: str, *, budget: Budget | None = None) -> str:
    """What of a file is indexed: the text of a text file (text, markdown, CSV, code) or of a
    PDF (:mod:`app.store.pdf_text`), '' for anything else (images, binaries).  Every path
    that indexes a file's text comes here: adding it, an import, the migration's completion
    and ``--reindex``; those that index many files pass their job's PDF *budget*."""
    if media_type == "application/pdf":
        if budget is None:
            return pdf_text(data, name=name, limit=MAX_FILE_TEXT)
        return pdf_text(data, name=name, limit=MAX_FILE_TEXT, budget=budget)
    if media_type.startswith("image/"):
        return ""
    if b"\0" in data[:8192]:
        return ""
    head = data[:MAX_FILE_TEXT * 4]
    try:
        return head.decode("utf-8")[:MAX_FILE_TEXT]
    except UnicodeDecodeError as error:
        if len(head) < len(data) and error.start >= len(head) - 3:  # cut mid-character
            return head[:error.start].decode("utf-8", errors="replace")[:MAX_FILE_TEXT]
        return ""


# ===================================================================== the whole index

MISSING = ("Cairn's search index is missing or damaged, so a search cannot be trusted to find "
           "everything; rebuild it with 'cairn search --reindex'.")
PENDING = ("Cairn's search index is still being built for the knowledge and files already "
           "stored; rebuild it with 'cairn search --reindex' if this lasts.")

_TABLES = ("search_message", "search_doc", "search_key", "search_state")


def problem(db: Database) -> str | None:
    """The start-up check: a sentence when the index is missing, damaged, or does not hold
    what the database holds; None when it is whole.  A few indexed looks, never a scan."""
    try:
        names = {r[0] for r in db.query(
            "SELECT name FROM sqlite_master WHERE name IN (?, ?, ?, ?)", _TABLES)}
        if names != set(_TABLES):
            return MISSING
        state = db.query("SELECT value FROM search_state WHERE key = 'index'")
        if not state or state[0][0] != "complete":
            return PENDING
        newest = db.query("SELECT max(id) FROM message")[0][0]
        indexed = db.query("SELECT max(rowid) FROM search_message")[0][0]
        if newest != indexed:
            return MISSING
        chats = db.query("SELECT count(*) FROM chat")[0][0]
        keyed = db.query("SELECT count(*) FROM search_key WHERE kind = 'chat'")[0][0]
        if chats != keyed:
            return MISSING
        db.query("SELECT rowid FROM search_doc WHERE search_doc MATCH 'cairn' LIMIT 1")
        db.query("SELECT rowid FROM search_message WHERE search_message MATCH 'cairn' LIMIT 1")
    except sqlite3.DatabaseError as error:
        log.warning("the search index failed its check: %s", error)
        return MISSING
    return None


def complete_pending(db: Database, read_blob: BlobReader) -> bool:
    """After the migration that made the index: the knowledge entries and file contents it
    could not index in SQL.  True when it had something to do."""
    try:
        state = db.query("SELECT value FROM search_state WHERE key = 'index'")
    except sqlite3.DatabaseError:
        return False  # missing: the check says so; --reindex makes it
    if state and state[0][0] == "complete":
        return False
    with db.write() as conn:
        _index_knowledge(conn)
    # A file at a time, its text read outside any transaction: a PDF's can take seconds, and
    # no writer waits on it.  One added meanwhile indexed itself; one removed has no row to
    # update.  Killed half-way, the state is still pending and the next start does it again.
    budget = Budget()
    for file_id, sha, media_type, name in db.query(
            "SELECT id, sha256, media_type, name FROM knowledge_file"):
        text = _stored_text(read_blob, sha, media_type, name, budget)
        if text:
            with db.write() as conn:
                index_file_text(conn, file_id, text)
    budget.report("the search index's first pass")
    with db.write() as conn:
        conn.execute("INSERT OR REPLACE INTO search_state (key, value) VALUES ('index', 'complete')")
    return True


def reindex(db: Database, read_blob: BlobReader) -> dict[str, int]:
    """Rebuild the whole index from scratch in one transaction (``cairn search --reindex``):
    the tables and triggers as the migration makes them, then every row.  Returns how many
    rows of each kind it holds."""
    script = next(m for m in MIGRATIONS if "CREATE VIRTUAL TABLE search_message" in m)
    with db.write() as conn:
        triggers = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'search%'")]
        for name in triggers:
            conn.execute(f'DROP TRIGGER IF EXISTS "{name}"')
        for name in _TABLES:  # a virtual table takes its shadow tables with it
            conn.execute(f"DROP TABLE IF EXISTS {name}")
        for statement in _statements(script):
            conn.execute(statement)
        # What a message's blocks declare, every branch (and nothing is superseded now).
        conn.execute("DROP TRIGGER IF EXISTS search_message_supersede")
        for statement in _statements(SEARCH_BRANCHES_TRIGGER):
            conn.execute(statement)
        conn.execute("UPDATE search_message SET text = m.search_text FROM message AS m"
                     " WHERE m.id = search_message.rowid AND m.search_text IS NOT NULL")
        # The days' id ranges the date filters use (kept by a trigger of their own).
        conn.execute("DELETE FROM message_day")
        conn.execute("INSERT INTO message_day (day, first_id, last_id)"
                     " SELECT substr(created_at, 1, 10), min(id), max(id) FROM message"
                     " GROUP BY 1")
        _index_knowledge_and_files(conn, read_blob)
        conn.execute("INSERT OR REPLACE INTO search_state (key, value) VALUES ('index', 'complete')")
        counts = {kind: conn.execute("SELECT count(*) FROM search_key WHERE kind = ?",
                                     (kind,)).fetchone()[0]
                  for kind in ("chat", "knowledge", "file")}
        counts["message"] = conn.execute("SELECT count(*) FROM search_message").fetchone()[0]
    return counts


def _index_knowledge_and_files(conn: sqlite3.Connection, read_blob: BlobReader) -> None:
    _index_knowledge(conn)
    budget = Budget()
    for file_id, sha, media_type, name in conn.execute(
            "SELECT id, sha256, media_type, name FROM knowledge_file").fetchall():
        index_file_text(conn, file_id, _stored_text(read_blob, sha, media_type, name, budget))
    budget.report("rebuilding the search index")


def _index_knowledge(conn: sqlite3.Connection) -> None:
    for owner, text, at in conn.execute("SELECT owner, text, updated_at FROM knowledge").fetchall():
        index_document(conn, owner, text, at)


def _stored_text(read_blob: BlobReader, sha: str, media_type: str, name: str,
                 budget: Budget) -> str:
    try:
        data = read_blob(sha)
    except OSError:
        return ""  # a blob gone missing: its name and description stay findable
    return file_text(data, media_type, name, budget=budget)
