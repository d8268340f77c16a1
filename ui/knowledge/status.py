"""The knowledge editor's status line: how the document last changed ("Updated from a chat
2 min ago", "Edited by you yesterday"), how many exchanges wait to be learned, a bar while a
rebuild for it runs, and its last failure as a sentence with Retry now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.knowledge.status import document_line, suggestions_line
from app.store.documents import PERSONAL, Document
from ui.text import Label, sentence

if TYPE_CHECKING:
    from app.events import RebuildStarted, WorkEnded
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

BACKGROUND_JOB = "background job"
FAILING = "color: #dc2626;"
QUIET = "color: palette(placeholder-text);"


class StatusLine(QWidget):
    def __init__(self, ops: KnowledgeOps, bridge: EventBridge | None, registry: Registry | None,
                 run_task: RunTask, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.owner: str | None = None
        self.document: Document | None = None  # the version the editor is based on
        self.note = ""  # a sentence that stays first until the editor clears it
        self.running: set[str] = set()  # chats whose rebuild is running for this document
        self.pending = False  # a read of the status is on its way
        self._again = False  # asked for while one was on its way: read again after it
        self._shown = 0  # bumped per document: an older read is dropped

        self.label = Label("").named("Knowledge status")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setStyleSheet(QUIET)
        self.retry = QPushButton("Retry now")
        self.retry.setAccessibleName("Retry now")
        self.retry.setToolTip("Run the knowledge update now for the chats waiting")
        self.retry.setAutoDefault(False)
        self.retry.hide()
        self.retry.clicked.connect(lambda: self.run_task(self._retry()))
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Knowledge update running")
        self.progress.setRange(0, 0)  # busy: a rebuild reports no fraction
        self.progress.setMaximumHeight(4)
        self.progress.setTextVisible(False)
        self.progress.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.retry, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(row)
        layout.addWidget(self.progress)

        self._timer = QTimer(self)
        self._timer.setInterval(60_000)  # "2 min ago" moves on
        self._timer.timeout.connect(self.refresh)
        self._timer.start()
        if bridge is not None:
            bridge.sig_rebuild_started.connect(self._rebuild_started)
            bridge.sig_work_ended.connect(self._work_ended)
            for signal in (bridge.sig_rebuild_applied, bridge.sig_rebuild_failed,
                           bridge.sig_rebuild_queued, bridge.sig_suggestions_changed):
                signal.connect(lambda _e: self.refresh())

    # ----------------------------------------------------------------- public

    def show_for(self, owner: str | None) -> None:
        self.owner, self.document, self.note = owner, None, ""
        self._shown += 1
        self.running.clear()
        self.label.setText("")
        self.retry.hide()
        self.progress.hide()

    def stop(self) -> None:
        """At quit: nothing is read any more."""
        self._timer.stop()

    def set_document(self, document: Document) -> None:
        self.document = document
        self.refresh()

    def say(self, note: str) -> None:
        """A sentence that leads the line until :meth:`clear_note`."""
        self.note = note
        self.label.setText(note)
        self.label.setStyleSheet(QUIET)

    def clear_note(self) -> None:
        if self.note:
            self.note = ""
            self.refresh()

    def refresh(self) -> None:
        """Read the state again (only while shown: a closed window reads nothing)."""
        if self.owner is None or not self.isVisible() or not self._timer.isActive():
            return
        if self.pending:  # a read is on its way, perhaps from before this change: once more
            self._again = True
            return
        self.pending = True
        self.run_task(self._read(self.owner, self._shown))

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self.refresh()  # shown again (a tab, the folded panel): the line catches up

    # ----------------------------------------------------------------- private

    async def _read(self, owner: str, shown: int) -> None:
        try:
            state = await self.ops.knowledge_status(owner)
        except CairnError:
            return
        finally:
            self.pending = False
            if self._again:  # asked again while reading: what was read may be behind
                self._again = False
                self.refresh()
        document = self.document
        if shown != self._shown or document is None:
            return
        if self.note:
            return  # the editor's sentence stays until it is done with it
        line = document_line(document.source, document.updated_at, state.waiting)
        if self.running:
            line = "Learning from a chat…" + (f" · {line}" if line else "")
        failing = bool(state.failure) and not self.running
        if failing:  # (a core sentence: the command line's `code` shown as plain words)
            line = sentence(f"{state.failure}") + (f" · {line}" if line else "")
        elif state.suggestions and not self.running:
            waiting = suggestions_line(len(state.suggestions))
            line = f"{line} · {waiting}" if line else waiting
        elif not line and not document.version:
            line = "Not saved yet: chats fill it in as you talk, or write it yourself."
        self.label.setText(line)
        self.label.setStyleSheet(FAILING if failing else QUIET)
        self.retry.setVisible(failing and bool(state.chats))
        self.progress.setVisible(bool(self.running))

    def _concerns(self, chat_id: str) -> bool:
        """Does a rebuild for *chat_id* write this document?"""
        if self.owner is None or self.registry is None:
            return False
        if self.owner == PERSONAL:
            return True
        chat = self.registry.chat(chat_id)
        return chat is not None and any(ws.id == self.owner
                                         for ws in self.registry.lineage(chat.workspace_id))

    def _rebuild_started(self, event: RebuildStarted) -> None:
        if self._concerns(event.chat):
            self.running.add(event.chat)
            self.progress.show()
            self.refresh()

    def _work_ended(self, event: WorkEnded) -> None:
        if event.kind == BACKGROUND_JOB and event.chat in self.running:
            self.running.discard(event.chat)
            self.refresh()

    async def _retry(self) -> None:
        if self.owner is None:
            return
        self.retry.setEnabled(False)
        try:
            started = await self.ops.retry_knowledge(self.owner)
        finally:
            self.retry.setEnabled(True)
        if started:
            self.retry.hide()
            self.label.setText("Trying again…")
