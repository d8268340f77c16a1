"""The conversation as a list model: one row per entry (``ui.chat.entries``).

Rows change by inserts at either end, by a row replaced in place, and by a reset only when
another chat is opened.  ``EntryRole`` gives the :class:`Entry`; the display and accessible
texts are the entry's whole text, so assistive technology reads every message in full; a
message with versions adds "version 2 of 3" to it, and says it as its description.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
)

from ui.chat.entries import PERSON, Entry
from ui.chat.versions import said as version_said
from ui.text import sentence

EntryRole = Qt.ItemDataRole.UserRole + 1

_Index = QModelIndex | QPersistentModelIndex


def _said_after(entry: Entry) -> str:
    """What a screen reader hears after a reply's text: how it ended, its tokens and cost."""
    from app.llm.prices import usage_line
    from app.store.messages import STOPPED

    tail = ""
    if entry.status == STOPPED:
        tail += "\n\nStopped; what arrived is kept."
    if entry.kind != PERSON and entry.usage is not None and (entry.usage.input
                                                             or entry.usage.output):
        tail += "\n\n" + usage_line(entry.usage, entry.cost_usd if entry.cost_known else None)
    return tail


class ConversationModel(QAbstractListModel):
    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.entries: list[Entry] = []

    # ----------------------------------------------------------------- Qt

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.entries)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.entries):
            return None
        entry = self.entries[index.row()]
        if role == EntryRole:
            return entry
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            who = "You" if entry.kind == PERSON else "Claude"
            text = entry.text
            if entry.error:
                said = sentence(entry.error)
                text = f"{text}\n\n{said}" if text else said
            if role == Qt.ItemDataRole.AccessibleTextRole:
                text += _said_after(entry)
                if entry.of > 1:  # an edited message, a retried reply (issue 38)
                    text += f"\n\n({version_said(entry.nth, entry.of)})"
            return f"{who}: {text}"
        if role == Qt.ItemDataRole.AccessibleDescriptionRole:
            return version_said(entry.nth, entry.of) if entry.of > 1 else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return None
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    # ----------------------------------------------------------------- changes

    def show(self, entries: list[Entry]) -> None:
        """Another chat: the one reset."""
        self.beginResetModel()
        self.entries = list(entries)
        self.endResetModel()

    def prepend(self, entries: list[Entry]) -> None:
        if not entries:
            return
        self.beginInsertRows(QModelIndex(), 0, len(entries) - 1)
        self.entries[:0] = entries
        self.endInsertRows()

    def append(self, entries: list[Entry]) -> None:
        if not entries:
            return
        start = len(self.entries)
        self.beginInsertRows(QModelIndex(), start, start + len(entries) - 1)
        self.entries.extend(entries)
        self.endInsertRows()

    def insert(self, row: int, entries: list[Entry]) -> None:
        if not entries:
            return
        self.beginInsertRows(QModelIndex(), row, row + len(entries) - 1)
        self.entries[row:row] = entries
        self.endInsertRows()

    def remove(self, entry: Entry) -> None:
        row = next((r for r in range(len(self.entries) - 1, -1, -1)
                    if self.entries[r] is entry), None)
        if row is None:
            return
        self.beginRemoveRows(QModelIndex(), row, row)
        del self.entries[row]
        self.endRemoveRows()

    def drop_first(self, count: int) -> None:
        """The *count* oldest rows go (they are read again when the person scrolls up)."""
        if count <= 0:
            return
        self.beginRemoveRows(QModelIndex(), 0, count - 1)
        del self.entries[:count]
        self.endRemoveRows()

    def truncate(self, row: int) -> None:
        """Drop the rows from *row* on (the end of the chat is read again)."""
        if row >= len(self.entries):
            return
        self.beginRemoveRows(QModelIndex(), row, len(self.entries) - 1)
        del self.entries[row:]
        self.endRemoveRows()

    def changed(self, entry: Entry) -> None:
        """*entry* changed in place: its render is stale."""
        entry.version += 1
        row = next((r for r in range(len(self.entries) - 1, -1, -1)
                    if self.entries[r] is entry), None)
        if row is None:
            return
        index = self.index(row, 0)
        self.dataChanged.emit(index, index)

    def row_of(self, key: str) -> int | None:
        for row in range(len(self.entries) - 1, -1, -1):
            if self.entries[row].key == key:
                return row
        return None
