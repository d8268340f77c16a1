"""Where knowledge documents live: one per workspace, and ``personal`` for personal memory.

Every save bumps a version and goes into the history in the same transaction.  The history
keeps every version for good, stored compactly (:mod:`app.store.history`).  A save can
require the version it started from (compare-and-swap), so a background rebuild never
overwrites a hand edit made meanwhile, and an editor opened on an older version never
overwrites what a rebuild wrote since.  Saving the text already stored adds no version.

A document is sent with every message in its workspace (personal memory with every message),
so a person's save is capped at 1 MB: past that, every turn would pay to read it, and most
models could not read it at all.

Beside each document is what its last rebuilds left (``knowledge_status``): the last success,
the last failure, and a note of what the last success could not apply.
"""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import overload

from app.base.db import Database, utc_now
from app.base.lines import split_lines
from app.errors import Refused
from app.events import Hub, KnowledgeSaved, SuggestionsChanged
from app.store import history as versions
from app.store import suggestions as suggestion_rows
from app.store import watermarks
from app.store.search_index import index_document
from app.store.suggestions import Proposed, Suggestion

PERSONAL = "personal"
# "file": an edit of <folder>/CAIRN.md made outside Cairn, taken in (app/knowledge/cairn_file.py).
SOURCES = ("user", "rebuild", "import", "restore", "file")
MAX_DOCUMENT_BYTES = 1_000_000  # 1 MB of UTF-8, about 250,000 tokens


def check_size(owner: str, size: int) -> None:
    """Refuse a document of *size* bytes (UTF-8) when it passes :data:`MAX_DOCUMENT_BYTES`."""
    if size <= MAX_DOCUMENT_BYTES:
        return
    what = "personal memory" if owner == PERSONAL else "this knowledge document"
    sent = "every message" if owner == PERSONAL else "every message in its workspace"
    shown = f"{size / 1_000_000:,.1f} MB" if size >= 10_000_000 else f"{size:,} bytes"
    raise Refused(f"cannot save {what}: it is {shown}, and a knowledge document can be at "
                  f"most 1 MB (1,000,000 bytes), because it is sent to the model with {sent}")


@dataclass(frozen=True, slots=True)
class Document:
    owner: str
    text: str
    version: int  # 0: never saved
    updated_at: str | None
    source: str | None
    chat_id: str | None


@dataclass(frozen=True, slots=True)
class Version:
    version: int
    source: str
    chat_id: str | None
    saved_at: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "source": self.source, "chat": self.chat_id,
                "saved_at": self.saved_at, "size": self.size}


@dataclass(frozen=True, slots=True)
class Change:
    """One document of a compare-and-swap save: the version it was based on, its new text."""

    owner: str
    text: str
    based_on: int


@dataclass(frozen=True, slots=True)
class Saved:
    """The save landed, or the text was already the current one (then no version was added)."""

    document: Document


@dataclass(frozen=True, slots=True)
class Conflict:
    """Nothing was written: the document moved on from the version the save was based on."""

    current: Document


@dataclass(frozen=True, slots=True)
class RebuildRecord:
    """What the last rebuilds of one document left.

    A failure is stored with its time; what a successful rebuild could not apply is stored
    in the same column *without* a time: a note beside the success, not a failure.
    """

    owner: str
    last_success: str | None = None  # UTC, ISO
    last_error: str | None = None
    last_error_at: str | None = None

    @property
    def failure(self) -> str | None:
        """The last failure, when nothing succeeded since."""
        if self.last_error and self.last_error_at and (
                not self.last_success or self.last_error_at > self.last_success):
            return self.last_error
        return None

    @property
    def unapplied(self) -> str | None:
        """"2 suggestions could not be applied: …", from the last successful rebuild."""
        return self.last_error if self.last_error and not self.last_error_at else None


