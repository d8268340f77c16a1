"""The sidebar's tree view and the proxy its filter shows through."""

from __future__ import annotations

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSortFilterProxyModel,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QContextMenuEvent,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
)
from PySide6.QtWidgets import QAbstractItemView, QFrame, QTreeView, QWidget

from ui.icons import tinted
from ui.sidebar.delegate import SidebarDelegate, quiet_colour
from ui.sidebar.model import KIND_ROLE, SECTION, SidebarModel

Index = QModelIndex | QPersistentModelIndex


class FilterProxy(QSortFilterProxyModel):
    """The rows the filter found, with the sections and workspaces that hold them.

    The sidebar finds the matches in the registry's memory and hands over every key to show
    (section names, workspace and chat ids), so a row is accepted by one set lookup and a
    collapsed branch is never looked at.  Attached to the model only while a filter is set.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._shown: frozenset[str] = frozenset()

    def show_only(self, keys: frozenset[str]) -> None:
        if hasattr(self, "beginFilterChange"):  # Qt 6.9 and later
            self.beginFilterChange()
            self._shown = keys
            self.endFilterChange()
        else:
            self._shown = keys
            self.invalidateFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        return isinstance(model, SidebarModel) and \
            model.key_at(source_row, source_parent) in self._shown


class SidebarTree(QTreeView):
    """The tree: its own branch chevrons and empty hint; its keys and menus are asked of the
    sidebar that holds it, which decides."""

    sig_open_requested = Signal(QModelIndex)  # Enter on a row
    sig_rename_requested = Signal(QModelIndex)  # F2 on a row
    sig_delete_requested = Signal(QModelIndex)  # Delete (or Backspace) on a row
    sig_delete_chat_requested = Signal(QModelIndex)  # Shift+Delete on a row: Delete chat…
    sig_menu_requested = Signal(QModelIndex, QPoint)  # a row's menu (or none), at a screen point
    sig_reset = Signal()  # the view has forgotten its rows (its model was reset): restore now
    sig_current_moved = Signal()  # the highlighted row changed (keys, a click, or the rows)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebarTree")
        self.setAccessibleName("Workspaces")
        self.setHeaderHidden(True)
        self.setRootIsDecorated(False)  # the sections are headers, not branches
        self.setUniformRowHeights(True)  # lays out only what is visible, at any length
        self.setIndentation(16)
        self.setAnimated(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setMouseTracking(True)
        self.viewport().setAttribute(Qt.WidgetAttribute.WA_Hover)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setItemDelegate(SidebarDelegate(self))
        # The delegate paints the selection as a rounded band; none behind the chevrons.
        self.setStyleSheet("#sidebarTree { show-decoration-selected: 0; }")

    def empty_hint(self) -> str:
        """What the tree says when it shows no row at all (nothing added, nothing matching)."""
        model = self.model()
        if isinstance(model, FilterProxy):
            return "" if model.rowCount() else "Nothing matches the filter."
        if any(not self.isRowHidden(r, QModelIndex()) for r in range(model.rowCount())):
            return ""
        return "No workspaces yet. Drop a folder here to add it."

    # ================================================================= Qt overrides

    def drawBranches(self, painter: QPainter, rect: QRect, index: Index) -> None:
        # Only a chevron in the last indentation step, and no selection colour behind it.
        if not self.model().hasChildren(index):
            return
        size = 12
        step = self.indentation()
        slot = QRect(rect.right() - step + 1, rect.top(), step, rect.height())
        target = QRect(slot.center().x() - size // 2 + 1, slot.center().y() - size // 2 + 1,
                       size, size)
        name = "chevron-down" if self.isExpanded(index) else "chevron-right"
        ratio = self.devicePixelRatioF()
        tinted(name, quiet_colour(self.palette()).name(), size, ratio).paint(painter, target)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        hint = self.empty_hint()
        if hint:
            painter = QPainter(self.viewport())
            painter.setPen(quiet_colour(self.palette()))
            area = self.viewport().rect().adjusted(20, 24, -20, -24)
            painter.drawText(area, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
                             | Qt.TextFlag.TextWordWrap, hint)
            painter.end()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        if self.indexAt(event.position().toPoint()).data(KIND_ROLE) == SECTION:
            event.accept()  # a click already folded it; a second fold would undo that
            return
        super().mouseDoubleClickEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        index = self.currentIndex()
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and index.isValid():
            self.sig_open_requested.emit(index)
        elif key == Qt.Key.Key_F2 and index.isValid():
            self.sig_rename_requested.emit(index)
        elif key == Qt.Key.Key_Delete and index.isValid() \
                and event.modifiers() == Qt.KeyboardModifier.ShiftModifier:
            self.sig_delete_chat_requested.emit(index)
        elif (event.matches(QKeySequence.StandardKey.Delete) or key == Qt.Key.Key_Backspace) \
                and index.isValid():
            self.sig_delete_requested.emit(index)
        elif key == Qt.Key.Key_F10 and event.modifiers() == Qt.KeyboardModifier.ShiftModifier:
            self._menu_from_keyboard()  # as the Menu key does (Windows' and KDE's habit)
        else:
            super().keyPressEvent(event)

    def _menu_from_keyboard(self) -> None:
        index = self.currentIndex()
        where = self.visualRect(index).bottomLeft() if index.isValid() else QPoint(8, 8)
        self.sig_menu_requested.emit(index, self.viewport().mapToGlobal(where))

    def currentChanged(self, current: Index, previous: Index) -> None:
        super().currentChanged(current, previous)
        self.sig_current_moved.emit()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.RightButton:
            # A right-click asks for that row's menu; it does not move the highlight away
            # from what is open (the menu acts on the row under the pointer).  Left
            # unaccepted: Qt 6.8 and later send the context menu only for an unhandled press.
            event.ignore()
            return
        super().mousePressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        if event.reason() == QContextMenuEvent.Reason.Keyboard:
            self._menu_from_keyboard()
            return
        where = event.pos()
        self.sig_menu_requested.emit(self.indexAt(where), self.viewport().mapToGlobal(where))

    def reset(self) -> None:  # noqa: D102 - Qt's slot, called when the model was reset
        # Qt forgets expansion, selection and scroll here, after every other listener of
        # the model's reset has run (the view may have been given its model last): what was
        # open is restored only from now on.
        super().reset()
        self.sig_reset.emit()
