"""Importing an export: the one use case the command line (``cairn import-history``) and the
window (File → Import from Claude.ai or ChatGPT…) both call.

1. :func:`preview` opens the export, checks every bound on every file (nothing is written
   before the whole export passed), and says what it holds: counts, projects with the folder
   each would get, what was imported before.
2. :func:`import_history` stores it: each project becomes a workspace (the folder the person
   picked, or ``<first-use folder>/Imported/<name>``) with its instructions and its documents
   as knowledge files; chats outside projects land Ungrouped; chats are stored a batch per
   transaction (a stop or a crash keeps whole chats only), imported ones marked learned;
   memories and custom instructions become suggestions, never merged.  A chat imported before
   gains only the messages it does not hold; the same export twice adds nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base import paths
from app.base.locations import first_use_dir
from app.base.paths import shown
from app.errors import Refused
from app.history.model import (
    SOURCE_NAMES,
    Chat,
    Memory,
    Project,
    attachment_block,
    files_note,
    text_block,
)
from app.history.reader import Export, Survey, open_export
from app.store import imported as store
from app.store.blobs import BlobStore
from app.store.documents import PERSONAL
from app.store.import_marker import import_lock, mark_import, undo_import
from app.store.imported import NewChat, NewMessage, Stored
from app.store.suggestions import Proposed

if TYPE_CHECKING:
    from app.store.files import FileStore
    from app.store.registry.registry import Registry

log = logging.getLogger(__name__)

BATCH_CHATS = 250  # chats per transaction
BATCH_MESSAGES = 25_000  # or messages, whichever comes first
IMPORTED = "Imported"


@dataclass(frozen=True, slots=True)
class ProjectPlan:
    source_id: str
    name: str
    folder: str  # where its workspace is (or will be)
    workspace_id: str | None  # the workspace it is already (imported before, or that folder)
    chats: int
    docs: int

    def to_json(self) -> dict[str, Any]:
        return {"id": self.source_id, "name": self.name, "folder": self.folder,
                "workspace": self.workspace_id, "chats": self.chats, "docs": self.docs}


@dataclass(frozen=True, slots=True)
class Preview:
    source: str
    source_name: str
    chats: int
    messages: int
    known_chats: int  # imported before
    projects: tuple[ProjectPlan, ...]
    memories: bool
    images: int

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "chats": self.chats, "messages": self.messages,
                "imported_before": self.known_chats,
                "projects": [p.to_json() for p in self.projects], "memories": self.memories,
                "images": self.images}


@dataclass(frozen=True, slots=True)
class Progress:
    chats: int  # read so far
    total: int
    imported: int  # chats stored (new or gaining messages)
    title: str  # the chat being read


@dataclass(slots=True)
class Report:
    source: str
    dry_run: bool = False
    cancelled: bool = False
    chats_new: int = 0
    chats_updated: int = 0
    chats_unchanged: int = 0
    messages: int = 0
    attachments: int = 0
    workspaces: list[dict[str, Any]] = field(default_factory=list)
    knowledge_files: int = 0
    suggestions: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (what, why)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "dry_run": self.dry_run, "cancelled": self.cancelled,
                "chats": {"new": self.chats_new, "updated": self.chats_updated,
                          "unchanged": self.chats_unchanged},
                "messages": self.messages, "attachments": self.attachments,
                "workspaces": self.workspaces, "knowledge_files": self.knowledge_files,
                "suggestions": self.suggestions,
                "skipped": [{"what": w, "why": y} for w, y in self.skipped]}

    def lines(self) -> list[str]:
        """The report as a person reads it (the command line prints it; the window too)."""
        name = SOURCE_NAMES.get(self.source, self.source)
        would = "Would import" if self.dry_run else "Imported"
        out = [f"{would} from {name}: {self.chats_new} new chat(s), {self.chats_updated} "
               f"with new messages, {self.messages} message(s), {self.attachments} attached "
               "file(s)."]
        if self.chats_unchanged:
            out.append(f"Already imported, nothing new: {self.chats_unchanged} chat(s).")
        for ws in self.workspaces:
            verb = ("would be" if self.dry_run else "is") if ws["created"] else "joins"
            out.append(f"Project \"{ws['name']}\" {verb} the workspace at {ws['folder']}"
                       + (f" ({ws['files']} knowledge file(s))" if ws.get("files") else ""))
        if self.suggestions:
            out.append(f"{self.suggestions} suggestion(s) from memories and instructions wait "
                       "in the knowledge panels, for you to accept or dismiss.")
        for what, why in self.skipped:
            out.append(f"Skipped {what}: {why}")
        if self.cancelled:
            out.append("Stopped: the chats imported so far are kept; import again to go on.")
        return out


# ===================================================================== preview


def preview(registry: Registry, source: Path, *, folders: dict[str, str] | None = None,
            into: str | None = None) -> Preview:
    """What *source* holds and where its projects would go; refused in one sentence when it
    is not an export or passes a bound (nothing is written)."""
    with open_export(source) as export:
        return _preview(registry, export, folders or {}, into)


def _preview(registry: Registry, export: Export, folders: dict[str, str],
             into: str | None) -> Preview:
    survey = export.survey
    known = store.known_chats(registry.db, survey.source)
    plans = _plans(registry, survey, folders, into)
    return Preview(survey.source, survey.source_name, survey.chats, survey.messages,
                   sum(1 for sid in survey.chat_ids if sid in known), tuple(plans),
                   survey.memories, survey.images)


def default_root(into: str | None = None) -> str:
    """Where new project folders go: *into*, else ``<first-use folder>/Imported``."""
    return into if into else str(first_use_dir() / IMPORTED)


_UNSAFE = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
             *(f"lpt{i}" for i in range(1, 10))}


def folder_name(name: str) -> str:
    """A project's name as a folder name every system accepts."""
    clean = _UNSAFE.sub(" ", name)
    clean = " ".join(clean.split()).strip(" .")[:80].strip(" .")
    if not clean or clean.lower().split(".")[0] in _RESERVED:
        clean = f"Project {clean}".strip()
    return clean


