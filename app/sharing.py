"""Sharing a workspace: export it with its folders to a ``.cairn`` bundle, import a bundle
into a folder as a new workspace (the format: ``app.bundle``).

An import is all-or-nothing.  The bundle is checked whole before anything is written; then
an in-progress marker naming the blobs it will write is committed, the folders and blobs are
written, and one transaction adds every record and clears the marker.  A crash before that
commit leaves the marker, and the next start rolls the import back: the blobs no record
uses and the folders it made (when still empty) go, and no workspace appears.  While an
import runs it holds a lock file, so a process starting meanwhile leaves it alone.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from app import paths
from app.blob_refs import in_use
from app.blobs import BlobStore
from app.bundle import (
    FORMAT,
    FORMAT_VERSION,
    Bundle,
    BundleReader,
    attachments,
    folder_problem,
    open_bundle,
    write_bundle,
)
from app.db import Database, utc_now
from app.errors import Refused, os_reason
from app.ids import new_id
from app.paths import shown
from app.records import Workspace

if TYPE_CHECKING:
    from app.registry import Registry

log = logging.getLogger(__name__)

LOCKS = "imports"  # lock files of imports under way, in the data folder


@dataclass(frozen=True, slots=True)
class Exported:
    path: str
    workspaces: int
    files: int
    chats: int
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "workspaces": self.workspaces, "files": self.files,
                "chats": self.chats, "size": self.size}


@dataclass(frozen=True, slots=True)
class Imported:
    workspace: Workspace
    folders: tuple[Workspace, ...]
    files: int
    chats: int


# ===================================================================== export


def export_workspace(registry: Registry, ws_id: str, target: Path, *, with_chats: bool = False,
                     with_history: bool = False, replace: bool = False) -> Exported:
    """Write *ws_id* and its folders to the bundle *target*.

    Its knowledge documents (current version, and their history with *with_history*), its
    files, and with *with_chats* its chats with their messages.  Never the API key, settings,
    personal memory or an absolute path.  An existing *target* is refused unless *replace*.
    """
    ws = registry.get_workspace(ws_id, verb="export")
    refuse = f"cannot export to '{shown(str(target))}'"
    try:
        if target.is_dir():
            raise Refused(f"{refuse}: it is a folder")
        if not replace and os.path.lexists(target):
            raise Refused(f"{refuse}: a file is already there")
        if not target.parent.is_dir():
            raise Refused(f"{refuse}: its folder does not exist")
    except (OSError, ValueError) as error:
        raise Refused(f"{refuse}: {os_reason(error)}") from None
    tree = _descendants(registry, ws)
    folders = [(w, _relative(ws, w)) for w in tree]
    for w, rel in folders:
        problem = folder_problem(rel)
        if problem:
            raise Refused(f"cannot export workspace '{ws_id}': its folder '{shown(rel)}' "
                          f"{problem}")
    blobs = BlobStore(registry.db.path.parent / "files")
    chats: dict[int, dict[str, Any]] = {}
    chat_number: dict[str, int] = {}
    entries: list[dict[str, Any]] = []
    file_count = 0
    needed: dict[str, Path] = {}
    with registry.db.snapshot() as conn:
        if with_chats:
            for w, _ in folders:
                for chat_id in registry.chat_order(w.id):
                    chat_number[chat_id] = len(chat_number)
            for chat_id, number in chat_number.items():
                chats[number] = _chat_json(conn, registry, chat_id)
        for w, rel in folders:
            files = []
            for name, media_type, size, sha, description, created in conn.execute(
                    "SELECT name, media_type, size, sha256, description, created_at"
                    " FROM knowledge_file WHERE workspace_id = ? ORDER BY created_at, id",
                    (w.id,)):
                if not blobs.path(sha).is_file():
                    raise Refused(f"cannot export workspace '{ws_id}': the content of the file "
                                  f"'{shown(name)}' is missing from Cairn's storage")
                needed[sha] = blobs.path(sha)
                files.append({"name": name, "media_type": media_type, "size": size,
                              "sha256": sha, "description": description, "created_at": created})
            file_count += len(files)
            entries.append({
                "folder": rel, "title": w.title, "description": w.description,
                "instructions": w.instructions, "build_status": w.build_status,
                "created_at": w.created_at, "updated_at": w.updated_at,
                "knowledge": _knowledge_json(conn, w.id, chat_number, with_history),
                "files": files,
                "chats": [f"chats/{chat_number[c]}.json"
                          for c in registry.chat_order(w.id) if c in chat_number],
            })
    for chat in chats.values():
        for message in chat["messages"]:
            for sha in attachments(message["content"]):
                if sha not in needed and blobs.path(sha).is_file():
                    needed[sha] = blobs.path(sha)  # a lost attachment stays lost
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "cairn_version": _version(), "created_at": utc_now(), "workspaces": entries}
    try:
        size = write_bundle(target, manifest, chats, needed, replace=replace)
    except FileExistsError:
        raise Refused(f"{refuse}: a file is already there") from None
    except (OSError, ValueError) as error:
        raise Refused(f"{refuse}: {os_reason(error)}") from None
    return Exported(path=str(target), workspaces=len(entries),
                    files=file_count, chats=len(chats), size=size)


def _descendants(registry: Registry, ws: Workspace) -> list[Workspace]:
    """*ws*, then its folders depth first, each level in display order."""
    found = [ws]
    for child in registry.children(ws.id):
        found += _descendants(registry, child)
    return found


def _relative(root: Workspace, ws: Workspace) -> str:
    if ws.id == root.id:
        return ""
    rel = os.path.relpath(ws.path, root.path)
    return "/".join(Path(rel).parts)


def _knowledge_json(conn: sqlite3.Connection, owner: str, chat_number: dict[str, int],
                    with_history: bool) -> dict[str, Any] | None:
    row = conn.execute("SELECT text, version, updated_at, source, chat_id FROM knowledge"
                       " WHERE owner = ?", (owner,)).fetchone()
    if row is None:
        return None
    text, version, updated_at, source, chat_id = row
    history = None
    if with_history:
        history = [{"version": v, "text": t, "source": s, "saved_at": at,
                    "chat": chat_number.get(c) if c else None}
                   for v, t, s, c, at in conn.execute(
                       "SELECT version, text, source, chat_id, saved_at FROM knowledge_version"
                       " WHERE owner = ? ORDER BY version", (owner,))]
        if not history or history[-1]["version"] != version:  # a history older than itself
            history.append({"version": version, "text": text, "source": source,
                            "saved_at": updated_at, "chat": chat_number.get(chat_id)})
    return {"text": text, "version": version, "updated_at": updated_at, "source": source,
            "chat": chat_number.get(chat_id) if chat_id else None, "history": history}


def _chat_json(conn: sqlite3.Connection, registry: Registry, chat_id: str) -> dict[str, Any]:
    chat = registry.get_chat(chat_id)
    rows = conn.execute(
        "SELECT id, role, content, status, error, model, input_tokens, cache_write_tokens,"
        " cache_read_tokens, output_tokens, cost_usd, created_at, superseded_by FROM message"
        " WHERE chat_id = ? ORDER BY id", (chat_id,)).fetchall()
    place = {row[0]: i for i, row in enumerate(rows)}
    watermark = conn.execute("SELECT knowledge_watermark FROM chat WHERE id = ?",
                             (chat_id,)).fetchone()[0]
    covered = [place[r[0]] for r in rows if r[0] <= watermark]
    messages = []
    for (_id, role, content, status, error, model, t_in, t_write, t_read, t_out, cost, created,
         superseded) in rows:
        messages.append({
            "role": role, "content": json.loads(content), "status": status, "error": error,
            "model": model, "input_tokens": t_in, "cache_write_tokens": t_write,
            "cache_read_tokens": t_read, "output_tokens": t_out, "cost_usd": cost,
            "created_at": created, "superseded_by": place.get(superseded)})
    return {"title": chat.title, "created_at": chat.created_at, "updated_at": chat.updated_at,
            "watermark": covered[-1] if covered else None, "messages": messages}


def _version() -> str:
    from app.cli import version

    return version()


# ===================================================================== import


def import_bundle(registry: Registry, source: Path, folder: str) -> Imported:
    """Import the bundle *source* into *folder* (fully qualified, as given) as a new workspace.

    Its folders become nested workspaces at their sub-folders (made when missing); its chats
    join them.  Refused with one sentence and nothing written when the bundle does not pass
    its checks, *folder* does not qualify, or a folder it needs is already a workspace.
    """
    with open_bundle(source) as reader:
        bundle = reader.bundle
        refuse = f"cannot import '{shown(str(source))}'"
        plan = _plan(registry, bundle, folder, refuse)
        data = registry.db.path.parent
        blobs = BlobStore(data / "files")
        shas = sorted({f.sha256 for w in bundle.workspaces for f in w.files}
                      | bundle.attachment_blobs)
        token = secrets.token_hex(8)
        with _import_lock(data, token) as lock:
            with registry.db.write() as conn:
                pending = conn.execute(
                    "INSERT INTO pending_change (op, args) VALUES ('import', ?)",
                    (json.dumps({"token": token, "blobs": shas, "made": plan.missing}),),
                ).lastrowid
            assert pending is not None
            try:
                for made in plan.missing:
                    os.mkdir(made)
                for sha in shas:
                    blobs.put(reader.blob(sha), prefix=f".import-{token}-")
                result = _commit(registry, reader, plan, pending, refuse)
            except OSError as error:  # a full disk, a folder it may not write in
                _undo(registry.db, blobs, pending, token, shas, plan.missing)
                raise Refused(f"{refuse}: Cairn could not write it, because "
                              f"{os_reason(error)}; nothing was imported") from None
            except BaseException:
                _undo(registry.db, blobs, pending, token, shas, plan.missing)
                raise
            lock.release()
    return result


@dataclass(frozen=True, slots=True)
class _Plan:
    root: str  # the folder as it will be canonical (after it was made, when missing)
    folders: tuple[str, ...]  # per bundle workspace: its folder, absolute
    missing: list[str]  # folders to make, parents first


def _plan(registry: Registry, bundle: Bundle, folder: str, refuse: str) -> _Plan:
    if not paths.is_fully_qualified(folder):
        raise Refused(f"Workspace path is not fully qualified: '{shown(str(folder))}'")
    missing: list[str] = []
    if os.path.lexists(folder):
        root = paths.resolve_folder(folder).canonical  # spec 004's sentences
    else:
        parent = os.path.dirname(os.path.normpath(folder))
        if not os.path.isdir(parent):
            raise Refused(f"{refuse} into '{shown(folder)}': its parent folder does not exist")
        root = os.path.join(paths.resolve_folder(parent).canonical,
                            os.path.basename(os.path.normpath(folder)))
        if os.path.lexists(root):  # the folder was spelled through a missing one and '..'
            root = paths.resolve_folder(root).canonical
        else:
            missing.append(root)
    absolute = []
    for entry in bundle.workspaces:
        here = os.path.join(root, *entry.folder.split("/")) if entry.folder else root
        absolute.append(here)
        walk = root
        for part in entry.folder.split("/") if entry.folder else ():
            walk = os.path.join(walk, part)
            if walk in missing:
                continue
            if os.path.lexists(walk) and not os.path.isdir(walk):
                raise Refused(f"{refuse} into '{shown(root)}': '{shown(walk)}' is a file where "
                              "the bundle has a folder")
            if not os.path.lexists(walk):
                missing.append(walk)
    for here in absolute:
        if here in missing:
            continue
        taken = registry.workspace_for_folder(here)
        if taken is not None:
            raise Refused(f"{refuse} into '{shown(root)}': the folder '{shown(here)}' is already "
                          f"the workspace '{taken.id}'")
    return _Plan(root=root, folders=tuple(absolute), missing=missing)


def _commit(registry: Registry, reader: BundleReader, plan: _Plan, pending: int,
            refuse: str) -> Imported:
    """Every record in one transaction, which also clears the marker."""
    bundle = reader.bundle
    resolved = [paths.resolve_folder(here) for here in plan.folders]
    blobs = BlobStore(registry.db.path.parent / "files")
    with registry._changing():
        with registry._writing() as conn:
            for here, entry in zip(resolved, bundle.workspaces):
                taken = registry._existing(here)
                if taken is not None:  # another process added it meanwhile
                    raise Refused(f"{refuse} into '{shown(plan.root)}': the folder "
                                  f"'{shown(here.canonical)}' is already the workspace "
                                  f"'{taken.id}'")
            if conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,)).rowcount != 1:
                raise Refused(f"{refuse}: another Cairn undid it while it ran; nothing was "
                              "imported, so try again")
            for sha in sorted(bundle.blobs):  # as of this transaction no purge can take one
                if not blobs.path(sha).is_file():
                    blobs.put(reader.blob(sha))
            made: list[Workspace] = []
            # Inserted last to first, each at the top: the list shows them in bundle order.
            for here, entry in reversed(list(zip(resolved, bundle.workspaces))):
                ws = registry._insert_workspace(
                    conn, here, at_end=False, title=entry.title, description=entry.description,
                    instructions=entry.instructions, build_status=entry.build_status)
                conn.execute("UPDATE workspace SET created_at = ?, updated_at = ? WHERE id = ?",
                             (entry.created_at, entry.updated_at, ws.id))
                made.insert(0, ws)
            chat_ids = _insert_chats(conn, bundle, made)
            files = 0
            for ws, entry in zip(made, bundle.workspaces):
                _insert_knowledge(conn, ws.id, entry.knowledge, chat_ids)
                for f in entry.files:
                    conn.execute(
                        "INSERT INTO knowledge_file (id, workspace_id, name, media_type, size,"
                        " sha256, description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (new_id("wf"), ws.id, f.name, f.media_type, f.size, f.sha256,
                         f.description, f.created_at))
                    files += 1
        registry._reload()
    now = [registry.get_workspace(ws.id) for ws in made]
    return Imported(workspace=now[0], folders=tuple(now[1:]), files=files, chats=len(chat_ids))


def _insert_chats(conn: sqlite3.Connection, bundle: Bundle, made: list[Workspace]
                  ) -> dict[int, str]:
    chat_ids: dict[int, str] = {}
    for ws, entry in zip(made, bundle.workspaces):
        for position, number in enumerate(entry.chats):
            chat = bundle.chats[number]
            chat_id = chat_ids[number] = new_id("ch")
            conn.execute("INSERT INTO chat (id, title, folder, created_at, updated_at)"
                         " VALUES (?, ?, ?, ?, ?)",
                         (chat_id, chat.title, ws.path, chat.created_at, chat.updated_at))
            conn.execute("INSERT INTO membership (workspace_id, chat_id, position)"
                         " VALUES (?, ?, ?)", (ws.id, chat_id, position))
            ids: list[int] = []
            for m in chat.messages:
                ids.append(conn.execute(
                    "INSERT INTO message (chat_id, role, content, status, error, model,"
                    " input_tokens, cache_write_tokens, cache_read_tokens, output_tokens,"
                    " cost_usd, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (chat_id, m.role, json.dumps(m.content, ensure_ascii=False), m.status,
                     m.error, m.model, m.input_tokens, m.cache_write_tokens,
                     m.cache_read_tokens, m.output_tokens, m.cost_usd, m.created_at),
                ).lastrowid or 0)
            for message_id, m in zip(ids, chat.messages):
                if m.superseded_by is not None:
                    conn.execute("UPDATE message SET superseded_by = ? WHERE id = ?",
                                 (ids[m.superseded_by], message_id))
            if chat.watermark is not None:  # what was learnt is not learnt again
                conn.execute("UPDATE chat SET knowledge_watermark = ? WHERE id = ?",
                             (ids[chat.watermark], chat_id))
    return chat_ids


def _insert_knowledge(conn: sqlite3.Connection, owner: str, knowledge: Any,
                      chat_ids: dict[int, str]) -> None:
    if knowledge is None:
        return
    if knowledge.history is None:  # the current text only: version 1 of this document
        version, source, chat, saved_at = 1, "import", None, utc_now()
        conn.execute("INSERT INTO knowledge_version (owner, version, text, source, chat_id,"
                     " saved_at) VALUES (?, ?, ?, ?, ?, ?)",
                     (owner, version, knowledge.text, source, chat, saved_at))
    else:
        version, source = knowledge.version, knowledge.source
        chat, saved_at = chat_ids.get(knowledge.chat), knowledge.updated_at
        conn.executemany(
            "INSERT INTO knowledge_version (owner, version, text, source, chat_id, saved_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(owner, v.version, v.text, v.source, chat_ids.get(v.chat) if v.chat is not None
              else None, v.saved_at) for v in knowledge.history])
    conn.execute("INSERT INTO knowledge (owner, text, version, updated_at, source, chat_id)"
                 " VALUES (?, ?, ?, ?, ?, ?)",
                 (owner, knowledge.text, version, saved_at, source, chat))


# ===================================================================== undoing


def roll_back_import(db: Database, pending: int, args: dict[str, Any]) -> None:
    """At start-up: undo an import that never committed, unless it is still running."""
    token = str(args.get("token", ""))
    folder = db.path.parent
    lock = folder / LOCKS / f"{token}.lock"
    handle = _try_lock(lock) if token else None
    if token and handle is None and lock.exists():
        log.info("import %s is still running; left to it", token)
        return
    try:
        _undo(db, BlobStore(folder / "files"), pending, token,
              [str(s) for s in args.get("blobs", ())], [str(m) for m in args.get("made", ())])
    finally:
        if handle is not None:
            handle.close()
        lock.unlink(missing_ok=True)


def _undo(db: Database, blobs: BlobStore, pending: int, token: str, shas: list[str],
          made: list[str]) -> None:
    """The blobs the import wrote that no record uses, its half-written blobs, its marker,
    then the folders it made, when they are still empty."""
    with db.write() as conn:
        used = in_use(conn, shas, skip_pending=pending)
        for sha in shas:
            if sha not in used:
                blobs.delete(sha)
        if token and blobs.folder.is_dir():
            for partial in blobs.folder.glob(f"*/.import-{token}-*"):
                partial.unlink(missing_ok=True)
        conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
    for path in reversed(made):
        try:
            os.rmdir(path)
        except OSError:
            pass  # not empty (the person put something there), or never made


# ===================================================================== the lock of an import


class _Lock:
    def __init__(self, path: Path, handle: IO[bytes]) -> None:
        self.path = path
        self.handle = handle

    def release(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        self.path.unlink(missing_ok=True)


@contextmanager
def _import_lock(data: Path, token: str) -> Iterator[_Lock]:
    """A lock file held while the import runs: the system lets it go when the process dies."""
    folder = data / LOCKS
    folder.mkdir(exist_ok=True)
    path = folder / f"{token}.lock"
    handle = _try_lock(path)
    if handle is None:  # pragma: no cover - a fresh random name
        raise Refused("cannot import: another import holds its lock")
    lock = _Lock(path, handle)
    try:
        yield lock
    finally:
        lock.release()


def _try_lock(path: Path) -> IO[bytes] | None:
    """Open and lock *path* without waiting; None when another process holds it."""
    try:
        handle = open(path, "a+b")
    except OSError:
        return None
    try:
        if os.name == "nt":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle
