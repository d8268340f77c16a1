"""A focus ring that shows where the keyboard is, on buttons, check boxes and menus' buttons.

Fusion marks a focused button with a one-pixel outline in a shade of the selection colour,
which in Cairn's calm palettes is all but invisible.  Rather than a style sheet
(which would restyle every button) or a Python style (whose every drawing call would cross
into Python), one small widget follows the focus: laid over the focused control, it draws a
two-pixel ring in the theme's link colour, light or dark.  Fields, lists and the conversation
show their own focus already.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QAbstractButton, QApplication, QComboBox, QWidget

RING = 2  # px


class FocusRing(QWidget):
    """Drawn over the focused control (its child, the control's size, no mouse)."""

    def __init__(self) -> None:
        super().__init__(None)
        self.setObjectName("focus-ring")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.target: QWidget | None = None

    def follow(self, widget: QWidget | None) -> None:
        if self.target is not None and shiboken6.isValid(self.target):
            self.target.removeEventFilter(self)
        self.target = widget
        if widget is None:
            self.hide()
            return
        self.setParent(widget)
        self.setGeometry(widget.rect())
        widget.installEventFilter(self)
        self.show()
        self.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if watched is self.target and event.type() == QEvent.Type.Resize \
                and isinstance(watched, QWidget):
            self.setGeometry(watched.rect())
        return False

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt's name
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pen = QPen(self.palette().color(QPalette.ColorRole.Link), RING)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        inset = RING / 2 + 0.5
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(inset, inset, -inset, -inset),
                                4, 4)
        painter.end()


def ringed(widget: QWidget | None) -> bool:
    """Whether *widget* gets the ring: a button, a check box, a drop-down."""
    return isinstance(widget, (QAbstractButton, QComboBox)) and widget.isVisible()


def install(app: QApplication) -> None:
    """From now on the focused button shows the ring (once per application).  The ring lives
    in the control it is drawn over, so it goes with a closed dialog: a new one is made."""
    if getattr(app, "_cairn_focus_ring", False):
        return
    rings: list[FocusRing] = []

    def changed(_old: QWidget | None, new: QWidget | None) -> None:
        ring = rings[0] if rings and shiboken6.isValid(rings[0]) else None
        if not ringed(new):
            if ring is not None:
                ring.follow(None)
            return
        if ring is None:
            ring = FocusRing()
            rings[:] = [ring]
        ring.follow(new)

    app.focusChanged.connect(changed)
    app._cairn_focus_ring = True  # type: ignore[attr-defined]
    changed(None, app.focusWidget())


def ring_of(widget: QWidget) -> FocusRing | None:
    """The ring drawn over *widget*, when it has the focus (tests look)."""
    ring = widget.findChild(FocusRing, "focus-ring")
    return ring if ring is not None and ring.isVisible() else None
