"""Sharing a workspace from the window: Export…, Import…, and Recently removed (the core's
``app/sharing/export.py``, ``app/sharing/importing.py`` and ``app/store/registry/removed.py``).

Each flow asks with a dialog that a test can replace (the ``ask_*`` hooks of
:class:`SharingFlows`), runs the operation on the core's thread, and says the outcome or the
refusal in one sentence through the window's notice.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.store.files import human_size
from ui.dialogs import FolderDialog, ask_folder, home, workspace_folder
from ui.text import Label, answered, message_box, tip

if TYPE_CHECKING:
    from app.ops import Operations
    from app.store.registry.registry import Registry
    from app.store.registry.removed import RemovedWorkspace
    from app.store.registry.removed_chats import RemovedChat

BUNDLE_SUFFIX = ".cairn"


class ExportOptions(QDialog):
    """What goes into the bundle besides the workspace, its folders, knowledge and files."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Export “{title}”")
        layout = QVBoxLayout(self)
        about = Label("The bundle holds the workspace and its folders: titles, descriptions, "
                       "instructions, build status, knowledge documents and knowledge files. "
                       "Never your API key, settings or personal memory.")
        about.setWordWrap(True)
        self.chats = QCheckBox("Include the chats and their messages")
        self.chats.setAccessibleName("Include chats")
        self.history = QCheckBox("Include every saved version of the knowledge documents")
        self.history.setAccessibleName("Include history")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        export = buttons.addButton("Export…", QDialogButtonBox.ButtonRole.AcceptRole)
        export.setAccessibleName("Export")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        for widget in (about, self.chats, self.history, buttons):
            layout.addWidget(widget)


