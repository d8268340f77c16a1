"""Help › Keyboard shortcuts: every key the window answers, in one list a newcomer can read.

The window's own actions are checked against this list by a test (tests/ui/test_menus.py): a
shortcut added to an action and not here fails it.  "Ctrl" reads "Cmd" on macOS, as Qt maps
it.
"""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

# (keys, what they do, where): in the order a newcomer meets them.
SHORTCUTS: tuple[tuple[str, str, str], ...] = (
    ("Ctrl+N", "New chat in the selected workspace", "Window"),
    ("Ctrl+Shift+N", "Add a folder as a workspace", "Window"),
    ("Ctrl+K", "Search everything, or jump to a workspace or chat", "Window"),
    ("Ctrl+F", "Find in the open chat (in the sidebar: filter it)", "Window"),
    ("Enter / Shift+Enter", "Previous / next match while finding", "Find in chat"),
    ("Ctrl+Shift+Backspace", "Delete the open chat (asks first; File › Recently removed "
     "brings it back)", "Window"),
    ("Ctrl+Shift+K", "Show or hide the knowledge panel", "Window"),
    ("Ctrl+Shift+B", "The status board", "Window"),
    ("Ctrl+S", "Save the knowledge document", "Knowledge panel"),
    ("Ctrl+,", "Settings", "Window"),
    ("Ctrl+/", "This list of keyboard shortcuts", "Window"),
    ("Ctrl+Q", "Quit Cairn", "Everywhere"),
    ("Enter / Ctrl+Enter", "Send the message (Shift+Enter: a new line; Settings can swap "
     "Enter and Shift+Enter)", "Message box"),
    ("Ctrl+Home", "The chat's first message", "Conversation"),
    ("Alt+Left / Alt+Right", "The highlighted message's previous / next version (‹ 2/3 ›)",
     "Conversation"),
    ("Shift+F10 / Menu key", "The highlighted message's menu (Copy, Retry, Edit, versions, "
     "Fork from here)", "Conversation"),
    ("Enter", "Open the highlighted workspace or chat", "Sidebar"),
    ("F2", "Rename the highlighted workspace or chat", "Sidebar"),
    ("Delete", "Remove a workspace / archive a chat (asks first)", "Sidebar"),
    ("Shift+Delete", "Delete the highlighted chat (asks first)", "Sidebar"),
    ("Shift+F10 / Menu key", "The highlighted row's menu", "Sidebar"),
    ("Tab / Shift+Tab", "Move between the toolbar, the sidebar, the chat and the panel",
     "Window"),
    ("Esc", "Close the search box, the find bar or a dialog", "Everywhere"),
)


def shown_keys(keys: str) -> str:
    """*keys* as the person's system names them (Cmd on macOS)."""
    return keys.replace("Ctrl+", "Cmd+") if sys.platform == "darwin" else keys


class ShortcutsDialog(QDialog):
    """The list, in a table that reads well with a screen reader (keys, what, where)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("Keyboard shortcuts")
        self.table = QTableWidget(len(SHORTCUTS), 3)
        self.table.setAccessibleName("Shortcuts")
        self.table.setHorizontalHeaderLabels(["Keys", "What it does", "Where"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        for row, (keys, what, where) in enumerate(SHORTCUTS):
            for column, text in enumerate((shown_keys(keys), what, where)):
                self.table.setItem(row, column, QTableWidgetItem(text))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        # What a key does, whole: wrapped onto a second line, never cut to "…" (found in the
        # hour as a new user: "Delete the open chat (asks first; File › Recently …").
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.table.verticalHeader().setSectionResizeMode(
            QHeaderView.ResizeMode.ResizeToContents)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(720, 600)
