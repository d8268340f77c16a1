"""Importing a ``.cairn`` bundle into a folder as a new workspace, all-or-nothing.

The bundle is checked whole before anything is written (``app.bundle``).  Then an in-progress
marker naming the blobs the import will write is committed, the folders and blobs are
written, and one transaction adds every record and clears the marker.  A crash before that
commit leaves the marker, and the next start rolls the import back: the blobs no record uses,
its half-written blobs and the folders it made (when still empty) go, and no workspace
appears.  While an import runs it holds a lock file, so a process starting meanwhile leaves
it alone.
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
from app.bundle import Bundle, BundleReader, open_bundle
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
class Imported:
    workspace: Workspace
    folders: tuple[Workspace, ...]
    files: int
    chats: int


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
    seen: dict[str, str] = {}
    for here, entry in zip(resolved, bundle.workspaces):
        if here.key in seen:  # a link on this disk makes two of its folders one
            raise Refused(f"{refuse} into '{shown(plan.root)}': its folders "
                          f"'{shown(seen[here.key])}' and '{shown(entry.folder)}' are one "
                          "folder on this disk")
        seen[here.key] = entry.folder or "."
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
