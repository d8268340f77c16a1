"""A card of the status board and its column's model: the workspaces of one build status,
kept in step with the registry by inserts, removals and moves."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QMimeData,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
)
from PySide6.QtWidgets import (
    QWidget,
)

from app.records import BUILD_STATUSES
from ui.text import tip

MIME_TYPE = "application/x-cairn-workspace-id"
STATUS_TITLES = {"idea": "Idea", "planning": "Planning", "building": "Building",
                 "shipped": "Shipped"}
CARD_ROLE = Qt.ItemDataRole.UserRole + 1
Index = QModelIndex | QPersistentModelIndex


def _title(status: str) -> str:
    return STATUS_TITLES.get(status, status.capitalize())


def _next_status(status: str) -> str | None:
    if status not in BUILD_STATUSES:
        return None
    step = BUILD_STATUSES.index(status)
    return BUILD_STATUSES[step + 1] if step + 1 < len(BUILD_STATUSES) else None


@dataclass(frozen=True, slots=True)
class Card:
    """What one card shows: a workspace, its place in the tree and its folder's state."""

    id: str
    title: str
    parents: tuple[str, ...]  # the titles of the workspaces it is a folder of, outermost first
    status: str
    missing: bool
    path: str

    @property
    def where(self) -> str:
        return " › ".join(self.parents)

    def spoken(self) -> str:
        """The card as a screen reader says it."""
        parts = [self.title]
        if self.parents:
            parts.append(f"folder of {self.where}")
        parts.append(_title(self.status))
        if self.missing:
            parts.append("folder missing")
        return ", ".join(parts)



# ================================================================= the model of one column


class ColumnModel(QAbstractListModel):
    """The cards of one build status, in the registry's display order."""

    def __init__(self, status: str, on_drop: Callable[[str, str], None],
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status = status
        self._on_drop = on_drop
        self._cards: list[Card] = []

    # ----------------------------------------------------------------- public

    def cards(self) -> list[Card]:
        return list(self._cards)

    def row_of(self, ws_id: str) -> int | None:
        return next((row for row, card in enumerate(self._cards) if card.id == ws_id), None)

    def update(self, cards: list[Card]) -> None:
        """Become *cards* by removing, inserting and moving rows: never a reset."""
        keep = {card.id for card in cards}
        for row in range(len(self._cards) - 1, -1, -1):
            if self._cards[row].id not in keep:
                self.beginRemoveRows(QModelIndex(), row, row)
                del self._cards[row]
                self.endRemoveRows()
        for row, card in enumerate(cards):
            if row < len(self._cards) and self._cards[row].id == card.id:
                if self._cards[row] != card:
                    self._cards[row] = card
                    self.dataChanged.emit(self.index(row), self.index(row))
                continue
            found = next((r for r in range(row + 1, len(self._cards))
                          if self._cards[r].id == card.id), None)
            if found is None:
                self.beginInsertRows(QModelIndex(), row, row)
                self._cards.insert(row, card)
                self.endInsertRows()
            else:
                self.beginMoveRows(QModelIndex(), found, found, QModelIndex(), row)
                moved = self._cards.pop(found)
                self._cards.insert(row, card)
                self.endMoveRows()
                if moved != card:
                    self.dataChanged.emit(self.index(row), self.index(row))

    # ----------------------------------------------------------------- Qt overrides

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self._cards)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._cards):
            return None
        card = self._cards[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return card.title
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return card.spoken()
        if role == Qt.ItemDataRole.ToolTipRole:
            return tip(f"{card.path}\nFolder missing" if card.missing else card.path)
        if role == CARD_ROLE:
            return card
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled  # a drop on the column itself
        return (Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
                | Qt.ItemFlag.ItemIsDragEnabled | Qt.ItemFlag.ItemIsDropEnabled)

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction | Qt.DropAction.CopyAction

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE]

    def mimeData(self, indexes: Iterable[QModelIndex]) -> QMimeData:
        data = QMimeData()
        ids = [self._cards[i.row()].id for i in indexes if i.isValid()]
        if ids:
            data.setData(MIME_TYPE, ids[0].encode())
        return data

    def canDropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                        parent: Index) -> bool:
        return data.hasFormat(MIME_TYPE)

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                     parent: Index) -> bool:
        """A card dropped here: ask for the status change, move no row by hand (the event
        that follows the change moves it).  False, so the source never removes a row."""
        if not data.hasFormat(MIME_TYPE):
            return False
        ws_id = bytes(data.data(MIME_TYPE).data()).decode()
        if ws_id and self.row_of(ws_id) is None:
            self._on_drop(ws_id, self.status)
        return False
