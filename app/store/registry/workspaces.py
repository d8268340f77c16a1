"""The workspaces: the tree and its rows, the folder check, add, rename, update, advance,
move (in the list or to another folder) and remove.

Reads come from the rows kept in memory (*mem*: the tree as rows for a model, O(1) each);
each change writes through *writer* (the registry's one write path), then applies itself to
the rows and emits the events that say how (``app.events``).  Removal hands what only Cairn
holds to the recently removed (``removed.RecentlyRemoved.keep``) in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from app.base import paths
from app.base.db import utc_now
from app.base.titles import MAX_DESCRIPTION, one_line, text_lines, visible
from app.errors import Refused
from app.events import WorkspaceChanged
from app.records import BUILD_STATUSES, OK, Workspace
from app.store.registry.memory import Memory
from app.store.registry.removed import RecentlyRemoved
from app.store.registry.state import RegistryState


class Workspaces:
    """Workspaces and their tree; every read from memory (*mem*), every change through
    *writer*; a removal kept aside by *recently_removed*."""

    def __init__(self, mem: Memory, writer: RegistryState,
                 recently_removed: RecentlyRemoved) -> None:
        self.mem = mem
        self.writer = writer
        self.recently_removed = recently_removed

    # ----------------------------------------------------------------- reading

    def top_level(self) -> list[Workspace]:
        """Workspaces that are no folder of another, in display order."""
        return self.children(None)

    def children(self, ws_id: str | None) -> list[Workspace]:
        """The folders directly inside *ws_id* (None: the top level), in display order."""
        with self.mem.lock:
            return list(map(self.mem.workspaces.__getitem__, self.mem.nesting.children(ws_id)))

    def tree(self) -> dict[str | None, list[Workspace]]:
        """Every workspace's folders in display order, keyed by parent (None: the top level);
        only parents that have folders appear, for callers that walk the whole tree."""
        get = self.mem.workspaces.__getitem__
        with self.mem.lock:
            return {parent: list(map(get, rows)) for parent in self.mem.nesting.parents()
                    if (rows := self.mem.nesting.children(parent))}

    # The tree as rows, for a model.  O(1) each.

    def child_count(self, ws_id: str | None) -> int:
        """How many folders *ws_id* holds (None: how many top-level workspaces)."""
        with self.mem.lock:
            return len(self.mem.nesting.children(ws_id))

    def child_at(self, ws_id: str | None, row: int) -> Workspace:
        with self.mem.lock:
            return self.mem.workspaces[self.mem.nesting.children(ws_id).at(row)]

    def row_of(self, ws_id: str) -> int:
        """The workspace's row among its parent's folders (or the top level)."""
        with self.mem.lock:
            return self.mem.nesting.row_of(ws_id)

    def parent_of(self, ws_id: str) -> str | None:
        return self.mem.nesting.parent_of(ws_id)

    def workspace(self, ws_id: str) -> Workspace | None:
        return self.mem.workspaces.get(ws_id)

    def lineage(self, ws_id: str | None) -> list[Workspace]:
        """*ws_id* and the workspaces it is a folder of, the project first (from memory);
        empty for None (Ungrouped) or an unknown id."""
        found: list[Workspace] = []
        while ws_id is not None and (ws := self.mem.workspaces.get(ws_id)) is not None:
            found.append(ws)
            ws_id = self.mem.nesting.parent_of(ws_id)
        return found[::-1]

    def get_workspace(self, ws_id: str, *, verb: str = "show") -> Workspace:
        ws = self.mem.workspaces.get(ws_id)
        if ws is None:
            raise Refused(f"cannot {verb} workspace '{ws_id}': no such workspace")
        return ws

    def workspace_json(self, ws: Workspace) -> dict[str, Any]:
        return ws.to_json(parent=self.mem.nesting.parent_of(ws.id))

    @property
    def first_use_workspace_id(self) -> str | None:
        """The automatic first-use workspace, while it is still on the list."""
        ws_id = self.mem.state.get("first_use")
        return ws_id if ws_id in self.mem.workspaces else None

    def refresh_status(self) -> None:
        """Look at every folder again (``ok`` / ``missing-dir``); the stored path never changes."""
        with self.writer.changing() as events:
            for ws in list(self.mem.workspaces.values()):
                status = paths.folder_status(ws.path)  # the disk: never under the memory lock
                identity = paths.identity(ws.path) if status == OK else None
                if (status, identity) != (ws.status, ws.identity):
                    with self.mem.lock:
                        now = self.mem.workspaces[ws.id] = replace(ws, status=status,
                                                                identity=identity)
                    if status != ws.status:
                        events.append(WorkspaceChanged(ws.id, now))
            with self.mem.lock:
                self.mem.nesting.set_identities(self.mem.workspaces.values())

    def chat_folder(self, workspace_id: str) -> str:
        """The folder a new chat of *workspace_id* runs in (New chat on a workspace), looked
        at on the disk now: refused when it is gone, and the workspace marked missing at
        once, never an Ungrouped chat made instead."""
        ws = self.mem.workspaces.get(workspace_id)
        if ws is None:
            raise Refused("cannot create a chat: that workspace no longer exists")
        if paths.try_resolve_folder(ws.path) is None:
            self.refresh_status()  # shown as missing now, not at the next look
            raise Refused(f"cannot create a chat in '{ws.title}': its folder "
                          f"{paths.shown(ws.path)} is missing. If it moved, point the "
                          "workspace at its new place with Move to folder… (or "
                          "`cairn workspace move ID PATH`).")
        return ws.path

    # ----------------------------------------------------------------- changing

    def add_workspace(self, path: str, *, at_end: bool = False) -> tuple[Workspace, bool]:
        """Register the folder at *path* (fully qualified, as given): ``(workspace, created)``.

        A folder that already has a workspace, or an alias of it, returns that workspace
        unchanged.  A new one leads the list, or goes last with ``at_end``.
        """
        folder = paths.resolve_folder(path)
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                existing = self.mem.existing(folder)
                if existing is not None:
                    return existing, False
                ws = self.writer.insert_workspace(conn, folder, at_end=at_end)
            order = [*self.mem.order, ws.id] if at_end else [ws.id, *self.mem.order]
            events.extend(self.mem.reshape(order, added=ws).events())
        return ws, True

    def rename_workspace(self, ws_id: str, title: str) -> Workspace:
        """Change the title only; titles may repeat."""
        clean = one_line(title)  # NFC, one line, no control or bidi character, capped

        def rename(ws: Workspace) -> dict[str, Any]:
            if not title.strip():
                raise Refused(f"cannot rename workspace '{ws.title}': the title is empty")
            if not visible(clean):
                raise Refused(f"cannot rename workspace '{ws.title}': the title has only "
                              "invisible characters")
            return {"title": clean}

        return self._change_workspace(ws_id, "rename", rename)

    def update_workspace(
        self,
        ws_id: str,
        *,
        description: str | None = None,
        instructions: str | None = None,
        build_status: str | None = None,
    ) -> Workspace:
        """Set the description, custom instructions or build status (None leaves one as is)."""
        description = _description(self._named(ws_id), description)
        changes = {
            name: value
            for name, value in (
                ("description", description),
                ("instructions", instructions),
                ("build_status", build_status),
            )
            if value is not None
        }

        def update(ws: Workspace) -> dict[str, Any]:
            if build_status is not None and build_status not in BUILD_STATUSES:
                raise Refused(
                    f"cannot set workspace '{ws.title}' to status '{build_status}': "
                    f"the status must be one of {', '.join(BUILD_STATUSES)}"
                )
            return changes

        return self._change_workspace(ws_id, "change", update)

    def advance_workspace(self, ws_id: str) -> Workspace:
        """Move the build status one step: idea → planning → building → shipped."""

        def advance(ws: Workspace) -> dict[str, Any]:
            step = BUILD_STATUSES.index(ws.build_status)
            if step == len(BUILD_STATUSES) - 1:
                raise Refused(f"cannot advance workspace '{ws.title}': it is already shipped")
            return {"build_status": BUILD_STATUSES[step + 1]}

        return self._change_workspace(ws_id, "advance", advance)

    def _named(self, ws_id: str) -> str:
        """How a sentence names a workspace: its title (the id only when there is none)."""
        ws = self.mem.workspaces.get(ws_id)
        return ws.title if ws is not None else ws_id

    def _change_workspace(self, ws_id: str, verb: str,
                          decide: Callable[[Workspace], dict[str, Any]]) -> Workspace:
        """Decide on the stored state (after catching up with other processes), then write."""
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                ws = self.get_workspace(ws_id, verb=verb)
                changes = decide(ws)
                if not changes:
                    return ws
                now = utc_now()
                columns = ", ".join(f"{name} = ?" for name in changes)
                conn.execute(
                    f"UPDATE workspace SET {columns}, updated_at = ? WHERE id = ?",
                    (*changes.values(), now, ws_id),
                )
            ws = replace(ws, updated_at=now, **changes)
            self.mem.workspaces[ws_id] = ws
            events.append(WorkspaceChanged(ws_id, ws))
        return ws

    def save_description_and_instructions(
            self, ws_id: str, *, description: str | None = None,
            instructions: str | None = None,
            expected: tuple[str, str] | None = None) -> Workspace | None:
        """Set the description and the custom instructions (None leaves one as is).

        With *expected*, the (description, instructions) an editor opened, only while they
        are still what is stored (or already are the new values): None, with nothing
        written, when another save changed them meanwhile.  Decided on the stored state
        inside the write, so two editors (or two processes) never overwrite each other.
        """
        description = _description(self._named(ws_id), description)

        class _Moved(Exception):
            """The stored texts are neither the expected nor the new ones."""

        def decide(ws: Workspace) -> dict[str, Any]:
            stored = (ws.description, ws.instructions)
            wanted = (ws.description if description is None else description,
                      ws.instructions if instructions is None else instructions)
            if expected is not None and stored not in (expected, wanted):
                raise _Moved
            return {name: value for name, value in zip(("description", "instructions"), wanted)
                    if getattr(ws, name) != value}

        try:
            return self._change_workspace(ws_id, "change", decide)
        except _Moved:
            return None

    def move_workspace(self, ws_id: str, *, index: int) -> None:
        """Put a workspace at *index* (0-based) of the display order."""
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                self.get_workspace(ws_id, verb="move")
                order = [i for i in self.mem.order if i != ws_id]
                if not 0 <= index <= len(order):
                    raise Refused(
                        f"cannot move workspace '{ws_id}' to position {index + 1}: "
                        f"the list holds {len(order) + 1} workspace{'s' if order else ''}"
                    )
                order.insert(index, ws_id)
                conn.execute("DELETE FROM display_order")
                conn.executemany(
                    "INSERT INTO display_order (position, workspace_id) VALUES (?, ?)",
                    enumerate(order),
                )
            events.extend(self.mem.reshape(order, moved=ws_id).events())

    def move_to_folder(self, ws_id: str, path: str) -> Workspace:
        """"Move to folder…" for a workspace whose folder is gone: the same workspace (its
        id, title, description, instructions, build status, place in the list, chats,
        knowledge and files) now at *path*.

        Cairn never rewrites a stored path by itself (a folder gone stays missing); this is
        the person saying where it went.  The tree may change shape around it (the new
        folder may sit inside another workspace, or hold some), so the events say it as a
        removal at the old place and an addition at the new one, of the same workspace, its
        chats leaving and joining it again.
        """
        folder = paths.resolve_folder(path)
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                old = self.get_workspace(ws_id, verb="move")
                if paths.folder_status(old.path) == OK:
                    raise Refused(f"cannot move workspace '{old.title}' to another folder: "
                                  f"its folder '{paths.shown(old.path)}' is still there")
                taken = self.mem.existing(folder)
                if taken is not None:
                    raise Refused(f"cannot move workspace '{old.title}' to "
                                  f"'{paths.shown(folder.canonical)}': that folder is already "
                                  f"the workspace '{taken.title}'")
                now = utc_now()
                conn.execute("UPDATE workspace SET path = ?, path_key = ?, updated_at = ?"
                             " WHERE id = ?", (folder.canonical, folder.key, now, ws_id))
            moved = replace(old, path=folder.canonical, key=folder.key, updated_at=now,
                            status=OK, identity=folder.identity)
            order = list(self.mem.order)
            members = list(self.mem.members[ws_id])
            # Out at the old place, as a removal says it ...
            regrouped = self.mem.regroup(members, None)
            change = self.mem.reshape([i for i in order if i != ws_id], removed=ws_id)
            events.extend(change.events(between=[regrouped] if regrouped else []))
            # ... and in at the new one, in the same place in the list, as a restore says it.
            for chat_id in members:
                if self.mem.chats[chat_id].archived_at is None:
                    self.mem.ungrouped.remove(chat_id)
            change = self.mem.reshape(order, added=moved)
            regrouped = self.mem.regroup(members, ws_id)
            events.extend(change.events(between=[regrouped] if regrouped else []))
        return moved

    def remove_workspace(self, ws_id: str) -> bool:
        """Take the entry off the list: the folder is untouched and its chats become Ungrouped.

        What only Cairn holds (description, instructions, build status, knowledge and its
        history, files) is kept among the recently removed for 30 days, so that
        :meth:`restore_workspace` can bring it back.  Removing an unknown id does nothing
        (``False``).  Once the removal committed it reports success, even if a cleanup step
        fails afterwards (that step is retried at the next start).
        """
        with self.writer.changing() as events:
            with self.writer.writing() as conn:
                if ws_id not in self.mem.workspaces:
                    return False
                self.recently_removed.keep(conn, self.mem.workspaces[ws_id])
                conn.execute("DELETE FROM workspace WHERE id = ?", (ws_id,))  # cascades
                pending = None
                if self.writer.cleanup:
                    pending = conn.execute(
                        "INSERT INTO pending_change (op, args) VALUES ('remove', ?)",
                        (json.dumps({"workspace": ws_id}),),
                    ).lastrowid
            regrouped = self.mem.regroup(self.mem.members[ws_id], None)
            change = self.mem.reshape([i for i in self.mem.order if i != ws_id], removed=ws_id)
            events.extend(change.events(between=[regrouped] if regrouped else []))
        if pending is not None:
            self.writer.finish_removal(pending, ws_id)
        return True


def _description(name: str, description: str | None) -> str | None:
    """A workspace's description as stored: its lines kept, NFC, no control or bidi-override
    character; refused past ``MAX_DESCRIPTION`` characters."""
    if description is None:
        return None
    clean = text_lines(description)
    if len(clean) > MAX_DESCRIPTION:
        raise Refused(f"cannot change workspace '{name}': the description is longer than "
                      f"{MAX_DESCRIPTION:,} characters")
    return clean
