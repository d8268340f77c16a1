"""The status board's columns and the board itself."""

from __future__ import annotations

from collections.abc import Coroutine, Iterator
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QRectF,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QContextMenuEvent,
    QFocusEvent,
    QFont,
    QHelpEvent,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QShowEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QMenu,
    QSizePolicy,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from app.ops import Operations
from app.records import BUILD_STATUSES, MISSING_DIR, Workspace
from app.store.registry.registry import Registry
from ui.board.cards import (  # noqa: F401
    CARD_ROLE,
    MIME_TYPE,
    STATUS_TITLES,
    Card,
    ColumnModel,
    _next_status,
    _title,
)
from ui.board.delegate import CardDelegate  # noqa: F401
from ui.bridge import EventBridge
from ui.tasks import TaskRunner
from ui.text import Label

# ================================================================= one column's view


class ColumnView(QListView):
    """A column of cards: click the arrow to advance, Enter or double-click to open, drag to
    another column; Left and Right go to the next column, Ctrl+Right advances, Ctrl+Left
    moves back a step."""

    sig_advance = Signal(str)  # a workspace id: one step on
    sig_set_status = Signal(str, str)  # a workspace id, the status it should have
    sig_open = Signal(str)
    sig_neighbour = Signal(int, int)  # direction (-1 or 1), the row to land on

    def __init__(self, model: ColumnModel, delegate: CardDelegate,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setModel(model)
        self.setItemDelegate(delegate)
        self._delegate = delegate
        self._pressed: tuple[QPersistentModelIndex, bool] | None = None
        self.setAccessibleName(_title(model.status))
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.viewport().setAutoFillBackground(False)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setUniformItemSizes(True)
        self.setMouseTracking(True)
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(False)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        model.rowsInserted.connect(self._described)
        model.rowsRemoved.connect(self._described)
        self._described()

    # ----------------------------------------------------------------- public

    def column_model(self) -> ColumnModel:
        model = self.model()
        assert isinstance(model, ColumnModel)
        return model

    def advance_point(self, row: int) -> QPoint | None:
        """The centre of a card's advance control, in viewport coordinates (tests, tools)."""
        rect = self._advance_rect(self.column_model().index(row))
        return rect.center() if rect is not None else None

    def card_at(self, row: int) -> Card | None:
        card = self.column_model().index(row).data(CARD_ROLE)
        return card if isinstance(card, Card) else None

    # ----------------------------------------------------------------- private

    def _described(self, *_: object) -> None:
        count = self.column_model().rowCount()
        self.setAccessibleDescription(f"{count} workspace{'' if count == 1 else 's'}")

    def _advance_rect(self, index: QModelIndex) -> QRect | None:
        card = index.data(CARD_ROLE)
        if not isinstance(card, Card):
            return None
        return self._delegate.advance_rect(self.visualRect(index), self.font(), card.status)

    def _hit(self, pos: QPoint) -> tuple[QModelIndex, bool]:
        index = self.indexAt(pos)
        rect = self._advance_rect(index) if index.isValid() else None
        return index, rect is not None and rect.contains(pos)

    def _current_card(self) -> Card | None:
        card = self.currentIndex().data(CARD_ROLE)
        return card if isinstance(card, Card) else None

    # ----------------------------------------------------------------- Qt overrides

    def mousePressEvent(self, event: QMouseEvent) -> None:
        index, on_advance = self._hit(event.position().toPoint())
        if on_advance and event.button() == Qt.MouseButton.LeftButton:
            self._pressed = (QPersistentModelIndex(index), True)
            self.setCurrentIndex(index)
            event.accept()
            return
        self._pressed = None
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        pressed, self._pressed = self._pressed, None
        if pressed is not None and event.button() == Qt.MouseButton.LeftButton:
            index, on_advance = self._hit(event.position().toPoint())
            card = index.data(CARD_ROLE)
            if on_advance and pressed[0] == index and isinstance(card, Card):
                self.sig_advance.emit(card.id)
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        index, on_advance = self._hit(event.position().toPoint())
        if on_advance:  # the second click of a quick double click on the arrow: not an open
            event.accept()
            return
        card = index.data(CARD_ROLE)
        if isinstance(card, Card) and event.button() == Qt.MouseButton.LeftButton:
            self.sig_open.emit(card.id)
            event.accept()
            return
        super().mouseDoubleClickEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        index, on_advance = self._hit(event.position().toPoint())
        hovered = (QPersistentModelIndex(index), on_advance) if index.isValid() else None
        if hovered != self._delegate.hovered:
            self._delegate.hovered = hovered
            self.viewport().update()
        if self._pressed is not None:
            event.accept()  # a press on the arrow never starts a drag
            return
        super().mouseMoveEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        if self._delegate.hovered is not None:
            self._delegate.hovered = None
            self.viewport().update()
        super().leaveEvent(event)

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            index, on_advance = self._hit(event.pos())
            card = index.data(CARD_ROLE)
            if on_advance and isinstance(card, Card):
                target = _next_status(card.status) or ""
                QToolTip.showText(event.globalPos(), f"Advance to {_title(target)} (Ctrl+→)",
                                  self.viewport())
                return True
        return super().viewportEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        card = self._current_card()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and card is not None:
            self.sig_open.emit(card.id)
            return
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            direction = -1 if key == Qt.Key.Key_Left else 1
            if ctrl and card is not None:
                step = BUILD_STATUSES.index(card.status) + direction
                if 0 <= step < len(BUILD_STATUSES):
                    self.sig_set_status.emit(card.id, BUILD_STATUSES[step])
                return
            if not ctrl:
                self.sig_neighbour.emit(direction, max(self.currentIndex().row(), 0))
                return
        super().keyPressEvent(event)

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        if not self.currentIndex().isValid() and self.column_model().rowCount():
            self.setCurrentIndex(self.column_model().index(0))

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        index = self.indexAt(event.pos())
        card = index.data(CARD_ROLE)
        if not isinstance(card, Card):
            return
        self.setCurrentIndex(index)
        menu = QMenu(self)
        menu.setAccessibleName(f"{card.title} actions")
        menu.addAction("Open", lambda: self.sig_open.emit(card.id))
        target = _next_status(card.status)
        if target is not None:
            menu.addAction(f"Advance to {_title(target)}", lambda: self.sig_advance.emit(card.id))
        move = menu.addMenu("Set status")
        move.setAccessibleName("Set status")
        for status in BUILD_STATUSES:
            action = move.addAction(_title(status),
                                    partial(self.sig_set_status.emit, card.id, status))
            action.setCheckable(True)
            action.setChecked(status == card.status)
        menu.exec(event.globalPos())

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if self.column_model().rowCount():
            return
        painter = QPainter(self.viewport())
        painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        area = self.viewport().rect().adjusted(12, 16, -12, -12)
        painter.drawText(area, Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
                         | Qt.TextFlag.TextWordWrap, "No workspaces here")


class _Lane(QWidget):
    """A column's quiet background: a rounded panel a shade off the window."""

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self.palette().color(QPalette.ColorRole.AlternateBase))
        painter.drawRoundedRect(QRectF(self.rect()), 10, 10)


