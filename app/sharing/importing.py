"""Importing a ``.cairn`` bundle into a folder as a new workspace, all-or-nothing.

The bundle is checked whole before anything is written (``app.sharing.bundle``); its chats
are then read again one at a time as they are stored, so memory holds one chat, never all.  Then an in-progress
marker naming the blobs the import will write is committed, the folders and blobs are
written, and one transaction adds every record and clears the marker.  A crash before that
commit leaves the marker, and the next start rolls the import back: the blobs no record uses,
its half-written blobs and the folders it made (when still empty) go, and no workspace
appears.  While an import runs it holds a lock file, so a process starting meanwhile leaves
it alone.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.base import paths
from app.base.paths import shown
from app.errors import Refused, os_reason
from app.records import Workspace
from app.sharing.bundle import Bundle, BundleReader, open_bundle
from app.store.blobs import BlobStore
from app.store.import_marker import import_lock, mark_import, undo_import
from app.store.registry.imports import commit_import

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

log = logging.getLogger(__name__)



@dataclass(frozen=True, slots=True)
class Imported:
    workspace: Workspace
    folders: tuple[Workspace, ...]
    files: int
    chats: int
    # The new workspaces whose document the bundle kept as CAIRN.md: the caller turns that on
    # (app.knowledge.cairn_file.CairnFileSync.adopt), asking first over a CAIRN.md of the folder.
    knowledge_files: tuple[str, ...] = ()


def check_bundle(source: Path) -> str:
    """Open and check *source* as an import would, writing nothing: the title of the
    workspace it holds, or :class:`Refused` with the sentence the import would say (so a
    bad file is said before the person is asked where to put it)."""
    with open_bundle(source) as reader:
        top = next((w for w in reader.bundle.workspaces if not w.folder), None)
        return top.title if top is not None else source.stem


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
        with import_lock(data, token) as lock:
            pending = mark_import(registry.db, token, shas, plan.missing)
            try:
                for made in plan.missing:
                    os.mkdir(made)
                for sha in shas:
                    blobs.put(reader.blob(sha), prefix=f".import-{token}-")
                result = _commit(registry, reader, plan, pending, refuse)
            except OSError as error:  # a full disk, a folder it may not write in
                undo_import(registry.db, blobs, pending, token, shas, plan.missing)
                raise Refused(f"{refuse}: Cairn could not write it, because "
                              f"{os_reason(error)}; nothing was imported") from None
            except BaseException:
                undo_import(registry.db, blobs, pending, token, shas, plan.missing)
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
        root = paths.resolve_folder(folder).canonical  # the same sentences as adding a folder
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
    made, files, chats = commit_import(
        registry, resolved, bundle.workspaces, reader.chat, bundle.blobs, reader.blob, pending,
        refuse=refuse, root=plan.root)
    kept = tuple(ws.id for ws, entry in zip(made, bundle.workspaces) if entry.knowledge_file)
    return Imported(workspace=made[0], folders=tuple(made[1:]), files=files, chats=chats,
                    knowledge_files=kept)
