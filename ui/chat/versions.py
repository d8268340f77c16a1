"""‹ 2/3 › under a message with versions (issue 38, DESIGN §13): its earlier and later
versions, one click or one key away.

A message the person edited, or a reply retried, has siblings: the chat shows one of them
(its branch), and ``VersionSwitch`` steps to the one before or after it.  It is a real widget
(two buttons, "Previous version" and "Next version", and the count between them), placed by
the conversation over a gap its row leaves in the message's footer (``ui.chat.delegate``), so
a screen reader and Tab reach it like any button; Alt+Left and Alt+Right do the same on the
message the keyboard is on (``ui.chat.view``).
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QToolButton, QWidget

from ui.text import Label

PREVIOUS_KEYS, NEXT_KEYS = "Alt+Left", "Alt+Right"


def said(nth: int, of: int) -> str:
    """What a screen reader hears of a message's place among its versions."""
    return f"version {nth} of {of}"


def arrow_font(font: QFont) -> QFont:
    """The arrows' font: *font* a little larger and bold, so they are easy to see and hit."""
    arrows = QFont(font)
    if font.pointSizeF() > 0:
        arrows.setPointSizeF(font.pointSizeF() * 1.3)
    elif font.pixelSize() > 0:
        arrows.setPixelSize(round(font.pixelSize() * 1.3))
    arrows.setBold(True)
    return arrows


def switch_size(font: QFont) -> QSize:
    """The room ‹ 99/99 › takes in *font*: what a message's footer leaves for it."""
    metrics = QFontMetrics(font)
    wide = QFontMetrics(arrow_font(font))
    button = max(wide.horizontalAdvance("‹"), wide.horizontalAdvance("›")) + 14
    count = metrics.horizontalAdvance("99/99") + 8
    return QSize(2 * button + count, max(wide.height() + 4, 22))


class VersionSwitch(QWidget):
    """‹ n/m › for one message; ``sig_step`` says -1 (previous) or +1 (next)."""

    sig_step = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("version-switch")
        self.setAccessibleName("Versions")
        self.nth, self.of = 0, 0
        self.previous = self._button("‹", "Previous version", PREVIOUS_KEYS)
        self.next = self._button("›", "Next version", NEXT_KEYS)
        self.count = Label("")
        self.count.setObjectName("version-count")
        self.count.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.count.named("Version")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.previous)
        layout.addWidget(self.count, 1)
        layout.addWidget(self.next)
        self.previous.clicked.connect(lambda: self.sig_step.emit(-1))
        self.next.clicked.connect(lambda: self.sig_step.emit(1))
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.setAutoFillBackground(False)

    def _button(self, text: str, name: str, keys: str) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setFont(arrow_font(self.font()))
        button.setAccessibleName(name)
        button.setToolTip(f"{name} ({keys})")
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        return button

    def show_version(self, nth: int, of: int, *, enabled: bool = True) -> None:
        """Version *nth* of *of* is shown; the arrows step within them (none while a reply
        streams in the chat: *enabled* False)."""
        self.nth, self.of = nth, of
        self.count.setText(f"{nth}/{of}")
        self.count.setAccessibleDescription(said(nth, of))
        self.setAccessibleDescription(said(nth, of))
        self.previous.setEnabled(enabled and nth > 1)
        self.next.setEnabled(enabled and nth < of)

    def sizeHint(self) -> QSize:  # noqa: N802
        return switch_size(self.font())