class KnowledgeStore:
    """The documents and their history.  With a *hub*, every new version is announced there
    (``KnowledgeSaved``) after its commit, on the committing thread."""

    def __init__(self, db: Database, *, hub: Hub | None = None) -> None:
        self._db = db
        self._hub = hub
        # Called with the owner before every read of a document (off the GUI thread, outside
        # any transaction): CAIRN.md's outside edits are taken in first (set by
        # app.knowledge.cairn_file, which this layer cannot import).
        self.before_read: Callable[[str], None] | None = None
        # Called with a suggestion and the text of its document as the rebuild saw it: the
        # suggestion with the places of the entries it names (set by app.knowledge, which
        # parses documents; this layer cannot).
        self.placing: Callable[[Proposed, str], Proposed] | None = None
        # Called before a person's save (``user``, ``restore``) with the owner, the text and
        # the version it is based on: an unread outside edit of CAIRN.md is taken in first,
        # and the text to save comes back (merged with that edit when the save named no
        # version).  Set by app.knowledge.cairn_file.
        self.before_save: Callable[[str, str, int | None], str] | None = None

    # ----------------------------------------------------------------- reading

    def get(self, owner: str, *, outside: bool = True) -> Document:
        """The current document; with *outside* (the default), an edit of its CAIRN.md made
        outside Cairn is taken in first."""
        if outside and self.before_read is not None:
            self.before_read(owner)
        rows = self._db.query(
            "SELECT text, version, updated_at, source, chat_id FROM knowledge WHERE owner = ?",
            (owner,),
        )
        if not rows:
            return Document(owner, "", 0, None, None, None)
        return Document(owner, *rows[0])

    def history(self, owner: str) -> list[Version]:
        """Saved versions, newest first."""
        rows = self._db.query(
            "SELECT version, source, chat_id, saved_at, size FROM knowledge_version"
            " WHERE owner = ? ORDER BY version DESC", (owner,))
        return [Version(*row) for row in rows]

    def version_text(self, owner: str, version: int) -> str:
        """The text of *version*, byte for byte as it was saved."""
        text = versions.text_of(self._db.query, owner, version)
        if text is None:
            newest = self._db.query("SELECT max(version) FROM knowledge_version WHERE owner = ?",
                                    (owner,))[0][0]
            raise Refused(f"cannot find version {version} of this knowledge document: its "
                          + (f"versions run from 1 to {newest}" if newest else "history is empty"))
        return text

    def last_rebuild(self, owner: str) -> RebuildRecord:
        """What the last rebuilds of *owner*'s document left (nothing yet: all None)."""
        return self.last_rebuilds([owner])[0]

    def last_rebuilds(self, owners: Sequence[str]) -> list[RebuildRecord]:
        """:meth:`last_rebuild` of each of *owners*, in their order."""
        if not owners:
            return []
        marks = ", ".join("?" * len(owners))
        rows = {row[0]: row for row in self._db.query(
            "SELECT owner, last_success, last_error, last_error_at FROM knowledge_status"
            f" WHERE owner IN ({marks})", list(owners))}
        return [RebuildRecord(*rows[owner]) if owner in rows else RebuildRecord(owner)
                for owner in owners]

    def last_learned(self, owners: Sequence[str]) -> str | None:
        """When a chat last changed one of *owners*' documents (a rebuild's version; UTC,
        ISO), or None while no chat has taught them anything."""
        if not owners:
            return None
        marks = ", ".join("?" * len(owners))
        rows = self._db.query(
            "SELECT max(saved_at) FROM knowledge_version WHERE source = 'rebuild'"
            f" AND owner IN ({marks})", list(owners))
        return str(rows[0][0]) if rows and rows[0][0] else None

    def diff(self, owner: str, old: int, new: int) -> str:
        """A unified diff between two saved versions."""
        before = split_lines(self.version_text(owner, old))
        after = split_lines(self.version_text(owner, new))
        return "".join(difflib.unified_diff(before, after, f"version {old}", f"version {new}"))

    # ----------------------------------------------------------------- writing

    @overload
    def save(self, owner: str, text: str, *, source: str, chat_id: str | None = None,
             based_on: None = None) -> Saved: ...

    @overload
    def save(self, owner: str, text: str, *, source: str, chat_id: str | None = None,
             based_on: int) -> Saved | Conflict: ...

    def save(self, owner: str, text: str, *, source: str, chat_id: str | None = None,
             based_on: int | None = None) -> Saved | Conflict:
        """Save *text* as the next version of *owner*'s document.

        *based_on* is the version the text was edited from (the editor's): when the stored
        version is another one, nothing is written and :class:`Conflict` carries the current
        document.  ``None`` lands on top whatever is stored (``knowledge set``, a restore).
        Text identical to the current text adds no version: :class:`Saved` with the current
        document, even on a stale base, since nothing of the newer version would be lost.
        The comparison and the write share one write transaction.
        """
        if source not in SOURCES:
            raise ValueError(source)
        if source in ("user", "restore") and self.before_save is not None:
            text = self.before_save(owner, text, based_on)
        if source != "rebuild" and len(text) > MAX_DOCUMENT_BYTES // 4:
            check_size(owner, len(text.encode("utf-8", "surrogatepass")))
        with self._db.write() as conn:
            current = _current(conn, owner)
            if text == current.text:
                return Saved(current)
            if based_on is not None and based_on != current.version:
                return Conflict(current)
            saved = _write(conn, owner, text, current.version + 1, source, chat_id)
        self._announce(saved)
        return Saved(saved)

    def save_if_unchanged(self, changes: Sequence[Change], *, source: str,
                          chat_id: str | None = None) -> bool:
        """Save several documents in one transaction, only if none moved on meanwhile.

        False, with nothing written, when any document's version is not the one expected.
        """
        return self._save_if_unchanged(changes, source=source, chat_id=chat_id)

    def save_rebuild(self, changes: Sequence[Change], *, chat_id: str, covered: int,
                     notes: Mapping[str, str | None],
                     suggestions: Sequence[Proposed] = ()) -> bool:
        """A rebuild's result, in one transaction, if no document moved on meanwhile (a hand
        edit wins: False, nothing written): the changed documents, each version with the
        watermark it started from (what "Keep mine" learns again), the chat's watermark
        moved up to *covered* (the last message it learned from), for each owner of *notes*
        the time of this success with its note of what could not be applied, and the
        *suggestions* it leaves for the person."""
        now = utc_now()
        got: set[str] = set()

        def also(conn: sqlite3.Connection) -> None:
            watermarks.advance_in(conn, chat_id, covered)
            for owner, note in notes.items():
                conn.execute(
                    "INSERT INTO knowledge_status (owner, last_success, last_error,"
                    " last_error_at) VALUES (?, ?, ?, NULL) ON CONFLICT (owner) DO UPDATE SET"
                    " last_success = excluded.last_success, last_error = excluded.last_error,"
                    " last_error_at = NULL", (owner, now, note))
            for item in suggestions:
                if suggestion_rows.record(conn, [item], chat_id=chat_id, now=now):
                    got.add(item.owner)

        with self._db.write() as conn:
            since = watermarks.watermark_in(conn, chat_id)
            if self.placing is not None and suggestions:
                seen = {o: _current(conn, o).text for o in {s.owner for s in suggestions}}
                suggestions = [self.placing(s, seen[s.owner]) for s in suggestions]
            saved = self._write_unchanged(conn, changes, source="rebuild", chat_id=chat_id,
                                          covered_from=since)
            if saved is None:
                return False
            also(conn)
        self._announce(*saved)
        if got and self._hub is not None:
            self._hub.emit(*(SuggestionsChanged(owner) for owner in sorted(got)))
        return True

    def _save_if_unchanged(self, changes: Sequence[Change], *, source: str,
                           chat_id: str | None) -> bool:
        with self._db.write() as conn:
            saved = self._write_unchanged(conn, changes, source=source, chat_id=chat_id)
            if saved is None:
                return False
        self._announce(*saved)
        return True

    def _write_unchanged(self, conn: sqlite3.Connection, changes: Sequence[Change], *,
                         source: str, chat_id: str | None, covered_from: int | None = None
                         ) -> list[Document] | None:
        """The changes written, if none of their documents moved on (None: nothing written)."""
        if any(_version(conn, c.owner) != c.based_on for c in changes):
            return None
        saved = [_write(conn, change.owner, change.text, change.based_on + 1, source, chat_id)
                 for change in changes]
        if covered_from is not None:
            for document in saved:
                conn.execute("UPDATE knowledge_version SET covered_from = ? WHERE owner = ?"
                             " AND version = ?", (covered_from, document.owner,
                                                  document.version))
        return saved

    # ----------------------------------------------------------------- suggestions

    def suggestions(self, owners: Sequence[str]) -> list[Suggestion]:
        """What waits for the person to decide about *owners*' documents, oldest first."""
        return suggestion_rows.of(self._db.query, owners)

    def suggestion(self, suggestion_id: int) -> Suggestion:
        found = suggestion_rows.one(self._db.query, suggestion_id)
        if found is None:
            raise Refused(f"there is no suggestion {suggestion_id}: it was accepted or "
                          "dismissed already, or never made")
        return found

    def save_accepting(self, suggestion: Suggestion, text: str, *, based_on: int
                       ) -> Saved | Conflict:
        """The person accepted *suggestion*: *text* (the document with it applied) saved as
        their version on top of *based_on*, and the suggestion gone, in one transaction.
        :class:`Conflict` when the document moved on meanwhile; Refused when the suggestion
        is gone (decided in another window)."""
        owner = suggestion.owner
        if self.before_read is not None:  # an unread CAIRN.md edit first: a Conflict then
            self.before_read(owner)
        with self._db.write() as conn:
            if suggestion_rows.one(conn.execute, suggestion.id) is None:
                raise Refused(f"there is no suggestion {suggestion.id}: it was accepted or "
                              "dismissed already")
            current = _current(conn, owner)
            if based_on != current.version:
                return Conflict(current)
            if len(text) > MAX_DOCUMENT_BYTES // 4:
                check_size(owner, len(text.encode("utf-8", "surrogatepass")))
            suggestion_rows.drop(conn, suggestion.id)
            saved = (_write(conn, owner, text, current.version + 1, "user", suggestion.chat_id)
                     if text != current.text else None)
        if saved is not None:
            self._announce(saved)
        if self._hub is not None:
            self._hub.emit(SuggestionsChanged(owner))
        return Saved(saved or current)

    def dismiss_suggestion(self, suggestion_id: int) -> Suggestion:
        """The person decided against it: gone, the document unchanged."""
        with self._db.write() as conn:
            found = suggestion_rows.one(conn.execute, suggestion_id)
            if found is None:
                raise Refused(f"there is no suggestion {suggestion_id}: it was accepted or "
                              "dismissed already, or never made")
            suggestion_rows.drop(conn, suggestion_id)
        if self._hub is not None:
            self._hub.emit(SuggestionsChanged(found.owner))
        return found

    def undo_dismiss(self, suggestion: Suggestion) -> Suggestion:
        """Dismiss undone: the suggestion waits again, as it was."""
        with self._db.write() as conn:
            new_id = suggestion_rows.put_back(conn, suggestion)
        if self._hub is not None:
            self._hub.emit(SuggestionsChanged(suggestion.owner))
        return replace(suggestion, id=new_id)

    def record_failure(self, owners: Iterable[str], sentence: str) -> None:
        """A rebuild of these documents failed, as *sentence*: their last failure, now."""
        now = utc_now()
        with self._db.write() as conn:
            for owner in owners:
                conn.execute(
                    "INSERT INTO knowledge_status (owner, last_error, last_error_at)"
                    " VALUES (?, ?, ?) ON CONFLICT (owner) DO UPDATE SET"
                    " last_error = excluded.last_error, last_error_at = excluded.last_error_at",
                    (owner, sentence, now))

    def keep_mine(self, owner: str, text: str, *, based_on: int, opened_at: int
                  ) -> tuple[Saved | Conflict, tuple[str, ...]]:
        """"Keep mine": the person's text, edited from version *opened_at*, saved over the
        newer version *based_on* they were shown (:class:`Conflict` when the document moved
        on again meanwhile).

        The rebuild results it replaces stay in the history, and their chats' watermarks go
        back to before those rebuilds (:mod:`app.store.watermarks`): returned with the
        result, those chats are to be rebuilt, so that what they taught is learned again on
        top of the person's text.
        """
        result = self.save(owner, text, source="user", based_on=based_on)
        marks: dict[str, int] = {}
        if isinstance(result, Saved) and result.document.version > based_on:
            marks = watermarks.overwritten(self._db, owner, opened_at, based_on)
            watermarks.rewind(self._db, marks)
        return result, tuple(marks)

    def _announce(self, *saved: Document) -> None:
        if self._hub is not None and saved:
            self._hub.emit(*(KnowledgeSaved(d.owner, d.version, d.source or "") for d in saved))

    def restore(self, owner: str, version: int) -> Document:
        """An old version becomes the newest one (a restore is itself a version, unless its
        text is the current text)."""
        return self.save(owner, self.version_text(owner, version), source="restore").document


