"""Sharing a workspace: export it with its folders to a ``.cairn`` bundle (the format:
``app.bundle``; the import: ``app.importing``).

Everything is read in one snapshot of the database, and the bundle is written beside its
target and moved into place in one step, so a crash leaves no half-written file.  What is
written: each workspace's fields, knowledge (the history on request), files, and on request
its chats with their messages.  Never the API key, settings, personal memory, or an absolute
path of this machine: folders are named relative to the workspace.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.blobs import BlobStore
from app.bundle import FORMAT, FORMAT_VERSION, attachments, folder_problem, write_bundle
from app.db import utc_now
from app.errors import Refused, os_reason
from app.importing import Imported, import_bundle
from app.paths import shown
from app.records import Workspace

if TYPE_CHECKING:
    from app.registry import Registry

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