def _plans(registry: Registry, survey: Survey, folders: dict[str, str],
           into: str | None) -> list[ProjectPlan]:
    known = store.known_projects(registry.db, survey.source)
    root = default_root(into)
    plans: list[ProjectPlan] = []
    used: set[str] = set()
    for p in survey.projects:
        ws_id = known.get(p.source_id)
        ws = registry.workspace(ws_id) if ws_id else None
        chosen = folders.get(p.source_id) or folders.get(p.name)
        if ws is not None and not chosen:
            plans.append(ProjectPlan(p.source_id, p.name, ws.path, ws.id, p.chats, p.docs))
            continue
        if chosen:
            folder = chosen
        else:
            base = folder_name(p.name)
            folder, n = os.path.join(root, base), 2
            while folder.casefold() in used:
                folder, n = os.path.join(root, f"{base} ({n})"), n + 1
        used.add(folder.casefold())
        taken = registry.workspace_for_folder(folder) if os.path.isdir(folder) else None
        plans.append(ProjectPlan(p.source_id, p.name, folder, taken.id if taken else None,
                                 p.chats, p.docs))
    return plans


# ===================================================================== import


def import_history(registry: Registry, files: FileStore, source: Path, *,
                   folders: dict[str, str] | None = None, into: str | None = None,
                   dry_run: bool = False, progress: Callable[[Progress], None] | None = None,
                   stop: threading.Event | None = None) -> Report:
    """Import the export *source* (see the module's text); *folders* maps a project (its name
    or id) to the folder its workspace takes.  *stop* set: the batch read so far is stored
    and the import ends there, its report saying so.  Refused in one sentence, nothing
    written, when the export does not pass its checks or a project's folder cannot be used."""
    folders = dict(folders or {})
    for folder in folders.values():
        if not paths.is_fully_qualified(folder):
            raise Refused(f"Workspace path is not fully qualified: '{shown(folder)}'")
    if into is not None and not paths.is_fully_qualified(into):
        raise Refused(f"Workspace path is not fully qualified: '{shown(into)}'")
    with open_export(source) as export:
        survey = export.survey
        report = Report(survey.source, dry_run=dry_run)
        plans = _plans(registry, survey, folders, into)
        unknown = set(folders) - {p.source_id for p in plans} - {p.name for p in plans}
        if unknown:
            raise Refused(f"cannot import '{shown(str(source))}': it holds no project named "
                          f"'{shown(sorted(unknown)[0])}'")
        projects = {p.source_id: p for p in export.projects()} if survey.projects else {}
        homes = _workspaces(registry, files, plans, projects, report, dry_run)
        _chats(registry, export, homes, report, dry_run, progress, stop)
        if not report.cancelled:
            _suggest(registry, export, homes, report, dry_run)
    return report


