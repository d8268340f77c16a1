"""A workspace's description and custom instructions, saved the knowledge editor's safe
way: only over what was opened.  When they changed elsewhere meanwhile (the command line,
another window), the person reloads or keeps theirs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.text import Label

if TYPE_CHECKING:
    from app.events import WorkspaceChanged
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask


def _field(name: str, placeholder: str) -> QPlainTextEdit:
    edit = QPlainTextEdit()
    edit.setAccessibleName(name)
    edit.setPlaceholderText(placeholder)
    edit.setTabChangesFocus(True)
    edit.document().setDocumentMargin(8)
    return edit


class InstructionsView(QWidget):
    sig_error = Signal(str)
    sig_dirty = Signal(bool)
    sig_saved = Signal()

    def __init__(self, ops: KnowledgeOps, bridge: EventBridge, registry: Registry,
                 run_task: RunTask, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.ws_id: str | None = None
        self.opened: tuple[str, str] = ("", "")
        self._dirty = False

        self.heading = Label("")
        self.heading.setWordWrap(True)
        self.heading.setStyleSheet("color: palette(placeholder-text);")
        self.description = _field("Description", "What this workspace is about, in a line "
                                  "or two (the model reads it as reference)")
        self.description.setMaximumHeight(90)
        self.instructions = _field("Instructions", "Rules every chat here follows: tone, "
                                   "audience, what to avoid…")
        for edit in (self.description, self.instructions):
            edit.textChanged.connect(self._typed)

        self.conflict = QFrame()
        self.conflict.setObjectName("instructions-conflict")
        self.conflict.setAccessibleName("Instructions conflict")
        self.conflict.setStyleSheet("#instructions-conflict { background: palette(alternate-base);"
                                    " border: 1px solid palette(mid); border-radius: 6px; }")
        self.conflict_text = Label("These were changed elsewhere while you were editing. "
                                    "Reload them, or keep yours?")
        self.conflict_text.setAccessibleName("Instructions conflict message")
        self.conflict_text.setWordWrap(True)
        reload = QPushButton("Reload")
        reload.setAccessibleName("Reload instructions")
        reload.setAutoDefault(False)
        reload.clicked.connect(self._reload)
        keep = QPushButton("Keep mine")
        keep.setAccessibleName("Keep my instructions")
        keep.setAutoDefault(False)
        keep.clicked.connect(lambda: self.run_task(self._save(force=True)))
        bar = QHBoxLayout(self.conflict)
        bar.setContentsMargins(10, 8, 8, 8)
        bar.addWidget(self.conflict_text, 1)
        bar.addWidget(reload)
        bar.addWidget(keep)
        self.conflict.hide()

        self.dot = Label("●")
        self.dot.setAccessibleName("Unsaved instructions")
        self.dot.setToolTip("Unsaved changes")
        self.dot.setStyleSheet("color: palette(link);")
        self.dot.hide()
        self.save_button = QPushButton("Save")
        self.save_button.setAccessibleName("Save instructions")
        self.save_button.setToolTip("Save the description and instructions (Ctrl+S)")
        self.save_button.setAutoDefault(False)
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.dot)
        buttons.addWidget(self.save_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.heading)
        layout.addWidget(self.conflict)
        layout.addWidget(Label("Description"))
        layout.addWidget(self.description)
        label = Label("Custom instructions")
        layout.addWidget(label)
        layout.addWidget(self.instructions, 1)
        layout.addLayout(buttons)
        bridge.sig_workspace_changed.connect(self._changed)

    # ----------------------------------------------------------------- public

    def open(self, ws_id: str | None) -> None:
        if ws_id == self.ws_id and ws_id is not None:
            return
        self.ws_id = ws_id
        self.conflict.hide()
        self._show_stored()

    def is_dirty(self) -> bool:
        return self._dirty

    def save(self) -> None:
        if self.ws_id is not None and self._dirty:
            self.run_task(self._save(force=False))

    async def save_now(self) -> bool:
        return await self._save(force=False)

    # ----------------------------------------------------------------- private

    def _show_stored(self) -> None:
        ws = self.registry.workspace(self.ws_id) if self.ws_id else None
        self.opened = (ws.description, ws.instructions) if ws is not None else ("", "")
        folder = ws is not None and self.registry.parent_of(ws.id) is not None
        self.heading.setText(
            ("Folder instructions take precedence over the project's." if folder else
             "Every chat in this project gets these, before its knowledge.")
            if ws is not None else "")
        for edit, value in zip((self.description, self.instructions), self.opened):
            edit.blockSignals(True)
            edit.setPlainText(value)
            edit.blockSignals(False)
            edit.setEnabled(ws is not None)
        self._set_dirty(False)

    def _values(self) -> tuple[str, str]:
        return self.description.toPlainText(), self.instructions.toPlainText()

    def _typed(self) -> None:
        self._set_dirty(self._values() != self.opened)

    def _set_dirty(self, dirty: bool) -> None:
        changed = dirty != self._dirty
        self._dirty = dirty
        self.dot.setVisible(dirty)
        self.save_button.setEnabled(dirty)
        if changed:
            self.sig_dirty.emit(dirty)

    def _changed(self, event: WorkspaceChanged) -> None:
        if event.id != self.ws_id:
            return
        record = event.record
        stored = (record.description, record.instructions)
        if stored == self.opened:
            return
        if not self._dirty:
            self._show_stored()
        elif stored != self._values():
            self.conflict.show()

    def _reload(self) -> None:
        self.conflict.hide()
        self._show_stored()

    async def _save(self, *, force: bool) -> bool:
        ws_id = self.ws_id
        if ws_id is None:
            return True
        description, instructions = self._values()
        expected = self.opened
        if force:
            ws = self.registry.workspace(ws_id)
            expected = (ws.description, ws.instructions) if ws is not None else expected
        try:
            saved, _ = await self.ops.save_instructions(
                ws_id, description=description, instructions=instructions, expected=expected)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return False
        if ws_id != self.ws_id:
            return saved is not None
        if saved is None:
            self.conflict.show()
            return False
        self.conflict.hide()
        self.opened = (saved.description, saved.instructions)
        self._set_dirty(self._values() != self.opened)
        self.sig_saved.emit()
        return True


__all__ = ["InstructionsView"]
