"""The Suggestions strip above the knowledge document: what a chat proposed that Cairn would
not apply by itself, each as a small diff (the entries it changes struck out on red, the
proposed entry on green) with why it waits, the words it quotes and whose they are, and
Accept / Edit… / Dismiss.  Hidden when nothing waits.

Everything shown here came from the knowledge model or the documents: plain text only
(labels in plain format), never markup.  Accept and Edit save a new version through the
core (``Operations.accept_suggestion``): the editor then shows it as it shows any newer
version (at once, or beside unsaved text with the usual choice).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QMoveEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.knowledge.diffview import DiffColours
from ui.text import Label, make_plain

if TYPE_CHECKING:
    from app.store.suggestions import Suggestion
    from ui.bridge import EventBridge
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

QUIET = "color: palette(placeholder-text);"


def heading(suggestion: Suggestion) -> str:
    """"Add to Facts", "Change an entry", "Merge 3 entries"."""
    if suggestion.kind == "add":
        return f"Add to {suggestion.section or 'Facts'}"
    if suggestion.kind == "update":
        return "Change an entry"
    return f"Merge {len(suggestion.targets)} entries"


def source(suggestion: Suggestion) -> str:
    """Whose words the evidence quotes, only when they were found in the chat's messages:
    a quote found nowhere is said so, never passed off as the chat's."""
    return {"person": "you said", "claude": "Claude said"}.get(
        suggestion.said_by or "", "not found in the chat's messages")


