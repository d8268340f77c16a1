"""Where a search result opens: a knowledge entry selected in its document, a file selected
in the Files tab — each once the panel has read what it shows."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QTreeWidget


def when_loaded(ready: Callable[[], bool], loaded: SignalInstance, then: Callable[[], None]
                ) -> None:
    """Run *then* now if *ready*, else on the next *loaded* (once)."""
    if ready():
        then()
        return

    def once() -> None:
        loaded.disconnect(once)
        then()

    loaded.connect(once)


def select_line(edit: QPlainTextEdit, line: int) -> None:
    """Select the entry that starts at *line* (to the next blank line) and centre it."""
    document = edit.document()
    block = document.findBlockByNumber(max(0, line))
    if not block.isValid():
        return
    last = block
    while last.next().isValid() and last.next().text().strip() and \
            last.next().text()[:1] in (" ", "\t"):
        last = last.next()  # the entry's indented lines
    cursor = QTextCursor(block)
    cursor.setPosition(last.position() + max(0, last.length() - 1),
                       QTextCursor.MoveMode.KeepAnchor)
    edit.setTextCursor(cursor)
    edit.centerCursor()
    edit.setFocus(Qt.FocusReason.OtherFocusReason)


def select_file(tree: QTreeWidget, file_id: str) -> bool:
    for row in range(tree.topLevelItemCount()):
        item = tree.topLevelItem(row)
        if item is not None and item.data(0, Qt.ItemDataRole.UserRole) == file_id:
            tree.setCurrentItem(item)
            tree.scrollToItem(item)
            tree.setFocus(Qt.FocusReason.OtherFocusReason)
            return True
    return False
