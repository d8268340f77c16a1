"""Small widgets the window's parts share: a one-sentence banner, a label that elides."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from ui.text import Label, sentence, tip

if TYPE_CHECKING:  # (imported where used: see ui/window.py on the first paint)
    from collections.abc import Callable

    from PySide6.QtCore import Qt


class Notice(QFrame):
    """A quiet banner for one sentence (a refusal, a warning), dismissed by the person."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setAccessibleName("Notice")
        self.setStyleSheet("#notice { background: palette(alternate-base);"
                           " border: 1px solid palette(mid); border-radius: 6px; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 8, 8, 8)
        self.label = Label()
        self.label.setWordWrap(True)
        from PySide6.QtCore import Qt

        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setAccessibleName("Dismiss")
        close.setAutoRaise(True)
        close.clicked.connect(self.hide)
        # What the sentence asks the person to do, when there is one ("Add your API key…").
        self.action = QPushButton()
        self.action.hide()
        self._do: Callable[[], object] | None = None
        self.lasting = False  # the sentence shown stays when the person opens something else
        self.action.clicked.connect(lambda _checked=False: self._do() if self._do else None)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def offer(self, text: str, do: Callable[[], object]) -> None:
        """A button beside the sentence that does what it says (until the next ``say``)."""
        self.action.setText(text)
        self.action.setAccessibleName(text.rstrip("…"))
        self._do = do
        self.action.show()

    def say(self, text: str, *, lasting: bool = False) -> None:
        """Show *text*.  A sentence is about what the person was doing: it goes when they
        open another chat or workspace (``moved_on``), unless *lasting* (a problem of the
        whole window, such as a damaged search index)."""
        self.action.hide()
        text = sentence(text)
        self.label.setText(text)
        self.label.setAccessibleName(f"Notice: {text}")  # read out, not only "Notice"
        self.label.setAccessibleDescription(text)
        self.lasting = lasting
        self.show()

    def moved_on(self) -> None:
        """The person opened something else: a sentence about what they left goes ("the
        folder … is missing" over an unrelated chat, "Imported …" long after)."""
        if not self.lasting:
            self.hide()


class ElidedLabel(Label):
    """One line that gives way to the window: a long title ends in "…" (the whole text in the
    tooltip and for assistive technology) instead of widening the window."""

    def __init__(self, parent: QWidget | None = None, *,
                 mode: Qt.TextElideMode | None = None) -> None:
        super().__init__("", parent)
        self._full = ""
        self._mode = mode  # None: the left (the start of a long breadcrumb gives way)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._full = text
        self.setToolTip(tip(text))
        self.setAccessibleDescription(text)
        self._elide()

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        if not self._full:  # (and the Qt namespace is not touched before the first paint)
            super().setText("")
            return
        from PySide6.QtCore import Qt

        mode = Qt.TextElideMode.ElideLeft if self._mode is None else self._mode
        shown = self.fontMetrics().elidedText(self._full, mode,
                                              max(0, self.width()))
        super().setText(shown)


def tool_button(text: str, name: str, tooltip: str) -> QToolButton:
    """A flat tool button with its accessible name and tooltip (the editor's, find's)."""
    button = QToolButton()
    button.setText(text)
    button.setAccessibleName(name)
    button.setToolTip(tooltip)
    button.setAutoRaise(True)
    return button
