"""The main window (for now): the sidebar with Pinned, the workspace tree and Ungrouped."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QPaintEvent
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
)

from app.records import Chat, Workspace
from app.registry import Registry
from ui.bridge import EventBridge

ID_ROLE = Qt.ItemDataRole.UserRole


class MainWindow(QMainWindow):
    sig_first_paint = Signal()

    def __init__(self, registry: Registry) -> None:
        super().__init__()
        self._registry = registry
        self._painted = False
        self.setWindowTitle("Cairn")
        self.resize(1100, 720)

        self.sidebar = QTreeWidget()
        self.sidebar.setHeaderHidden(True)
        self.sidebar.setUniformRowHeights(True)  # lays out only what is visible
        self.sidebar.setIndentation(14)
        self.sidebar.setStyleSheet("QTreeWidget { border: none; } QTreeWidget::item { padding: 3px 2px; }")
        self.placeholder = QLabel(
            "The chat view comes in the next version of Cairn.\n"
            'Until then, chat from a terminal: cairn ask --folder PATH "your message"')
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.placeholder.setStyleSheet("color: palette(placeholder-text);")
        split = QSplitter()
        split.addWidget(self.sidebar)
        split.addWidget(self.placeholder)
        split.setSizes([300, 800])
        self.setCentralWidget(split)

        # Many changes in a row (a drag, another process catching up) repaint once.
        self._refresh_soon = QTimer(self, singleShot=True, interval=0)
        self._refresh_soon.timeout.connect(self.refresh)
        self._bridge = EventBridge(registry, self)
        self._bridge.sig_event.connect(self._refresh_soon.start)  # the placeholder re-reads all
        self.refresh()

    # ----------------------------------------------------------------- public

    def refresh(self) -> None:
        current = self.sidebar.currentItem()
        selected = current.data(0, ID_ROLE) if current is not None else None
        listing = self._registry.chat_listing()
        chats_by_ws = {ws.id: chats for ws, chats in listing.workspaces}
        inside = self._registry.tree()
        self.sidebar.clear()

        def section(title: str) -> QTreeWidgetItem:
            item = QTreeWidgetItem([title])
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = item.font(0)
            font.setBold(True)
            font.setPointSizeF(font.pointSizeF() * 0.85)
            item.setFont(0, font)
            item.setForeground(0, self.palette().placeholderText())
            self.sidebar.addTopLevelItem(item)
            item.setExpanded(True)
            return item

        def add_chats(parent: QTreeWidgetItem, chats: list[Chat]) -> None:
            for chat in chats:
                child = QTreeWidgetItem(parent, [chat.title])
                child.setData(0, ID_ROLE, chat.id)

        def add_workspace(parent: QTreeWidgetItem, ws: Workspace) -> None:
            label = ws.title if ws.status == "ok" else f"{ws.title}  ⚠ missing"
            item = QTreeWidgetItem(parent, [label])
            item.setData(0, ID_ROLE, ws.id)
            item.setToolTip(0, ws.path)
            for child in inside.get(ws.id, []):
                add_workspace(item, child)
            add_chats(item, chats_by_ws.get(ws.id, []))
            item.setExpanded(True)

        if listing.pinned:
            pinned = section("PINNED")
            for chat in listing.pinned:
                item = QTreeWidgetItem(pinned, [f"★ {chat.title}"])
                item.setData(0, ID_ROLE, chat.id)
        spaces = section("WORKSPACES")
        for ws in inside.get(None, []):
            add_workspace(spaces, ws)
        if spaces.childCount() == 0:
            hint = QTreeWidgetItem(spaces, ["No workspaces yet"])
            hint.setToolTip(0, "Add a folder with: cairn PATH")
            hint.setFlags(Qt.ItemFlag.NoItemFlags)
        if listing.ungrouped:
            add_chats(section("UNGROUPED"), listing.ungrouped)
        if selected is not None:
            self.select_workspace(selected)  # a refresh keeps what the person selected
        else:
            self.sidebar.setCurrentIndex(QModelIndex())

    def select_workspace(self, item_id: str) -> None:
        """Select the row of a workspace (or chat) by id."""
        for item in self._iter_items():
            if item.data(0, ID_ROLE) == item_id:
                self.sidebar.setCurrentItem(item)
                return

    # ----------------------------------------------------------------- private

    def _iter_items(self) -> list[QTreeWidgetItem]:
        items: list[QTreeWidgetItem] = []
        stack = [self.sidebar.topLevelItem(i) for i in range(self.sidebar.topLevelItemCount())]
        while stack:
            item = stack.pop()
            items.append(item)
            stack.extend(item.child(i) for i in range(item.childCount()))
        return items

    # ----------------------------------------------------------------- Qt overrides

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            # Back from elsewhere: a folder may have gone, the command line may have written.
            self._registry.sync()
            self._registry.refresh_status()

    def closeEvent(self, event: QCloseEvent) -> None:
        self._bridge.detach()
        super().closeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            self.sig_first_paint.emit()