class RecentlyRemoved(QDialog):
    """Workspaces removed and chats deleted in the last 30 days; Restore brings one back
    (a workspace at its folder, a chat at the top of its workspace)."""

    sig_restore = Signal(str)  # workspace id
    sig_restore_into = Signal(str)  # workspace id: the person is asked for another folder
    sig_restore_chat = Signal(str)  # chat id

    def __init__(self, removed: list[RemovedWorkspace], parent: QWidget | None = None,
                 chats: list[RemovedChat] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Recently removed")
        self.setObjectName("recently-removed")
        self.resize(560, 520)
        layout = QVBoxLayout(self)
        intro = Label("Removed workspaces keep their description, instructions, knowledge "
                       "and files for 30 days, deleted chats their messages. Restore brings "
                       "one back.")
        intro.setWordWrap(True)
        self.list = QListWidget()
        self.list.setAccessibleName("Recently removed workspaces")
        self._missing: set[str] = set()
        from app.knowledge.status import ago  # (it loads the rebuild: not at start-up)

        for ws in removed:
            where = f"{ws.path} (folder missing)" if ws.folder_missing else ws.path
            item = QListWidgetItem(
                f"{ws.title}\n{where}\nremoved {ago(ws.removed_at)} · {len(ws.chats)} "
                f"chat{'s' if len(ws.chats) != 1 else ''} · {ws.files} "
                f"file{'s' if ws.files != 1 else ''}")
            item.setData(Qt.ItemDataRole.UserRole, ws.id)
            if ws.folder_missing:
                self._missing.add(ws.id)
                item.setIcon(self.style().standardIcon(
                    self.style().StandardPixmap.SP_MessageBoxWarning))
                item.setToolTip(tip(f"The folder {ws.path} is missing: restore it into "
                                    "another folder."))  # a path is data: never markup
            self.list.addItem(item)
        if removed:
            self.list.setCurrentRow(0)
        self.empty = Label("No workspace was removed in the last 30 days.")
        self.empty.setVisible(not removed)
        self.problem = Label("")
        self.problem.setObjectName("restore-problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #dc2626;")
        self.restore = QPushButton("Restore")
        self.restore.setAccessibleName("Restore")
        self.restore.setEnabled(bool(removed))
        self.restore.clicked.connect(self._restore)
        self.restore_into = QPushButton("Restore into another folder…")
        self.restore_into.setAccessibleName("Restore into another folder")
        self.restore_into.clicked.connect(self._restore_into)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        close.addButton(self.restore_into, QDialogButtonBox.ButtonRole.ActionRole)
        close.addButton(self.restore, QDialogButtonBox.ButtonRole.ActionRole)
        self.list.currentItemChanged.connect(lambda _now, _before: self._update_buttons())
        self._update_buttons()
        # Deleted chats (issue 36), below: each with where it was and what it holds.
        chats = chats or []
        self.chats_caption = Label("Deleted chats")
        self.chats_caption.setObjectName("section-title")
        self.chats = QListWidget()
        self.chats.setAccessibleName("Deleted chats")
        for chat in chats:
            item = QListWidgetItem(
                f"{chat.title}\nin {chat.workspace_title or 'Ungrouped'} · removed "
                f"{ago(chat.removed_at)} · {chat.messages} "
                f"message{'s' if chat.messages != 1 else ''}")
            item.setData(Qt.ItemDataRole.UserRole, chat.id)
            self.chats.addItem(item)
        if chats:
            self.chats.setCurrentRow(0)
        self.chats_empty = Label("No chat was deleted in the last 30 days.")
        self.chats_empty.setVisible(not chats)
        self.restore_chat = QPushButton("Restore chat")
        self.restore_chat.setAccessibleName("Restore chat")
        self.restore_chat.setEnabled(bool(chats))
        self.restore_chat.clicked.connect(self._restore_chat)
        chat_buttons = QDialogButtonBox()
        chat_buttons.addButton(self.restore_chat, QDialogButtonBox.ButtonRole.ActionRole)
        workspaces_caption = Label("Removed workspaces")
        workspaces_caption.setObjectName("section-title")
        for caption in (workspaces_caption, self.chats_caption):
            bold = caption.font()
            bold.setBold(True)
            caption.setFont(bold)
        # An empty list is its sentence only: the room goes to the list that has rows.
        self.list.setVisible(bool(removed))
        self.chats.setVisible(bool(chats))
        for button in (self.restore, self.restore_into):
            button.setVisible(bool(removed))  # nothing to restore: no dimmed buttons
        self.restore_chat.setVisible(bool(chats))
        for widget in (intro, workspaces_caption, self.list, self.empty, self.problem,
                       self.chats_caption, self.chats, self.chats_empty, chat_buttons, close):
            layout.addWidget(widget)
        if not removed and chats:
            self.chats.setFocus()

    def _restore_chat(self) -> None:
        item = self.chats.currentItem()
        if item is not None:
            self.sig_restore_chat.emit(str(item.data(Qt.ItemDataRole.UserRole)))

    def restored_chat(self, chat_id: str) -> None:
        for row in range(self.chats.count()):
            if self.chats.item(row).data(Qt.ItemDataRole.UserRole) == chat_id:
                self.chats.takeItem(row)
                break
        self.restore_chat.setEnabled(self.chats.count() > 0)
        self.chats_empty.setVisible(self.chats.count() == 0)
        self.chats.setVisible(self.chats.count() > 0)

    def _restore(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.sig_restore.emit(str(item.data(Qt.ItemDataRole.UserRole)))

    def _restore_into(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self.sig_restore_into.emit(str(item.data(Qt.ItemDataRole.UserRole)))

    def _update_buttons(self) -> None:
        """Restore where it was only while that folder is there; elsewhere, always."""
        item = self.list.currentItem()
        ws_id = str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None
        self.restore.setEnabled(ws_id is not None and ws_id not in self._missing)
        self.restore_into.setEnabled(ws_id is not None)
        self.problem.setText(
            "Its folder is missing: choose where it is now (or another folder) with "
            "“Restore into another folder…”." if ws_id in self._missing else "")

    def restored(self, ws_id: str) -> None:
        for row in range(self.list.count()):
            if self.list.item(row).data(Qt.ItemDataRole.UserRole) == ws_id:
                self.list.takeItem(row)
                break
        self._update_buttons()
        self.empty.setVisible(self.list.count() == 0)
        self.list.setVisible(self.list.count() > 0)


class SharingFlows:
    """The window's Export…, Import… and Recently removed."""

    def __init__(self, window: Any, ops: Operations, registry: Registry) -> None:
        self.window, self.ops, self.registry = window, ops, registry
        # Dialogs, as hooks a test can replace.
        self.ask_export_options: Callable[[str], tuple[bool, bool] | None] = \
            self._ask_export_options
        self.ask_export_file: Callable[[str], str | None] = self._ask_export_file
        self.ask_replace: Callable[[str], Awaitable[bool]] = self._ask_replace
        self.ask_bundle: Callable[[], str | None] = self._ask_bundle
        self.ask_import_folder: Callable[[str], Awaitable[str | None]] = self._ask_import_folder
        self.ask_restore_folder: Callable[[], str | None] = self._ask_restore_folder
        self.removed_dialog: RecentlyRemoved | None = None
        self.start_folder = home()  # where the next file dialog opens (a workspace's folder)
        self.export_folder: str | None = None  # where the last export went: the next goes there

    # ----------------------------------------------------------------- export

    def export(self, ws_id: str) -> None:
        ws = self.registry.workspace(ws_id)
        if ws is None:
            return
        options = self.ask_export_options(ws.title)
        if options is None:
            return
        # Beside the workspace's folder (a bundle inside the folder it holds would be taken
        # into the next export), or where the last export went.
        self.start_folder = self.export_folder or os.path.dirname(
            workspace_folder(self.registry, ws_id).rstrip(os.sep)) or home()
        target = self.ask_export_file(ws.title)
        if not target:
            return
        if not target.endswith(BUNDLE_SUFFIX):
            target += BUNDLE_SUFFIX
        self.export_folder = os.path.dirname(target) or None
        self.window.run_task(self._export(ws_id, Path(target), *options))

    async def _export(self, ws_id: str, target: Path, with_chats: bool,
                      with_history: bool) -> None:
        import asyncio

        try:
            exported, _ = await self.ops.export_workspace(
                ws_id, target, with_chats=with_chats, with_history=with_history)
        except CairnError as refused:
            # An existing file is never overwritten unless the person says so.
            if not await asyncio.to_thread(target.exists):
                self.window.notice.say(str(refused))
                return
            if not await self.ask_replace(str(target)):
                return  # the person kept the file: nothing to say
            try:
                exported, _ = await self.ops.export_workspace(
                    ws_id, target, with_chats=with_chats, with_history=with_history,
                    replace=True)
            except CairnError as again:
                self.window.notice.say(str(again))
                return
        self.window.notice.say(
            f"Exported to {exported.path} ({human_size(exported.size)}: {exported.workspaces} "
            f"workspace{'s' if exported.workspaces != 1 else ''}, {exported.files} "
            f"file{'s' if exported.files != 1 else ''}, {exported.chats} "
            f"chat{'s' if exported.chats != 1 else ''}).")

    # ----------------------------------------------------------------- import

    def choose_bundle(self) -> None:
        self.start_folder = workspace_folder(self.registry, self.window.selected_workspace_id())
        source = self.ask_bundle()
        if source:
            self.import_bundle(source)

    def import_bundle(self, source: str) -> None:
        """Check the bundle first (a file that is no bundle is said at once), then ask
        where it goes, then import."""
        self.window.run_task(self._check_then_import(Path(source)))

    async def _check_then_import(self, source: Path) -> None:
        try:
            title = await self.ops.check_bundle(source)
        except CairnError as refused:
            self.window.notice.say(str(refused))
            return
        self.start_folder = str(source.parent)
        folder = await self.ask_import_folder(f"“{title}” ({source.name})")
        if folder:
            await self._import(source, folder)

    async def _import(self, source: Path, folder: str) -> None:
        try:
            imported, _ = await self.ops.import_bundle(source, folder)
        except CairnError as refused:
            self.window.notice.say(str(refused))
            return
        self.window.select_workspace(imported.workspace.id)
        if imported.knowledge_files:  # the bundle kept its knowledge as CAIRN.md
            await self._adopt_cairn_md(imported.knowledge_files)
        self.window.notice.say(
            f"Imported “{imported.workspace.title}” into {imported.workspace.path} "
            f"({imported.files} file{'s' if imported.files != 1 else ''}, {imported.chats} "
            f"chat{'s' if imported.chats != 1 else ''}).")

    async def ask_keep_cairn_md(self, path: str) -> str | None:
        """The bundle keeps its knowledge as CAIRN.md and the folder has its own: keep the
        bundle's document or the folder's file (None: leave CAIRN.md off there).  Asked
        inside a task: without an event loop of its own (see ``answered``)."""
        box = message_box(QMessageBox.Icon.Question, "CAIRN.md already exists",
                          f"{path} already exists and is not the imported document. Which one "
                          "should Cairn keep as CAIRN.md?", parent=self.window)
        box.setAccessibleName("CAIRN.md already exists")
        document = box.addButton("Keep the imported document", QMessageBox.ButtonRole.AcceptRole)
        the_file = box.addButton("Keep the folder's file", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        await answered(box)
        clicked = box.clickedButton()
        return "document" if clicked is document else "file" if clicked is the_file else None

    async def _adopt_cairn_md(self, ws_ids: tuple[str, ...]) -> None:
        try:
            asked, _ = await self.ops.adopt_knowledge_files(ws_ids)
            for ws_id in asked:
                ws = self.registry.workspace(ws_id)
                keep = await self.ask_keep_cairn_md(f"{ws.path}/CAIRN.md" if ws else "CAIRN.md")
                if keep is not None:
                    await self.ops.switch_knowledge_file(ws_id, True, keep=keep)
        except CairnError as refused:
            self.window.notice.say(str(refused))

    # ----------------------------------------------------------------- recently removed

    def show_removed(self) -> None:
        self.window.run_task(self._show_removed())

    async def _show_removed(self) -> None:
        removed = await self.ops.removed_workspaces()
        chats = await self.ops.removed_chats()
        dialog = RecentlyRemoved(removed, self.window, chats=chats)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.sig_restore.connect(lambda ws_id: self.window.run_task(self._restore(ws_id)))
        dialog.sig_restore_chat.connect(
            lambda chat_id: self.window.run_task(self._restore_chat(chat_id)))
        dialog.sig_restore_into.connect(self._restore_elsewhere)
        self.removed_dialog = dialog
        dialog.open()

    def _restore_elsewhere(self, ws_id: str) -> None:
        folder = self.ask_restore_folder()
        if folder:
            self.window.run_task(self._restore(ws_id, into=folder))

    async def _restore(self, ws_id: str, into: str | None = None) -> None:
        dialog = self.removed_dialog
        try:
            ws, _ = await self.ops.restore_workspace(ws_id, into=into)
        except CairnError as refused:
            if dialog is not None:
                dialog.problem.setText(str(refused))
            return
        if dialog is not None:
            dialog.problem.setText("")
            dialog.restored(ws_id)
        self.window.select_workspace(ws.id)

    async def _restore_chat(self, chat_id: str) -> None:
        dialog = self.removed_dialog
        try:
            chat, _ = await self.ops.restore_chat(chat_id)
        except CairnError as refused:
            if dialog is not None:
                dialog.problem.setText(str(refused))
            return
        if dialog is not None:
            dialog.restored_chat(chat_id)
        self.window.select_chat(chat.id)

    # ----------------------------------------------------------------- the dialogs

    def _ask_export_options(self, title: str) -> tuple[bool, bool] | None:
        dialog = ExportOptions(title, self.window)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.chats.isChecked(), dialog.history.isChecked()

    def _ask_export_file(self, title: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(
            self.window, "Export workspace",
            os.path.join(self.start_folder, f"{title}{BUNDLE_SUFFIX}"),
            f"Cairn bundles (*{BUNDLE_SUFFIX})",
            # Replacing a file is asked once, by the export (the dialog cannot know the suffix
            # the export adds): never twice.
            options=QFileDialog.Option.DontConfirmOverwrite)
        return path or None

    async def _ask_replace(self, path: str) -> bool:
        """Asked inside a task: without an event loop of its own (see ``answered``).  The
        one question about an existing file (the save dialog asks none: see
        ``_ask_export_file``)."""
        box = message_box(QMessageBox.Icon.Question, "Replace the file?",
                          f"{path} already exists. Replace it with this export?",
                          buttons=QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                          parent=self.window)
        box.setAccessibleName("Replace the file?")
        box.setDefaultButton(QMessageBox.StandardButton.No)  # Enter keeps the file
        await answered(box)
        return box.clickedButton() is box.button(QMessageBox.StandardButton.Yes)

    def _ask_bundle(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Import a workspace",
                                              self.start_folder,
                                              f"Cairn bundles (*{BUNDLE_SUFFIX})")
        return path or None

    def _ask_restore_folder(self) -> str | None:
        return ask_folder(self.window, "Restore into which folder? (where it is now, or a new "
                          "one)", home())

    async def _ask_import_folder(self, name: str) -> str | None:
        """Asked inside a task: without an event loop of its own (see ``answered``)."""
        dialog = FolderDialog(
            self.window, f"Import “{name}”", self.start_folder, accept="Import here",
            instruction=f"Choose the folder “{name}” is made for: an empty folder, or type the "
                        "name of a new one under the folder shown.")
        accepted = await answered(dialog) == FolderDialog.DialogCode.Accepted
        return dialog.chosen if accepted else None
