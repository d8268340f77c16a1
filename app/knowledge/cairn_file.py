"""A workspace's knowledge document kept as ``<folder>/CAIRN.md``, when the person asks for it.

The database stays the source of every version; the file is a copy both ways:

- **Out**: after every new version (a rebuild, a save, a restore, an accepted suggestion: all
  announced as ``KnowledgeSaved`` after their commit), the document's text is written to the
  file byte for byte (UTF-8, written beside it and moved over it: never half a file).  The
  write runs on the thread that committed (the storage thread, or the command line), never
  inside the transaction and never on the GUI thread.  What the file last held is recorded
  after the write (``written_version``, ``written_sha``): a crash between the version's commit
  and the file's write leaves the file one version behind, and the next read writes it.
- **In**: every read of the document (``KnowledgeStore.get``: the window, a turn's context, a
  rebuild's start and its save, ``cairn knowledge show``) and the window's watcher first look
  at the file: bytes that are neither what Cairn last wrote nor the document are an edit made
  outside Cairn, saved as a new version with source ``file`` ("edited by you (CAIRN.md)").
  Invalid text (not UTF-8, a binary, past 1 MB) is refused in one sentence: the document
  unchanged, the file left alone.  A rebuild that committed after the edit was made but before
  it was seen is treated like "Keep mine": the file's text wins and the chats whose rebuilds
  it replaces learn again on top of it (their watermarks go back); nothing is lost, every
  version stays in the history.
- A deleted file never empties the document: it is written again at the next version.
- Off: Cairn stops writing and never deletes the file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.base.paths import shown
from app.errors import Refused, os_reason
from app.events import Hub, KnowledgeSaved
from app.store import watermarks
from app.store.folder import FolderStore
from app.store.knowledge import MAX_DOCUMENT_BYTES, KnowledgeStore, Saved
from app.store.registry.registry import Registry

log = logging.getLogger(__name__)

FILE_NAME = "CAIRN.md"
SOURCE = "file"  # a version taken in from CAIRN.md: "edited by you (CAIRN.md)"

# A file's state, as the panel and ``cairn workspace knowledge-file`` say it.
OFF, WRITTEN, MISSING, REFUSED, NO_FOLDER = "off", "written", "missing", "refused", "no-folder"


@dataclass(frozen=True, slots=True)
class FileState:
    """What CAIRN.md is for one workspace, with the sentence the panel shows."""

    owner: str
    on: bool
    path: str  # <folder>/CAIRN.md
    state: str  # off | written | missing | refused | no-folder
    sentence: str  # empty when all is well

    def to_json(self) -> dict[str, Any]:
        return {"on": self.on, "path": self.path, "state": self.state,
                "problem": self.sentence or None}


def invalid_reason(data: bytes, size: int | None = None) -> str | None:
    """Why *data* (of a file of *size* bytes) cannot become the document (the tail of a
    sentence), None when it can."""
    size = len(data) if size is None else size
    if size > MAX_DOCUMENT_BYTES or len(data) > MAX_DOCUMENT_BYTES:
        return _too_large(max(size, len(data)))
    if b"\0" in data:
        return "it is a binary file, not text"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return "it is a binary file, not text"
    return None


def _too_large(size: int) -> str:
    said = f"{size / 1_000_000:,.1f} MB" if size >= 10_000_000 else f"{size:,} bytes"
    return f"it is {said}, and a knowledge document can be at most 1 MB (1,000,000 bytes)"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class KnowledgeFiles:
    """Keeps CAIRN.md and the document in step, for the workspaces that asked for it."""

    def __init__(self, *, registry: Registry, knowledge: KnowledgeStore, folders: FolderStore,
                 hub: Hub | None = None) -> None:
        self._registry = registry
        self._knowledge = knowledge
        self._folders = folders
        self._lock = threading.RLock()  # one sync at a time in this process
        self._local = threading.local()  # owners this thread is syncing (no re-entry)
        self._seen: dict[str, tuple[int, int, int] | None] = {}  # owner -> (mtime, size, ino)
        self._problems: dict[str, str] = {}
        # Chats whose rebuilt versions an outside edit replaced (the window rebuilds them now).
        self.relearn: Callable[[tuple[str, ...]], None] | None = None
        knowledge.before_read = self._before_read
        if hub is not None:
            hub.subscribe(self._saved, kinds=KnowledgeSaved)

    # ----------------------------------------------------------------- the switch

    def path_of(self, ws_id: str) -> Path:
        return Path(self._registry.get_workspace(ws_id).path) / FILE_NAME

    def conflict(self, ws_id: str) -> bool:
        """Would turning the switch on overwrite a CAIRN.md whose text is not the document's?"""
        try:
            data = self.path_of(ws_id).read_bytes()
        except OSError:
            return False
        return data != self._knowledge.get(ws_id, outside=False).text.encode("utf-8")

    def switch(self, ws_id: str, on: bool, *, keep: str | None = None) -> FileState:
        """Turn CAIRN.md on or off for *ws_id*.

        On, over a CAIRN.md that is not the document: *keep* says which wins (``document``:
        the file is replaced; ``file``: its text becomes the document's next version, the
        former one kept in the history); without it, refused in one sentence.  Off never
        touches the file.
        """
        ws = self._registry.get_workspace(ws_id, verb="change the knowledge file of")
        if not on:
            self._folders.set_knowledge_file(ws_id, False)
            return self.state(ws_id)
        if keep not in (None, "document", "file"):
            raise Refused(f"cannot keep '{shown(str(keep))}': say document or file")
        if ws.status != "ok" or not Path(ws.path).is_dir():
            raise Refused(f"cannot keep the document as {FILE_NAME} in '{shown(ws.path)}': "
                          "the folder is missing")
        if keep is None and self.conflict(ws_id):
            raise Refused(f"'{shown(str(self.path_of(ws_id)))}' already exists and is not this "
                          "document: say which to keep (the document or the file)")
        if keep == "file":
            found = self._read(self.path_of(ws_id))
            reason = invalid_reason(*found) if found is not None else None
            if reason is not None:
                raise Refused(f"cannot take in '{shown(str(self.path_of(ws_id)))}': {reason}")
        self._folders.set_knowledge_file(ws_id, True)
        self._seen.pop(ws_id, None)
        if keep == "file":
            self._take_in_whole(ws_id)
        self.sync(ws_id, write_missing=True)
        return self.state(ws_id)

    def adopt(self, ws_ids: tuple[str, ...], *, keep: str | None = None) -> list[str]:
        """After an import: turn CAIRN.md on for the workspaces whose bundle had it on.  Over a
        CAIRN.md of the folder that is not the document, *keep* decides; without it the
        switch stays off and the file untouched: returned, each as the id to ask about."""
        asked: list[str] = []
        for ws_id in ws_ids:
            try:
                self.switch(ws_id, True, keep=keep)
            except Refused:
                asked.append(ws_id)
        return asked

    def state(self, ws_id: str) -> FileState:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return FileState(ws_id, False, "", NO_FOLDER, "")
        path = str(Path(ws.path) / FILE_NAME)
        choices = self._folders.get(ws_id)
        if not choices.knowledge_file:
            return FileState(ws_id, False, path, OFF, "")
        if not Path(ws.path).is_dir():
            return FileState(ws_id, True, path, NO_FOLDER,
                             f"The folder is missing, so {FILE_NAME} cannot be written.")
        problem = self._problems.get(ws_id)
        if problem:
            return FileState(ws_id, True, path, REFUSED, problem)
        if not os.path.lexists(path):
            return FileState(ws_id, True, path, MISSING,
                             f"{FILE_NAME} is not in the folder any more; the document is "
                             "unchanged, and the file is written again at its next version.")
        return FileState(ws_id, True, path, WRITTEN, "")

    # ----------------------------------------------------------------- keeping in step

    def sync(self, ws_id: str, *, write_missing: bool = False) -> FileState | None:
        """Take in an outside edit of CAIRN.md, or write the document out when the file is
        behind; None when the switch is off.  Never raises: a failure is the state's
        sentence (and the log)."""
        busy: set[str] = getattr(self._local, "busy", None) or set()
        if ws_id in busy:
            return None
        self._local.busy = busy | {ws_id}
        try:
            with self._lock:
                choices = self._folders.get(ws_id)
                if not choices.knowledge_file:
                    return None
                ws = self._registry.workspace(ws_id)
                if ws is None or not Path(ws.path).is_dir():
                    return self.state(ws_id)
                self._sync(ws_id, Path(ws.path) / FILE_NAME, choices.written_version,
                           choices.written_sha, write_missing=write_missing)
                return self.state(ws_id)
        except Exception:  # noqa: BLE001 - a sync must never break a read or a save
            log.exception("keeping %s's %s in step failed", ws_id, FILE_NAME)
            return None
        finally:
            self._local.busy = busy

    def sync_all(self) -> list[str]:
        """The watcher's tick (and start-up's healing): every workspace with the switch on,
        read only when its file's size, time or identity moved.  Returns the owners checked."""
        checked: list[str] = []
        for ws_id in self._folders.with_knowledge_file():
            ws = self._registry.workspace(ws_id)
            if ws is None:
                continue
            try:
                st = os.stat(Path(ws.path) / FILE_NAME)
                seen: tuple[int, int, int] | None = (st.st_mtime_ns, st.st_size, st.st_ino)
            except OSError:
                seen = None
            if ws_id in self._seen and self._seen[ws_id] == seen and seen is not None:
                continue
            self.sync(ws_id)
            checked.append(ws_id)
        return checked

    def _sync(self, ws_id: str, path: Path, written_version: int | None,
              written_sha: str | None, *, write_missing: bool) -> None:
        doc = self._knowledge.get(ws_id, outside=False)
        mine = doc.text.encode("utf-8", "surrogatepass")
        found = self._read(path)
        data = found[0] if found is not None else None
        if found is not None and found[0] != mine and written_sha is not None \
                and _sha(found[0]) != written_sha:
            self._take_in(ws_id, *found, doc.version, written_version)
            return
        self._problems.pop(ws_id, None)
        if data == mine:  # already the document (or a crash before the mark): only note it
            if written_version != doc.version or written_sha != _sha(mine):
                self._folders.mark_written(ws_id, doc.version, _sha(mine))
            self._remember(ws_id, path)
            return
        if data is None and not write_missing and written_version == doc.version:
            self._remember(ws_id, path)  # deleted by the person: written at the next version
            return
        self._write(path, mine)
        self._folders.mark_written(ws_id, doc.version, _sha(mine))
        self._remember(ws_id, path)

    def _take_in(self, ws_id: str, data: bytes, size: int, current: int,
                 written_version: int | None) -> None:
        path = self.path_of(ws_id)
        reason = invalid_reason(data, size)
        if reason is not None:
            self._problems[ws_id] = (f"The edit of {FILE_NAME} was not taken in: {reason}; the "
                                     "document is unchanged and the file is left as it is.")
            self._remember(ws_id, path)
            return
        self._problems.pop(ws_id, None)
        text = data.decode("utf-8")
        result = self._knowledge.save(ws_id, text, source=SOURCE, based_on=current)
        if not isinstance(result, Saved):
            return  # moved on meanwhile (another process): the next read looks again
        relearn: dict[str, int] = {}
        if written_version is not None and current > written_version:
            # Versions saved after the file was last written were not seen by its editor:
            # rebuilds among them learn again on top of the person's text (as Keep mine).
            relearn = watermarks.overwritten(self._registry.db, ws_id, written_version, current)
            watermarks.rewind(self._registry.db, relearn)
        self._folders.mark_written(ws_id, result.document.version, _sha(data))
        self._remember(ws_id, path)
        if relearn and self.relearn is not None:
            self.relearn(tuple(relearn))

    def _take_in_whole(self, ws_id: str) -> None:
        found = self._read(self.path_of(ws_id))
        if found is None:
            return
        data = found[0]
        doc = self._knowledge.get(ws_id, outside=False)
        self._knowledge.save(ws_id, data.decode("utf-8"), source=SOURCE, based_on=doc.version)

    # ----------------------------------------------------------------- hooks

    def _before_read(self, owner: str) -> None:
        if owner.startswith("ws_"):
            self.sync(owner)

    def _saved(self, event: KnowledgeSaved) -> None:
        if event.owner.startswith("ws_"):
            self.sync(event.owner)

    # ----------------------------------------------------------------- the disk

    def _remember(self, ws_id: str, path: Path) -> None:
        try:
            st = os.stat(path)
            self._seen[ws_id] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            self._seen[ws_id] = None

    @staticmethod
    def _read(path: Path) -> tuple[bytes, int] | None:
        """The file's bytes and size (a regular file only: a FIFO or a device is never
        opened); past the size limit, only enough to say so.  None when there is no file."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode):
            return b"\0", 1  # not a file: refused like a binary, never read
        with open(path, "rb") as handle:
            return handle.read(MAX_DOCUMENT_BYTES + 1), st.st_size

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        """Atomic replace: written and synced beside the file, then moved over it."""
        temp = path.with_name(f".{FILE_NAME}.{secrets.token_hex(4)}.tmp")
        try:
            with open(temp, "xb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, path)
        except OSError as error:
            try:
                temp.unlink()
            except OSError:
                pass
            raise Refused(f"cannot write '{shown(str(path))}': {os_reason(error)}") from None
