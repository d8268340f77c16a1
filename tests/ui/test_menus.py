"""Everything the window does has a place a newcomer finds (a menu bar:
File, Chat, View, Help) with its keys, a "Keyboard shortcuts" list that holds every key of the
window's actions, the Board with a shortcut, and the toolbar reached by Tab."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolBar

from tests.ui.helpers import wait_for
from ui.shortcuts import SHORTCUTS


def menu_of(window, title: str):
    return next(a.menu() for a in window.menuBar().actions() if a.text() == title)


def texts(menu) -> list[str]:
    return [a.text() for a in menu.actions() if a.text()]


def test_the_menu_bar_names_what_exists(opened):
    window = opened.window
    assert [a.text() for a in window.menuBar().actions()] == ["&File", "&Chat", "&View",
                                                             "&Help"]
    assert texts(menu_of(window, "&Chat")) == ["New chat", "Find in chat", "Search…",
                                               "Delete chat…"]
    assert texts(menu_of(window, "&View")) == ["Knowledge", "Board", "Settings"]
    assert texts(menu_of(window, "&Help")) == ["Keyboard shortcuts", "About Cairn"]
    # In the window here; on macOS Qt puts the same menus in the system's bar.
    assert window.menuBar().isVisible() or window.menuBar().isNativeMenuBar()


def test_the_board_opens_from_the_keyboard(opened):
    window = opened.window
    window.activateWindow()
    assert window.board_action.shortcut() == QKeySequence("Ctrl+Shift+B")
    QTest.keyClick(window, Qt.Key.Key_B,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    wait_for(lambda: opened._board is not None and opened._board.isVisible())
    opened._board.close()


def test_the_shortcuts_list_holds_every_key_of_the_windows_actions(opened):
    window = opened.window
    listed = {part.strip() for keys, _what, _where in SHORTCUTS for part in keys.split(" / ")}
    keyed = {a.shortcut().toString() for a in window.findChildren(type(window.board_action))
             if not a.shortcut().isEmpty()}
    assert keyed, "the window has keyed actions"
    assert keyed <= listed, f"not in the list: {sorted(keyed - listed)}"
    window.shortcuts_action.trigger()
    wait_for(lambda: getattr(window, "shortcuts_dialog", None) is not None
             and window.shortcuts_dialog.isVisible())
    table = window.shortcuts_dialog.table
    assert table.rowCount() == len(SHORTCUTS)
    assert table.item(0, 0).text() in ("Ctrl+N", "Cmd+N")
    window.shortcuts_dialog.close()


def test_tab_reaches_the_toolbar(opened):
    window = opened.window
    bar = window.findChild(QToolBar, "main-toolbar")
    buttons = [bar.widgetForAction(a) for a in bar.actions()
               if a.isVisible() and a.text() and bar.widgetForAction(a).isEnabled()]
    names = {b.accessibleName() for b in buttons}
    assert {"Add workspace", "New chat", "Board", "Settings"} <= names
    window.activateWindow()
    window.sidebar.filter.setFocus()
    wait_for(window.sidebar.filter.hasFocus)
    reached: set[str] = set()
    for _ in range(80):  # round the whole window, as Tab goes
        QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        focus = QApplication.focusWidget()
        if focus is not None and focus in buttons:
            reached.add(focus.accessibleName())
    assert {"Add workspace", "New chat", "Board", "Settings"} <= reached
