"""A document's history: every version with its time and source (you, which chat, a
restore), a diff against the previous or the current version, inline or side by side, and
Restore, which adds the old text as the newest version (nothing is deleted)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.knowledge.status import ago
from ui.knowledge.diffview import DiffColours, inline_html, side_by_side_html, summary
from ui.text import Label

if TYPE_CHECKING:
    from app.store.documents import Version
    from app.store.registry.registry import Registry
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

PREVIOUS, CURRENT = "previous", "current"


def source_words(version: Version, registry: Registry | None) -> str:
    """"you", "a chat: Launch copy", "a restore"."""
    if version.source == "rebuild":
        chat = registry.chat(version.chat_id) if registry and version.chat_id else None
        return f"a chat: {chat.title}" if chat is not None else "a chat"
    return {"user": "you", "restore": "a restore", "import": "an import",
            "file": "you (CAIRN.md)"}.get(
        version.source, version.source)


class HistoryView(QWidget):
    sig_back = Signal()
    sig_error = Signal(str)
    sig_restored = Signal(object)  # the Document the restore made
    sig_shown = Signal()  # a diff is on screen (tests, screenshots)

    def __init__(self, ops: KnowledgeOps, registry: Registry | None, run_task: RunTask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.owner: str | None = None
        self.versions: list[Version] = []
        self._asked = 0  # bumped per diff asked for: an older answer is dropped
        self._restoring = False

        self.back = QPushButton("‹ Document")
        self.back.setAccessibleName("Back to the document")
        self.back.setToolTip("Back to the document (Esc)")
        self.back.setShortcut("Esc")
        self.back.setAutoDefault(False)
        self.back.clicked.connect(self.sig_back.emit)
        title = Label("History")
        title.setObjectName("history-title")
        title.setStyleSheet("#history-title { font-weight: 600; }")
        top = QHBoxLayout()
        top.addWidget(self.back)
        top.addWidget(title, 1)

        self.list = QListWidget()
        self.list.setAccessibleName("Versions")
        self.list.setMaximumHeight(150)
        # Each version in two short lines that wrap to the panel: no sideways scrolling at
        # the panel's default width.
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setAlternatingRowColors(True)
        self.list.currentRowChanged.connect(lambda _row: self._compare())

        self.against = QComboBox()
        self.against.setAccessibleName("Compare with")
        self.against.setToolTip("Compare this version with the one before it, or with the "
                                "current version")
        self.against.addItem("Vs. previous", PREVIOUS)  # short: fits the panel's width
        self.against.addItem("Vs. current", CURRENT)
        self.against.currentIndexChanged.connect(lambda _i: self._compare())
        self.side_by_side = QCheckBox("Side by side")
        self.side_by_side.setAccessibleName("Side by side")
        self.side_by_side.toggled.connect(lambda _on: self._compare())
        options = QHBoxLayout()
        options.addWidget(self.against)
        options.addStretch(1)
        options.addWidget(self.side_by_side)

        self.summary = Label("")
        self.summary.setAccessibleName("Changes summary")
        self.summary.setStyleSheet("color: palette(placeholder-text);")
        self.summary.setWordWrap(True)
        self.diff = QTextBrowser()
        self.diff.setAccessibleName("Changes")
        self.diff.setOpenLinks(False)
        self.diff.document().setDocumentMargin(8)

        self.restore = QPushButton("Restore this version")
        self.restore.setAccessibleName("Restore")
        self.restore.setToolTip("Make this version the newest one (the history keeps every "
                                "version)")
        self.restore.setAutoDefault(False)
        self.restore.setEnabled(False)
        self.restore.clicked.connect(lambda: self.run_task(self._restore()))
        bottom = QHBoxLayout()
        bottom.addWidget(self.summary, 1)
        bottom.addWidget(self.restore)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        layout.addLayout(top)
        layout.addWidget(self.list)
        layout.addLayout(options)
        layout.addWidget(self.diff, 1)
        layout.addLayout(bottom)

    # ----------------------------------------------------------------- public

    def open(self, owner: str) -> None:
        self.owner = owner
        self.run_task(self._load(owner))

    def refresh(self) -> None:
        """A new version came: list it, keeping the version selected."""
        if self.owner is not None and not self._restoring:  # (a restore lists its own)
            chosen = self.selected()
            self.run_task(self._load(self.owner, select=chosen.version if chosen else None))

    def selected(self) -> Version | None:
        row = self.list.currentRow()
        return self.versions[row] if 0 <= row < len(self.versions) else None

    # ----------------------------------------------------------------- private

    async def _load(self, owner: str, select: int | None = None) -> None:
        versions = await self.ops.history(owner)
        if owner != self.owner:
            return
        self.versions = versions
        self.list.blockSignals(True)
        self.list.clear()
        for version in versions:
            text = (f"Version {version.version} · {ago(version.saved_at)}\n"
                    f"{source_words(version, self.registry)} · {version.size:,} characters")
            item = QListWidgetItem(text)
            item.setToolTip(f"Saved {version.saved_at[:19].replace('T', ' ')} UTC")
            item.setData(Qt.ItemDataRole.AccessibleTextRole, text)
            self.list.addItem(item)
        self.list.blockSignals(False)
        if not versions:
            self.diff.setHtml("<p>No saved versions yet.</p>")
            self.summary.setText("")
            self.restore.setEnabled(False)
            return
        rows = [i for i, v in enumerate(versions) if v.version == select]
        self.list.setCurrentRow(rows[0] if rows else 0)
        self._compare()

    def _compare(self) -> None:
        version = self.selected()
        if version is None or self.owner is None:
            return
        newest = self.versions[0].version
        self.restore.setEnabled(version.version != newest)
        if self.against.currentData() == CURRENT:
            old, new = version.version, newest
            names = (f"Version {old}", f"Current (version {new})")
        else:
            older = [v.version for v in self.versions if v.version < version.version]
            old, new = (older[0] if older else 0), version.version
            names = (f"Version {old}" if old else "Empty", f"Version {new}")
        self._asked += 1
        self.run_task(self._show(self.owner, old, new, names, self._asked))

    async def _show(self, owner: str, old: int, new: int, names: tuple[str, str],
                    asked: int) -> None:
        hunks = await self.ops.compare(owner, old, new)
        if asked != self._asked or owner != self.owner:
            return
        colours = DiffColours.of(self.palette())
        if self.side_by_side.isChecked():
            self.diff.setHtml(side_by_side_html(hunks, colours, old=names[0], new=names[1]))
        else:
            self.diff.setHtml(inline_html(hunks, colours))
        self.summary.setText(f"{names[0]} → {names[1]}: {summary(hunks)}")
        self.sig_shown.emit()

    async def _restore(self) -> None:
        version = self.selected()
        owner = self.owner
        if version is None or owner is None:
            return
        self._restoring = True
        try:
            try:
                document, _ = await self.ops.restore_knowledge(owner, version.version)
            except CairnError as refused:
                self.sig_error.emit(str(refused))
                return
            self.sig_restored.emit(document)
            await self._load(owner, select=document.version)
        finally:
            self._restoring = False
