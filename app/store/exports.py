"""What an export reads from the database, in one snapshot: each workspace's files and
knowledge (with its history on request) and, on request, its chats with their messages,
shaped as the ``.cairn`` bundle's JSON (``app.sharing.export`` writes the file)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base.paths import shown
from app.errors import Refused
from app.records import Workspace
from app.store import history as versions
from app.store.blobs import BlobStore

if TYPE_CHECKING:
    from app.store.registry.registry import Registry


@dataclass(frozen=True, slots=True)
class ExportRecords:
    entries: list[dict[str, Any]]  # per workspace, in *folders* order: the manifest's entry
    chats: dict[int, dict[str, Any]]  # chats/<n>.json by n
    needed: dict[str, Path]  # the blobs the files name, by SHA-256
    files: int
    blobs: BlobStore


def read_for_export(registry: Registry, folders: list[tuple[Workspace, str]], *,
                    with_chats: bool, with_history: bool, refuse: str) -> ExportRecords:
    """*folders*: each workspace with its folder relative to the exported one.  A file whose
    content is missing is refused (``refuse``: the sentence's start)."""
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
                    raise Refused(f"{refuse}: the content of the file '{shown(name)}' is "
                                  "missing from Cairn's storage")
                needed[sha] = blobs.path(sha)
                files.append({"name": name, "media_type": media_type, "size": size,
                              "sha256": sha, "description": description, "created_at": created})
            file_count += len(files)
            kept = conn.execute("SELECT knowledge_file FROM workspace_folder WHERE"
                                " workspace_id = ?", (w.id,)).fetchone()
            entries.append({
                # Only when on: a bundle without it reads as before, in any Cairn.
                **({"knowledge_file": True} if kept and kept[0] else {}),
                "folder": rel, "title": w.title, "description": w.description,
                "instructions": w.instructions, "build_status": w.build_status,
                "created_at": w.created_at, "updated_at": w.updated_at,
                "knowledge": _knowledge_json(conn, w.id, chat_number, with_history),
                "files": files,
                "chats": [f"chats/{chat_number[c]}.json"
                          for c in registry.chat_order(w.id) if c in chat_number],
            })
    return ExportRecords(entries=entries, chats=chats, needed=needed, files=file_count,
                         blobs=blobs)


def _knowledge_json(conn: sqlite3.Connection, owner: str, chat_number: dict[str, int],
                    with_history: bool) -> dict[str, Any] | None:
    row = conn.execute("SELECT text, version, updated_at, source, chat_id FROM knowledge"
                       " WHERE owner = ?", (owner,)).fetchone()
    if row is None:
        return None
    text, version, updated_at, source, chat_id = row
    history = None
    if with_history:
        history = [{"version": v.version, "text": v.text, "source": v.source,
                    "saved_at": v.saved_at,
                    "chat": chat_number.get(v.chat_id) if v.chat_id else None}
                   for v in versions.all_versions(conn, owner)]
        if not history or history[-1]["version"] != version:  # a history older than itself
            history.append({"version": version, "text": text, "source": source,
                            "saved_at": updated_at, "chat": chat_number.get(chat_id)})
    return {"text": text, "version": version, "updated_at": updated_at, "source": source,
            "chat": chat_number.get(chat_id) if chat_id else None, "history": history}


def _chat_json(conn: sqlite3.Connection, registry: Registry, chat_id: str) -> dict[str, Any]:
    chat = registry.get_chat(chat_id)
    rows = conn.execute(
        "SELECT id, role, content, status, error, model, input_tokens, cache_write_tokens,"
        " cache_read_tokens, output_tokens, cost_usd, created_at, parent_id FROM message"
        " WHERE chat_id = ? ORDER BY id", (chat_id,)).fetchall()  # (parents come first)
    place = {row[0]: i for i, row in enumerate(rows)}
    watermark, leaf = conn.execute("SELECT knowledge_watermark, leaf_id FROM chat WHERE id = ?",
                                   (chat_id,)).fetchone()
    covered = [place[r[0]] for r in rows if r[0] <= watermark]
    messages = []
    for (_id, role, content, status, error, model, t_in, t_write, t_read, t_out, cost, created,
         parent) in rows:
        messages.append({
            "role": role, "content": json.loads(content), "status": status, "error": error,
            "model": model, "input_tokens": t_in, "cache_write_tokens": t_write,
            "cache_read_tokens": t_read, "output_tokens": t_out, "cost_usd": cost,
            "created_at": created, "parent": place.get(parent)})
    return {"title": chat.title, "created_at": chat.created_at, "updated_at": chat.updated_at,
            "watermark": covered[-1] if covered else None, "leaf": place.get(leaf),
            "messages": messages}


