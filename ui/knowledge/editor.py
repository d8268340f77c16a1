"""The knowledge editor: one document (a workspace's, or personal memory) as plain markdown
with its sections and entries coloured, a preview, Save with the unsaved-change dot, the
status line, and the history.

It saves on the version it opened (compare-and-swap, ``Operations.save_knowledge``).  While
the person has not changed anything, a newer version (a rebuild's result, a restore, the
command line) replaces the text at once and its changed entries are highlighted for a
moment.  While they have, the newer version waits beside their text and they choose: see
its changes and merge them into their text, keep theirs (saved as the newest version), or
reload (Ctrl+Z brings their text back).  Nothing is overwritten silently in either
direction, and every saved version stays in the history.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import shiboken6
from PySide6.QtCore import QEvent, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QPushButton,
    QStackedWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.knowledge.merge import changed_lines
from app.store.documents import PERSONAL, Conflict, Document
from ui.knowledge.diffview import DiffColours, inline_html, summary
from ui.knowledge.highlight import KnowledgeEdit, KnowledgeHighlighter
from ui.knowledge.history import HistoryView
from ui.knowledge.status import StatusLine
from ui.knowledge.suggestions import SuggestionsStrip
from ui.links import follow, is_web, target_of
from ui.text import Label, tip
from ui.widgets import tool_button

if TYPE_CHECKING:
    from app.events import KnowledgeSaved
    from app.store.registry.registry import Registry
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

log = logging.getLogger(__name__)

SOFT_CAP = 20_000  # spec 003: under it, chats add freely
HARD_CAP = 30_000  # past it, chats compress and each message gets the most relevant entries
FLASH_MS = 2_500  # how long changed entries stay highlighted
PREVIEW_MS = 150  # the preview follows typing at most this often
BACKGROUND_JOB = "background job"


def size_line(size: int) -> tuple[str, bool]:
    """The document's size against the caps, and whether it is past the upper one.  One
    limit is counted against, always the upper one (issue 36: it jumped from 20,000 to
    30,000 as the document grew); the lower one is said in words once it is passed."""
    if size > HARD_CAP:
        return (f"{size:,} / {HARD_CAP:,} characters — over the limit: chats compress it, and "
                "each message gets its most relevant entries"), True
    if size > SOFT_CAP:
        return (f"{size:,} / {HARD_CAP:,} characters — past {SOFT_CAP:,}: chats merge related "
                "entries"), False
    return f"{size:,} / {HARD_CAP:,} characters", False


def _button(text: str, name: str, tip: str = "") -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name)
    button.setAutoDefault(False)
    if tip:
        button.setToolTip(tip)
    return button



def _drops_what_came(base: str, newer: str, text: str) -> bool:
    """Whether *text* lacks a line that *newer* brought over *base* (counted, so a repeated
    line counts each time)."""
    from collections import Counter

    came = Counter(newer.split("\n")) - Counter(base.split("\n"))
    kept = Counter(text.split("\n"))
    return any(kept[line] < count for line, count in came.items() if line.strip())


class DocumentEditor(QWidget):
    """Edits one document at a time; :meth:`open` switches (the owner asks first whether
    unsaved changes may go: :meth:`is_dirty`)."""

    sig_error = Signal(str)
    sig_dirty = Signal(bool)
    sig_saved = Signal(object)  # the Document saved
    sig_loaded = Signal()  # a document (or a newer version of it) is on screen
    sig_preview_shown = Signal()  # the preview holds the text as it was last asked for

    def __init__(self, ops: KnowledgeOps, bridge: EventBridge | None, registry: Registry | None,
                 run_task: RunTask, *, name: str = "Knowledge", own_save: bool = True,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.owner: str | None = None
        self.opened: Document | None = None  # the version the text is based on
        self.incoming: Document | None = None  # a newer version waiting beside unsaved text
        # After Reload over unsaved text: (the version that text was based on, the version
        # reloaded, the first one's text), so that a Save of the text brought back by Ctrl+Z
        # learns the newer version's chat again instead of dropping what it taught.
        self._reloaded: tuple[int, int, str] | None = None
        self._loads = 0  # bumped per document opened: an older read is dropped
        self._dirty = False

        self.status_line = StatusLine(ops, bridge, registry, run_task)
        self.suggestions = SuggestionsStrip(ops, bridge, run_task)
        self.suggestions.sig_error.connect(self.sig_error.emit)
        self.sig_undoable = self.suggestions.sig_undoable  # (the panel passes it on)

        # ------------------------------------------------ the choice when a newer version came
        self.conflict = QFrame()
        self.conflict.setObjectName("knowledge-conflict")
        self.conflict.setAccessibleName("Knowledge conflict")
        self.conflict.setStyleSheet("#knowledge-conflict { background: palette(alternate-base);"
                                    " border: 1px solid palette(mid); border-radius: 6px; }")
        self.conflict_text = Label("")
        self.conflict_text.setAccessibleName("Knowledge conflict message")
        self.conflict_text.setWordWrap(True)
        self.see_changes = tool_button("See its changes ▸", "See incoming changes",
                                 "What the newer version changed since you opened it")
        self.see_changes.setCheckable(True)
        self.see_changes.setStyleSheet("QToolButton { color: palette(link); }")
        self.see_changes.toggled.connect(lambda on: self.see_changes.setText(
            "Hide its changes ▾" if on else "See its changes ▸"))
        self.see_changes.toggled.connect(self._toggle_incoming)
        self.merge = _button("Merge", "Merge", "Put the newer version's changes into your "
                             "text; review, then Save")
        self.merge.clicked.connect(lambda: self.run_task(self._merge()))
        self.keep = _button("Keep mine", "Keep mine", "Save your text as the newest version "
                            "(the newer one stays in the history)")
        self.keep.clicked.connect(lambda: self.run_task(self._keep_mine()))
        self.reload = _button("Reload", "Reload", "Show the newer version instead of your "
                              "text (Ctrl+Z brings your text back)")
        self.reload.clicked.connect(lambda: self.run_task(self._reload()))
        self.incoming_view = QTextBrowser()
        self.incoming_view.setAccessibleName("Incoming changes")
        self.incoming_view.setMaximumHeight(220)
        self.incoming_view.hide()
        choices = QHBoxLayout()
        choices.setSpacing(6)
        for button in (self.merge, self.keep, self.reload):
            choices.addWidget(button)
        choices.addStretch(1)
        conflict_layout = QVBoxLayout(self.conflict)
        conflict_layout.setContentsMargins(10, 8, 10, 8)
        conflict_layout.setSpacing(6)
        conflict_layout.addWidget(self.conflict_text)
        conflict_layout.addWidget(self.see_changes, 0, Qt.AlignmentFlag.AlignLeft)
        conflict_layout.addWidget(self.incoming_view)
        conflict_layout.addLayout(choices)
        self.conflict.hide()

        # ------------------------------------------------ the text and its preview
        self.edit = KnowledgeEdit()
        self.edit.setAccessibleName(name)
        self.edit.setPlaceholderText("Loading…")
        self.edit.setReadOnly(True)
        self.highlighter = KnowledgeHighlighter(self.edit.document(), self.edit.palette())
        self.edit.textChanged.connect(self._typed)
        self.preview = QTextBrowser()
        self.preview.setAccessibleName(f"{name} preview")
        # Links are followed here, not by Qt: a code block's Copy copies, a web link opens
        # (asking first when its text shows another address), nothing else leaves Cairn.
        self.preview.setOpenLinks(False)
        self.preview.setOpenExternalLinks(False)
        self.preview.anchorClicked.connect(self._preview_link)
        self.preview.highlighted.connect(self._preview_hover)
        self._preview_code: list[str] = []
        self._preview_wanted = 0  # bumped per text asked for: a build of an older one is dropped
        self._preview_building = False
        self.preview.document().setDocumentMargin(10)
        self._preview_timer = QTimer(self)
        self._preview_timer.setSingleShot(True)
        self._preview_timer.setInterval(PREVIEW_MS)
        self._preview_timer.timeout.connect(self._render_preview)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.edit)
        self.pages.addWidget(self.preview)

        # ------------------------------------------------ the buttons
        self.size_label = Label("")
        self.size_label.setAccessibleName("Knowledge size")
        # Its warning wraps, whole, never cut off; the plain count does not: a wrapping label
        # asks for the height of its words at the panel's narrowest, which took the room the
        # suggestion cards above need at 800×600 (their lines were drawn over their buttons).
        self.size_label.setStyleSheet("color: palette(placeholder-text);")
        self.undo = tool_button("↶", "Undo", "Undo (Ctrl+Z)")
        self.redo = tool_button("↷", "Redo", "Redo (Ctrl+Shift+Z)")
        self.undo.setEnabled(False)
        self.redo.setEnabled(False)
        self.undo.clicked.connect(self.edit.undo)
        self.redo.clicked.connect(self.edit.redo)
        self.edit.undoAvailable.connect(self.undo.setEnabled)
        self.edit.redoAvailable.connect(self.redo.setEnabled)
        self.preview_toggle = tool_button("Preview", "Preview", "Show the document formatted")
        self.preview_toggle.setCheckable(True)
        self.preview_toggle.toggled.connect(self.set_preview)
        self.history_button = _button("History", "History", "Every saved version, with "
                                      "what changed; restore any of them")
        self.history_button.clicked.connect(self.show_history)
        self.dot = Label("●")
        self.dot.setAccessibleName("Unsaved changes")
        self.dot.setToolTip("Unsaved changes")
        self.dot.setStyleSheet("color: palette(link);")
        self.dot.hide()
        self.save_button = _button("Save", "Save", "Save (Ctrl+S)")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self.save)
        if not own_save:  # the dialog's own Save saves it (never show() it here: a window)
            self.save_button.hide()
            self.save_button.setAccessibleName(f"Save {name.lower()}")
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        buttons.addWidget(self.undo)
        buttons.addWidget(self.redo)
        buttons.addWidget(self.preview_toggle)
        buttons.addStretch(1)
        buttons.addWidget(self.history_button)
        buttons.addWidget(self.dot)
        buttons.addWidget(self.save_button)

        document_page = QWidget()
        page_layout = QVBoxLayout(document_page)
        page_layout.setContentsMargins(0, 0, 0, 0)
        page_layout.setSpacing(6)
        page_layout.addWidget(self.conflict)
        page_layout.addWidget(self.pages, 1)
        page_layout.addWidget(self.size_label)
        page_layout.addLayout(buttons)

        self.history = HistoryView(ops, registry, run_task)
        self.history.sig_back.connect(self.show_document)
        self.history.sig_error.connect(self.sig_error.emit)
        self.views = QStackedWidget()
        self.views.addWidget(document_page)
        self.views.addWidget(self.history)
        # The stack's least height would be its tallest page's (the history's): kept, it left
        # the suggestions less than they need at the default size and Qt drew their lines
        # over each other.  The document keeps what the strip leaves it.
        self.views.setMinimumHeight(self.suggestions.DOCUMENT_LEAST)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.status_line)
        layout.addWidget(self.suggestions)
        layout.addWidget(self.views, 1)

        if bridge is not None:
            bridge.sig_knowledge_saved.connect(self._knowledge_saved)

    # ================================================================= public

    def open(self, owner: str | None) -> asyncio.Task[Any] | None:
        """Show *owner*'s document (None: none); the task that reads it.  Unsaved changes
        of the one shown are dropped: ask first."""
        if owner == self.owner and owner is not None:
            return None
        self.owner = owner
        self._loads += 1
        self.opened = self.incoming = None
        self.conflict.hide()
        self.show_document()
        self.edit.clear_flash()
        self.edit.setReadOnly(True)
        self.edit.blockSignals(True)
        self.edit.setPlainText("")
        self.edit.blockSignals(False)
        self._set_dirty(False)
        self.status_line.show_for(owner)
        self.suggestions.show_for(owner)
        if owner is None:
            return None
        self.edit.setPlaceholderText("Loading…")
        return self.run_task(self._load(owner, self._loads))

    def is_dirty(self) -> bool:
        return self._dirty

    def text(self) -> str:
        return self.edit.toPlainText()

    def save(self) -> None:
        """Save (Ctrl+S): on the version opened; a newer one offers the choice."""
        if self.owner is not None and self.opened is not None:
            self.run_task(self.save_now())

    async def save_now(self) -> bool:
        """True when the text is stored (or nothing needed saving); False when a newer
        version is in the way (the choice is shown) or the save was refused (said)."""
        if self.opened is None or self.owner is None:
            return True
        if not self._dirty and self.incoming is None:
            return True
        owner, loads, text = self.owner, self._loads, self.text()
        self.save_button.setEnabled(False)
        reloaded = self._reloaded
        try:
            if reloaded is not None and reloaded[1] == self.opened.version and \
                    _drops_what_came(reloaded[2], self.opened.text, text):
                # Reload, then Ctrl+Z, then Save: the text lacks what the newer version
                # brought.  Kept as Keep mine keeps it (the chat learns again on top), never
                # a silent loss of what a chat taught.
                result, _ = await self.ops.keep_knowledge(owner, text,
                                                          based_on=self.opened.version,
                                                          opened_at=reloaded[0])
            else:
                result, _ = await self.ops.save_knowledge(owner, text,
                                                          based_on=self.opened.version)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            self._set_dirty(self._dirty)
            return False
        if loads != self._loads:
            return False
        if isinstance(result, Conflict):
            self._offer_choice(result.current)
            return False
        self._stored(result.document, text)
        return True

    def show_history(self) -> None:
        if self.owner is None:
            return
        self.views.setCurrentWidget(self.history)
        self.history.open(self.owner)

    def show_document(self) -> None:
        self.views.setCurrentIndex(0)

    def set_preview(self, on: bool) -> None:
        if self.preview_toggle.isChecked() != on:
            self.preview_toggle.setChecked(on)
            return
        self.pages.setCurrentWidget(self.preview if on else self.edit)
        if on:
            self._render_preview()

    # ================================================================= loading and saving

    async def _load(self, owner: str, loads: int) -> None:
        document = await self.ops.document(owner)
        if loads != self._loads:
            return
        self.opened = document
        self._reloaded = None
        self.edit.blockSignals(True)
        self.edit.setPlainText(document.text)
        self.edit.blockSignals(False)
        self.edit.setReadOnly(False)
        self.edit.setPlaceholderText(
            "What every chat here should know: facts, decisions, people, links…"
            if owner != PERSONAL else
            "Facts about you that every chat should know: your name, your role, how you "
            "like answers…")
        self._set_dirty(False)
        self._after_text_change()
        self.status_line.set_document(document)
        self.sig_loaded.emit()

    def _stored(self, document: Document, text: str) -> None:
        """*text* is stored as *document*: the editor is based on it now."""
        self._reloaded = None
        self.opened = document
        self.incoming = None
        self.conflict.hide()
        self.see_changes.setChecked(False)
        self._set_dirty(self.text() != document.text)
        self.status_line.note = ""
        self.status_line.set_document(document)
        self.sig_saved.emit(document)

    def _knowledge_saved(self, event: KnowledgeSaved) -> None:
        if event.owner != self.owner or self.opened is None:
            return
        if event.version <= max(self.opened.version,
                                self.incoming.version if self.incoming else 0):
            return  # our own save, or one already seen
        self.run_task(self._newer(event.owner, self._loads))

    async def _newer(self, owner: str, loads: int) -> None:
        document = await self.ops.document(owner)
        if loads != self._loads or self.opened is None or \
                document.version <= self.opened.version:
            return
        if not self._dirty:  # unedited: the newer version at once, its changes lit up
            before = self.text()
            self.opened = document
            self.incoming = None
            self.edit.blockSignals(True)
            self.edit.replace_all(document.text)
            self.edit.blockSignals(False)
            self._after_text_change()
            self.edit.flash(changed_lines(before, document.text))
            self.conflict.hide()
            self.status_line.set_document(document)
            if self.views.currentWidget() is self.history:
                self.history.refresh()
            self.sig_loaded.emit()
            return
        self._offer_choice(document)

    def _offer_choice(self, current: Document) -> None:
        self.incoming = current
        # The status line tells the stored document, as the bar does: never "Not saved
        # yet" beside "now version 1" (the editor's base is still the version opened).
        self.status_line.set_document(current)
        who = {"rebuild": "A chat updated", "restore": "A restore changed",
               "import": "An import changed",
               "file": "An edit of CAIRN.md outside Cairn changed"}.get(current.source or "", "Someone else saved")
        self.conflict_text.setText(
            f"{who} this document while you were editing (now version {current.version}). "
            "Merge its changes into your text, keep yours, or reload.")
        self.conflict.show()
        if self.see_changes.isChecked():
            self.run_task(self._show_incoming())
        self._set_dirty(self._dirty)

    def _toggle_incoming(self, on: bool) -> None:
        self.incoming_view.setVisible(on)
        if on:
            self.run_task(self._show_incoming())

    async def _show_incoming(self) -> None:
        if self.owner is None or self.opened is None or self.incoming is None:
            return
        hunks = await self.ops.compare(self.owner, self.opened.version, self.incoming.version)
        self.incoming_view.setHtml(inline_html(hunks, DiffColours.of(self.palette())))
        self.incoming_view.setToolTip(tip(summary(hunks)))

    async def _merge(self) -> None:
        if self.owner is None or self.opened is None:
            return
        loads = self._loads
        merged, current = await self.ops.merge_knowledge(self.owner, self.opened.version,
                                                         self.text())
        if loads != self._loads:
            return
        self.opened, self.incoming = current, None
        self.conflict.hide()
        self.see_changes.setChecked(False)
        self.edit.replace_all(merged.text)  # one step: Ctrl+Z takes the merge back
        self.edit.flash(merged.incoming)
        self.status_line.document = current
        self.status_line.say("Merged: the incoming changes are highlighted. Review, then Save.")

    async def _keep_mine(self) -> None:
        if self.incoming is None or self.owner is None:
            return
        owner, loads, text = self.owner, self._loads, self.text()
        opened_at = self.opened.version if self.opened is not None else 0
        try:
            result, _ = await self.ops.keep_knowledge(owner, text, based_on=self.incoming.version,
                                                      opened_at=opened_at)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        if loads != self._loads:
            return
        if isinstance(result, Conflict):  # yet another version came: choose again
            self._offer_choice(result.current)
            return
        self._stored(result.document, text)

    async def _reload(self) -> None:
        if self.owner is None:
            return
        loads = self._loads
        document = await self.ops.document(self.owner)
        if loads != self._loads:
            return
        before = self.text()
        if self.opened is not None and self._dirty:  # what the person's text was based on
            self._reloaded = (self.opened.version, document.version, self.opened.text)
        self.opened, self.incoming = document, None
        self.conflict.hide()
        self.see_changes.setChecked(False)
        self.edit.blockSignals(True)
        self.edit.replace_all(document.text)  # one step: Ctrl+Z brings the person's text back
        self.edit.blockSignals(False)
        self._typed()
        self.edit.flash(changed_lines(before, document.text))
        self.status_line.note = ""
        self.status_line.set_document(document)

    # ================================================================= typing

    def _typed(self) -> None:
        if self.opened is None:
            return
        self._set_dirty(self.text() != self.opened.text)
        self._after_text_change()

    def _after_text_change(self) -> None:
        text, over = size_line(self.edit.document().characterCount() - 1)
        self.size_label.setWordWrap("—" in text)  # (a warning: see where it is made)
        self.size_label.setText(text)
        self.size_label.setStyleSheet("color: #dc2626;" if over else "color: palette(placeholder-text);")
        if self.pages.currentWidget() is self.preview:
            self._preview_timer.start()

    def _set_dirty(self, dirty: bool) -> None:
        changed = dirty != self._dirty
        self._dirty = dirty
        self.dot.setVisible(dirty)
        self.save_button.setEnabled(self.opened is not None and (dirty or self.incoming is not None))
        if changed:
            self.sig_dirty.emit(dirty)

    def _render_preview(self) -> None:
        """Show the text as it is now in the preview: built on a worker thread
        (:mod:`ui.knowledge.preview`), one build at a time, the newest text winning."""
        self._preview_wanted += 1
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the window's loop has ended (a quit): nothing to show it in
            return
        if not self._preview_building:
            self._preview_building = True
            self.run_task(self._build_preview())

    async def _build_preview(self) -> None:
        from ui.chat.markdown import Colours
        from ui.knowledge.preview import build

        try:
            while True:
                wanted = self._preview_wanted
                palette = self.palette()
                dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
                colours = Colours(code_background="#27272a" if dark else "#f4f4f5",
                                  rule="#3f3f46" if dark else "#d4d4d8",
                                  quiet=palette.color(QPalette.ColorRole.PlaceholderText).name(),
                                  link=palette.color(QPalette.ColorRole.Link).name(), dark=dark)
                built = await asyncio.to_thread(build, self.text(), colours,
                                                self.preview.font(), self.thread())
                if not shiboken6.isValid(self):
                    return
                if wanted == self._preview_wanted:  # else the text moved on: build again
                    break
            old = self.preview.document()
            ours = old.parent() is self.preview  # (the first is the browser's own: Qt's)
            built.document.setParent(self.preview)
            self.preview.setDocument(built.document)
            if ours and shiboken6.isValid(old):
                old.deleteLater()
            self._preview_code = built.code
            self.sig_preview_shown.emit()
        finally:
            if shiboken6.isValid(self):
                self._preview_building = False

    def _preview_link(self, url: QUrl) -> None:
        from ui.chat.markdown import COPY

        href = url.toString()
        if href.startswith(COPY):
            number = href[len(COPY):]
            if number.isdigit() and int(number) < len(self._preview_code):
                QApplication.clipboard().setText(self._preview_code[int(number)])
            return
        follow(href, self)

    def _preview_hover(self, url: QUrl) -> None:
        target = target_of(url.toString())
        self.preview.setToolTip(tip(target) if is_web(target) else "")

    # ================================================================= Qt overrides

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.highlighter.set_palette(self.edit.palette())
