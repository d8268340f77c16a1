"""A workspace's knowledge files: name, size, type and description, each with its line as
the model sees it in the manifest.  Add by dialog or by dropping files here, edit a
description, remove (after a confirmation).  Reading, hashing and removing run as
operations, never on the GUI thread."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QFont
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.store.files import KnowledgeFile, human_size
from ui.text import Label, confirm, tip

if TYPE_CHECKING:
    from app.events import FileAdded, FileChanged, FileRemoved
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

TYPES = {"text/markdown": "Markdown", "text/plain": "Text", "application/pdf": "PDF",
         "image/png": "PNG image", "image/jpeg": "JPEG image", "image/gif": "GIF image",
         "image/webp": "WebP image"}


def kind_of(media_type: str) -> str:
    return TYPES.get(media_type, media_type.split("/")[-1].upper() or "File")


class FilesView(QWidget):
    sig_error = Signal(str)
    sig_loaded = Signal()  # the list shows the stored files (tests wait on it)

    def __init__(self, ops: KnowledgeOps, bridge: EventBridge, run_task: RunTask,
                 parent: QWidget | None = None, *, registry: Registry | None = None) -> None:
        super().__init__(parent)
        self.ops, self.run_task = ops, run_task
        self.registry = registry  # the workspaces' folders, for where "Add files…" opens
        self.ws_id: str | None = None
        self.files: list[tuple[KnowledgeFile, str]] = []
        self._loads = 0
        self.setAcceptDrops(True)

        self.hint = Label("Files Claude can read when a question needs them. Drop files "
                           "here, or add them.")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: palette(placeholder-text);")
        self.add_button = QPushButton("Add files…")
        self.add_button.setAccessibleName("Add files")
        self.add_button.setAutoDefault(False)
        self.add_button.clicked.connect(self.choose_files)

        self.list = QTreeWidget()
        self.list.setAccessibleName("Knowledge files")
        self.list.setHeaderLabels(["Name", "Size", "Type"])
        self.list.setRootIsDecorated(False)
        self.list.setAlternatingRowColors(True)
        self.list.setUniformRowHeights(True)
        header = self.list.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.list.currentItemChanged.connect(lambda *_: self._show_selected())

        self.description = QLineEdit()
        self.description.setAccessibleName("File description")
        self.description.setPlaceholderText("What is in it, so Claude knows when to read it")
        self.description.returnPressed.connect(self.save_description)
        self.description.textChanged.connect(lambda _t: self._description_typed())
        self.save_description_button = QPushButton("Save")
        self.save_description_button.setAccessibleName("Save description")
        self.save_description_button.setAutoDefault(False)
        self.save_description_button.setEnabled(False)
        self.save_description_button.clicked.connect(self.save_description)
        self.manifest = Label("")
        self.manifest.setAccessibleName("Manifest line")
        self.manifest.setToolTip("This file's line as the model sees it")
        self.manifest.setWordWrap(True)
        self.manifest.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        mono.setPointSizeF(max(8.0, self.font().pointSizeF() - 1))
        self._mono = mono  # the manifest's line only: a hint in its place reads as text
        self.remove_button = QPushButton("Remove…")
        self.remove_button.setAccessibleName("Remove file")
        self.remove_button.setAutoDefault(False)
        self.remove_button.clicked.connect(self.remove_selected)

        describe_row = QHBoxLayout()
        describe_row.addWidget(self.description, 1)
        describe_row.addWidget(self.save_description_button)
        self.details = QWidget()
        details = QVBoxLayout(self.details)
        details.setContentsMargins(0, 0, 0, 0)
        details.setSpacing(6)
        details.addLayout(describe_row)
        details.addWidget(self.manifest)
        details.addWidget(self.remove_button, 0, Qt.AlignmentFlag.AlignRight)
        self.details.setEnabled(False)

        top = QHBoxLayout()
        top.addWidget(self.hint, 1)
        top.addWidget(self.add_button, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(top)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.details)

        for signal in (bridge.sig_file_added, bridge.sig_file_changed, bridge.sig_file_removed):
            signal.connect(self._file_event)

    # ----------------------------------------------------------------- hooks (tests replace)

    def ask_files(self) -> list[str]:
        from ui.dialogs import workspace_folder  # opens in the workspace's folder

        paths, _ = QFileDialog.getOpenFileNames(
            self, "Add knowledge files", workspace_folder(self.registry, self.ws_id))
        return list(paths)

    def confirm_remove(self, name: str) -> bool:
        return confirm(QMessageBox.Icon.Question, "Remove knowledge file",
                       f"Remove “{name}” from this workspace's knowledge files? Chats will no "
                       "longer see it; the file on your disk is not touched.", "Remove",
                       role=QMessageBox.ButtonRole.DestructiveRole, parent=self)

    # ----------------------------------------------------------------- public

    def open(self, ws_id: str | None) -> None:
        if ws_id == self.ws_id and ws_id is not None:
            return
        self.ws_id = ws_id
        self.list.clear()
        self.files = []
        self._show_selected()
        self.add_button.setEnabled(ws_id is not None)
        if ws_id is not None:
            self.refresh()

    def refresh(self) -> None:
        if self.ws_id is not None:
            self._loads += 1
            self.run_task(self._load(self.ws_id, self._loads))

    def choose_files(self) -> None:
        paths = self.ask_files()
        if paths:
            self.run_task(self.add([Path(p) for p in paths]))

    async def add(self, paths: list[Path]) -> None:
        ws_id = self.ws_id
        if ws_id is None:
            return
        self.add_button.setEnabled(False)
        try:
            for n, path in enumerate(paths, 1):
                # A large file takes a moment to read and hash: say what is happening.
                self.hint.setText(f"Adding {path.name}…" + (f" ({n} of {len(paths)})"
                                                            if len(paths) > 1 else ""))
                try:
                    await self.ops.add_file(ws_id, path)
                except CairnError as refused:
                    self.sig_error.emit(str(refused))
        finally:
            self.add_button.setEnabled(self.ws_id is not None)
            self._say_hint()

    def save_description(self) -> None:
        selected = self.selected()
        if selected is None or self.description.text() == selected.description:
            return
        self.run_task(self._describe(selected.id, self.description.text()))

    def remove_selected(self) -> None:
        selected = self.selected()
        if selected is not None and self.confirm_remove(selected.name):
            self.run_task(self._remove(selected.id))

    def selected(self) -> KnowledgeFile | None:
        item = self.list.currentItem()
        if item is None:
            return None
        file_id = item.data(0, Qt.ItemDataRole.UserRole)
        return next((f for f, _line in self.files if f.id == file_id), None)

    # ----------------------------------------------------------------- private

    async def _load(self, ws_id: str, loads: int) -> None:
        files = await self.ops.manifest(ws_id)
        if loads != self._loads or ws_id != self.ws_id:
            return
        keep = self.selected()
        self.files = files
        self.list.blockSignals(True)
        self.list.clear()
        for record, line in files:
            item = QTreeWidgetItem([record.name, human_size(record.size),
                                    kind_of(record.media_type)])
            item.setData(0, Qt.ItemDataRole.UserRole, record.id)
            item.setToolTip(0, tip(line))
            item.setData(0, Qt.ItemDataRole.AccessibleTextRole, line)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.list.addTopLevelItem(item)
            if keep is not None and record.id == keep.id:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)
        self._say_hint()
        self._show_selected()
        self.sig_loaded.emit()

    def _say_hint(self) -> None:
        self.hint.setText("Files Claude can read when a question needs them. Drop files "
                          "here, or add them." if self.files else
                          "No files yet. Drop files here, or add them: Claude sees each "
                          "file's name and description, and reads it when needed.")

    def _show_selected(self) -> None:
        selected = self.selected()
        self.details.setEnabled(selected is not None)
        self.description.blockSignals(True)
        self.description.setText(selected.description if selected else "")
        self.description.blockSignals(False)
        line = next((line for f, line in self.files if selected and f.id == selected.id), "")
        self.manifest.setText(line or "Select a file to describe it or remove it.")
        self.manifest.setFont(self._mono if line else self.font())  # (issue 36, Minor)
        self.save_description_button.setEnabled(False)

    def _description_typed(self) -> None:
        selected = self.selected()
        self.save_description_button.setEnabled(
            selected is not None and self.description.text() != selected.description)

    async def _describe(self, file_id: str, description: str) -> None:
        try:
            await self.ops.describe_file(file_id, description)
        except CairnError as refused:
            self.sig_error.emit(str(refused))

    async def _remove(self, file_id: str) -> None:
        try:
            await self.ops.remove_file(file_id)
        except CairnError as refused:
            self.sig_error.emit(str(refused))

    def _file_event(self, event: FileAdded | FileChanged | FileRemoved) -> None:
        if event.workspace == self.ws_id:
            self.refresh()

    # ----------------------------------------------------------------- drops

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802
        if self.ws_id is not None and event.mimeData().hasUrls() and \
                any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802
        paths = [Path(u.toLocalFile()) for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            self.run_task(self.add(paths))
        event.acceptProposedAction()
