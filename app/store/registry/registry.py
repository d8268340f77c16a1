"""The workspace registry's façade: workspaces, their order and nesting, and the chats
grouped under them.

The parts are objects beside this module, each handed the rows owner (``memory.Memory``:
the rows and their order, the sidebar's order) and the write path (``state.RegistryState``):
``chat_list.ChatLists`` (chats joining, order, archive, pin), ``removed.RecentlyRemoved`` and
``removed_chats.RemovedChats`` (what removal keeps, Restore, the purge) and
``first_start.FirstStart`` (regrouping, the first-use workspace, recovery) and
``loader.Loader`` (the start-up load in pages); ``nesting`` is
the tree and its rows.  This module adds opening and the workspace operations, and keeps
every part's public method under its old name.  Every change emits typed events
(``app.events``) through ``registry.hub``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from app.base import locations, paths
from app.base.db import Database, utc_now
from app.base.live import Work
from app.base.titles import MAX_DESCRIPTION, one_line, text_lines, visible
from app.errors import Refused
from app.events import Hub, WorkspaceChanged
from app.records import BUILD_STATUSES, OK, Chat, ChatListing, Workspace
from app.store.registry.chat_list import DEFAULT_CHAT_TITLE, ChatLists
from app.store.registry.consistency import CHECKED
from app.store.registry.first_start import FirstStart
from app.store.registry.removed import RecentlyRemoved, RemovedWorkspace
from app.store.registry.removed_chats import RemovedChat, RemovedChats
from app.store.registry.state import Cleanup, FirstPaint, RegistryState, read_stored

log = logging.getLogger(__name__)


class Registry:
    """Open with :meth:`open`; all methods are safe to call from any thread."""

    def __init__(self, db: Database, *, cleanup: Sequence[Cleanup] = (),
                 hub: Hub | None = None) -> None:
        # The parts, each handed the rows owner and the write path (see the module's doc).
        self.writer = writer = RegistryState(db, cleanup=cleanup, hub=hub)
        self.db, self.hub, self.live = db, writer.hub, writer.live
        self.mem = writer.mem  # the rows and their order
        self.loader = writer.loader
        self.chat_lists = ChatLists(self.mem, writer)
        self.recently_removed = RecentlyRemoved(self.mem, writer)
        self.removed_chat_list = RemovedChats(self.mem, writer)
        self.first_start = FirstStart(self.mem, writer)

    @classmethod
    def open(cls, data_folder: Path | None = None, *, cleanup: Sequence[Cleanup] = (),
             hub: Hub | None = None, first: FirstPaint | None = None,
             check_later: bool = True) -> Registry:
        """Open the data folder: check what is stored, finish interrupted changes, first start.

        Events go to *hub* (a new one by default: ``registry.hub``).  With *first* (the
        window, the command line), only what the first usable paint shows is read now and
        the other chats in pages, by :meth:`load_step` or as a read needs them (see
        ``state``); the integrity check comes last among them, or at once without
        *check_later* (the command line: a command is over before a load would end).
        Without *first*, every chat is read now (the tests).
        """
        db = Database.open(data_folder or locations.data_dir(),
                           check_later=first is not None and check_later)
        registry = cls(db, cleanup=cleanup, hub=hub)
        try:
            with registry.writer.changing():  # a subscriber of a given hub gets one Reset
                with db.snapshot() as conn:
                    # Before the pages' snapshot: a commit in between is caught up with.
                    registry.writer.seen_version = db.data_version(conn)
                    simple = first is not None and not conn.execute(
                        "SELECT 1 FROM pending_change LIMIT 1").fetchall() and conn.execute(
                        "SELECT 1 FROM registry_state WHERE key IN ('initialised', ?)"
                        " GROUP BY NULL HAVING count(*) = 2", (CHECKED,)).fetchall()
                    stored = None if simple else read_stored(conn)
                if stored is None:
                    assert first is not None
                    registry.loader.open_in_pages(first)
                else:
                    if first is not None:
                        db.check()  # the whole load below writes: the check comes first
                    registry.writer.install(stored)
                    registry.first_start.resume_pending(stored.pending)
                    if "initialised" not in registry.mem.state:
                        registry.first_start.initialise()
                    if CHECKED not in registry.mem.state:  # the whole check found nothing
                        with db.write() as conn:
                            conn.execute("INSERT OR IGNORE INTO registry_state (key, value)"
                                         " VALUES (?, ?)", (CHECKED, utc_now()))
                        registry.mem.state[CHECKED] = "1"
            registry.purge_removed()
            registry.purge_removed_chats()
        except BaseException:
            db.close()
            raise
        return registry

    @property
    def _members(self) -> dict[str, list[str]]:
        """Each workspace's chats in manual order (the crash test reads it; prefer
        ``chat_order``)."""
        return self.mem.members

    def workspaces(self) -> list[Workspace]:
        """Every workspace, folders included, in display order.  No storage read."""
        return self.mem.in_order()

    def sync(self) -> bool:
        """Catch up with another process's commits (see ``RegistryState.sync``)."""
        return self.writer.sync()

    def close(self) -> None:
        self.loader.abandon()  # (a window closed before its start-up load ended)
        self.db.close()

    # ================================================================= the start-up load (``loader``)

    def loaded(self, ws_id: str | None) -> bool:
        return self.loader.loaded(ws_id)

    def when_loaded(self, ws_id: str | None, callback: Callable[[], object]) -> None:
        self.loader.when_loaded(ws_id, callback)

    def load_step(self) -> bool:
        return self.loader.load_step()

    # ================================================================= workspaces: reading

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

    # ================================================================= workspaces: changing

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


    # ================================================================= removed (``removed``,
    # ``removed_chats``)

    def removed_workspaces(self) -> list[RemovedWorkspace]:
        return self.recently_removed.removed_workspaces()

    def restore_workspace(self, ws_id: str, *, into: str | None = None) -> Workspace:
        return self.recently_removed.restore_workspace(ws_id, into=into)

    def purge_removed(self, *, now: datetime | None = None) -> list[str]:
        return self.recently_removed.purge_removed(now=now)

    def remove_chat(self, chat_id: str, *, stop: bool = False) -> Chat:
        return self.removed_chat_list.remove_chat(chat_id, stop=stop)

    def removed_chats(self) -> list[RemovedChat]:
        return self.removed_chat_list.removed_chats()

    def restore_chat(self, chat_id: str) -> Chat:
        return self.removed_chat_list.restore_chat(chat_id)

    def purge_removed_chats(self, *, now: datetime | None = None) -> list[str]:
        return self.removed_chat_list.purge_removed_chats(now=now)

    # ================================================================= chats (``chat_list``)

    def workspace_for_folder(self, folder: str | None) -> Workspace | None:
        return self.chat_lists.workspace_for_folder(folder)

    def chat(self, chat_id: str) -> Chat | None:
        return self.chat_lists.chat(chat_id)

    def get_chat(self, chat_id: str, *, verb: str = "show") -> Chat:
        return self.chat_lists.get_chat(chat_id, verb=verb)

    def chats_of(self, ws_id: str) -> list[Chat]:
        return self.chat_lists.chats_of(ws_id)

    def chat_order(self, ws_id: str) -> list[str]:
        return self.chat_lists.chat_order(ws_id)

    def chat_listing(self) -> ChatListing:
        return self.chat_lists.chat_listing()

    def chat_count(self, ws_id: str | None) -> int:
        return self.chat_lists.chat_count(ws_id)

    def chat_at(self, ws_id: str | None, row: int) -> Chat:
        return self.chat_lists.chat_at(ws_id, row)

    def chat_row(self, chat_id: str) -> int | None:
        return self.chat_lists.chat_row(chat_id)

    def pinned_count(self) -> int:
        return self.chat_lists.pinned_count()

    def pinned_at(self, row: int) -> Chat:
        return self.chat_lists.pinned_at(row)

    def pinned_row(self, chat_id: str) -> int | None:
        return self.chat_lists.pinned_row(chat_id)

    def archived_count(self) -> int:
        return self.chat_lists.archived_count()

    def archived_at(self, row: int) -> Chat:
        return self.chat_lists.archived_at(row)

    def archived_row(self, chat_id: str) -> int | None:
        return self.chat_lists.archived_row(chat_id)

    def new_chat(self, *, folder: str | None = None, title: str = "",
                 reuse_untouched: bool = False) -> Chat:
        return self.chat_lists.new_chat(folder=folder, title=title, reuse_untouched=reuse_untouched)

    def archive_chat(self, chat_id: str) -> Chat:
        return self.chat_lists.archive_chat(chat_id)

    def stop_and_archive_chat(self, chat_id: str) -> Chat:
        return self.chat_lists.stop_and_archive_chat(chat_id)

    def unarchive_chat(self, chat_id: str) -> Chat:
        return self.chat_lists.unarchive_chat(chat_id)

    def pin_chat(self, chat_id: str) -> Chat:
        return self.chat_lists.pin_chat(chat_id)

    def unpin_chat(self, chat_id: str) -> Chat:
        return self.chat_lists.unpin_chat(chat_id)

    def rename_chat(self, chat_id: str, title: str) -> Chat:
        return self.chat_lists.rename_chat(chat_id, title)

    def move_chat(self, chat_id: str, *, index: int) -> Chat:
        return self.chat_lists.move_chat(chat_id, index=index)

    def move_chat_to(self, chat_id: str, ws_id: str | None, *, index: int = 0) -> Chat:
        return self.chat_lists.move_chat_to(chat_id, ws_id, index=index)

    def begin_work(self, chat_id: str, kind: str, stop: Callable[[], object]) -> Work:
        return self.chat_lists.begin_work(chat_id, kind, stop)

    def end_work(self, work: Work) -> None:
        self.chat_lists.end_work(work)


__all__ = ["Registry", "DEFAULT_CHAT_TITLE"]


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
