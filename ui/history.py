"""File → Import from Claude.ai or ChatGPT…: pick the export, see what it holds (counts; each
project with the folder its workspace takes), import with a progress bar that can be stopped,
then the report.  The core's one use case does the work (``app.history.importing``, through
``Operations.preview_history`` / ``import_history``); this dialog only asks and shows.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent, QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.dialogs import home
from ui.tasks import RunTask
from ui.text import Label

if TYPE_CHECKING:
    from app.history.importing import Preview, Progress, Report
    from app.ops import Operations


class HistoryImport(QDialog):
    """The import, page by page: choose → what it holds → importing → report."""

    def __init__(self, ops: Operations, run_task: RunTask, parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.ops = ops
        self.run_task = run_task
        self.setWindowTitle("Import from Claude.ai or ChatGPT")
        self.setAccessibleName("Import from Claude.ai or ChatGPT")
        self.setObjectName("history-import")
        self.resize(620, 460)
        # Dialogs, as hooks a test can replace.
        self.ask_file: Callable[[], str | None] = self._ask_file
        self.ask_folder: Callable[[str], str | None] = self._ask_folder
        self.source: Path | None = None
        self.preview: Preview | None = None
        self.report: Report | None = None
        self.folders: dict[str, QLineEdit] = {}
        self._stop = threading.Event()
        self._running: asyncio.Task[Any] | None = None

        self.pages = QStackedWidget()
        layout = QVBoxLayout(self)
        layout.addWidget(self.pages)
        self._build_choose()
        self._build_plan()
        self._build_running()
        self._build_report()

    # ----------------------------------------------------------------- pages

    def _build_choose(self) -> None:
        page = QWidget()
        box = QVBoxLayout(page)
        intro = Label("Bring your chats and projects from Claude.ai or ChatGPT. Ask the service "
                       "for your data export (Settings → Privacy on Claude.ai, Settings → Data "
                       "controls on ChatGPT), then choose the zip you received, or the folder "
                       "you unpacked it to. Nothing is written before you press Import.")
        intro.setWordWrap(True)
        self.choose_zip = QPushButton("Choose the export zip…")
        self.choose_zip.setAccessibleName("Choose the export zip")
        self.choose_zip.clicked.connect(self._pick_file)
        self.choose_dir = QPushButton("Choose an unpacked folder…")
        self.choose_dir.setAccessibleName("Choose an unpacked folder")
        self.choose_dir.clicked.connect(self._pick_dir)
        self.problem = Label("")
        self.problem.setObjectName("history-problem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #dc2626;")
        self.reading = Label("")
        row = QHBoxLayout()
        row.addWidget(self.choose_zip)
        row.addWidget(self.choose_dir)
        row.addStretch(1)
        close = QPushButton("Cancel")
        close.setAccessibleName("Cancel")
        close.clicked.connect(self.reject)
        for widget in (intro,):
            box.addWidget(widget)
        box.addLayout(row)
        box.addWidget(self.reading)
        box.addWidget(self.problem)
        box.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(close)
        box.addLayout(bottom)
        self.pages.addWidget(page)

    def _build_plan(self) -> None:
        page = QWidget()
        box = QVBoxLayout(page)
        self.summary = Label("")
        self.summary.setObjectName("history-summary")
        self.summary.setWordWrap(True)
        self.projects_intro = Label("Each project becomes a workspace in a folder: keep the "
                                    "folder shown or choose another.")
        self.projects_intro.setWordWrap(True)
        self.projects_form = QFormLayout()
        holder = QWidget()
        holder.setLayout(self.projects_form)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(holder)
        scroll.setAccessibleName("Projects")
        self.projects_scroll = scroll
        self.memories_note = Label("")
        self.memories_note.setWordWrap(True)
        back = QPushButton("Back")
        back.setAccessibleName("Back")
        back.clicked.connect(lambda: self.pages.setCurrentIndex(0))
        self.import_button = QPushButton("Import")
        self.import_button.setAccessibleName("Import")
        self.import_button.setDefault(True)
        self.import_button.clicked.connect(self.start)
        for widget in (self.summary, self.projects_intro, scroll, self.memories_note):
            box.addWidget(widget)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(back)
        bottom.addWidget(self.import_button)
        box.addLayout(bottom)
        self.pages.addWidget(page)

    def _build_running(self) -> None:
        page = QWidget()
        box = QVBoxLayout(page)
        self.bar = QProgressBar()
        self.bar.setAccessibleName("Import progress")
        self.bar.setTextVisible(True)
        self.now = Label("")
        self.now.setObjectName("history-now")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setAccessibleName("Stop")
        self.stop_button.clicked.connect(self.stop)
        note = Label("Stopping keeps every chat imported so far; importing the same export "
                     "again goes on where it stopped.")
        note.setWordWrap(True)
        for widget in (Label("Importing…"), self.bar, self.now, note):
            box.addWidget(widget)
        box.addStretch(1)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(self.stop_button)
        box.addLayout(bottom)
        self.pages.addWidget(page)

    def _build_report(self) -> None:
        page = QWidget()
        box = QVBoxLayout(page)
        self.report_title = Label("")
        self.report_view = QPlainTextEdit()  # plain text: titles and names are data
        self.report_view.setReadOnly(True)
        self.report_view.setAccessibleName("Import report")
        done = QPushButton("Close")
        done.setAccessibleName("Close")
        done.clicked.connect(self.accept)
        box.addWidget(self.report_title)
        box.addWidget(self.report_view)
        bottom = QHBoxLayout()
        bottom.addStretch(1)
        bottom.addWidget(done)
        box.addLayout(bottom)
        self.pages.addWidget(page)

    # ----------------------------------------------------------------- choosing

    def _ask_file(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose the export", home(),
                                              "Zip archives (*.zip);;All files (*)")
        return path or None

    def _ask_folder(self, start: str) -> str | None:
        return QFileDialog.getExistingDirectory(self, "Choose a folder", start) or None

    def _pick_file(self) -> None:
        path = self.ask_file()
        if path:
            self.open_source(path)

    def _pick_dir(self) -> None:
        path = self.ask_folder(home())
        if path:
            self.open_source(path)

    def open_source(self, path: str) -> None:
        """Read *path* (checked whole, nothing written) and show what it holds."""
        self.source = Path(path)
        self.problem.setText("")
        self.reading.setText(f"Reading {path}…")
        self.choose_zip.setEnabled(False)
        self.choose_dir.setEnabled(False)
        self.run_task(self._read())

    async def _read(self) -> None:
        assert self.source is not None
        try:
            preview = await self.ops.preview_history(self.source)
        except CairnError as refused:
            self.problem.setText(str(refused))
            return
        finally:
            self.reading.setText("")
            self.choose_zip.setEnabled(True)
            self.choose_dir.setEnabled(True)
        self.show_preview(preview)

    def show_preview(self, preview: Preview) -> None:
        self.preview = preview
        known = (f" {preview.known_chats:,} of them were imported before: only what is new in "
                 "them is added." if preview.known_chats else "")
        images = f", {preview.images:,} image file(s)" if preview.images else ""
        self.summary.setText(
            f"A {preview.source_name} export: {preview.chats:,} chat(s), up to "
            f"{preview.messages:,} message(s){images}, {len(preview.projects)} project(s)."
            + known)
        while self.projects_form.rowCount():
            self.projects_form.removeRow(0)
        self.folders = {}
        for plan in preview.projects:
            field = QLineEdit(plan.folder)
            field.setAccessibleName(f"Folder for {plan.name}")
            field.setReadOnly(plan.workspace_id is not None)
            choose = QPushButton("Choose…")
            choose.setAccessibleName(f"Choose the folder for {plan.name}")
            choose.setEnabled(plan.workspace_id is None)
            choose.clicked.connect(lambda _=False, f=field: self._choose_for(f))
            row = QWidget()
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.addWidget(field, 1)
            line.addWidget(choose)
            what = f"{plan.name} ({plan.chats} chat(s), {plan.docs} document(s))"
            if plan.workspace_id is not None:
                what += " — already a workspace"
            name = Label(what)
            name.setWordWrap(True)
            self.projects_form.addRow(name, row)
            self.folders[plan.source_id] = field
        has_projects = bool(preview.projects)
        self.projects_intro.setVisible(has_projects)
        self.projects_scroll.setVisible(has_projects)
        self.memories_note.setText(
            "Memories and custom instructions are offered as suggestions in the knowledge "
            "panels: nothing is merged until you accept it. Imported chats are not learned "
            "from." if preview.memories or preview.source == "chatgpt" else
            "Imported chats are not learned from.")
        self.pages.setCurrentIndex(1)
        self.import_button.setFocus()

    def _choose_for(self, field: QLineEdit) -> None:
        start = os.path.dirname(field.text()) or home()
        chosen = self.ask_folder(start)
        if chosen:
            field.setText(chosen)

    # ----------------------------------------------------------------- importing

    def start(self) -> None:
        if self.source is None or self.preview is None:
            return
        folders = {sid: field.text().strip() for sid, field in self.folders.items()
                   if field.text().strip()}
        self.bar.setRange(0, max(self.preview.chats, 1))
        self.bar.setValue(0)
        self.now.setText("")
        self._stop.clear()
        self.stop_button.setEnabled(True)
        self.pages.setCurrentIndex(2)
        self.stop_button.setFocus()
        self._running = self.run_task(self._import(folders))

    async def _import(self, folders: dict[str, str]) -> None:
        assert self.source is not None
        try:
            report = await self.ops.import_history(self.source, folders=folders,
                                                   progress=self._progress, stop=self._stop)
        except CairnError as refused:
            self.pages.setCurrentIndex(0)
            self.problem.setText(str(refused))
            return
        finally:
            self._running = None
        self.show_report(report)

    def _progress(self, progress: Progress) -> None:
        if self.bar.maximum() < progress.total:
            self.bar.setMaximum(progress.total)
        self.bar.setValue(progress.chats)
        self.now.setText(progress.title)

    def stop(self) -> None:
        """Stop after the chat being read: what was imported stays."""
        self._stop.set()
        self.stop_button.setEnabled(False)
        self.now.setText("Stopping after this chat…")

    def show_report(self, report: Report) -> None:
        self.report = report
        self.report_title.setText("Import stopped" if report.cancelled else "Import finished")
        self.report_view.setPlainText("\n".join(report.lines()))
        self.pages.setCurrentIndex(3)

    # ----------------------------------------------------------------- closing

    def reject(self) -> None:
        """Esc or Cancel: while importing, stop first (the report follows); else close."""
        if self._running is not None:
            self.stop()
            return
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        if self._running is not None:
            self.stop()
            event.ignore()
            return
        super().closeEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() == Qt.Key.Key_Escape:
            self.reject()
            return
        super().keyPressEvent(event)


class LearnImported:
    """A workspace's "Learn from imported chats…": the estimate first (a question the person
    answers), then the rebuild in the background with Stop in the window's notice."""

    def __init__(self, window: Any, ops: Operations) -> None:
        self.window = window
        self.ops = ops
        self.running: asyncio.Task[Any] | None = None
        # The question, as a hook a test can replace: whether the person chose Learn.
        self.ask: Callable[[str], Any] = self._ask

    def start(self, ws_id: str) -> None:
        if self.running is not None and not self.running.done():
            self.window.notice.say("Cairn is already learning from imported chats; stop it "
                                   "first.")
            return
        self.window.run_task(self._estimate_then_learn(ws_id))

    async def _estimate_then_learn(self, ws_id: str) -> None:
        plan = await self.ops.imported_backlog(ws_id)
        if not plan.exchanges:
            self.window.notice.say(plan.sentence())
            return
        if not await self.ask(plan.sentence()):
            return
        total = len(plan.chats)
        self.window.notice.say(f"Learning from imported chats: 0 of {total}…", lasting=True)
        self.window.notice.offer("Stop", self.stop)

        def progress(done: int, of: int) -> None:
            self.window.notice.say(f"Learning from imported chats: {done} of {of}…",
                                   lasting=True)
            self.window.notice.offer("Stop", self.stop)

        self.running = asyncio.ensure_future(self.ops.learn_imported(plan, progress))
        try:
            learned = await self.running
        except asyncio.CancelledError:
            self.window.notice.say("Stopped learning from imported chats; what was learned "
                                   "stays, the rest is not learned.")
            return
        finally:
            self.running = None
        self.window.notice.say(f"Learned from {learned} of {total} imported chat(s).")

    def stop(self) -> None:
        if self.running is not None:
            self.running.cancel()

    async def _ask(self, estimate: str) -> bool:
        from PySide6.QtWidgets import QMessageBox

        from ui.text import answered, message_box

        box = message_box(QMessageBox.Icon.Question, "Learn from imported chats",
                          estimate, informative="It runs in the background; Stop in the "
                          "notice ends it, keeping what was learned.",
                          buttons=QMessageBox.StandardButton.Cancel, parent=self.window)
        box.setAccessibleName("Learn from imported chats")
        go = box.addButton("Learn", QMessageBox.ButtonRole.AcceptRole)
        go.setAccessibleName("Learn")
        await answered(box)
        return box.clickedButton() is go
