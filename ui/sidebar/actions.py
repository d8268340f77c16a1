"""What the sidebar's menus and drops ask for, as operations (a mixin of
:class:`~ui.sidebar.view.Sidebar`): each runs on the core's thread, its refusal comes back as
the core's sentence, and the tree changes when the operation's events arrive."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import shiboken6

from app.errors import CairnError
from ui.sidebar import menus

log = logging.getLogger("ui.sidebar.view")


class SidebarActions:
    """The menus' actions and the operations they run."""

    # ================================================================= actions (the menus')

    def new_chat(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        self._run(self._ops.new_chat(folder=ws.path), self._opened_new_chat)

    def rename_workspace(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        title = self.ask_text("Rename workspace", "Title", ws.title)
        if title is not None and title != ws.title:
            self._run(self._ops.rename_workspace(ws_id, title))

    def edit_details(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        answer = self.ask_details(ws)
        if answer is not None:
            description, instructions = answer
            self._run(self._ops.update_workspace(ws_id, description=description,
                                                 instructions=instructions))

    def set_build_status(self, ws_id: str, status: str) -> None:
        self._run(self._ops.update_workspace(ws_id, build_status=status))

    def move_to_folder(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        folder = self.ask_folder(f"Where is “{ws.title}” now?")
        if folder:
            self._run(self._ops.move_to_folder(ws_id, folder),
                      lambda fresh: self.select_workspace(fresh.id))

    def remove_workspace(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        parent_id = self._registry.parent_of(ws_id)
        parent = self._registry.workspace(parent_id) if parent_id is not None else None
        question = menus.removal_question(
            ws, chats=self._registry.chat_count(ws_id),
            folders=[w.title for w in self._registry.children(ws_id)],
            parent=parent.title if parent is not None else None)
        if self.confirm(f"Remove “{ws.title}” from Cairn?", question, "Remove"):
            self._run(self._ops.remove_workspace(ws_id))

    def export_workspace(self, ws_id: str) -> None:
        self.sig_export.emit(ws_id)  # the window asks where, and runs it

    def rename_chat(self, chat_id: str) -> None:
        chat = self._registry.chat(chat_id)
        if chat is None:
            return
        title = self.ask_text("Rename chat", "Title", chat.title)
        if title is not None and title != chat.title:
            self._run(self._ops.rename_chat(chat_id, title))

    def pin_chat(self, chat_id: str) -> None:
        self._run(self._ops.pin_chat(chat_id))

    def unpin_chat(self, chat_id: str) -> None:
        self._run(self._ops.unpin_chat(chat_id))

    def archive_chat(self, chat_id: str) -> None:
        self._run(self._ops.archive_chat(chat_id))

    def unarchive_chat(self, chat_id: str) -> None:
        self._run(self._ops.unarchive_chat(chat_id), lambda chat: self.select_chat(chat.id))

    def stop_and_archive_chat(self, chat_id: str) -> None:
        self._run(self._ops.stop_and_archive_chat(chat_id))

    def add_folders(self, paths: list[str]) -> None:
        """Add each folder as a workspace (or find its workspace) and select the last one."""
        for path in paths:
            self._run(self._ops.add_workspace(path),
                      lambda result: self.select_workspace(result[0].id))

    # ================================================================= private: operations

    def _run(self, work: Coroutine[Any, Any, tuple[Any, Any]],
             then: Callable[[Any], None] | None = None) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(done, then))
        return task

    def _finished(self, task: asyncio.Task[Any],
                  then: Callable[[Any], None] | None) -> None:
        self._tasks.discard(task)
        if task.cancelled() or not shiboken6.isValid(self):
            return
        error = task.exception()
        if isinstance(error, CairnError):
            self._refused(str(error))
        elif error is not None:
            log.error("a sidebar operation failed", exc_info=error)
            self._refused(f"Something went wrong ({type(error).__name__}); nothing was "
                          "changed. The log folder has the details.")
        elif then is not None:
            result, _changes = task.result()
            then(result)

    def _refused(self, sentence: str) -> None:
        heard = self.receivers("2sig_error(QString)") > 0
        self.sig_error.emit(sentence)
        if not heard:
            self.show_error(sentence)

    def _opened_new_chat(self, chat: Any) -> None:
        self.select_chat(chat.id)
        self.sig_chat_selected.emit(chat.id)

    def _move_chat(self, chat_id: str, index: int) -> None:
        self._run(self._ops.move_chat(chat_id, index=index))

    def _move_chat_to(self, chat_id: str, ws_id: str, index: int) -> None:
        self._run(self._ops.move_chat_to(chat_id, ws_id or None, index=index),
                  lambda _done: self.select_chat(chat_id))

    def _move_workspace(self, ws_id: str, index: int) -> None:
        self._run(self._ops.move_workspace(ws_id, index=index))