def _workspaces(registry: Registry, files: FileStore, plans: list[ProjectPlan],
                projects: dict[str, Project], report: Report, dry_run: bool
                ) -> dict[str, tuple[str, str]]:
    """Each project's workspace (made when missing): project id -> (workspace id, folder)."""
    homes: dict[str, tuple[str, str]] = {}
    for plan in plans:
        project = projects.get(plan.source_id)
        entry: dict[str, Any] = {"name": plan.name, "folder": plan.folder,
                                 "created": plan.workspace_id is None, "files": 0}
        report.workspaces.append(entry)
        if dry_run:
            if project is not None:
                entry["files"] = len(project.docs)
            homes[plan.source_id] = (plan.workspace_id or f"new:{plan.source_id}", plan.folder)
            continue
        ws_id = plan.workspace_id
        if ws_id is None:
            try:
                os.makedirs(plan.folder, exist_ok=True)
            except OSError as error:
                from app.errors import os_reason

                raise Refused(f"cannot make the folder '{shown(plan.folder)}' for the project "
                              f"\"{shown(plan.name)}\": {os_reason(error)}") from None
            ws, _made = registry.add_workspace(plan.folder, at_end=True)
            ws_id = ws.id
            if project is not None:
                registry.rename_workspace(ws_id, project.name)
                registry.update_workspace(ws_id, description=project.description[:2000],
                                          instructions=project.instructions)
        elif project is not None and project.instructions.strip():
            ws = registry.get_workspace(ws_id)
            if not ws.instructions.strip():
                registry.update_workspace(ws_id, instructions=project.instructions)
            elif ws.instructions.strip() != project.instructions.strip():
                report.skipped.append((f"the instructions of \"{plan.name}\"",
                                       "its workspace has instructions of its own; they are "
                                       "kept (the project's are offered as a suggestion)"))
        store.remember_project(registry.db, report.source, plan.source_id, ws_id)
        ws = registry.get_workspace(ws_id)
        homes[plan.source_id] = (ws_id, ws.path)
        if project is not None:
            entry["files"] = _docs(registry, files, report, ws_id, project)
    return homes


def _docs(registry: Registry, files: FileStore, report: Report, ws_id: str,
          project: Project) -> int:
    """The project's documents as knowledge files (each once, however often imported)."""
    seen = store.seen_items(registry.db, report.source, "doc")
    added = 0
    with tempfile.TemporaryDirectory(prefix="cairn-docs-") as temp:
        for n, doc in enumerate(project.docs):
            key = project.source_id + ":" + hashlib.sha256(
                (doc.name + "\0" + doc.text).encode("utf-8")).hexdigest()
            if key in seen:
                continue
            folder = Path(temp) / str(n)
            folder.mkdir()
            path = folder / doc.name.replace("/", "_").replace("\\", "_")
            path.write_text(doc.text, encoding="utf-8")
            try:
                files.add(ws_id, path)
            except Refused as refused:
                report.skipped.append((f"the document \"{doc.name}\"", str(refused)))
                continue
            store.remember_item(registry.db, report.source, "doc", key)
            added += 1
            report.knowledge_files += 1
    return added


def _chats(registry: Registry, export: Export, homes: dict[str, tuple[str, str]],
           report: Report, dry_run: bool, progress: Callable[[Progress], None] | None,
           stop: threading.Event | None) -> None:
    known = store.known_chats(registry.db, report.source)
    data = registry.db.path.parent
    blobs = _Blobs(registry, BlobStore(data / "files"), secrets.token_hex(8))
    total = export.survey.chats
    batch: list[NewChat] = []
    read = 0

    def flush() -> None:
        nonlocal batch
        if batch and not dry_run:
            _tally(store.store_chats(registry, batch, blobs.pending), report)
            blobs.pending = []
        batch = []

    with nullcontext() if dry_run else import_lock(data, blobs.token):
        try:
            read = _read_chats(registry, export, homes, report, dry_run, progress, stop, known,
                               blobs, lambda chat, n: batch.append(chat), flush,
                               lambda: (len(batch), sum(len(c.messages) for c in batch)))
            flush()
        finally:
            blobs.undo()  # the blobs of a batch that never committed (a refusal, a crash)
    _tick(progress, read, total, report, "")


