"""The theme is applied to what is not in it yet, and leaves widgets already in it alone:
applying it restyles every widget there is (and setStyle deletes the style they were drawn
with), so a window started again, or a scheme forced again, must not do it for nothing."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication, QPushButton

from ui.theme import apply_theme, palette


class Changes(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[QEvent.Type] = []

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if event.type() in (QEvent.Type.StyleChange, QEvent.Type.PaletteChange,
                            QEvent.Type.FontChange):
            self.seen.append(event.type())
        return False


def test_applying_the_theme_again_restyles_nothing(qapp, qtbot):
    apply_theme(qapp, dark=False)
    button = QPushButton("Save")
    qtbot.addWidget(button)
    button.show()
    changes = Changes()
    button.installEventFilter(changes)

    apply_theme(qapp, dark=False)
    QApplication.processEvents()
    assert changes.seen == []
    assert qapp.style().name().lower() == "fusion"

    apply_theme(qapp, dark=True)  # a scheme that changes: the palette, and only it
    QApplication.processEvents()
    assert QEvent.Type.PaletteChange in changes.seen
    assert QEvent.Type.StyleChange not in changes.seen
    assert qapp.palette().color(QPalette.ColorRole.Window) == \
        palette(True).color(QPalette.ColorRole.Window)
    apply_theme(qapp, dark=False)  # the next tests start in the light theme, as ever
