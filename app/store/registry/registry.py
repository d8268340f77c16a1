"""The workspace registry's façade: workspaces, their order and nesting, and the chats
grouped under them.

The parts are objects beside this module, each handed the rows owner (``memory.Memory``:
the rows and their order, the sidebar's order) and the write path (``state.RegistryState``):
``workspaces.Workspaces`` (the tree and its rows, the folder check, add, rename, update,
move, remove), ``chat_list.ChatLists`` (chats joining, order, archive, pin),
``removed.RecentlyRemoved`` and ``removed_chats.RemovedChats`` (what removal keeps,
Restore, the purge), ``first_start.FirstStart`` (regrouping, the first-use workspace,
recovery) and ``loader.Loader`` (the start-up load in pages); ``nesting`` is the tree and
its rows.  This module adds opening and closing, and keeps every part's public method under
its old name as a one-line forward.  Every change emits typed events (``app.events``)
through ``registry.hub``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from app.base import locations
from app.base.db import Database, utc_now
from app.base.live import Work
from app.events import Hub
from app.records import Chat, ChatListing, Workspace
from app.store.registry.chat_list import DEFAULT_CHAT_TITLE, ChatLists
from app.store.registry.consistency import CHECKED
from app.store.registry.first_start import FirstStart
from app.store.registry.removed import RecentlyRemoved, RemovedWorkspace
from app.store.registry.removed_chats import RemovedChat, RemovedChats
from app.store.registry.state import Cleanup, FirstPaint, RegistryState, read_stored
from app.store.registry.workspaces import Workspaces

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
        self.workspace_list = Workspaces(self.mem, writer, self.recently_removed)
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

    # ================================================================= workspaces (``workspaces``)

    def top_level(self) -> list[Workspace]:
        return self.workspace_list.top_level()

    def children(self, ws_id: str | None) -> list[Workspace]:
        return self.workspace_list.children(ws_id)

    def tree(self) -> dict[str | None, list[Workspace]]:
        return self.workspace_list.tree()

    def child_count(self, ws_id: str | None) -> int:
        return self.workspace_list.child_count(ws_id)

    def child_at(self, ws_id: str | None, row: int) -> Workspace:
        return self.workspace_list.child_at(ws_id, row)

    def row_of(self, ws_id: str) -> int:
        return self.workspace_list.row_of(ws_id)

    def parent_of(self, ws_id: str) -> str | None:
        return self.workspace_list.parent_of(ws_id)

    def workspace(self, ws_id: str) -> Workspace | None:
        return self.workspace_list.workspace(ws_id)

    def lineage(self, ws_id: str | None) -> list[Workspace]:
        return self.workspace_list.lineage(ws_id)

    def get_workspace(self, ws_id: str, *, verb: str = "show") -> Workspace:
        return self.workspace_list.get_workspace(ws_id, verb=verb)

    def workspace_json(self, ws: Workspace) -> dict[str, Any]:
        return self.workspace_list.workspace_json(ws)

    @property
    def first_use_workspace_id(self) -> str | None:
        return self.workspace_list.first_use_workspace_id

    def refresh_status(self) -> None:
        self.workspace_list.refresh_status()

    def chat_folder(self, workspace_id: str) -> str:
        return self.workspace_list.chat_folder(workspace_id)

    def add_workspace(self, path: str, *, at_end: bool = False) -> tuple[Workspace, bool]:
        return self.workspace_list.add_workspace(path, at_end=at_end)

    def rename_workspace(self, ws_id: str, title: str) -> Workspace:
        return self.workspace_list.rename_workspace(ws_id, title)

    def update_workspace(self, ws_id: str, *, description: str | None = None,
                         instructions: str | None = None,
                         build_status: str | None = None) -> Workspace:
        return self.workspace_list.update_workspace(
            ws_id, description=description, instructions=instructions, build_status=build_status)

    def advance_workspace(self, ws_id: str) -> Workspace:
        return self.workspace_list.advance_workspace(ws_id)

    def save_description_and_instructions(
            self, ws_id: str, *, description: str | None = None,
            instructions: str | None = None,
            expected: tuple[str, str] | None = None) -> Workspace | None:
        return self.workspace_list.save_description_and_instructions(
            ws_id, description=description, instructions=instructions, expected=expected)

    def move_workspace(self, ws_id: str, *, index: int) -> None:
        self.workspace_list.move_workspace(ws_id, index=index)

    def move_to_folder(self, ws_id: str, path: str) -> Workspace:
        return self.workspace_list.move_to_folder(ws_id, path)

    def remove_workspace(self, ws_id: str) -> bool:
        return self.workspace_list.remove_workspace(ws_id)

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

