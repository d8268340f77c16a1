"""The knowledge panel's two folder switches: keep the shown document as CAIRN.md
in its folder, and let Claude read the project's folder.  Each says in one sentence what it
does; a refused outside edit of CAIRN.md, or a deleted file, is said under its switch, and
what CAIRN.md asks the person to decide (entries an outside save removed, sync conflict
copies: :mod:`ui.knowledge.file_notices`) below it.

While the window runs, a watcher looks at every CAIRN.md about once a second (off the GUI
thread, through an operation): an outside edit becomes a version within a second or two."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QInputDialog,
    QMessageBox,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.knowledge.diffview import DiffColours, side_by_side_html
from ui.knowledge.file_notices import FileNotices
from ui.tasks import Recurring
from ui.text import Label, answered, message_box

if TYPE_CHECKING:
    from app.events import KnowledgeSaved
    from app.knowledge.cairn_file import FileState
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

log = logging.getLogger(__name__)

WATCH_MS = 1000
ACCESS_SAYS = ("Claude may list and read this project's files, never hidden ones, likely "
               "secrets or what .gitignore leaves out; it changes nothing.")


class FolderSwitches(QWidget):
    sig_error = Signal(str)
    sig_state = Signal()  # a state was shown (tests wait on it)

    def __init__(self, ops: KnowledgeOps, bridge: EventBridge, registry: Registry,
                 run_task: RunTask, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.owner: str | None = None  # the document shown
        self.project: str | None = None  # its project (folder access is project-wide)
        self.file_switch, file_row = _switch("Keep this document as CAIRN.md in the folder")
        self.file_switch.setAccessibleName("Keep this document as CAIRN.md in the folder")
        self.file_switch.setToolTip("Cairn writes each new version to CAIRN.md, and takes in "
                                    "what you change there with another editor")
        self.file_switch.clicked.connect(self._file_clicked)
        self.file_state = Label("")
        self.file_state.setAccessibleName("CAIRN.md state")
        self.file_state.setWordWrap(True)
        self.file_state.hide()
        self.notices = FileNotices()
        self.notices.sig_restore.connect(lambda: self._decide(self.ops.restore_removed_entries))
        self.notices.sig_keep_removal.connect(
            lambda: self._decide(self.ops.dismiss_removed_entries))
        self.notices.sig_merge.connect(
            lambda name: self._decide(lambda o: self.ops.merge_conflict_copy(o, name)))
        self.notices.sig_dismiss_copy.connect(
            lambda name: self._decide(lambda o: self.ops.dismiss_conflict_copy(o, name)))
        self.notices.sig_compare.connect(self._compare)
        self.compared: QDialog | None = None  # the Compare window shown last
        self.access_switch, access_row = _switch("Let Claude read this project's folder")
        self.access_switch.setAccessibleName("Let Claude read this project's folder")
        self.access_switch.clicked.connect(self._access_clicked)
        self.allow_button = QToolButton()
        self.allow_button.setText("Allow hidden files…")
        self.allow_button.setAccessibleName("Allow hidden files")
        self.allow_button.setToolTip("Hidden files and likely secrets Claude may read too "
                                     "(paths relative to the project's folder)")
        self.allow_button.setAutoRaise(True)
        self.allow_button.clicked.connect(self._allow_clicked)
        self.allow_button.hide()
        self.allowed: tuple[str, ...] = ()
        self.access_says = Label(ACCESS_SAYS)
        self.access_says.setAccessibleName("What folder access allows")
        self.access_says.setWordWrap(True)
        self.access_says.setStyleSheet("color: palette(placeholder-text);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(file_row)
        layout.addWidget(self.file_state)
        layout.addWidget(self.notices)
        layout.addLayout(access_row)
        layout.addWidget(self.access_says)
        layout.addWidget(self.allow_button)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        bridge.sig_knowledge_saved.connect(self._saved)
        # One look at a time; one that died without ending is started again.
        self._looking = Recurring(self.run_task, self._tick, name="CAIRN.md watcher")
        self.watcher = QTimer(self)
        self.watcher.setInterval(WATCH_MS)
        self.watcher.timeout.connect(self._watch)
        self.watcher.start()

    # ----------------------------------------------------------------- hooks (tests replace)

    async def ask_keep(self, path: str) -> str | None:
        """The folder has its own CAIRN.md: keep the document or the file (None: cancel).
        Asked inside a task: without an event loop of its own (see ``answered``)."""
        box = message_box(QMessageBox.Icon.Question, "CAIRN.md already exists",
                          f"{path} already exists and is not this document. Which one should "
                          "Cairn keep? Either way the other's text stays in the document's "
                          "history, and you can restore it from there.", parent=self)
        box.setAccessibleName("CAIRN.md already exists")
        document = box.addButton("Keep the document", QMessageBox.ButtonRole.AcceptRole)
        the_file = box.addButton("Keep the file", QMessageBox.ButtonRole.AcceptRole)
        cancel = box.addButton(QMessageBox.StandardButton.Cancel)
        # Enter must never replace anything: the default is to leave both as they are.
        box.setDefaultButton(cancel)
        box.setEscapeButton(cancel)
        await answered(box)
        clicked = box.clickedButton()
        return "document" if clicked is document else "file" if clicked is the_file else None

    def ask_allow(self, allowed: tuple[str, ...]) -> list[str] | None:
        """The hidden or secret-looking paths Claude may read, one per line (None: cancel)."""
        text, ok = QInputDialog.getMultiLineText(
            self, "Allow hidden files",
            "Paths in the project's folder Claude may read although they are hidden or may "
            "hold secrets, one per line (e.g. .github):", "\n".join(allowed))
        return [line.strip() for line in text.splitlines() if line.strip()] if ok else None

    # ----------------------------------------------------------------- public

    def open(self, owner: str | None) -> None:
        self.owner = owner
        lineage = self.registry.lineage(owner) if owner else []
        self.project = lineage[0].id if lineage else None
        self.setVisible(owner is not None)
        if owner is not None:
            self.run_task(self._load(owner))

    def stop(self) -> None:
        self.watcher.stop()

    # ----------------------------------------------------------------- private

    async def _load(self, owner: str) -> None:
        state = await self.ops.knowledge_file(owner)
        if owner != self.owner:
            return
        self._show(state)
        if self.project is not None:
            on, self.allowed = await self.ops.folder_access(self.project)
            self.access_switch.setChecked(on)
            self.allow_button.setVisible(on)

    def _show(self, state: FileState) -> None:
        self.file_switch.setChecked(state.on)
        self.file_state.setText(state.sentence)
        self.file_state.setAccessibleDescription(state.sentence)
        self.file_state.setVisible(bool(state.sentence))
        self.notices.show_state(state.removed if state.on else (),
                                state.copies if state.on else ())
        self.sig_state.emit()

    def _decide(self, operation: Callable[[str], Awaitable[object]]) -> None:
        """Restore, Merge or Dismiss: run it for the document shown, then show the state."""
        owner = self.owner
        if owner is None:
            return

        async def work() -> None:
            self.notices.set_busy(True)
            try:
                await operation(owner)
            except CairnError as refused:
                self.sig_error.emit(str(refused))
            finally:
                self.notices.set_busy(False)
            await self._load(owner)

        self.run_task(work())

    def _compare(self, name: str) -> None:
        owner = self.owner
        if owner is not None:
            self.run_task(self._show_compare(owner, name))

    async def _show_compare(self, owner: str, name: str) -> None:
        try:
            hunks = await self.ops.compare_conflict_copy(owner, name)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        dialog = QDialog(self)
        dialog.setWindowTitle(f"Compare with {name}")
        dialog.setAccessibleName("Compare the conflict copy")
        view = QTextBrowser()
        view.setAccessibleName("Differences from the conflict copy")
        view.setOpenLinks(False)
        view.setHtml(side_by_side_html(hunks, DiffColours.of(self.palette()),
                                       old="This document", new=name))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(view)
        layout.addWidget(buttons)
        dialog.resize(760, 520)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.compared = dialog
        dialog.open()  # not exec: no event loop of its own inside the task

    def _file_clicked(self, on: bool) -> None:
        if self.owner is not None:
            self.run_task(self._switch_file(self.owner, on))

    async def _switch_file(self, owner: str, on: bool) -> None:
        keep: str | None = None
        if on and await self.ops.knowledge_file_conflict(owner):
            ws = self.registry.workspace(owner)
            keep = await self.ask_keep(f"{ws.path}/CAIRN.md" if ws else "CAIRN.md")
            if keep is None:
                self.file_switch.setChecked(False)
                return
        try:
            state, _ = await self.ops.switch_knowledge_file(owner, on, keep=keep)
        except CairnError as refused:
            self.file_switch.setChecked(not on)
            self.sig_error.emit(str(refused))
            return
        if owner == self.owner:
            self._show(state)

    def _access_clicked(self, on: bool) -> None:
        if self.project is not None:
            self.run_task(self._switch_access(self.project, on))

    async def _switch_access(self, project: str, on: bool) -> None:
        try:
            await self.ops.switch_folder_access(project, on)
        except CairnError as refused:
            self.access_switch.setChecked(not on)
            self.sig_error.emit(str(refused))
            return
        self.allow_button.setVisible(on)

    def _allow_clicked(self) -> None:
        if self.project is None:
            return
        chosen = self.ask_allow(self.allowed)
        if chosen is not None:
            self.run_task(self._set_allowed(self.project, chosen))

    async def _set_allowed(self, project: str, allow: list[str]) -> None:
        try:
            await self.ops.switch_folder_access(project, True, allow=allow)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        _on, self.allowed = await self.ops.folder_access(project)

    def _saved(self, event: KnowledgeSaved) -> None:
        if event.owner == self.owner:
            self.run_task(self._load(event.owner))

    def _watch(self) -> None:
        import asyncio  # (not at the top: the window paints before asyncio is loaded)

        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the window's loop has ended (a quit): nothing to watch for
            self.watcher.stop()
            return
        self._looking.tick()

    async def _tick(self) -> None:
        try:
            checked = await self.ops.watch_knowledge_files()
        except Exception:  # noqa: BLE001 - a busy database: the next tick looks again
            log.debug("the CAIRN.md watcher could not look this time", exc_info=True)
            return
        if self.owner is not None and self.owner in checked:
            self.run_task(self._load(self.owner))


class _Words(Label):
    """A switch's words, wrapped to the panel's width; a click on them toggles the switch."""

    def __init__(self, text: str, switch: QCheckBox) -> None:
        super().__init__(text)
        self._switch = switch
        self.setWordWrap(True)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self._switch.isEnabled():
            self._switch.click()
        event.accept()


def _switch(text: str) -> tuple[QCheckBox, QHBoxLayout]:
    """A check box whose words wrap (a QCheckBox's own text never does)."""
    box = QCheckBox()
    box.setToolTip(text)
    row = QHBoxLayout()
    row.setSpacing(6)
    row.addWidget(box, 0, Qt.AlignmentFlag.AlignTop)
    row.addWidget(_Words(text, box), 1)
    return box, row
