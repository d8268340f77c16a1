"""What the sidebar's menus, keys and drops ask for: the question to the person, if any, then
the operation.  Each operation runs on the core's thread (through :class:`~ui.tasks.TaskRunner`),
its refusal comes back as the core's sentence (``sig_refused``), and the tree changes when the
operation's events arrive.  What to select afterwards is asked of the sidebar by a signal."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QGuiApplication, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QWidget,
)

from app.records import MISSING_DIR, Chat, WebSettings, Workspace
from app.store.registry.registry import Registry
from ui.sidebar import menus
from ui.sidebar.kinds import CHAT, WORKSPACE
from ui.sidebar.ops import SidebarOps
from ui.tasks import TaskRunner
from ui.text import confirm


class SidebarActions(QObject):
    """The menus' actions (see :class:`~ui.sidebar.menus.Actions`) and the operations they run.

    The dialogs are attributes (``ask_text``, ``confirm``, ``ask_folder``, ``ask_details``)
    so tests can answer them.
    """

    sig_refused = Signal(str)  # an operation was refused: the core's sentence
    sig_export_requested = Signal(str)  # a workspace id: the window asks where, and runs it
    sig_learn_requested = Signal(str)  # a workspace id: learn from its imported chats
    sig_select_workspace_requested = Signal(str)  # a workspace id: just added or moved
    sig_select_chat_requested = Signal(str)  # a chat id: just moved or unarchived
    sig_open_chat_requested = Signal(str)  # a chat id: just made, to be opened
    sig_web_changed = Signal(str)  # a workspace id: its web search settings were stored
    sig_told = Signal(str)  # an operation ended well and says so ("Exported …")
    sig_undoable = Signal(str, object)  # said, with what its Undo does ("Deleted …")

    def __init__(self, registry: Registry, ops: SidebarOps, dialogs_parent: QWidget) -> None:
        super().__init__(dialogs_parent)
        self._registry = registry
        self._ops = ops
        self._parent = dialogs_parent
        self.runner = TaskRunner(self.sig_refused.emit, owner=self)

        # Dialogs, as hooks a test can replace.
        self.ask_text: Callable[[str, str, str], str | None] = self._ask_text
        self.confirm: Callable[[str, str, str], bool] = self._confirm
        self.ask_folder: Callable[[str], str | None] = self._ask_folder
        self.ask_details: Callable[[Workspace], tuple[str, str] | None] = self._ask_details
        self.web_dialog: QDialog | None = None  # the web search settings last opened
        self.ask_markdown_file: Callable[[str, str], str | None] = self._ask_markdown_file
        self.markdown_folder: str | None = None  # where the last chat export went

    # ================================================================= the menus'

    def new_chat(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        self.runner.run(self._ops.new_chat(workspace_id=ws.id),  # refused if its folder is gone
                        lambda made: self.sig_open_chat_requested.emit(made[0].id))

    def rename_workspace(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        title = self.ask_text("Rename workspace", "Title", ws.title)
        if title is not None and title != ws.title:
            self.runner.run(self._ops.rename_workspace(ws_id, title))

    def edit_details(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        answer = self.ask_details(ws)
        if answer is not None:
            description, instructions = answer
            self.runner.run(self._ops.update_workspace(ws_id, description=description,
                                                       instructions=instructions))

    def edit_web_search(self, ws_id: str) -> None:
        """The workspace's web search settings, read off the GUI thread, then its dialog."""
        ws = self._registry.workspace(ws_id)
        if ws is not None:
            self.runner.run(self._ops.web_settings(ws_id),
                            lambda settings: self._web_dialog(ws, settings))

    def _web_dialog(self, ws: Workspace, settings: WebSettings) -> None:
        from ui.sidebar.web import WebSearchDialog

        async def save(chosen: WebSettings) -> None:
            await self._ops.set_web_settings(ws.id, chosen)
            self.sig_web_changed.emit(ws.id)

        self.web_dialog = WebSearchDialog(ws, settings, save, self.runner.run, self._parent)
        self.web_dialog.open()  # window-modal, answered later: no event loop of its own

    def set_build_status(self, ws_id: str, status: str) -> None:
        self.runner.run(self._ops.update_workspace(ws_id, build_status=status))

    def move_to_folder(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        folder = self.ask_folder(f"Where is “{ws.title}” now?")
        if folder:
            self.runner.run(self._ops.move_to_folder(ws_id, folder),
                            lambda moved: self.sig_select_workspace_requested.emit(moved[0].id))

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
            self.runner.run(self._ops.remove_workspace(ws_id))

    def export_workspace(self, ws_id: str) -> None:
        self.sig_export_requested.emit(ws_id)

    def learn_imported(self, ws_id: str) -> None:
        self.sig_learn_requested.emit(ws_id)

    # The folder one click away.
    def reveal_folder(self, ws_id: str) -> None:
        self.runner.run(self._ops.reveal_folder(ws_id))

    def copy_path(self, ws_id: str) -> None:
        ws = self._registry.workspace(ws_id)
        if ws is None:
            return
        if ws.status == MISSING_DIR:
            self.sig_refused.emit(f"cannot copy the path of '{ws.path}': the folder is missing "
                                  "(use “Move to folder…” if it moved)")
            return
        QGuiApplication.clipboard().setText(ws.path)

    def open_terminal(self, ws_id: str) -> None:
        self.runner.run(self._ops.open_terminal(ws_id))

    def rename_chat(self, chat_id: str) -> None:
        chat = self._registry.chat(chat_id)
        if chat is None:
            return
        title = self.ask_text("Rename chat", "Title", chat.title)
        if title is not None and title != chat.title:
            self.runner.run(self._ops.rename_chat(chat_id, title))

    def pin_chat(self, chat_id: str) -> None:
        self.runner.run(self._ops.pin_chat(chat_id))

    def unpin_chat(self, chat_id: str) -> None:
        self.runner.run(self._ops.unpin_chat(chat_id))

    def archive_chat(self, chat_id: str) -> None:
        self.runner.run(self._ops.archive_chat(chat_id))

    def unarchive_chat(self, chat_id: str) -> None:
        self.runner.run(self._ops.unarchive_chat(chat_id),
                        lambda done: self.sig_select_chat_requested.emit(done[0].id))

    def stop_and_archive_chat(self, chat_id: str) -> None:
        self.runner.run(self._ops.stop_and_archive_chat(chat_id))

    def delete_chat(self, chat_id: str) -> None:
        """Delete chat…: asked first (Enter keeps the chat), then the core's ``remove_chat``
        (a reply running in it is stopped: the question said so)."""
        chat = self._registry.chat(chat_id)
        if chat is None:
            return
        working = bool(self._registry.live.kinds(chat_id))
        if not self.confirm("Delete chat?", menus.delete_question(chat, working=working),
                            "Delete"):
            return
        def undo() -> None:
            self.runner.run(self._ops.restore_chat(chat_id),
                            lambda _done: self.sig_select_chat_requested.emit(chat_id))

        self.runner.run(self._ops.remove_chat(chat_id, stop=working),
                        lambda _done: self.sig_undoable.emit(
                            f"Deleted “{chat.title}”. File › Recently removed brings it back "
                            "within 30 days.", undo))

    # ================================================================= the keys'

    def rename(self, kind: str, item_id: str) -> None:
        """F2 on a row."""
        if kind == WORKSPACE:
            self.rename_workspace(item_id)
        elif kind == CHAT:
            self.rename_chat(item_id)

    def delete(self, kind: str, item_id: str) -> None:
        """Delete on a row: a workspace is removed, a chat archived (each after asking)."""
        if kind == WORKSPACE:
            self.remove_workspace(item_id)
            return
        chat: Chat | None = self._registry.chat(item_id) if kind == CHAT else None
        if chat is None or chat.archived:
            return
        if self._registry.live.kinds(item_id):
            question = (f"A reply or a rebuild is running in “{chat.title}”. "
                        + menus.archive_question(chat))
            if self.confirm("Stop and archive?", question, "Stop and archive"):
                self.stop_and_archive_chat(item_id)
        elif self.confirm("Archive chat?", menus.archive_question(chat), "Archive"):
            self.archive_chat(item_id)

    def export_chat(self, chat_id: str) -> None:
        """Export chat as Markdown…: where to (the save dialog asks about an existing file,
        and its yes is the replace), then the core's ``export_chat``."""
        import os
        from pathlib import Path

        from ui.dialogs import workspace_folder

        chat = self._registry.chat(chat_id)
        if chat is None:
            return
        start = self.markdown_folder or workspace_folder(self._registry, chat.workspace_id)
        name = "".join(c if c.isalnum() or c in " -_." else " " for c in chat.title).strip()
        target = self.ask_markdown_file(chat.title, os.path.join(start, f"{name or 'Chat'}.md"))
        if not target:
            return
        if not target.lower().endswith(".md"):
            target += ".md"
        self.markdown_folder = os.path.dirname(target) or None
        self.runner.run(self._ops.export_chat(chat_id, Path(target), replace=True),
                        lambda done: self.sig_told.emit(
                            f"Exported “{chat.title}” to {done.path} ({done.messages} "
                            f"message{'s' if done.messages != 1 else ''})."))

    # ================================================================= the drops'

    def add_folders(self, paths: list[str]) -> None:
        """Add each folder as a workspace (or find its workspace) and select the last one."""
        for path in paths:
            self.runner.run(self._ops.add_workspace(path),
                            lambda added: self.sig_select_workspace_requested.emit(added[0][0].id))

    def move_chat(self, chat_id: str, index: int) -> None:
        self.runner.run(self._ops.move_chat(chat_id, index=index))

    def move_chat_to(self, chat_id: str, ws_id: str, index: int) -> None:
        """Into another workspace ("": Ungrouped), at *index* among its chats."""
        self.runner.run(self._ops.move_chat_to(chat_id, ws_id or None, index=index),
                        lambda _done: self.sig_select_chat_requested.emit(chat_id))

    def move_workspace(self, ws_id: str, index: int) -> None:
        self.runner.run(self._ops.move_workspace(ws_id, index=index))

    # ================================================================= default dialogs

    def _ask_text(self, title: str, label: str, text: str) -> str | None:
        dialog = TitleDialog(self._parent, title, label, text)
        return dialog.textValue() if dialog.exec() else None

    def _confirm(self, title: str, text: str, action: str) -> bool:
        undone_by_unarchive = action in ("Archive", "Stop and archive")
        # macOS shows no window title on a question: its bold text is the title there.
        # Elsewhere the title bar says it, and the text saying it again read twice.
        import sys

        main, more = (title, text) if sys.platform == "darwin" else (text, "")
        return confirm(QMessageBox.Icon.Question, title, main, action, informative=more,
                       role=QMessageBox.ButtonRole.AcceptRole if undone_by_unarchive
                       else QMessageBox.ButtonRole.DestructiveRole,
                       parent=self._parent, action_is_default=undone_by_unarchive)

    def _ask_folder(self, title: str) -> str | None:
        return QFileDialog.getExistingDirectory(self._parent, title) or None

    def _ask_markdown_file(self, title: str, start: str) -> str | None:
        # The dialog asks before replacing a file: its yes is the export's replace.
        path, _ = QFileDialog.getSaveFileName(self._parent, f"Export “{title}” as Markdown",
                                              start, "Markdown (*.md)")
        return path or None

    def _ask_details(self, ws: Workspace) -> tuple[str, str] | None:
        dialog = menus.DetailsDialog(ws, self._parent)
        return dialog.values() if dialog.exec() else None



class TitleDialog(QInputDialog):
    """A dialog asking for a title: its OK is off while the title is empty (or spaces), so
    a refusal for an empty title is never needed."""

    def __init__(self, parent: QWidget | None, title: str, label: str, text: str) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setAccessibleName(title)
        self.setLabelText(label)
        self.setTextEchoMode(QLineEdit.EchoMode.Normal)
        self.setTextValue(text)
        self.textValueChanged.connect(self._allow)
        # Room for the title it asks for and its own ("Rename workspace", not "Renam…space").
        self._least = max(360, self.fontMetrics().horizontalAdvance(title) + 160)

    def ok_button(self) -> QPushButton | None:
        buttons = self.findChild(QDialogButtonBox)  # Qt builds it when first shown
        return buttons.button(QDialogButtonBox.StandardButton.Ok) if buttons else None

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802
        super().showEvent(event)
        self._allow(self.textValue())
        if self.width() < self._least:  # (the input dialog sizes itself as it shows)
            self.resize(self._least, self.height())

    def _allow(self, value: str) -> None:
        ok = self.ok_button()
        if ok is not None:
            ok.setEnabled(bool(value.strip()))
