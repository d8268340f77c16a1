"""What a workspace may do in its own folder: keep its document as CAIRN.md, let Claude read.

Both are off unless the person turns them on (spec 004: a folder is only referenced).  One
row per workspace that ever had one of them on (``workspace_folder``); no row reads as off.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.base.db import Database


@dataclass(frozen=True, slots=True)
class FolderChoices:
    workspace_id: str
    knowledge_file: bool = False
    written_version: int | None = None  # the version CAIRN.md last held (written or taken in)
    written_sha: str | None = None  # SHA-256 of the file's bytes then
    folder_access: bool = False
    allow: tuple[str, ...] = ()  # hidden or secret-looking paths the person allowed
    read_version: int | None = None  # the version CAIRN.md was last read at (taken in, or on)
    removed: str = "[]"  # JSON: entries Cairn wrote that an outside save removed (places)
    copies_done: tuple[tuple[str, str], ...] = ()  # conflict copies merged or dismissed


class FolderStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, ws_id: str) -> FolderChoices:
        rows = self._db.query(
            "SELECT knowledge_file, written_version, written_sha, folder_access, folder_allow,"
            " read_version, removed, copies_done FROM workspace_folder WHERE workspace_id = ?",
            (ws_id,))
        if not rows:
            return FolderChoices(ws_id)
        kf, version, sha, access, allow, read, removed, done = rows[0]
        try:
            allowed = tuple(str(a) for a in json.loads(allow) if isinstance(a, str))
        except (TypeError, ValueError, RecursionError):
            allowed = ()
        try:
            copies = tuple((str(p[0]), str(p[1])) for p in json.loads(done)
                           if isinstance(p, list) and len(p) == 2)
        except (TypeError, ValueError, RecursionError):
            copies = ()
        return FolderChoices(ws_id, bool(kf), version, sha, bool(access), allowed, read,
                             removed or "[]", copies)

    def with_knowledge_file(self) -> list[str]:
        """The workspaces whose document is kept as CAIRN.md."""
        return [row[0] for row in self._db.query(
            "SELECT workspace_id FROM workspace_folder WHERE knowledge_file = 1"
            " ORDER BY workspace_id")]

    def set_knowledge_file(self, ws_id: str, on: bool) -> None:
        """Turning it on forgets what was last written and read: the next sync writes (or
        asks)."""
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO workspace_folder (workspace_id, knowledge_file) VALUES (?, ?)"
                " ON CONFLICT (workspace_id) DO UPDATE SET knowledge_file = excluded.knowledge_file,"
                " written_version = NULL, written_sha = NULL, read_version = NULL,"
                " removed = '[]'", (ws_id, int(on)))

    def set_folder_access(self, ws_id: str, on: bool) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO workspace_folder (workspace_id, folder_access) VALUES (?, ?)"
                " ON CONFLICT (workspace_id) DO UPDATE SET folder_access = excluded.folder_access",
                (ws_id, int(on)))

    def set_allow(self, ws_id: str, allow: list[str]) -> None:
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO workspace_folder (workspace_id, folder_allow) VALUES (?, ?)"
                " ON CONFLICT (workspace_id) DO UPDATE SET folder_allow = excluded.folder_allow",
                (ws_id, json.dumps(sorted(set(allow)))))

    def mark_written(self, ws_id: str, version: int, sha: str) -> None:
        """CAIRN.md now holds *version*, whose bytes hash to *sha* (after the file's write:
        never inside the transaction that saved the version)."""
        with self._db.write() as conn:
            conn.execute("UPDATE workspace_folder SET written_version = ?, written_sha = ?"
                         " WHERE workspace_id = ? AND knowledge_file = 1", (version, sha, ws_id))

    def mark_read(self, ws_id: str, version: int, *, removed: str | None = None) -> None:
        """CAIRN.md was read at *version* (an outside edit taken in, or the switch turned
        on); with *removed*, the entries that edit removed of Cairn's (JSON)."""
        with self._db.write() as conn:
            if removed is None:
                conn.execute("UPDATE workspace_folder SET read_version = ? WHERE"
                             " workspace_id = ?", (version, ws_id))
            else:
                conn.execute("UPDATE workspace_folder SET read_version = ?, removed = ? WHERE"
                             " workspace_id = ?", (version, removed, ws_id))

    def set_removed(self, ws_id: str, removed: str) -> None:
        with self._db.write() as conn:
            conn.execute("UPDATE workspace_folder SET removed = ? WHERE workspace_id = ?",
                         (removed, ws_id))

    def copy_done(self, ws_id: str, name: str, sha: str) -> None:
        """A conflict copy the person merged or dismissed: not offered again (unless it
        changes)."""
        with self._db.write() as conn:
            row = conn.execute("SELECT copies_done FROM workspace_folder WHERE"
                               " workspace_id = ?", (ws_id,)).fetchone()
            try:
                done = [p for p in json.loads(row[0]) if isinstance(p, list)] if row else []
            except (TypeError, ValueError, RecursionError):
                done = []
            done = [p for p in done if p and p[0] != name][-50:] + [[name, sha]]
            conn.execute("UPDATE workspace_folder SET copies_done = ? WHERE workspace_id = ?",
                         (json.dumps(done, ensure_ascii=False), ws_id))
