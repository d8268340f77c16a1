"""Sharing a workspace: export it with its folders to a ``.cairn`` bundle (the format:
``app.sharing.bundle``; the import: ``app.sharing.importing``).

Everything is read in one snapshot of the database, and the bundle is written beside its
target and moved into place in one step, so a crash leaves no half-written file.  What is
written: each workspace's fields, knowledge (the history on request), files, and on request
its chats with their messages.  Never the API key, settings, personal memory, or an absolute
path of this machine: folders are named relative to the workspace.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app import version
from app.base.db import utc_now
from app.base.paths import shown
from app.errors import Refused, os_reason
from app.records import Workspace
from app.sharing.bundle import (
    FORMAT,
    FORMAT_VERSION,
    TooLarge,
    attachments,
    folder_problem,
    write_bundle,
)
from app.sharing.importing import Imported, import_bundle
from app.store.exports import read_for_export

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

__all__ = ["Exported", "Imported", "export_workspace", "import_bundle"]

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



# ===================================================================== export


def checked_target(target: Path, *, replace: bool) -> str:
    """How a refusal about *target* begins; refused at once when *target* is a folder, a file
    already there (unless *replace*), or in a folder that does not exist.  Every export (a
    bundle, a chat as Markdown) checks its file so before it writes anything."""
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
    return refuse


def export_workspace(registry: Registry, ws_id: str, target: Path, *, with_chats: bool = False,
                     with_history: bool = False, replace: bool = False) -> Exported:
    """Write *ws_id* and its folders to the bundle *target*.

    Its knowledge documents (current version, and their history with *with_history*), its
    files, and with *with_chats* its chats with their messages.  Never the API key, settings,
    personal memory or an absolute path.  An existing *target* is refused unless *replace*.
    """
    ws = registry.get_workspace(ws_id, verb="export")
    refuse = checked_target(target, replace=replace)
    tree = _descendants(registry, ws)
    folders = [(w, _relative(ws, w)) for w in tree]
    for _, rel in folders:
        problem = folder_problem(rel)
        if problem:
            raise Refused(f"cannot export workspace '{ws_id}': its folder '{shown(rel)}' "
                          f"{problem}")
    records = read_for_export(registry, folders, with_chats=with_chats,
                              with_history=with_history, refuse=f"cannot export workspace '{ws_id}'")
    entries, chats, needed, file_count = (records.entries, records.chats, records.needed,
                                          records.files)
    for chat in chats.values():
        for message in chat["messages"]:
            for sha in attachments(message["content"]):
                if sha not in needed and records.blobs.path(sha).is_file():
                    needed[sha] = records.blobs.path(sha)  # a lost attachment stays lost
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION,
                "cairn_version": version(), "created_at": utc_now(), "workspaces": entries}
    try:
        size = write_bundle(target, manifest, chats, needed, replace=replace)
    except TooLarge as error:
        hint = " (export it without the history)" if with_history else ""
        raise Refused(f"cannot export workspace '{ws_id}': {error}{hint}") from None
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