# ================================================================= the board


class Board(QWidget):
    """The status board; the window opens it and listens to :attr:`sig_workspace_opened`."""

    sig_workspace_opened = Signal(str)  # a workspace id: open (select) it

    def __init__(self, registry: Registry, bridge: EventBridge, ops: Operations,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._registry = registry
        self._ops = ops
        self._tasks = TaskRunner(self._say, owner=self,
                                 failure="The status could not be changed ({kind}).")
        self.setWindowTitle("Status board")
        self.setAccessibleName("Status board")
        self.resize(1080, 640)

        self._refresh_soon = QTimer(self)  # a burst of events makes one refresh
        self._refresh_soon.setSingleShot(True)
        self._refresh_soon.setInterval(0)
        self._refresh_soon.timeout.connect(self.refresh)

        heading = Label("Status board")
        heading.setAccessibleName("Status board")
        font = QFont(heading.font())
        font.setPointSizeF(font.pointSizeF() * 1.45)
        font.setWeight(QFont.Weight.DemiBold)
        heading.setFont(font)
        hint = Label("Click a card's arrow or drag it to another column to change its status; "
                      "double-click or press Enter to open it.")
        hint.setWordWrap(True)
        hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self._message = Label()
        self._message.setAccessibleName("Board message")
        self._message.setWordWrap(True)
        self._message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._message.hide()

        self._delegate = CardDelegate(self)
        self._views: dict[str, ColumnView] = {}
        self._counts: dict[str, QLabel] = {}
        columns = QHBoxLayout()
        columns.setSpacing(14)
        for status in BUILD_STATUSES:
            columns.addWidget(self._column(status), 1)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 20, 24, 24)
        layout.setSpacing(8)
        layout.addWidget(heading)
        layout.addWidget(hint)
        layout.addWidget(self._message)
        layout.addSpacing(8)
        layout.addLayout(columns, 1)
        for before, after in zip(BUILD_STATUSES, BUILD_STATUSES[1:]):
            QWidget.setTabOrder(self._views[before], self._views[after])

        for signal in (bridge.sig_workspace_added, bridge.sig_workspace_removed,
                       bridge.sig_workspace_changed, bridge.sig_workspace_moved,
                       bridge.sig_reset):
            signal.connect(self._refresh_soon.start)
        self.refresh()

    # ----------------------------------------------------------------- public

    def refresh(self) -> None:
        """Bring every column up to the registry's memory (no storage read)."""
        tree = self._registry.tree()
        parent_of = {child.id: parent for parent, kids in tree.items() for child in kids}
        titles = {child.id: child.title for kids in tree.values() for child in kids}
        columns: dict[str, list[Card]] = {status: [] for status in BUILD_STATUSES}
        for ws in _in_tree_order(tree):
            chain: list[str] = []
            parent = parent_of.get(ws.id)
            while parent is not None and len(chain) < 64:
                chain.append(titles.get(parent, ""))
                parent = parent_of.get(parent)
            status = ws.build_status if ws.build_status in columns else BUILD_STATUSES[0]
            columns[status].append(Card(id=ws.id, title=ws.title, parents=tuple(reversed(chain)),
                                        status=status, missing=ws.status == MISSING_DIR,
                                        path=ws.path))
        for status, cards in columns.items():
            self._views[status].column_model().update(cards)
            # Projects, not every folder (issue 36): "3", or "3 + 2 folders".
            projects = sum(1 for card in cards if not card.parents)
            folders = len(cards) - projects
            self._counts[status].setText(
                f"{projects} + {folders} folder{'s' if folders != 1 else ''}" if folders
                else str(projects))

    def workspace_ids(self, status: str) -> list[str]:
        """The workspaces shown in *status*'s column, top to bottom."""
        return [card.id for card in self._views[status].column_model().cards()]

    def column(self, status: str) -> ColumnView:
        return self._views[status]

    def select(self, ws_id: str) -> bool:
        """Focus *ws_id*'s card; False when the board shows no such workspace."""
        for view in self._views.values():
            row = view.column_model().row_of(ws_id)
            if row is not None:
                view.setCurrentIndex(view.column_model().index(row))
                view.scrollTo(view.currentIndex())
                view.setFocus(Qt.FocusReason.OtherFocusReason)
                return True
        return False

    def advance(self, ws_id: str) -> None:
        """One step on (idea → planning → building → shipped), through Operations."""
        self._start(self._ops.advance_workspace(ws_id), ws_id)

    def set_status(self, ws_id: str, status: str) -> None:
        """Any status directly, through Operations; the same status again changes nothing."""
        current = self._registry.workspace(ws_id)
        if current is not None and current.build_status == status:
            return
        self._start(self._ops.update_workspace(ws_id, build_status=status), ws_id)

    # ----------------------------------------------------------------- private

    def _column(self, status: str) -> QWidget:
        lane = _Lane()
        lane.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        name = Label(_title(status).upper())
        small = QFont(name.font())
        small.setPointSizeF(small.pointSizeF() * 0.85)
        small.setWeight(QFont.Weight.DemiBold)
        small.setLetterSpacing(QFont.SpacingType.PercentageSpacing, 108)
        name.setFont(small)
        name.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        count = Label("0")
        count.setFont(small)
        count.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        count.setAccessibleName(f"{_title(status)} count")
        header = QHBoxLayout()
        header.setContentsMargins(12, 0, 12, 0)
        header.addWidget(name)
        header.addStretch(1)
        header.addWidget(count)

        model = ColumnModel(status, self.set_status, self)
        view = ColumnView(model, self._delegate, lane)
        view.setMinimumWidth(200)
        view.sig_advance.connect(self.advance)
        view.sig_set_status.connect(self.set_status)
        view.sig_open.connect(self.sig_workspace_opened)
        view.sig_neighbour.connect(lambda direction, row, s=status: self._go(s, direction, row))
        self._views[status] = view
        self._counts[status] = count

        layout = QVBoxLayout(lane)
        layout.setContentsMargins(6, 12, 6, 6)
        layout.setSpacing(6)
        layout.addLayout(header)
        layout.addWidget(view, 1)
        return lane

    def _go(self, status: str, direction: int, row: int) -> None:
        """Left and Right: to the nearest card of the next column that has any."""
        step = BUILD_STATUSES.index(status) + direction
        while 0 <= step < len(BUILD_STATUSES):
            view = self._views[BUILD_STATUSES[step]]
            count = view.column_model().rowCount()
            if count:
                view.setCurrentIndex(view.column_model().index(min(row, count - 1)))
                view.setFocus(Qt.FocusReason.TabFocusReason)
                return
            step += direction

    def _start(self, work: Coroutine[Any, Any, Any], ws_id: str) -> None:
        self._tasks.run(work, lambda _done: self._changed(ws_id))

    def _changed(self, ws_id: str) -> None:
        self._say("")
        self.refresh()  # the bridge's event will come too; this just avoids waiting for it
        self.select(ws_id)

    def _say(self, text: str) -> None:
        from ui.text import sentence  # as the window says it: a capital, no backticks

        self._message.setText(sentence(text))
        self._message.setVisible(bool(text))

    # ----------------------------------------------------------------- Qt overrides

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.refresh()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and self.isWindow():
            self.close()
            return
        super().keyPressEvent(event)


__all__ = ["Board", "Card", "CardDelegate", "ColumnModel", "ColumnView", "MIME_TYPE"]


def _in_tree_order(tree: dict[str | None, list[Workspace]]) -> Iterator[Workspace]:
    """Each workspace, then its folders, as the sidebar shows them (the display order alone
    can put a folder above the project that holds it)."""
    stack = list(reversed(tree.get(None, [])))
    while stack:
        ws = stack.pop()
        yield ws
        stack.extend(reversed(tree.get(ws.id, [])))
