"""The keyboard's place is plainly visible on buttons, light and dark: a
two-pixel ring in the theme's link colour, not Fusion's faint outline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolBar

from tests.ui.helpers import close_window, configure, wait_for
from ui.app import start
from ui.focus import ring_of
from ui.theme import apply_theme


def strong_pixels(image: QImage, colour: QColor) -> int:
    """Pixels close to *colour* (the ring's), counted."""
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            pixel = image.pixelColor(x, y)
            if abs(pixel.red() - colour.red()) + abs(pixel.green() - colour.green()) \
                    + abs(pixel.blue() - colour.blue()) < 90:
                count += 1
    return count


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_focused_button_shows_a_ring(qapp, loop, isolated, fake, tmp_path, dark):
    configure(isolated, fake)
    starter = start(qapp, isolated, dark=dark)
    starter.begin()
    window = starter.window
    try:
        wait_for(lambda: starter.ops is not None and window.chat_panel is not None)
        window.resize(1280, 800)
        window.show()
        window.activateWindow()
        bar = window.findChild(QToolBar, "main-toolbar")
        board = bar.widgetForAction(window.board_action)
        wait_for(board.isEnabled)
        ring_colour = window.palette().color(QPalette.ColorRole.Link)
        calm = strong_pixels(board.grab().toImage(), ring_colour)
        window.sidebar.filter.setFocus()
        wait_for(window.sidebar.filter.hasFocus)
        while QApplication.focusWidget() is not board:  # Tab, as a person would
            QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        wait_for(lambda: ring_of(board) is not None)
        image = board.grab().toImage()
        folder = Path(os.environ.get("CAIRN_SHOTS", tmp_path))
        folder.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(folder / f"focus-{'dark' if dark else 'light'}.png"))
        ringed = strong_pixels(image, ring_colour)
        # A ring round the button: most of its perimeter, in the strong colour (Fusion: 0).
        assert ringed - calm >= board.width() + board.height(), (ringed, calm)
        window.sidebar.filter.setFocus()
        wait_for(lambda: ring_of(board) is None)  # gone with the focus
    finally:
        close_window(starter)
        apply_theme(qapp, dark=False)  # the next tests start in the light theme, as ever
