"""A workspace's knowledge document kept as ``<folder>/CAIRN.md``, when the person asks for it.

The database stays the source of every version; the file is a copy both ways:

- **Out**: after every new version (a rebuild, a save, a restore, an accepted suggestion: all
  announced as ``KnowledgeSaved`` after their commit), the document's text is written to the
  file byte for byte (UTF-8, written beside it and moved over it: never half a file, and never
  over an edit saved meanwhile: see :mod:`app.knowledge.cairn_disk`).  The write runs on the
  thread that committed (the storage thread, or the command line), never inside the
  transaction and never on the GUI thread.  What the file last held is recorded after the
  write (``written_version``, ``written_sha``): a crash between the version's commit and the
  file's write leaves the file one version behind, and the next read writes it.
- **In**: every read of the document (``KnowledgeStore.get``: the window, a turn's context, a
  rebuild's start and its save, ``cairn knowledge show``), every person's save (the window's
  Save, ``cairn knowledge set``, a restore, an accepted suggestion) and the window's watcher
  first look at the file: bytes that are neither what Cairn last wrote nor the document are an
  edit made outside Cairn.  It is merged against the version the file descends from (the one
  Cairn last wrote to it), so what Cairn saved since (a rebuild that committed before the edit
  was seen) stays, and saved as a new version with source ``file`` ("edited by you
  (CAIRN.md)").  A person's save that named no version (``knowledge set``, a restore) lands
  on top of that edit, merged with it; one that named its version (the window) meets a newer
  version and offers Merge.  An outside save that removes entries Cairn wrote since it last
  read the file is remembered (:attr:`FileState.removed`) until the person restores them or
  dismisses the notice.  Invalid text (not UTF-8, a binary, past 1 MB), a link, a folder or a
  special file is refused in one sentence: the document unchanged, the file left alone.
- **Conflict copies** a sync service left beside it (Dropbox "CAIRN (… conflicted copy
  ….md", Syncthing "CAIRN.sync-conflict-….md") are noticed and offered: compare, merge (what
  either side has is kept), or dismiss; Cairn never deletes them.
- A deleted file never empties the document: it is written again at the next version.
- Off: Cairn stops writing and never deletes the file.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.base.lines import split_lines
from app.base.paths import shown
from app.errors import Refused
from app.events import Hub, KnowledgeSaved
from app.knowledge import cairn_disk as disk
from app.knowledge import document as doc
from app.knowledge.cairn_disk import FILE_NAME, Found, invalid_reason
from app.knowledge.merge import merge3
from app.knowledge.placing import find, insertion, place_of
from app.store.documents import Document, KnowledgeStore, Saved
from app.store.folder_access import FolderChoices, FolderStore
from app.store.registry.registry import Registry
from app.store.suggestions import Place

log = logging.getLogger(__name__)

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
    removed: tuple[str, ...] = ()  # entries Cairn wrote that an outside save removed
    copies: tuple[str, ...] = ()  # sync services' conflict copies beside it, to decide

    def to_json(self) -> dict[str, Any]:
        return {"on": self.on, "path": self.path, "state": self.state,
                "problem": self.sentence or None, "removed": list(self.removed),
                "conflict_copies": list(self.copies)}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _lower(sentence: str) -> str:
    return sentence[:1].lower() + sentence[1:].rstrip(".")


class CairnFileSync:
    """Keeps CAIRN.md and the document in step, for the workspaces that asked for it."""

    def __init__(self, *, registry: Registry, knowledge: KnowledgeStore, folders: FolderStore,
                 hub: Hub | None = None) -> None:
        self._registry = registry
        self._knowledge = knowledge
        self._folders = folders
        self._hub = hub
        self._lock = threading.RLock()  # one sync at a time in this process
        self._local = threading.local()  # owners this thread is syncing (no re-entry)
        self._seen: dict[str, tuple[int, int, int] | None] = {}  # owner -> (mtime, size, ino)
        self._folder_seen: dict[str, tuple[int, int, int] | None] = {}  # for conflict copies
        self._copies: dict[str, tuple[str, ...]] = {}  # owner -> conflict copies to offer
        self._problems: dict[str, str] = {}
        knowledge.before_read = self._before_read
        knowledge.before_save = self._before_save
        if hub is not None:
            hub.subscribe(self._saved, kinds=KnowledgeSaved)

    # ----------------------------------------------------------------- the switch

    def path_of(self, ws_id: str) -> Path:
        return Path(self._registry.get_workspace(ws_id).path) / FILE_NAME

    def conflict(self, ws_id: str) -> bool:
        """Would turning the switch on overwrite a CAIRN.md whose text is not the document's?
        (A link, a folder or a special file is not asked about: turning on refuses it.)"""
        ws = self._registry.get_workspace(ws_id)
        if disk.folder_problem(ws.path) is not None:
            return False
        found = disk.read(Path(ws.path) / FILE_NAME)
        if found is None or disk.why_not(found) is not None:
            return False  # nothing to ask: turning on refuses it in one sentence
        return not _same(found.data, file_bytes(self._knowledge.get(ws_id, outside=False).text))

    def switch(self, ws_id: str, on: bool, *, keep: str | None = None) -> FileState:
        """Turn CAIRN.md on or off for *ws_id*.

        On, over a CAIRN.md that is not the document: *keep* says which wins (``document``:
        the file's text is kept as a version in the history, then replaced; ``file``: its
        text becomes the document's next version, the former one kept in the history);
        without it, refused in one sentence.  A link, a folder, a special file or a file past
        1 MB is refused whatever *keep* says, before anything is read.  Off never touches the
        file.
        """
        ws = self._registry.get_workspace(ws_id, verb="change the knowledge file of")
        if not on:
            self._folders.set_knowledge_file(ws_id, False)
            return self.state(ws_id)
        if keep not in (None, "document", "file"):
            raise Refused(f"cannot keep '{shown(str(keep))}': say document or file")
        problem = disk.folder_problem(ws.path) if ws.status == "ok" else \
            f"The folder is missing, so {FILE_NAME} cannot be written."
        if problem is not None:
            raise Refused(f"cannot keep the document as {FILE_NAME} in '{shown(ws.path)}': "
                          f"{_lower(problem)}")
        path = Path(ws.path) / FILE_NAME
        found = disk.read(path)  # lstat first: nothing is opened that could block or follow
        current = self._knowledge.get(ws_id, outside=False)
        mine = file_bytes(current.text)
        if found is not None and found.refusal is not None:
            raise Refused(f"cannot keep the document as '{shown(str(path))}': "
                          f"{found.refusal}; move it away first")
        differs = found is not None and not _same(found.data, mine)
        if differs and found is not None:
            reason = invalid_reason(found.data, found.size)
            if reason is not None:
                verb = "take in" if keep == "file" else "replace"
                raise Refused(f"cannot {verb} '{shown(str(path))}': {reason}, so its text "
                              "could not be kept in the history; move it away first")
        if differs and keep is None:
            raise Refused(f"'{shown(str(path))}' already exists and is not this "
                          "document: say which to keep (the document or the file)")
        if differs and found is not None:
            text = found.data.decode("utf-8")
            # Either way the file's text is a version in the history: kept as the
            # document, or kept behind the document that replaces it.
            self._knowledge.save(ws_id, text, source=SOURCE)
            if keep == "document":
                self._knowledge.save(ws_id, current.text, source="restore")
        self._folders.set_knowledge_file(ws_id, True)
        self._folders.mark_read(ws_id, self._knowledge.get(ws_id, outside=False).version,
                                removed="[]")
        self._seen.pop(ws_id, None)
        self._folder_seen.pop(ws_id, None)
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
        folder = disk.folder_problem(ws.path)
        if folder is not None:
            return FileState(ws_id, True, path, NO_FOLDER, folder)
        removed = tuple(p.text for p in _places(choices.removed))
        copies = self._copies.get(ws_id, ())
        problem = self._problems.get(ws_id)
        if problem:
            return FileState(ws_id, True, path, REFUSED, problem, removed, copies)
        if disk.look(Path(path)) is None:
            return FileState(ws_id, True, path, MISSING,
                             f"{FILE_NAME} is not in the folder any more; the document is "
                             "unchanged, and the file is written again at its next version.",
                             removed, copies)
        return FileState(ws_id, True, path, WRITTEN, "", removed, copies)

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
                if ws is None or disk.folder_problem(ws.path) is not None:
                    return self.state(ws_id)
                self._sync(ws_id, Path(ws.path) / FILE_NAME, write_missing=write_missing)
                self._copies_check(ws_id, Path(ws.path))
                return self.state(ws_id)
        except Exception:  # noqa: BLE001 - a sync must never break a read or a save
            log.exception("keeping %s's %s in step failed", ws_id, FILE_NAME)
            return None
        finally:
            self._local.busy = busy

    def sync_all(self) -> list[str]:
        """The watcher's tick (and start-up's healing): every workspace with the switch on,
        read only when its file's size, time or identity moved (its folder's, for conflict
        copies).  Returns the owners checked."""
        checked: list[str] = []
        for ws_id in self._folders.with_knowledge_file():
            ws = self._registry.workspace(ws_id)
            if ws is None:
                continue
            folder = Path(ws.path)
            seen = disk.identity(disk.look(folder / FILE_NAME))
            if disk.folder_problem(ws.path) is None and self._copies_check(ws_id, folder):
                checked.append(ws_id)
            if ws_id in self._seen and self._seen[ws_id] == seen and seen is not None:
                continue
            self.sync(ws_id)
            if ws_id not in checked:
                checked.append(ws_id)
        return checked

    def _sync(self, ws_id: str, path: Path, *, write_missing: bool) -> None:
        for _attempt in range(3):  # an editor saving while Cairn writes: taken in, then again
            choices = self._folders.get(ws_id)
            current = self._knowledge.get(ws_id, outside=False)
            mine = file_bytes(current.text)
            found = disk.read(path)
            if found is not None and found.refusal is not None:
                # A link, a folder or a special file where CAIRN.md was: never read, never
                # replaced (it is the person's, or a pull's, to sort out).
                self._problems[ws_id] = (f"{FILE_NAME} is not read: {found.refusal}; the "
                                         "document is unchanged and the file is left as it is.")
                self._remember(ws_id, found)
                return
            if found is not None and not _same(found.data, mine) \
                    and choices.written_sha is not None \
                    and _sha(found.data) != choices.written_sha:
                if not self._take_in(ws_id, found, current, choices):
                    return
                continue  # the merged text is written out at the next turn
            self._problems.pop(ws_id, None)
            if found is not None and found.data == mine:  # already the document: note it
                if choices.written_version != current.version \
                        or choices.written_sha != _sha(mine):
                    self._folders.mark_written(ws_id, current.version, _sha(mine))
                self._remember(ws_id, found)
                return
            if found is None and not write_missing \
                    and choices.written_version == current.version:
                self._remember(ws_id, None)  # deleted by the person: written at the next version
                return
            if disk.write(path, mine, expect=found):
                self._folders.mark_written(ws_id, current.version, _sha(mine))
                self._seen[ws_id] = disk.identity(disk.look(path))
                return
            log.info("%s changed while Cairn wrote it: taken in first", path)

    def _take_in(self, ws_id: str, found: Found, current: Document,
                 choices: FolderChoices) -> bool:
        """An outside edit, merged against the version the file descends from and saved;
        False when it cannot be (said in the state) or the document moved meanwhile."""
        reason = invalid_reason(found.data, found.size)
        if reason is not None:
            self._problems[ws_id] = (f"The edit of {FILE_NAME} was not taken in: {reason}; the "
                                     "document is unchanged and the file is left as it is.")
            self._remember(ws_id, found)
            return False
        self._problems.pop(ws_id, None)
        text = found.data.decode("utf-8")
        base = self._text_of(ws_id, choices.written_version)
        if base is not None and choices.written_version != current.version:
            # Cairn saved versions the file has not held yet (a rebuild committed before the
            # edit was seen): the edit goes on top of them, so neither side is lost.
            text = merge3(base, text, current.text).text
        removed = self._removed_by(ws_id, text, base, choices)
        result = self._knowledge.save(ws_id, text, source=SOURCE, based_on=current.version)
        if not isinstance(result, Saved):
            return False  # moved on meanwhile (another process): the next read looks again
        self._folders.mark_written(ws_id, result.document.version, _sha(found.data))
        self._folders.mark_read(ws_id, result.document.version, removed=removed)
        self._remember(ws_id, found)
        return True

    def _text_of(self, ws_id: str, version: int | None) -> str | None:
        if not version:
            return None
        try:
            return self._knowledge.version_text(ws_id, version)
        except Refused:
            return None

    def _removed_by(self, ws_id: str, text: str, base: str | None,
                    choices: FolderChoices) -> str:
        """The entries Cairn wrote to the file since it last read it that *text* (the
        document after the edit) no longer has, with those still unresolved (JSON places)."""
        places = [p for p in _places(choices.removed)]
        read = "" if choices.read_version == 0 else self._text_of(ws_id, choices.read_version)
        if base is not None and read is not None:
            before = {doc.normalise(e.text) for e in doc.parse(read).entries}
            parsed = doc.parse(base)
            places += [place_of(parsed, e) for e in parsed.entries
                       if doc.normalise(e.text) not in before]
        now = [doc.normalise(e.text) for e in doc.parse(text).entries]
        kept: list[Place] = []
        for place in places:
            key = doc.normalise(place.text)
            if not _edited_into(key, now) and all(doc.normalise(k.text) != key for k in kept):
                kept.append(place)
        return json.dumps([p.to_json() for p in kept], ensure_ascii=False)

    # ----------------------------------------------------------------- what an outside save removed

    def restore_removed(self, ws_id: str) -> Document:
        """The entries an outside save removed of Cairn's, put back where they stood (as the
        person's save); the notice goes."""
        for _attempt in range(3):
            current = self._knowledge.get(ws_id)
            places = _places(self._folders.get(ws_id).removed)
            parsed = doc.parse(current.text)
            splices = []
            for place in places:
                if find(parsed, place) is not None:
                    continue  # back already
                lines = place.text.split("\n")
                head = doc.item_text(lines[0].rstrip("\r"))
                section = place.section or doc.SECTIONS[1]
                splices.append(insertion(parsed, section, place.position, head,
                                         [x.rstrip("\r") for x in lines[1:]]))
            text = doc.splice(parsed, splices) if splices else current.text
            result = self._knowledge.save(ws_id, text, source="user", based_on=current.version)
            if isinstance(result, Saved):
                self._folders.set_removed(ws_id, "[]")
                return result.document
        raise Refused("cannot restore the entries now: the document keeps changing; try again")

    def dismiss_removed(self, ws_id: str) -> None:
        """The person keeps the outside save as it is: the notice goes."""
        self._folders.set_removed(ws_id, "[]")

    # ----------------------------------------------------------------- conflict copies

    def _copies_check(self, ws_id: str, folder: Path) -> bool:
        """Look for conflict copies when the folder changed since the last look (a file
        added or renamed in it); True when the list to offer changed."""
        around = disk.identity(disk.look(folder))
        if ws_id in self._folder_seen and self._folder_seen[ws_id] == around:
            return False
        self._folder_seen[ws_id] = around
        return self._look_for_copies(ws_id, folder)

    def _look_for_copies(self, ws_id: str, folder: Path) -> bool:
        """Note the conflict copies beside CAIRN.md not yet merged or dismissed; True when
        that list changed."""
        done = set(self._folders.get(ws_id).copies_done)
        found = tuple(name for name, item in disk.copies(folder)
                      if (name, _sha(item.data)) not in done)
        changed = found != self._copies.get(ws_id, ())
        self._copies[ws_id] = found
        return changed

    def copy_text(self, ws_id: str, name: str) -> str:
        """A conflict copy's text, read by the rule of :mod:`app.knowledge.cairn_disk`."""
        return self._copy(ws_id, name)[0]

    def _copy(self, ws_id: str, name: str) -> tuple[str, str]:
        ws = self._registry.get_workspace(ws_id)
        if not disk.is_copy_name(name) or "/" in name or "\\" in name:
            raise Refused(f"'{shown(name)}' is not a conflict copy of {FILE_NAME}")
        problem = disk.folder_problem(ws.path)
        if problem is not None:
            raise Refused(f"cannot read '{shown(name)}': {_lower(problem)}")
        found = disk.read(Path(ws.path) / name)
        if found is None:
            raise Refused(f"'{shown(name)}' is not in the folder any more")
        reason = disk.why_not(found)
        if reason is not None:
            raise Refused(f"cannot read '{shown(name)}': {reason}")
        return found.data.decode("utf-8"), _sha(found.data)

    def merge_copy(self, ws_id: str, name: str) -> Document:
        """A conflict copy merged into the document (the person's save): every line either
        has is kept, the lines both have once.  The copy stays in the folder, no longer
        offered."""
        text, sha = self._copy(ws_id, name)
        for _attempt in range(3):
            current = self._knowledge.get(ws_id)
            merged = merge3(_common(current.text, text), current.text, text).text
            result = self._knowledge.save(ws_id, merged, source="user",
                                          based_on=current.version)
            if isinstance(result, Saved):
                self._done(ws_id, name, sha)
                return result.document
        raise Refused("cannot merge the copy now: the document keeps changing; try again")

    def dismiss_copy(self, ws_id: str, name: str) -> None:
        """Not offered again (until it changes); the file stays where it is."""
        _text, sha = self._copy(ws_id, name)
        self._done(ws_id, name, sha)

    def _done(self, ws_id: str, name: str, sha: str) -> None:
        self._folders.copy_done(ws_id, name, sha)
        self._copies[ws_id] = tuple(n for n in self._copies.get(ws_id, ()) if n != name)

    # ----------------------------------------------------------------- hooks

    def _before_read(self, owner: str) -> None:
        if owner.startswith("ws_"):
            self.sync(owner)

    def _before_save(self, owner: str, text: str, based_on: int | None) -> str:
        """A person's save: an unread outside edit is taken in first.  Saved on a version it
        names, the save then meets a newer version (the window offers Merge); naming none,
        it lands on top of the edit, merged with it, so the edit is never overwritten."""
        if not owner.startswith("ws_") or not self._folders.get(owner).knowledge_file:
            return text
        before = self._knowledge.get(owner, outside=False)
        self.sync(owner)
        after = self._knowledge.get(owner, outside=False)
        if based_on is not None or after.version == before.version or after.source != SOURCE:
            return text
        return merge3(before.text, text, after.text).text

    def _saved(self, event: KnowledgeSaved) -> None:
        if event.owner.startswith("ws_"):
            self.sync(event.owner)

    # ----------------------------------------------------------------- the disk

    def _remember(self, ws_id: str, found: Found | None) -> None:
        self._seen[ws_id] = found.identity if found is not None else None