class EditDialog(QDialog):
    """The suggested entry, to be put in the person's own words before it is accepted."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Edit suggestion")
        self.setAccessibleName("Edit suggestion")
        self.text = QPlainTextEdit(text)
        self.text.setAccessibleName("Entry text")
        self.text.setTabChangesFocus(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                   | QDialogButtonBox.StandardButton.Cancel)
        self.ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText("Accept")
        self.ok.setAccessibleName("Accept edited suggestion")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.text.textChanged.connect(
            lambda: self.ok.setEnabled(bool(self.text.toPlainText().strip())))
        # Ctrl+Enter accepts, as a message is sent (Enter writes a line break here).
        self.text.installEventFilter(self)
        layout = QVBoxLayout(self)
        note = Label("The entry becomes yours as you write it here.")
        note.setStyleSheet(QUIET)
        layout.addWidget(note)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(440, 180)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.text and event.type() == QEvent.Type.KeyPress \
                and isinstance(event, QKeyEvent) \
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) \
                and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            if self.ok.isEnabled():
                self.accept()
            return True
        return super().eventFilter(watched, event)


class CardArea(QScrollArea):
    """A card's words, as tall as they need when wrapped, up to the room the strip has;
    beyond that they scroll (the buttons stay below, in sight).  A layout gives a box of
    wrapped labels only what the widgets beside it leave (the document, the folder
    switches): at the default size the card's lines were clipped and drawn over each other."""

    LEAST = 60  # px: the heading and a line, however short the window

    def __init__(self, inner: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("suggestion-area")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setWidget(inner)
        self.viewport().setAutoFillBackground(False)  # the card's own background shows
        inner.setAutoFillBackground(False)
        inner.installEventFilter(self)
        self.most = 10_000  # px the words may take (set by the strip from its room)

    def set_most(self, most: int) -> None:
        self.most = max(self.LEAST, most)
        self.fit()

    def fit(self) -> None:
        """Take the height the words need at this width (or the most allowed)."""
        inner = self.widget()
        layout = inner.layout() if inner is not None else None
        if layout is None:
            return
        width = self.viewport().width()
        needed = layout.heightForWidth(width) if layout.hasHeightForWidth() \
            else layout.sizeHint().height()
        height = min(max(needed, 0), self.most)
        if height != self.height():
            self.setFixedHeight(height)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.widget() and event.type() in (QEvent.Type.LayoutRequest,
                                                         QEvent.Type.Resize):
            self.fit()
        return super().eventFilter(watched, event)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.fit()


class SuggestionCard(QFrame):
    sig_accept = Signal(int)
    sig_edit = Signal(int)
    sig_dismiss = Signal(int)

    def __init__(self, suggestion: Suggestion, colours: DiffColours,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.suggestion = suggestion
        self.setObjectName("suggestion-card")
        self.setAccessibleName(f"Suggestion: {heading(suggestion)}")
        self.setStyleSheet("#suggestion-card { border: 1px solid palette(mid);"
                           " border-radius: 6px; }")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(8, 6, 8, 6)
        outer.setSpacing(4)
        # The words scroll when the window is short; the buttons always show below them.
        self.body = QWidget()
        self.body.setObjectName("suggestion-body")
        layout = QVBoxLayout(self.body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(3)
        self.area = CardArea(self.body)
        outer.addWidget(self.area)
        title = Label(heading(suggestion)).named("Suggestion")
        title.setStyleSheet("font-weight: 600;")
        layout.addWidget(title)
        for old in suggestion.targets:
            layout.addWidget(self._line("−", old, colours.removed, struck=True))
        layout.addWidget(self._line("+", suggestion.text, colours.added))
        self.reason = self._quiet(f"Waits for you: {suggestion.reason}")
        self.reason.named("Why it waits")
        layout.addWidget(self.reason)
        if suggestion.evidence:
            self.evidence = self._quiet(f"“{suggestion.evidence}” — {source(suggestion)}")
            self.evidence.named("Evidence")
            layout.addWidget(self.evidence)
        self.accept_button = self._button("Accept", "Accept suggestion",
                                          "Apply it to the document as your own edit")
        self.edit_button = self._button("Edit…", "Edit suggestion",
                                        "Put it in your own words, then apply it")
        self.dismiss_button = self._button("Dismiss", "Dismiss suggestion",
                                           "Drop it; the document stays as it is")
        self.accept_button.clicked.connect(lambda: self.sig_accept.emit(suggestion.id))
        self.edit_button.clicked.connect(lambda: self.sig_edit.emit(suggestion.id))
        self.dismiss_button.clicked.connect(lambda: self.sig_dismiss.emit(suggestion.id))
        row = QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(self.accept_button)
        row.addWidget(self.edit_button)
        row.addWidget(self.dismiss_button)
        row.addStretch(1)
        outer.addLayout(row)

    def set_busy(self, busy: bool) -> None:
        for button in (self.accept_button, self.edit_button, self.dismiss_button):
            button.setEnabled(not busy)

    @staticmethod
    def _line(sign: str, text: str, colour: str, *, struck: bool = False) -> Label:
        label = Label()
        make_plain(label)
        label.setText(f"{sign} {text}")
        label.setWordWrap(True)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        label.named("Removed" if struck else "Added")
        style = f"background: {colour}; padding: 2px 4px; border-radius: 3px;"
        label.setStyleSheet(style + (" text-decoration: line-through;" if struck else ""))
        return label

    @staticmethod
    def _quiet(text: str) -> Label:
        label = Label()
        make_plain(label)
        label.setText(text)
        label.setWordWrap(True)
        label.setStyleSheet(QUIET)
        return label

    @staticmethod
    def _button(text: str, name: str, tooltip: str) -> QPushButton:
        button = QPushButton(text)
        button.setAccessibleName(name)
        button.setToolTip(tooltip)
        button.setAutoDefault(False)
        button.setStyleSheet("QPushButton { padding: 2px 8px; }")
        return button


class SuggestionsStrip(QWidget):
    """The suggestions for one document; :meth:`show_for` switches documents."""

    sig_error = Signal(str)
    sig_undoable = Signal(str, object)  # a sentence, and what its Undo does
    sig_loaded = Signal()  # the list on screen is the stored one

    def __init__(self, ops: KnowledgeOps, bridge: EventBridge | None, run_task: RunTask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.run_task = ops, run_task
        self.owner: str | None = None
        self.shown: list[Suggestion] = []
        self._reads = 0  # bumped per read: an older answer is dropped
        self.toggle = QToolButton()
        self.toggle.setAccessibleName("Suggestions")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.setStyleSheet("QToolButton { font-weight: 600; }")
        self.toggle.setToolTip("Changes a chat proposed that Cairn would not make by itself: "
                               "each waits for you to accept, edit or dismiss it")
        self.toggle.toggled.connect(self._fold)
        # One card at a time, with its place among them: it fits a narrow panel, and each
        # decision is made looking at one change.
        self.previous = QToolButton()
        self.previous.setText("‹")
        self.previous.setAccessibleName("Previous suggestion")
        self.previous.setToolTip("Previous suggestion")
        self.previous.setAutoRaise(True)
        self.previous.clicked.connect(lambda: self._step(-1))
        self.place = Label("").named("Suggestion number")
        self.place.setStyleSheet(QUIET)
        self.next = QToolButton()
        self.next.setText("›")
        self.next.setAccessibleName("Next suggestion")
        self.next.setToolTip("Next suggestion")
        self.next.setAutoRaise(True)
        self.next.clicked.connect(lambda: self._step(1))
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.setSpacing(2)
        head.addWidget(self.toggle)
        head.addStretch(1)
        head.addWidget(self.previous)
        head.addWidget(self.place)
        head.addWidget(self.next)
        self.cards = QWidget()
        self.cards_layout = QVBoxLayout(self.cards)
        self.cards_layout.setContentsMargins(0, 0, 0, 0)
        self.at = 0  # which of the suggestions is shown
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addLayout(head)
        layout.addWidget(self.cards)
        self.hide()
        self._watched: QWidget | None = None  # the widget whose height is the strip's room
        if bridge is not None:
            bridge.sig_suggestions_changed.connect(self._changed)
            bridge.sig_rebuild_applied.connect(lambda e: self._changed_for(e.owners))
            bridge.sig_reset.connect(lambda _s: self.refresh())

    # ----------------------------------------------------------------- hooks (tests replace)

    def ask_edit(self, text: str) -> str | None:
        """The person's own wording of a suggested entry; None when they cancel."""
        dialog = EditDialog(text, self)
        try:
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return None
            return dialog.text.toPlainText()
        finally:
            dialog.deleteLater()  # not kept alive, hidden, after each use

    # ----------------------------------------------------------------- public

    def show_for(self, owner: str | None) -> None:
        self.owner = owner
        self._render([])
        self.refresh()

    def refresh(self) -> None:
        if self.owner is not None:
            self.run_task(self._read(self.owner))

    def card(self, suggestion_id: int) -> SuggestionCard | None:
        """The card of *suggestion_id*, when it is the one shown."""
        for child in self.cards.findChildren(SuggestionCard):
            if child.suggestion.id == suggestion_id and not child.isHidden():
                return child
        return None

    # ----------------------------------------------------------------- the room it has

    # What the document below keeps, however many words a card has: a card's words scroll
    # before the document goes out of sight.
    DOCUMENT_LEAST = 120

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        parent = self.parentWidget()
        if parent is not self._watched:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
            self._watched = parent
            if parent is not None:
                parent.installEventFilter(self)
        self._fit_card()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self._watched and event.type() == QEvent.Type.Resize:
            self._fit_card()
        return super().eventFilter(watched, event)

    def _fit_card(self) -> None:
        """The card's words may take from the strip's top down to what the document keeps,
        less the strip's heading and the card's buttons and margins."""
        parent = self.parentWidget()
        card = next((c for c in self.cards.findChildren(SuggestionCard) if not c.isHidden()),
                    None)
        around, own, inner = parent.layout() if parent else None, self.layout(), card.layout() \
            if card else None
        if parent is None or card is None or around is None or own is None or inner is None:
            return
        room = parent.height() - self.y() - around.spacing() - self.DOCUMENT_LEAST
        head = self.toggle.sizeHint().height() + own.spacing()
        margins = inner.contentsMargins()
        chrome = margins.top() + margins.bottom() + inner.spacing() \
            + card.accept_button.sizeHint().height() + 2 * card.frameWidth() + 2
        card.area.set_most(room - head - chrome)

    def moveEvent(self, event: QMoveEvent) -> None:  # noqa: N802 - Qt's name
        super().moveEvent(event)
        self._fit_card()  # the status line above grew or shrank: the room did too

    # ----------------------------------------------------------------- private

    def _changed(self, event: object) -> None:
        if getattr(event, "owner", None) == self.owner:
            self.refresh()

    def _changed_for(self, owners: tuple[str, ...]) -> None:
        if self.owner in owners or not owners:
            self.refresh()

    async def _read(self, owner: str) -> None:
        self._reads += 1
        reads = self._reads
        found = await self.ops.suggestions(owner)
        if reads != self._reads or owner != self.owner:
            return  # another document, or a newer read, came meanwhile
        self._render(found)
        self.sig_loaded.emit()

    def _render(self, found: list[Suggestion]) -> None:
        before = self.shown[self.at].id if self.shown else None
        same = [s.id for s in found] == [s.id for s in self.shown]
        self.shown = found
        if not same:  # stay on the one shown if it is still there, else its neighbour
            ids = [s.id for s in found]
            self.at = ids.index(before) if before in ids else min(self.at, max(len(ids) - 1, 0))
            self._show_card()
        self._title()
        self.setVisible(bool(found))

    def _show_card(self) -> None:
        while self.cards_layout.count():
            item = self.cards_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        if not self.shown:
            return
        card = SuggestionCard(self.shown[self.at], DiffColours.of(self.palette()))
        card.sig_accept.connect(lambda n: self.run_task(self._accept(n, None)))
        card.sig_edit.connect(self._edit)
        card.sig_dismiss.connect(lambda n: self.run_task(self._dismiss(n)))
        self.cards_layout.addWidget(card)
        card.show()  # (a layout shows a child added to a visible parent only later)
        self._fit_card()

    def _step(self, by: int) -> None:
        if self.shown:
            self.at = (self.at + by) % len(self.shown)
            self._show_card()
            self._title()

    def _title(self) -> None:
        arrow = "▾" if self.toggle.isChecked() else "▸"
        self.toggle.setText(f"Suggestions ({len(self.shown)}) {arrow}")
        many = len(self.shown) > 1
        self.place.setText(f"{self.at + 1} of {len(self.shown)}" if many else "")
        for part in (self.previous, self.place, self.next):
            part.setVisible(many)

    def _fold(self, open_: bool) -> None:
        self.cards.setVisible(open_)
        self._title()

    def _edit(self, suggestion_id: int) -> None:
        found = next((s for s in self.shown if s.id == suggestion_id), None)
        if found is None:
            return
        text = self.ask_edit(found.text)
        if text is not None and text.strip():
            self.run_task(self._accept(suggestion_id, text))

    async def _accept(self, suggestion_id: int, edited: str | None) -> None:
        await self._decide(suggestion_id, lambda: self.ops.accept_suggestion(
            suggestion_id, edited=edited))

    async def _dismiss(self, suggestion_id: int) -> None:
        async def dismiss() -> None:
            gone, _ = await self.ops.dismiss_suggestion(suggestion_id)
            # Dismiss can be undone (issue 36): the window's notice offers Undo.
            self.sig_undoable.emit("Suggestion dismissed.", lambda: self.run_task(
                self._undo_dismiss(gone)))

        await self._decide(suggestion_id, dismiss)

    async def _undo_dismiss(self, suggestion: Suggestion) -> None:
        try:
            await self.ops.undo_dismiss_suggestion(suggestion)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
        self.refresh()

    async def _decide(self, suggestion_id: int, call: Callable[[], Awaitable[object]]) -> None:
        card = self.card(suggestion_id)
        if card is not None:
            card.set_busy(True)
        try:
            await call()
        except CairnError as refused:
            self.sig_error.emit(str(refused))
        finally:
            card = self.card(suggestion_id)
            if card is not None:
                card.set_busy(False)
        self.refresh()


__all__ = ["EditDialog", "SuggestionCard", "SuggestionsStrip", "heading", "source"]
