"""How the knowledge editor's text looks: the six sections' headings, other headings, each
entry's marker (a top-level list item) and its sub-items, and the rebuild's
``(updated YYYY-MM-DD)`` marks coloured; changed entries lit up for a moment.  Colours come
from the palette, so light and dark both read."""

from __future__ import annotations

import re

from PySide6.QtCore import QTimer
from PySide6.QtGui import (
    QColor,
    QFont,
    QPalette,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from app.knowledge.document import SECTIONS

FLASH_MS = 2_500  # how long changed entries stay highlighted

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)([-*+]|\d{1,9}[.)])(\s+|$)")
_MARK = re.compile(r"\((?:updated|added) \d{4}-\d{2}-\d{2}\)")


class KnowledgeHighlighter(QSyntaxHighlighter):
    def __init__(self, document: QTextDocument, palette: QPalette) -> None:
        super().__init__(document)
        self.set_palette(palette)

    def set_palette(self, palette: QPalette) -> None:
        accent = palette.color(QPalette.ColorRole.Link)
        quiet = palette.color(QPalette.ColorRole.PlaceholderText)
        self._section = QTextCharFormat()
        self._section.setFontWeight(QFont.Weight.Bold)
        self._section.setForeground(accent)
        self._heading = QTextCharFormat()
        self._heading.setFontWeight(QFont.Weight.Bold)
        self._marker = QTextCharFormat()
        self._marker.setForeground(accent)
        self._marker.setFontWeight(QFont.Weight.Bold)
        self._sub = QTextCharFormat()
        self._sub.setForeground(quiet)
        self._mark = QTextCharFormat()
        self._mark.setForeground(quiet)
        self._mark.setFontItalic(True)
        unknown = QColor(accent)
        unknown.setAlpha(150)
        self._other = QTextCharFormat(self._heading)
        self._other.setForeground(unknown)
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt's name
        heading = _HEADING.match(text)
        if heading:
            level, title = len(heading.group(1)), heading.group(2)
            fmt = self._section if level == 2 and title in SECTIONS else (
                self._other if level == 2 else self._heading)
            self.setFormat(0, len(text), fmt)
            return
        item = _ITEM.match(text)
        if item:
            start, end = item.start(2), item.end(2)
            self.setFormat(start, end - start, self._marker if not item.group(1) else self._sub)
        for mark in _MARK.finditer(text):
            self.setFormat(mark.start(), mark.end() - mark.start(), self._mark)


class KnowledgeEdit(QPlainTextEdit):
    """The text itself; changed entries can be highlighted for a moment."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.document().setDocumentMargin(10)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.flashed: list[int] = []  # the lines highlighted now (tests read it)
        self._flash_timer = QTimer(self)
        self._flash_timer.setSingleShot(True)
        self._flash_timer.setInterval(FLASH_MS)
        self._flash_timer.timeout.connect(self.clear_flash)

    def flash(self, lines: list[int] | tuple[int, ...]) -> None:
        colour = QColor(self.palette().color(QPalette.ColorRole.Highlight))
        selections = []
        for number in lines:
            block = self.document().findBlockByNumber(number)
            if not block.isValid():
                continue
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(colour)
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = QTextCursor(block)
            selections.append(selection)
        self.flashed = list(lines)
        self.setExtraSelections(selections)
        if selections:
            self._flash_timer.start()

    def clear_flash(self) -> None:
        self.flashed = []
        self.setExtraSelections([])

    def replace_all(self, text: str) -> None:
        """The whole text replaced as one step the person can undo (Ctrl+Z), keeping where
        they were reading."""
        scroll = self.verticalScrollBar().value()
        position = self.textCursor().position()
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(text)
        cursor.endEditBlock()
        cursor.setPosition(min(position, len(text)))
        self.setTextCursor(cursor)
        self.verticalScrollBar().setValue(scroll)
