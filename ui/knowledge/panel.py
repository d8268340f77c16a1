"""The side panel beside the chat: the knowledge of the selected workspace or folder in three
tabs — Knowledge (the document editor), Instructions (description and custom instructions)
and Files (knowledge files) — and, for a chat in a folder, a switch between the folder's
document and the ones above it.  Collapsible; it asks before unsaved changes would go."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QMessageBox,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ui.knowledge.editor import DocumentEditor
from ui.knowledge.files import FilesView
from ui.knowledge.folder_switches import FolderSwitches
from ui.knowledge.instructions import InstructionsView
from ui.knowledge.tools import ToolsView
from ui.text import Label, answered, message_box
from ui.widgets import ElidedLabel

if TYPE_CHECKING:
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

SAVE, DISCARD, CANCEL = "save", "discard", "cancel"
MIN_WIDTH = 280  # px: the panel's narrowest, unless its tabs need more


class KnowledgePanel(QWidget):
    sig_error = Signal(str)
    sig_undoable = Signal(str, object)  # a sentence, and what its Undo does
    sig_hide = Signal()  # the person folded the panel away

    def __init__(self, registry: Registry, ops: KnowledgeOps, bridge: EventBridge,
                 run_task: RunTask, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.registry, self.ops, self.run_task = registry, ops, run_task
        self.ws_id: str | None = None  # the workspace whose knowledge is shown
        self.chain: list[str] = []  # from the project down to ws_id
        self.setObjectName("knowledge-panel")
        self.setMinimumWidth(MIN_WIDTH)

        self.title = ElidedLabel(mode=Qt.TextElideMode.ElideRight)
        self.title.setObjectName("knowledge-title")
        self.title.setAccessibleName("Knowledge of")
        self.title.setStyleSheet("#knowledge-title { font-weight: 600; }")
        self.owner_box = QComboBox()
        self.owner_box.setAccessibleName("Document")
        self.owner_box.setToolTip("Which document of this chat's folders to show")
        self.owner_box.activated.connect(lambda _row: self._owner_chosen())
        self.owner_box.hide()
        self.fold = QToolButton()
        self.fold.setText("»")
        self.fold.setAccessibleName("Hide knowledge panel")
        self.fold.setToolTip("Hide the knowledge panel (Ctrl+Shift+K)")
        self.fold.setAutoRaise(True)
        self.fold.clicked.connect(self.sig_hide.emit)
        head = QHBoxLayout()
        head.setSpacing(6)
        head.addWidget(self.title, 1)
        head.addWidget(self.fold)

        self.editor = DocumentEditor(ops, bridge, registry, run_task)
        self.instructions = InstructionsView(ops, bridge, registry, run_task)
        self.files = FilesView(ops, bridge, run_task, registry=registry)
        self.folder = FolderSwitches(ops, bridge, registry, run_task)
        self.tools = ToolsView(ops, registry, run_task)
        for part in (self.editor, self.instructions, self.files, self.folder, self.tools):
            part.sig_error.connect(self.sig_error.emit)
        self.editor.sig_undoable.connect(self.sig_undoable.emit)
        self.editor.sig_dirty.connect(lambda _d: self._mark_tabs())
        self.instructions.sig_dirty.connect(lambda _d: self._mark_tabs())
        self.tabs = QTabWidget()
        self.tabs.setAccessibleName("Knowledge panel sections")
        self.tabs.setDocumentMode(True)
        bar = self.tabs.tabBar()
        bar.setUsesScrollButtons(False)  # four short tabs: never hide one behind arrows
        # Never "Knowledg…": the tabs' whole names set the panel's narrowest width (the
        # window folds the panel rather than squeeze them; see ui/columns.py).
        bar.setElideMode(Qt.TextElideMode.ElideNone)
        self.tabs.addTab(self.editor, "Knowledge")
        self.tabs.addTab(self.instructions, "Instructions")
        self.tabs.addTab(self.files, "Files")
        self.tabs.addTab(self.tools, "Tools")  # MCP servers (ui/knowledge/tools.py)
        for page in (self.editor, self.instructions, self.files):
            page.setContentsMargins(0, 8, 0, 0)

        self.empty = Label("")
        self.empty.setAccessibleName("Knowledge panel message")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.empty.setStyleSheet("color: palette(placeholder-text);")
        self.body = QStackedWidget()
        self.body.addWidget(self.empty)
        self.body.addWidget(self.tabs)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 12, 12, 12)
        layout.setSpacing(8)
        layout.addLayout(head)
        # Below the title, not beside it: beside it, a nested folder's title had no room
        # left and read "…" (issue 36).
        layout.addWidget(self.owner_box)
        layout.addWidget(self.body, 1)
        layout.addWidget(self.folder)
        bridge.sig_workspace_changed.connect(lambda _e: self._show_titles())
        self.show_workspace(None)
        self._fit_tabs()

    # ----------------------------------------------------------------- hooks (tests replace)

    async def ask_unsaved(self) -> str:
        """Save, discard or cancel, when unsaved changes would go (asked inside a task:
        without an event loop of its own, see ``answered``)."""
        title, text = self.unsaved_question()
        box = message_box(QMessageBox.Icon.Question, title, text,
                          buttons=QMessageBox.StandardButton.Save
                          | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, parent=self)
        box.setAccessibleName(title)
        await answered(box)
        clicked = box.clickedButton()
        answer = box.standardButton(clicked) if clicked is not None else None
        if answer == QMessageBox.StandardButton.Save:
            return SAVE
        if answer == QMessageBox.StandardButton.Discard:
            return DISCARD
        return CANCEL

    # ----------------------------------------------------------------- public

    def show_workspace(self, ws_id: str | None, *, ungrouped: bool = False) -> None:
        """Show *ws_id*'s knowledge (its own document first); None: nothing selected, or an
        Ungrouped chat.  Unsaved changes are dropped: ask first (:meth:`may_leave`)."""
        if ws_id is not None and ws_id == self.ws_id:
            self._show_titles()
            return
        self.ws_id = ws_id
        self.chain = self._chain(ws_id) if ws_id is not None else []
        if ws_id is None:
            self.empty.setText(
                "An Ungrouped chat has no workspace knowledge. Personal memory, in Settings, "
                "goes with every chat." if ungrouped else
                "Select a workspace or a chat to see its knowledge, instructions and files.")
            self.body.setCurrentWidget(self.empty)
            self.editor.open(None)
        else:
            self.body.setCurrentWidget(self.tabs)
            self.editor.open(ws_id)
        self.folder.open(ws_id)
        self.instructions.open(ws_id)
        self.files.open(ws_id)
        self.tools.open(ws_id)
        self._show_titles()

    def would_leave(self, ws_id: str | None) -> bool:
        """Would showing *ws_id* drop unsaved changes?"""
        return ws_id != self.ws_id and self.is_dirty()

    def is_dirty(self) -> bool:
        return self.editor.is_dirty() or self.instructions.is_dirty()

    def unsaved_question(self) -> tuple[str, str]:
        """The unsaved-changes question's title and text, naming what was edited (issue 36:
        it said "knowledge" for edited instructions)."""
        document, instructions = self.editor.is_dirty(), self.instructions.is_dirty()
        if instructions and not document:
            return ("Unsaved instructions",
                    "Save your changes to the description and instructions before leaving?")
        if instructions:
            return ("Unsaved changes", "Save your changes to the knowledge document and to "
                    "the instructions before leaving?")
        return ("Unsaved knowledge",
                "Save your changes to the knowledge document before leaving?")

    def save(self) -> None:
        """Ctrl+S: what has unsaved changes."""
        if self.editor.is_dirty() or self.editor.incoming is not None:
            self.editor.save()
        if self.instructions.is_dirty():
            self.instructions.save()

    def stop(self) -> None:
        """At quit: no more reads of the status."""
        self.editor.status_line.stop()
        self.folder.stop()

    async def may_leave(self) -> bool:
        """Ask about unsaved changes: True when they are saved or may go."""
        if not self.is_dirty():
            return True
        answer = await self.ask_unsaved()
        if answer == CANCEL:
            return False
        if answer == DISCARD:
            return True
        saved = await self.editor.save_now()
        if saved:
            saved = await self.instructions.save_now() if self.instructions.is_dirty() else True
        if not saved:
            self.tabs.setCurrentWidget(self.editor if self.editor.incoming is not None
                                       else self.instructions)
        return saved

    # ----------------------------------------------------------------- private

    def _chain(self, ws_id: str) -> list[str]:
        return [ws.id for ws in self.registry.lineage(ws_id)]

    def _show_titles(self) -> None:
        ws = self.registry.workspace(self.ws_id) if self.ws_id else None
        self.title.setText(ws.title if ws is not None else "Knowledge")
        self.owner_box.blockSignals(True)
        self.owner_box.clear()
        for depth, node in enumerate(self.chain):
            found = self.registry.workspace(node)
            if found is None:
                continue
            kind = "Project" if depth == 0 else "Folder"
            self.owner_box.addItem(f"{kind}: {found.title}", node)
        self.owner_box.setCurrentIndex(max(0, self.owner_box.findData(self.editor.owner)))
        self.owner_box.blockSignals(False)
        self.owner_box.setVisible(len(self.chain) > 1)

    def _owner_chosen(self) -> None:
        owner = self.owner_box.currentData()
        if owner is None or owner == self.editor.owner:
            return
        if not self.is_dirty():
            self._open_owner(str(owner))
            return

        async def switch() -> None:
            if await self.may_leave():
                self._open_owner(str(owner))
            self._show_titles()

        self.run_task(switch())

    def _open_owner(self, owner: str) -> None:
        """One of the chain's documents, with its instructions and files."""
        self.editor.open(owner)
        self.instructions.open(owner)
        self.files.open(owner)
        self.tools.open(owner)
        self.folder.open(owner)

    def _mark_tabs(self) -> None:
        self.tabs.setTabText(0, "Knowledge ●" if self.editor.is_dirty() else "Knowledge")
        self.tabs.setTabText(1, "Instructions ●" if self.instructions.is_dirty()
                             else "Instructions")
        self._fit_tabs()

    def _fit_tabs(self) -> None:
        """The panel is never narrower than its tabs' whole names (an explicit minimum
        width would otherwise win over the tab bar's, and squeeze them)."""
        layout = self.layout()
        margins = layout.contentsMargins() if layout is not None else None
        sides = margins.left() + margins.right() if margins is not None else 0
        self.setMinimumWidth(max(MIN_WIDTH, self.tabs.tabBar().sizeHint().width() + sides))


__all__ = ["CANCEL", "DISCARD", "KnowledgePanel", "SAVE"]
