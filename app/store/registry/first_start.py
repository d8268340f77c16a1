"""First start and recovery: the grouping rebuilt from chat headers, the first-use
workspace, and changes a crash interrupted (they roll forward)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from app.base import locations, paths
from app.errors import Refused, StartupError
from app.records import Workspace
from app.store.registry.memory import Memory
from app.store.registry.state import RegistryState, attach_at_top

log = logging.getLogger(__name__)


class FirstStart:
    """First start's regrouping and first-use workspace, and the roll-forward of changes a
    crash interrupted, on the rows owner (*mem*) through the write path (*writer*)."""

    def __init__(self, mem: Memory, writer: RegistryState) -> None:
        self.mem = mem
        self.writer = writer

    def initialise(self) -> None:
        """Runs while the list has never been initialised: regroup chats, or first-use."""
        if self.mem.chats:
            self._regroup_from_headers()
        elif not self.mem.workspaces:
            self._create_first_use()
        else:
            with self.writer.writing() as conn:
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
            self.mem.state["initialised"] = "1"

    def _regroup_from_headers(self) -> None:
        """One workspace per folder, in the order folders first appear; headers only."""
        with self.writer.writing() as conn:
            made: dict[object, Workspace] = {}  # by key and by identity; memory reloads after
            for chat in list(self.mem.chats.values()):  # oldest first, as loaded
                if chat.workspace_id is not None:
                    continue
                folder = paths.try_resolve_folder(chat.folder)
                if folder is None:
                    continue
                home = (self.mem.existing(folder) or made.get(folder.key)
                        or (made.get(folder.identity) if folder.identity else None))
                if home is None:
                    home = self.writer.insert_workspace(conn, folder, at_end=True)
                    made[folder.key] = home
                    if folder.identity:
                        made[folder.identity] = home
                attach_at_top(conn, home.id, chat.id)
            conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
        self.writer.reload()

    def _create_first_use(self) -> None:
        folder = locations.first_use_dir()
        with self.writer.writing() as conn:
            pending = conn.execute(
                "INSERT INTO pending_change (op, args) VALUES ('first-use', ?)",
                (json.dumps({"path": str(folder)}),),
            ).lastrowid
        self._finish_first_use(pending, str(folder))

    def _finish_first_use(self, pending: int | None, folder: str) -> None:
        """Create the folder, then record the workspace and clear the marker in one write."""
        try:
            if not paths.is_fully_qualified(folder):  # never create a folder under the cwd
                raise Refused(f"Workspace path is not fully qualified: '{paths.shown(folder)}'")
            Path(folder).mkdir(parents=True, exist_ok=True)
            resolved: paths.Folder | None = paths.resolve_folder(folder)
        except (OSError, Refused) as error:
            log.warning("could not create the first-use workspace at %s: %s", folder, error)
            resolved = None
        with self.writer.writing() as conn:
            if resolved is not None and "initialised" not in self.mem.state:
                ws = self.mem.existing(resolved) or self.writer.insert_workspace(conn, resolved, at_end=True)
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('first_use', ?)", (ws.id,))
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
            if pending is not None:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
        self.writer.reload()

    def resume_pending(self, pending: list[tuple[int, str, str]]) -> None:
        """Complete the changes a crash interrupted, or undo an import that never finished."""
        for change_id, op, args in pending:
            data = json.loads(args)
            log.info("completing interrupted change %s %s", op, data)
            if op == "first-use":
                self._finish_first_use(change_id, data["path"])
            elif op == "remove":
                self.writer.finish_removal(change_id, data["workspace"])
            elif op == "drop-blobs":  # a purge's last step: rolls forward
                self.writer.drop_blobs(change_id, list(data["blobs"]))
            elif op == "import":  # an import that never committed: rolls back
                from app.store.import_marker import roll_back_import

                roll_back_import(self.writer.db, change_id, data)
            else:
                raise StartupError(
                    f"Cairn stopped before changing anything: an interrupted change of an "
                    f"unknown kind ('{op}') is recorded in '{self.writer.db.path}'."
                )
