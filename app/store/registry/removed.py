"""Recently removed workspaces: kept 30 days, restorable with their identity, then purged.

Removing a workspace takes its entry off the list (its chats become Ungrouped)
but keeps what only Cairn holds: the entry's description, instructions and build status,
its knowledge document with its history, and its files.  Restore brings the entry back at
its folder, with its old id, and re-attaches the chats it held that are still Ungrouped.
After :data:`KEEP_DAYS` the purge at start-up deletes it all, blobs included.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from app.base import paths
from app.base.db import utc_now
from app.errors import Refused
from app.records import OK, Workspace
from app.store.registry.memory import Memory
from app.store.registry.state import RegistryState

log = logging.getLogger(__name__)

KEEP_DAYS = 30


@dataclass(frozen=True, slots=True)
class RemovedWorkspace:
    id: str
    title: str
    path: str
    description: str
    instructions: str
    build_status: str
    created_at: str
    updated_at: str
    removed_at: str
    chats: tuple[str, ...]  # the chats it held, in their manual order
    files: int  # how many knowledge files it keeps
    folder_missing: bool = False  # its folder is gone (looked at when listed): restore elsewhere

    @property
    def purge_after(self) -> str:
        return _stamp(_parse(self.removed_at) + timedelta(days=KEEP_DAYS))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "path": self.path,
            "build_status": self.build_status, "description": self.description,
            "instructions": self.instructions, "created_at": self.created_at,
            "updated_at": self.updated_at, "removed_at": self.removed_at,
            "purge_after": self.purge_after, "chats": list(self.chats), "files": self.files,
            "folder_missing": self.folder_missing,
        }


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _stamp(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


class RecentlyRemoved:
    """The registry's bin: what removal keeps, Restore, and the purge."""

    def __init__(self, mem: Memory, writer: RegistryState) -> None:
        self.mem = mem
        self.writer = writer

    def keep(self, conn: sqlite3.Connection, ws: Workspace) -> None:
        """Inside the removal's transaction, before the entry is deleted: keep it aside."""
        conn.execute("DELETE FROM removed_workspace WHERE id = ?", (ws.id,))
        conn.execute(
            "INSERT INTO removed_workspace (id, path, path_key, title, description, instructions,"
            " build_status, created_at, updated_at, removed_at)"
            " SELECT id, path, path_key, title, description, instructions, build_status,"
            " created_at, updated_at, ? FROM workspace WHERE id = ?", (utc_now(), ws.id))
        conn.execute(
            "INSERT INTO removed_membership (workspace_id, chat_id, position)"
            " SELECT workspace_id, chat_id, position FROM membership WHERE workspace_id = ?",
            (ws.id,))

    # ----------------------------------------------------------------- reading

    def removed_workspaces(self) -> list[RemovedWorkspace]:
        """The recently removed workspaces, most recently removed first (a storage read;
        each folder is looked at, so a missing one is said before Restore is tried)."""
        rows = self.writer.db.query(
            "SELECT r.id, r.title, r.path, r.description, r.instructions, r.build_status,"
            " r.created_at, r.updated_at, r.removed_at,"
            " (SELECT count(*) FROM knowledge_file f WHERE f.workspace_id = r.id)"
            " FROM removed_workspace r ORDER BY r.removed_at DESC, r.rowid DESC")
        chats: dict[str, list[str]] = {}
        for ws_id, chat_id in self.writer.db.query(
                "SELECT workspace_id, chat_id FROM removed_membership"
                " ORDER BY workspace_id, position"):
            chats.setdefault(ws_id, []).append(chat_id)
        return [RemovedWorkspace(
                    id=ws_id, title=title, path=path, description=description,
                    instructions=instructions, build_status=status, created_at=created,
                    updated_at=updated, removed_at=removed, chats=tuple(chats.get(ws_id, ())),
                    files=files, folder_missing=paths.folder_status(path) != OK)
                for (ws_id, title, path, description, instructions, status, created, updated,
                     removed, files) in rows]

    # ----------------------------------------------------------------- restoring

    def restore_workspace(self, ws_id: str, *, into: str | None = None) -> Workspace:
        """Bring a recently removed workspace back at its folder (or *into* another one, for
        a folder that moved or is gone), with its old identity.

        Refused, with nothing changed, when the folder is gone (the sentence offers another
        folder) or another workspace holds it.  Its chats that are still
        Ungrouped join it again in their old order; the restored workspace leads the list.
        """
        plausible = ws_id.isascii() and ws_id.isprintable()  # ids are: never ask SQLite
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                row = conn.execute(
                    "SELECT path, title, description, instructions, build_status, created_at"
                    " FROM removed_workspace WHERE id = ?", (ws_id,)).fetchone() if plausible \
                    else None
                if row is None:
                    raise Refused(f"cannot restore workspace '{paths.shown(ws_id)}': it is not "
                                  "among the recently removed workspaces")
                path, title, description, instructions, build_status, created_at = row
                folder = self._restoring_into(title, path if into is None else into,
                                              elsewhere=into is not None)
                taken = self.mem.existing(folder)
                if taken is not None:
                    raise Refused(f"cannot restore workspace '{title}' at "
                                  f"'{paths.shown(folder.canonical)}': that folder is already "
                                  f"the workspace '{taken.title}'")
                now = utc_now()
                ws = Workspace(
                    id=ws_id, path=folder.canonical, key=folder.key, title=title,
                    description=description, instructions=instructions,
                    build_status=build_status, created_at=created_at, updated_at=now,
                    status=OK, identity=folder.identity)
                conn.execute(
                    "INSERT INTO workspace (id, path, path_key, title, description, instructions,"
                    " build_status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (ws.id, ws.path, ws.key, ws.title, ws.description, ws.instructions,
                     ws.build_status, ws.created_at, ws.updated_at))
                conn.execute(
                    "INSERT INTO display_order (position, workspace_id)"
                    " SELECT coalesce(min(position), 1) - 1, ? FROM display_order", (ws.id,))
                # Its chats that no workspace took meanwhile, in their old manual order.
                chats = [r[0] for r in conn.execute(
                    "SELECT chat_id FROM removed_membership r WHERE workspace_id = ?"
                    " AND NOT EXISTS (SELECT 1 FROM membership m WHERE m.chat_id = r.chat_id)"
                    " AND NOT EXISTS (SELECT 1 FROM removed_chat d WHERE d.chat_id = r.chat_id)"
                    " ORDER BY position", (ws_id,))]
                conn.executemany(
                    "INSERT INTO membership (workspace_id, chat_id, position) VALUES (?, ?, ?)",
                    ((ws.id, chat_id, position) for position, chat_id in enumerate(chats)))
                conn.execute("DELETE FROM removed_workspace WHERE id = ?", (ws_id,))
            for chat_id in chats:
                if self.mem.chats[chat_id].archived_at is None:
                    self.mem.ungrouped.remove(chat_id)
            change = self.mem.reshape([ws.id, *self.mem.order], added=ws)
            regrouped = self.mem.regroup(chats, ws.id)
            events.extend(change.events(between=[regrouped] if regrouped else []))
        return ws

    @staticmethod
    def _restoring_into(title: str, path: str, *, elsewhere: bool) -> paths.Folder:
        """The folder a restore goes to, or a sentence that speaks of restoring."""
        folder = paths.try_resolve_folder(path)
        if folder is not None:
            return folder
        if elsewhere:
            raise Refused(f"cannot restore workspace '{title}' into '{paths.shown(path)}': "
                          "that is not a folder that exists")
        raise Refused(f"cannot restore workspace '{title}': its folder '{paths.shown(path)}' is "
                      "missing. Restore it into another folder with “Restore into another "
                      "folder…” (or `cairn workspace restore ID --into PATH`).")

    # ----------------------------------------------------------------- purging

    def purge_removed(self, *, now: datetime | None = None) -> list[str]:
        """Delete what was removed more than :data:`KEEP_DAYS` ago: the kept entry, its
        knowledge and history, its files' records, then the blobs no record uses any more.

        The rows go in one transaction that also writes an in-progress marker naming the
        blobs; dropping the blobs clears it, and a crash in between is finished at the next
        start.  Returns the purged ids.
        """
        cutoff = _stamp((now or datetime.now(timezone.utc)) - timedelta(days=KEEP_DAYS))
        if not self.writer.db.query("SELECT 1 FROM removed_workspace WHERE removed_at < ? LIMIT 1",
                             (cutoff,)):
            return []  # the usual start: one indexed look
        with self.writer.db.write() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM removed_workspace WHERE removed_at < ?"
                " AND id NOT IN (SELECT id FROM workspace)", (cutoff,))]
            if not ids:
                return []
            marks = ", ".join("?" * len(ids))
            shas = sorted({r[0] for r in conn.execute(
                f"SELECT sha256 FROM knowledge_file WHERE workspace_id IN ({marks})", ids)})
            for table, column in (("knowledge", "owner"), ("knowledge_version", "owner"),
                                  ("knowledge_status", "owner"), ("knowledge_suggestion", "owner"),
                                  ("knowledge_file", "workspace_id"),
                                  ("removed_workspace", "id")):
                conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)
            pending = conn.execute(
                "INSERT INTO pending_change (op, args) VALUES ('drop-blobs', ?)",
                (json.dumps({"blobs": shas}),)).lastrowid
        log.info("purged %d workspace(s) removed before %s", len(ids), cutoff)
        self.writer.drop_blobs(pending, shas)
        return ids