def _version(conn: sqlite3.Connection, owner: str) -> int:
    row = conn.execute("SELECT version FROM knowledge WHERE owner = ?", (owner,)).fetchone()
    return int(row[0]) if row else 0


def _current(conn: sqlite3.Connection, owner: str) -> Document:
    row = conn.execute("SELECT text, version, updated_at, source, chat_id FROM knowledge"
                       " WHERE owner = ?", (owner,)).fetchone()
    return Document(owner, *row) if row else Document(owner, "", 0, None, None, None)


def _write(conn: sqlite3.Connection, owner: str, text: str, version: int, source: str,
           chat_id: str | None) -> Document:
    if source not in SOURCES:
        raise ValueError(source)
    now = utc_now()
    stored = conn.execute("SELECT version, text FROM knowledge WHERE owner = ?",
                          (owner,)).fetchone()
    versions.add(conn, owner, version, text, source, chat_id, now,
                 previous=(int(stored[0]), str(stored[1])) if stored else None)
    conn.execute(
        "INSERT INTO knowledge (owner, text, version, updated_at, source, chat_id)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE SET text = excluded.text,"
        " version = excluded.version, updated_at = excluded.updated_at,"
        " source = excluded.source, chat_id = excluded.chat_id",
        (owner, text, version, now, source, chat_id),
    )
    index_document(conn, owner, text, now)  # search finds the current text, in this commit
    return Document(owner, text, version, now, source, chat_id)