class _Blobs:
    """The blobs an import writes: each marked in progress first (``app.store.import_marker``),
    the marks cleared by the transaction that stores its chat."""

    def __init__(self, registry: Registry, store: BlobStore, token: str) -> None:
        self.registry = registry
        self.store = store
        self.token = token
        self.pending: list[int] = []
        self._shas: dict[int, str] = {}

    def put(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        marker = mark_import(self.registry.db, self.token, [sha], [])
        self.pending.append(marker)
        self._shas[marker] = sha
        self.store.put(data, prefix=f".import-{self.token}-")
        return sha

    def undo(self) -> None:
        for marker in self.pending:
            undo_import(self.registry.db, self.store, marker, self.token,
                        [self._shas[marker]], [])
        self.pending = []


def _read_chats(registry: Registry, export: Export, homes: dict[str, tuple[str, str]],
                report: Report, dry_run: bool, progress: Callable[[Progress], None] | None,
                stop: threading.Event | None, known: dict[str, str], blobs: _Blobs,
                add: Callable[[NewChat, int], None], flush: Callable[[], None],
                size: Callable[[], tuple[int, int]]) -> int:
    total = export.survey.chats
    read = 0
    for chat in export.chats():
        read += 1
        for why in chat.skipped:
            report.skipped.append((f"part of the chat \"{chat.title}\"", why))
        home = homes.get(chat.project) if chat.project else None
        if chat.source_id in known:
            new_ids = _new_messages(registry, known[chat.source_id], chat)
            if not new_ids:
                report.chats_unchanged += 1
                _tick(progress, read, total, report, chat.title)
                if stop is not None and stop.is_set():
                    report.cancelled = read < total
                    break
                continue
            messages = [m for m in chat.messages if m.source_id in new_ids]
        else:
            messages = chat.messages
        if not messages and chat.source_id not in known:
            report.skipped.append((f"the chat \"{chat.title}\"", "it holds no messages"))
            _tick(progress, read, total, report, chat.title)
            continue
        if dry_run:
            if chat.source_id in known:
                report.chats_updated += 1
            else:
                report.chats_new += 1
            report.messages += len(messages)
            report.attachments += sum(len(m.files) for m in messages if m.role == "user")
        else:
            add(_new_chat(chat, messages, home, blobs, report), len(messages))
        chats, messages_waiting = size()
        if chats >= BATCH_CHATS or messages_waiting >= BATCH_MESSAGES:
            flush()
        _tick(progress, read, total, report, chat.title)
        if stop is not None and stop.is_set():
            report.cancelled = read < total
            break
    return read


def _tick(progress: Callable[[Progress], None] | None, read: int, total: int, report: Report,
          title: str) -> None:
    if progress is not None:
        progress(Progress(read, max(total, read), report.chats_new + report.chats_updated,
                          title))


def _tally(done: Iterable[Stored], report: Report) -> None:
    for d in done:
        if d.new:
            report.chats_new += 1
        elif d.added:
            report.chats_updated += 1
        else:
            report.chats_unchanged += 1
        report.messages += d.added


def _new_messages(registry: Registry, chat_id: str, chat: Chat) -> set[str]:
    have = store.message_sources(registry.db, chat_id)
    return {m.source_id for m in chat.messages} - have


def _new_chat(chat: Chat, messages: list[Any], home: tuple[str, str] | None,
              blobs: _Blobs, report: Report) -> NewChat:
    stored: list[NewMessage] = []
    for m in messages:
        content = list(m.blocks)
        if m.files:
            if m.role == "user":
                refs = []
                for f in m.files:
                    if f.data is None:
                        continue
                    sha = blobs.put(f.data)
                    refs.append(attachment_block(f.name, f.media_type, len(f.data), sha))
                    report.attachments += 1
                content = refs + content  # files before the words, as Cairn sends them
            else:
                content.append(text_block(files_note([f.name for f in m.files])))
        stored.append(NewMessage(m.source_id, m.parent, m.role, content, m.created_at,
                                 m.model))
    return NewChat(chat.source, chat.source_id, chat.title, chat.created_at, chat.updated_at,
                   home[1] if home else None, home[0] if home else None, stored, chat.leaf)


def _suggest(registry: Registry, export: Export, homes: dict[str, tuple[str, str]],
             report: Report, dry_run: bool) -> None:
    """Memories and custom instructions as suggestions: one per line, never merged."""
    memories: list[Memory] = export.memories() + export.instructions
    proposals: list[tuple[str, Proposed]] = []
    name = SOURCE_NAMES.get(report.source, report.source)
    for memory in memories:
        owner = PERSONAL
        section = "Facts"
        if memory.project is not None:
            home = homes.get(memory.project)
            if home is None:
                report.skipped.append(("a project's memory", "its project is not in this "
                                                             "export"))
                continue
            owner = home[0]
        if memory.source_id.startswith("instructions:"):
            section = "Working style & preferences"
        for line in _entries(memory.text):
            key = hashlib.sha256(f"{owner}\0{line}".encode()).hexdigest()
            proposals.append((key, Proposed(owner, "add", section, (), line,
                                            f"From your {name} export (memory or custom "
                                            "instructions): yours to accept or dismiss")))
    if dry_run:
        seen = store.seen_items(registry.db, report.source, "suggestion")
        report.suggestions = sum(1 for key, _ in proposals if key not in seen)
    elif proposals:
        report.suggestions = store.offer(registry.db, report.source, proposals)
        if report.suggestions:
            from app.events import SuggestionsChanged

            owners = sorted({p.owner for _, p in proposals})
            registry.hub.emit(*(SuggestionsChanged(o) for o in owners))


def _entries(text: str) -> list[str]:
    """A memory's markdown as entries: one per list item or paragraph line, headings left out
    (a suggestion is one entry, never structure)."""
    found = []
    for line in text.splitlines():
        clean = line.strip()
        if not clean or clean.startswith("#"):
            continue
        clean = re.sub(r"^([-*+]|\d+[.)])\s+", "", clean).strip()
        if clean and clean not in found:
            found.append(clean[:1000])
    return found[:200]