def _places(raw: str) -> tuple[Place, ...]:
    try:
        items = json.loads(raw)
    except (TypeError, ValueError):
        return ()
    return tuple(Place(i.get("section"), int(i.get("position", 0)), str(i["text"]))
                 for i in items if isinstance(i, dict) and isinstance(i.get("text"), str))


def _edited_into(key: str, entries: list[str]) -> bool:
    """Is the entry *key* (normalised) still there, as it was or edited (most of its
    characters in one entry of *entries*)?  A changed value is an edit, not a removal."""
    if key in entries:
        return True
    for other in entries:
        matcher = difflib.SequenceMatcher(None, key, other, autojunk=False)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6 \
                and matcher.ratio() >= 0.6:
            return True
    return False


def _common(a: str, b: str) -> str:
    """The lines *a* and *b* share, in order: the base of a merge that keeps both."""
    left, right = split_lines(a), split_lines(b)
    keys_a = [x.rstrip("\r\n") for x in left]
    keys_b = [x.rstrip("\r\n") for x in right]
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    return "".join(line for block in matcher.get_matching_blocks()
                   for line in left[block.a:block.a + block.size])


__all__ = ["FILE_NAME", "SOURCE", "FileState", "CairnFileSync", "invalid_reason"]


def file_bytes(text: str) -> bytes:
    """The document as CAIRN.md holds it: its text ending with a newline (issue 36), so that
    a line added with ``echo … >> CAIRN.md`` starts a line of its own."""
    data = text.encode("utf-8", "surrogatepass")
    if not data or data.endswith((b"\n", b"\r")):
        return data
    return data + (b"\r\n" if b"\r\n" in data else b"\n")  # in the text's own style


def _same(data: bytes, mine: bytes) -> bool:
    """The file says what the document says (it may lack the final newline Cairn adds: an
    editor's save, or a file written before; the next write adds it)."""
    return data == mine or (mine.startswith(data) and mine[len(data):] in (b"\n", b"\r\n"))
