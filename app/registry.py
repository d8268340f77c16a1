"""The workspace registry: workspaces, their display order, and the chats grouped under them.

Reads answer from memory and perform no storage reads.  Every change is written first
(one transaction through the database's one writer) and applied to memory only after its
commit, so memory never shows a change that is not stored.  Another process (the command
line beside the window) may write too: each write starts by checking SQLite's
``data_version`` and reloads when someone else committed.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app import locations, paths
from app.consistency import find_problems
from app.db import Database, utc_now
from app.errors import Refused, StartupError
from app.ids import new_id
from app.live import LiveWork
from app.records import BUILD_STATUSES, MISSING_DIR, OK, Chat, ChatListing, Workspace

log = logging.getLogger(__name__)

DEFAULT_CHAT_TITLE = "New chat"

Listener = Callable[[str, str], None]
"""Called with (event, id) after a change committed: e.g. ("workspace-added", "ws_…")."""

Cleanup = Callable[[str], None]
"""Called with a removed workspace's id after the removal committed (e.g. to drop blobs)."""


@dataclass(slots=True)
class _Stored:
    """Everything the registry loads, as read in one snapshot."""

    workspaces: list[tuple[Any, ...]]
    order: list[str]
    chats: list[tuple[Any, ...]]
    memberships: list[tuple[str, str]]
    state: dict[str, str]
    pending: list[tuple[int, str, str]]


def _read(conn: sqlite3.Connection) -> _Stored:
    return _Stored(
        workspaces=conn.execute(
            "SELECT id, path, path_key, title, description, instructions, build_status,"
            " created_at, updated_at FROM workspace"
        ).fetchall(),
        order=[r[0] for r in conn.execute("SELECT workspace_id FROM display_order ORDER BY position")],
        chats=conn.execute(
            "SELECT id, title, folder, created_at, updated_at, archived_at, pin_seq"
            " FROM chat ORDER BY created_at, rowid"
        ).fetchall(),
        memberships=conn.execute(
            "SELECT workspace_id, chat_id FROM membership ORDER BY workspace_id, position"
        ).fetchall(),
        state=dict(conn.execute("SELECT key, value FROM registry_state").fetchall()),
        pending=conn.execute("SELECT id, op, args FROM pending_change ORDER BY id").fetchall(),
    )


def _missing_chat(verb: str, chat_id: str) -> Refused:
    if verb == "archive":  # spec 004's exact sentence
        return Refused(
            f"cannot archive session '{chat_id}': "
            "live sessions and session persistence hold no such session"
        )
    return Refused(f"cannot {verb} session '{chat_id}': no such session")


class Registry:
    """Open with :meth:`open`; all methods are safe to call from any thread."""

    def __init__(self, db: Database, *, cleanup: Sequence[Cleanup] = ()) -> None:
        self.db = db
        self.live = LiveWork()
        self._cleanup = list(cleanup)
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._data_version = -1
        self._workspaces: dict[str, Workspace] = {}
        self._order: list[str] = []
        self._by_key: dict[str, str] = {}
        self._by_identity: dict[tuple[int, int], str] = {}
        self._parents: dict[str, str | None] = {}
        self._chats: dict[str, Chat] = {}
        self._members: dict[str, list[str]] = {}
        self._state: dict[str, str] = {}

    # ================================================================= opening

    @classmethod
    def open(cls, data_folder: Path | None = None, *, cleanup: Sequence[Cleanup] = ()) -> Registry:
        """Open the data folder: check what is stored, finish interrupted changes, first start."""
        db = Database.open(data_folder or locations.data_dir())
        registry = cls(db, cleanup=cleanup)
        try:
            with db.snapshot() as conn:
                stored = _read(conn)
                registry._data_version = db.data_version(conn)
            registry._install(stored)
            registry._resume_pending(stored.pending)
            if "initialised" not in registry._state:
                registry._initialise()
        except BaseException:
            db.close()
            raise
        return registry

    def close(self) -> None:
        self.db.close()

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def _install(self, stored: _Stored) -> None:
        """Replace memory with what is stored, refusing to start on an inconsistency."""
        workspaces: dict[str, Workspace] = {}
        for row in stored.workspaces:
            path = row[1]
            status = paths.folder_status(path)
            identity = paths.identity(path) if status == OK else None
            workspaces[row[0]] = Workspace(*row, status=status, identity=identity)
        problems = find_problems(workspaces, stored.order, stored.memberships)
        if problems:
            raise StartupError(
                "Cairn stopped before changing anything: the stored workspace list is "
                f"inconsistent: {'; '.join(problems)}. The database is '{self.db.path}'."
            )
        members: dict[str, list[str]] = {ws_id: [] for ws_id in workspaces}
        owner: dict[str, str] = {}
        for ws_id, chat_id in stored.memberships:
            members[ws_id].append(chat_id)
            owner[chat_id] = ws_id
        self._workspaces = workspaces
        self._order = list(stored.order)
        self._members = members
        self._chats = {
            row[0]: Chat(row[0], row[1], row[2], owner.get(row[0]), *row[3:]) for row in stored.chats
        }
        self._state = dict(stored.state)
        self._reindex()

    def _reindex(self) -> None:
        self._by_key = {ws.key: ws.id for ws in self._workspaces.values()}
        self._by_identity = {
            ws.identity: ws.id for ws in self._workspaces.values() if ws.identity is not None
        }
        # A workspace's parent is the nearest registered ancestor of its path.
        self._parents = {}
        for ws in self._workspaces.values():
            self._parents[ws.id] = next(
                (self._by_key[k] for k in paths.parent_keys(ws.key) if k in self._by_key), None
            )

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, after catching up with any other process's commits."""
        with self.db.write() as conn:
            version = self.db.data_version(conn)
            if version != self._data_version:
                self._install(_read(conn))
                self._data_version = version
            yield conn

    def _emit(self, event: str, item_id: str) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, item_id)
            except Exception:  # a broken listener must not turn a stored change into an error
                log.exception("listener failed on %s %s", event, item_id)

    # ================================================================= workspaces: reading

    def workspaces(self) -> list[Workspace]:
        """Every workspace, folders included, in display order.  No storage read."""
        return [self._workspaces[ws_id] for ws_id in self._order]

    def top_level(self) -> list[Workspace]:
        return [ws for ws in self.workspaces() if self._parents[ws.id] is None]

    def children(self, ws_id: str) -> list[Workspace]:
        return [ws for ws in self.workspaces() if self._parents[ws.id] == ws_id]

    def parent_of(self, ws_id: str) -> str | None:
        return self._parents.get(ws_id)

    def workspace(self, ws_id: str) -> Workspace | None:
        return self._workspaces.get(ws_id)

    def get_workspace(self, ws_id: str, *, verb: str = "show") -> Workspace:
        ws = self._workspaces.get(ws_id)
        if ws is None:
            raise Refused(f"cannot {verb} workspace '{ws_id}': no such workspace")
        return ws

    def workspace_json(self, ws: Workspace) -> dict[str, Any]:
        return ws.to_json(parent=self._parents.get(ws.id))

    @property
    def first_use_workspace_id(self) -> str | None:
        return self._state.get("first_use")

    def refresh_status(self) -> None:
        """Look at every folder again (``ok`` / ``missing-dir``); the stored path never changes."""
        with self._lock:
            for ws in list(self._workspaces.values()):
                status = paths.folder_status(ws.path)
                identity = paths.identity(ws.path) if status == OK else None
                if (status, identity) != (ws.status, ws.identity):
                    self._workspaces[ws.id] = replace(ws, status=status, identity=identity)
                    self._emit("workspace-changed", ws.id)
            self._reindex()

    # ================================================================= workspaces: changing

    def add_workspace(self, path: str, *, at_end: bool = False) -> tuple[Workspace, bool]:
        """Register the folder at *path* (fully qualified, as given): ``(workspace, created)``.

        A folder that already has a workspace, or an alias of it, returns that workspace
        unchanged.  A new one leads the list, or goes last with ``at_end``.
        """
        folder = paths.resolve_folder(path)
        with self._lock:
            with self._writing() as conn:
                existing = self._existing(folder)
                if existing is not None:
                    return existing, False
                ws = self._insert_workspace(conn, folder, at_end=at_end)
            self._workspaces[ws.id] = ws
            if at_end:
                self._order.append(ws.id)
            else:
                self._order.insert(0, ws.id)
            self._members[ws.id] = []
            self._reindex()
        self._emit("workspace-added", ws.id)
        return ws, True

    def _existing(self, folder: paths.Folder) -> Workspace | None:
        ws_id = self._by_key.get(folder.key)
        if ws_id is None and folder.identity is not None:
            candidate = self._by_identity.get(folder.identity)
            # The remembered identity may be stale (folder deleted, inode reused): look again.
            if candidate and paths.identity(self._workspaces[candidate].path) == folder.identity:
                ws_id = candidate
        return self._workspaces[ws_id] if ws_id else None

    def _insert_workspace(
        self, conn: sqlite3.Connection, folder: paths.Folder, *, at_end: bool
    ) -> Workspace:
        now = utc_now()
        ws = Workspace(
            id=new_id("ws"),
            path=folder.canonical,
            key=folder.key,
            title=paths.title_for(folder.canonical),
            description="",
            instructions="",
            build_status=BUILD_STATUSES[0],
            created_at=now,
            updated_at=now,
            status=OK,
            identity=folder.identity,
        )
        conn.execute(
            "INSERT INTO workspace (id, path, path_key, title, description, instructions,"
            " build_status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ws.id, ws.path, ws.key, ws.title, ws.description, ws.instructions,
             ws.build_status, ws.created_at, ws.updated_at),
        )
        position = (
            "SELECT coalesce(max(position), -1) + 1, ? FROM display_order"
            if at_end
            else "SELECT coalesce(min(position), 1) - 1, ? FROM display_order"
        )
        conn.execute(f"INSERT INTO display_order (position, workspace_id) {position}", (ws.id,))
        return ws

    def rename_workspace(self, ws_id: str, title: str) -> Workspace:
        """Change the title only; titles may repeat."""
        clean = " ".join(title.split())
        self.get_workspace(ws_id, verb="rename")
        if not clean:
            raise Refused(f"cannot rename workspace '{ws_id}': the title is empty")
        return self._update_workspace(ws_id, "rename", title=clean)

    def update_workspace(
        self,
        ws_id: str,
        *,
        description: str | None = None,
        instructions: str | None = None,
        build_status: str | None = None,
    ) -> Workspace:
        self.get_workspace(ws_id, verb="change")
        if build_status is not None and build_status not in BUILD_STATUSES:
            raise Refused(
                f"cannot set workspace '{ws_id}' to status '{build_status}': "
                f"the status must be one of {', '.join(BUILD_STATUSES)}"
            )
        changes = {
            name: value
            for name, value in (
                ("description", description),
                ("instructions", instructions),
                ("build_status", build_status),
            )
            if value is not None
        }
        return self._update_workspace(ws_id, "change", **changes)

    def advance_workspace(self, ws_id: str) -> Workspace:
        """Move the build status one step: idea → planning → building → shipped."""
        ws = self.get_workspace(ws_id, verb="advance")
        step = BUILD_STATUSES.index(ws.build_status)
        if step == len(BUILD_STATUSES) - 1:
            raise Refused(f"cannot advance workspace '{ws_id}': it is already shipped")
        return self._update_workspace(ws_id, "advance", build_status=BUILD_STATUSES[step + 1])

    def _update_workspace(self, ws_id: str, verb: str, **changes: str) -> Workspace:
        if not changes:
            return self.get_workspace(ws_id, verb=verb)
        with self._lock:
            with self._writing() as conn:
                ws = self.get_workspace(ws_id, verb=verb)  # may have gone in another process
                now = utc_now()
                columns = ", ".join(f"{name} = ?" for name in changes)
                conn.execute(
                    f"UPDATE workspace SET {columns}, updated_at = ? WHERE id = ?",
                    (*changes.values(), now, ws_id),
                )
            ws = replace(ws, updated_at=now, **changes)
            self._workspaces[ws_id] = ws
        self._emit("workspace-changed", ws_id)
        return ws

    def move_workspace(self, ws_id: str, *, index: int) -> None:
        """Put a workspace at *index* (0-based) of the display order."""
        self.get_workspace(ws_id, verb="move")
        with self._lock:
            with self._writing() as conn:
                order = [i for i in self._order if i != ws_id]
                if not 0 <= index <= len(order):
                    raise Refused(
                        f"cannot move workspace '{ws_id}' to position {index + 1}: "
                        f"the list holds {len(order) + 1} workspaces"
                    )
                order.insert(index, ws_id)
                conn.execute("DELETE FROM display_order")
                conn.executemany(
                    "INSERT INTO display_order (position, workspace_id) VALUES (?, ?)",
                    enumerate(order),
                )
            self._order = order
        self._emit("order-changed", ws_id)

    def move_to_folder(self, ws_id: str, path: str) -> Workspace:
        """"Move to folder…" for a workspace whose folder is gone.

        A new workspace at *path* takes over the old one's title, description, instructions,
        build status, place in the list and chats; the old entry is removed.  The old stored
        path is never rewritten: the new entry has its own identity.
        """
        old = self.get_workspace(ws_id, verb="move")
        if paths.folder_status(old.path) == OK:
            raise Refused(f"cannot move workspace '{ws_id}' to another folder: "
                          f"its folder '{old.path}' is still there")
        folder = paths.resolve_folder(path)
        with self._lock:
            with self._writing() as conn:
                old = self.get_workspace(ws_id, verb="move")
                taken = self._existing(folder)
                if taken is not None:
                    raise Refused(f"cannot move workspace '{ws_id}' to '{folder.canonical}': "
                                  f"that folder is already the workspace '{taken.id}'")
                position = conn.execute("SELECT position FROM display_order WHERE workspace_id = ?",
                                        (ws_id,)).fetchone()[0]
                conn.execute("DELETE FROM display_order WHERE workspace_id = ?", (ws_id,))
                fresh = self._insert_workspace(conn, folder, at_end=True)
                fresh = replace(fresh, title=old.title, description=old.description,
                                instructions=old.instructions, build_status=old.build_status)
                conn.execute(
                    "UPDATE workspace SET title = ?, description = ?, instructions = ?,"
                    " build_status = ? WHERE id = ?",
                    (fresh.title, fresh.description, fresh.instructions, fresh.build_status,
                     fresh.id),
                )
                conn.execute("UPDATE display_order SET position = ? WHERE workspace_id = ?",
                             (position, fresh.id))
                conn.execute("UPDATE membership SET workspace_id = ? WHERE workspace_id = ?",
                             (fresh.id, ws_id))
                conn.execute("DELETE FROM workspace WHERE id = ?", (ws_id,))
            del self._workspaces[ws_id]
            self._workspaces[fresh.id] = fresh
            self._order[self._order.index(ws_id)] = fresh.id
            members = self._members.pop(ws_id, [])
            self._members[fresh.id] = members
            for chat_id in members:
                self._chats[chat_id] = replace(self._chats[chat_id], workspace_id=fresh.id)
            self._reindex()
        self._emit("workspace-removed", ws_id)
        self._emit("workspace-added", fresh.id)
        return fresh

    def remove_workspace(self, ws_id: str) -> bool:
        """Remove the entry only: the folder is untouched and its chats become Ungrouped.

        Removing an unknown id does nothing (``False``).  Once the removal committed it
        reports success, even if a cleanup step fails afterwards (that step is retried at
        the next start).
        """
        with self._lock:
            with self._writing() as conn:
                if ws_id not in self._workspaces:
                    return False
                conn.execute("DELETE FROM workspace WHERE id = ?", (ws_id,))  # cascades
                pending = None
                if self._cleanup:
                    pending = conn.execute(
                        "INSERT INTO pending_change (op, args) VALUES ('remove', ?)",
                        (json.dumps({"workspace": ws_id}),),
                    ).lastrowid
            del self._workspaces[ws_id]
            self._order.remove(ws_id)
            for chat_id in self._members.pop(ws_id, []):
                self._chats[chat_id] = replace(self._chats[chat_id], workspace_id=None)
            self._reindex()
        self._emit("workspace-removed", ws_id)
        if pending is not None:
            self._finish_removal(pending, ws_id)
        return True

    def _finish_removal(self, pending: int, ws_id: str) -> None:
        try:
            for cleanup in self._cleanup:
                cleanup(ws_id)
            with self.db.write() as conn:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
        except Exception:
            log.exception("cleanup after removing workspace %s failed; retried at next start", ws_id)

    # ================================================================= chats: reading

    def chat(self, chat_id: str) -> Chat | None:
        return self._chats.get(chat_id)

    def get_chat(self, chat_id: str, *, verb: str = "show") -> Chat:
        chat = self._chats.get(chat_id)
        if chat is None:
            raise _missing_chat(verb, chat_id)
        return chat

    def chats_of(self, ws_id: str) -> list[Chat]:
        """A workspace's visible chats in their manual order (archived ones are hidden)."""
        return [c for c in (self._chats[i] for i in self._members.get(ws_id, [])) if not c.archived]

    def chat_listing(self) -> ChatListing:
        """The sidebar's grouping, from memory."""
        chats = self._chats.values()
        pinned = sorted((c for c in chats if c.pinned), key=lambda c: c.pin_seq or 0, reverse=True)
        ungrouped = [c for c in chats if c.workspace_id is None and not c.archived]
        ungrouped.reverse()  # loaded oldest first; newest leads, like a workspace's new chats
        archived = sorted((c for c in chats if c.archived), key=lambda c: c.archived_at or "",
                          reverse=True)
        return ChatListing(
            pinned=pinned,
            workspaces=[(ws, self.chats_of(ws.id)) for ws in self.workspaces()],
            ungrouped=ungrouped,
            archived=archived,
        )

    # ================================================================= chats: changing

    def new_chat(self, *, folder: str | None = None, title: str = "") -> Chat:
        """Record a chat in *folder* (kept as given); it joins the workspace of that folder.

        The folder must resolve to a directory whose canonical path is a registered
        workspace's; anything else (none, missing, a file, no workspace) stays Ungrouped.
        """
        resolved = paths.try_resolve_folder(folder)
        with self._lock:
            with self._writing() as conn:
                home = self._existing(resolved) if resolved is not None else None
                now = utc_now()
                chat = Chat(
                    id=new_id("ch"),
                    title=" ".join(title.split()) or DEFAULT_CHAT_TITLE,
                    folder=folder,
                    workspace_id=home.id if home else None,
                    created_at=now,
                    updated_at=now,
                )
                self._insert_chat(conn, chat)
            self._chats[chat.id] = chat
            if home is not None:
                self._members[home.id].insert(0, chat.id)
        self._emit("chat-added", chat.id)
        return chat

    @staticmethod
    def _insert_chat(conn: sqlite3.Connection, chat: Chat) -> None:
        conn.execute(
            "INSERT INTO chat (id, title, folder, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (chat.id, chat.title, chat.folder, chat.created_at, chat.updated_at),
        )
        if chat.workspace_id is not None:  # a new chat attaches at the top
            conn.execute(
                "INSERT INTO membership (workspace_id, chat_id, position)"
                " SELECT ?, ?, coalesce(min(position), 1) - 1 FROM membership"
                " WHERE workspace_id = ?",
                (chat.workspace_id, chat.id, chat.workspace_id),
            )

    def archive_chat(self, chat_id: str) -> Chat:
        """Hide a chat from the grouping; refused while work runs on it."""
        self.get_chat(chat_id, verb="archive")
        kinds = self.live.kinds(chat_id)
        if kinds:
            raise Refused(
                f"cannot archive session '{chat_id}': the session is active ({', '.join(kinds)})"
            )
        return self._archive(chat_id)

    def stop_and_archive_chat(self, chat_id: str) -> Chat:
        """Archive first, then ask running work to stop; a failed stop never undoes it."""
        chat = self._archive(chat_id)
        self.live.stop(chat_id)
        return chat

    def _archive(self, chat_id: str) -> Chat:
        # The pin is cleared in the same write; the chat keeps its place in its workspace.
        return self._set_chat(chat_id, "archive", archived_at=utc_now(), pin_seq=None,
                              when=lambda c: not c.archived)

    def unarchive_chat(self, chat_id: str) -> Chat:
        """Back to its place in its workspace (or Ungrouped), without its old pin."""
        return self._set_chat(chat_id, "unarchive", archived_at=None, when=lambda c: c.archived)

    def pin_chat(self, chat_id: str) -> Chat:
        if self.get_chat(chat_id, verb="pin").archived:
            raise Refused(f"cannot pin session '{chat_id}': the session is archived")
        return self._set_chat(chat_id, "pin", pin_seq="next", when=lambda c: not c.pinned)

    def unpin_chat(self, chat_id: str) -> Chat:
        return self._set_chat(chat_id, "unpin", pin_seq=None, when=lambda c: c.pinned)

    def rename_chat(self, chat_id: str, title: str) -> Chat:
        clean = " ".join(title.split())
        self.get_chat(chat_id, verb="rename")
        if not clean:
            raise Refused(f"cannot rename session '{chat_id}': the title is empty")
        return self._set_chat(chat_id, "rename", title=clean, when=lambda c: c.title != clean)

    def _set_chat(self, chat_id: str, verb: str, *, when: Callable[[Chat], bool],
                  **changes: Any) -> Chat:
        with self._lock:
            with self._writing() as conn:
                chat = self.get_chat(chat_id, verb=verb)
                if not when(chat):
                    return chat  # already so: nothing to write
                if verb == "pin" and chat.archived:  # archived meanwhile by another process
                    raise Refused(f"cannot pin session '{chat_id}': the session is archived")
                if changes.get("pin_seq") == "next":
                    changes["pin_seq"] = (
                        conn.execute("SELECT coalesce(max(pin_seq), 0) + 1 FROM chat").fetchone()[0]
                    )
                changes["updated_at"] = utc_now()
                columns = ", ".join(f"{name} = ?" for name in changes)
                conn.execute(f"UPDATE chat SET {columns} WHERE id = ?", (*changes.values(), chat_id))
            chat = replace(chat, **changes)
            self._chats[chat_id] = chat
        self._emit("chat-changed", chat_id)
        return chat

    def move_chat(self, chat_id: str, *, index: int) -> Chat:
        """Put a chat at *index* (0-based) among its workspace's visible chats."""
        chat = self.get_chat(chat_id, verb="move")
        if chat.archived:
            raise Refused(f"cannot move session '{chat_id}': the session is archived")
        if chat.workspace_id is None:
            raise Refused(f"cannot move session '{chat_id}': the session belongs to no workspace")
        with self._lock:
            with self._writing() as conn:
                chat = self.get_chat(chat_id, verb="move")
                ws_id = chat.workspace_id
                if ws_id is None:
                    raise Refused(
                        f"cannot move session '{chat_id}': the session belongs to no workspace"
                    )
                order = [i for i in self._members[ws_id] if i != chat_id]
                visible = [i for i in order if not self._chats[i].archived]
                if not 0 <= index <= len(visible):
                    raise Refused(
                        f"cannot move session '{chat_id}' to position {index + 1}: "
                        f"its workspace shows {len(visible) + 1} chats"
                    )
                # Archived chats keep their slots; the chat goes just before the visible chat
                # now at *index*, or after the last visible one.
                at = order.index(visible[index]) if index < len(visible) else (
                    order.index(visible[-1]) + 1 if visible else len(order))
                order.insert(at, chat_id)
                conn.execute("DELETE FROM membership WHERE workspace_id = ?", (ws_id,))
                conn.executemany(
                    "INSERT INTO membership (workspace_id, chat_id, position) VALUES (?, ?, ?)",
                    ((ws_id, c, p) for p, c in enumerate(order)),
                )
            self._members[ws_id] = order
        self._emit("chat-changed", chat_id)
        return chat

    # ================================================================= first start and recovery

    def _initialise(self) -> None:
        """Runs while the list has never been initialised: regroup chats, or first-use."""
        if self._chats:
            self._regroup_from_headers()
        elif not self._workspaces:
            self._create_first_use()
        else:
            with self._writing() as conn:
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
            self._state["initialised"] = "1"

    def _regroup_from_headers(self) -> None:
        """One workspace per folder, in the order folders first appear; headers only."""
        with self._writing() as conn:
            for chat in list(self._chats.values()):  # oldest first, as loaded
                if chat.workspace_id is not None:
                    continue
                folder = paths.try_resolve_folder(chat.folder)
                if folder is None:
                    continue
                home = self._existing(folder)
                if home is None:
                    home = self._insert_workspace(conn, folder, at_end=True)
                    self._workspaces[home.id] = home
                    self._reindex()
                conn.execute(
                    "INSERT INTO membership (workspace_id, chat_id, position)"
                    " SELECT ?, ?, coalesce(min(position), 1) - 1 FROM membership"
                    " WHERE workspace_id = ?",
                    (home.id, chat.id, home.id),
                )
            conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
        self._reload()

    def _create_first_use(self) -> None:
        folder = locations.first_use_dir()
        with self._writing() as conn:
            pending = conn.execute(
                "INSERT INTO pending_change (op, args) VALUES ('first-use', ?)",
                (json.dumps({"path": str(folder)}),),
            ).lastrowid
        self._finish_first_use(pending, str(folder))

    def _finish_first_use(self, pending: int | None, folder: str) -> None:
        """Create the folder, then record the workspace and clear the marker in one write."""
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            resolved: paths.Folder | None = paths.resolve_folder(folder)
        except (OSError, Refused) as error:
            log.warning("could not create the first-use workspace at %s: %s", folder, error)
            resolved = None
        with self._writing() as conn:
            if resolved is not None and "initialised" not in self._state:
                ws = self._existing(resolved) or self._insert_workspace(conn, resolved, at_end=True)
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('first_use', ?)", (ws.id,))
                conn.execute("INSERT OR REPLACE INTO registry_state VALUES ('initialised', '1')")
            if pending is not None:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
        self._reload()

    def _resume_pending(self, pending: list[tuple[int, str, str]]) -> None:
        """Complete the changes a crash interrupted (both kinds roll forward)."""
        for change_id, op, args in pending:
            data = json.loads(args)
            log.info("completing interrupted change %s %s", op, data)
            if op == "first-use":
                self._finish_first_use(change_id, data["path"])
            elif op == "remove":
                self._finish_removal(change_id, data["workspace"])
            else:
                raise StartupError(
                    f"Cairn stopped before changing anything: an interrupted change of an "
                    f"unknown kind ('{op}') is recorded in '{self.db.path}'."
                )

    def _reload(self) -> None:
        with self.db.snapshot() as conn:
            stored = _read(conn)
            self._data_version = self.db.data_version(conn)
        self._install(stored)


__all__ = ["Registry", "DEFAULT_CHAT_TITLE", "MISSING_DIR", "OK"]
