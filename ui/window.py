"""The main window: toolbar, the sidebar, the chat area and the side panel.

It paints first and fills in: the window shows at once with a quiet skeleton, and
:meth:`MainWindow.attach` puts the sidebar and the rest in once the core has opened on a
worker thread.  Everything the person does goes through :class:`app.ops.Operations`, awaited
on the qasync loop, so no click waits on the disk or the network.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QByteArray, QEvent, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QIcon,
    QKeySequence,
    QPaintEvent,
)
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.widgets import ElidedLabel, Notice

if TYPE_CHECKING:
    import asyncio

    from app.cairn import Cairn
    from app.ops import Operations
    from ui.bridge import EventBridge
    from ui.chat.panel import ChatPanel
    from ui.sharing import SharingFlows
    from ui.sidebar import Sidebar

log = logging.getLogger(__name__)

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
STATE_FILE = "window.ini"


def icon(name: str, colour: str | None = None) -> QIcon:
    """An icon of the one SVG set, tinted in *colour* (the set draws in ``currentColor``)."""
    if colour is None:
        path = ICONS / f"{name}.svg"
        return QIcon(str(path)) if path.exists() else QIcon()
    from ui.icons import tinted

    return tinted(name, colour, 18, 2.0)


class MainWindow(QMainWindow):
    """Cairn's one window per data folder."""

    sig_first_paint = Signal()  # the window has painted, skeleton or not
    sig_ready = Signal()  # the core is attached and the filled window has painted
    sig_board_requested = Signal()
    sig_settings_requested = Signal()

    def __init__(self, data_folder: Path) -> None:
        super().__init__()
        self.data_folder = data_folder
        self.cairn: Cairn | None = None
        self.ops: Operations | None = None
        self.bridge: EventBridge | None = None
        self.sidebar: Sidebar | None = None
        self._painted = False
        self._ready_pending = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._chat_id: str | None = None
        self._workspace_id: str | None = None
        self.setWindowTitle("Cairn")
        self.setWindowIcon(icon("cairn"))
        self.setAcceptDrops(True)  # a folder dropped anywhere on the window is added
        self.resize(1180, 760)
        self._build_toolbar()
        self._build_menu()
        self._build_body()
        self._build_shortcuts()
        self._restore_geometry()

    @property
    def painted(self) -> bool:
        """The window has painted at least once."""
        return self._painted

    # ----------------------------------------------------------------- building

    def _build_toolbar(self) -> None:
        bar = QToolBar("Main")
        bar.setObjectName("main-toolbar")
        bar.setMovable(False)
        bar.setFloatable(False)
        bar.setIconSize(QSize(18, 18))
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.addToolBar(bar)

        def action(name: str, text: str, tip: str, slot: Callable[[], object],
                   icon_name: str) -> QAction:
            act = QAction(text, self)
            act.setData(icon_name)
            act.setToolTip(tip)
            act.triggered.connect(slot)
            bar.addAction(act)
            button = bar.widgetForAction(act)
            button.setAccessibleName(name)
            button.setObjectName(name)
            return act

        self.add_action = action("Add workspace", "Add workspace", "Add a folder as a workspace "
                                 "(Ctrl+Shift+N)", self.choose_folder, "add")
        self.new_chat_action = action("New chat", "New chat", "A new chat in the selected "
                                      "workspace (Ctrl+N)", self.new_chat, "chat")
        self.board_action = action("Board", "Board", "The status board: workspaces by build "
                                   "status", self.sig_board_requested.emit, "board")
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        self.settings_action = action("Settings", "Settings", "API key, models, memory "
                                      "(Ctrl+,)", self.sig_settings_requested.emit, "settings")
        for act in (self.add_action, self.new_chat_action, self.board_action,
                    self.settings_action):
            act.setEnabled(False)  # until the core is attached
        # Tinted after the first paint: drawing the SVG set loads QtSvg, which the first
        # paint need not wait for (the buttons read the same with their text alone).
        QTimer.singleShot(0, self._tint_icons)

    def _build_menu(self) -> None:
        """File: adding, importing, restoring and quitting (the toolbar has the daily ones)."""
        menu = self.menuBar().addMenu("&File")
        menu.addAction(self.add_action)
        self.import_action = menu.addAction("Import workspace…")
        self.import_action.triggered.connect(lambda: self.sharing and self.sharing.choose_bundle())
        self.removed_action = menu.addAction("Recently removed…")
        self.removed_action.triggered.connect(lambda: self.sharing and self.sharing.show_removed())
        from ui.about import show_about  # version and licences; macOS puts it in the app menu
        about = menu.addAction("About Cairn", lambda: show_about(self))
        about.setMenuRole(QAction.MenuRole.AboutRole)
        menu.addSeparator()
        quit_action = menu.addAction("Quit")
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.setShortcut(QKeySequence("Ctrl+Q"))  # Cmd+Q on macOS
        quit_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        quit_action.triggered.connect(self.close)
        for act in (self.import_action, self.removed_action):
            act.setEnabled(False)  # until the core is attached

    def _tint_icons(self) -> None:
        """Toolbar icons in the text colour of the current palette (light or dark)."""
        colour = self.palette().color(self.foregroundRole()).name()
        for act in (self.add_action, self.new_chat_action, self.board_action,
                    self.settings_action):
            act.setIcon(icon(str(act.data()), colour))

    def _build_body(self) -> None:
        self.split = QSplitter()
        self.split.setObjectName("main-split")
        self.split.setChildrenCollapsible(False)
        self.sidebar_slot = QStackedWidget()
        self.sidebar_slot.setMinimumWidth(220)
        loading = QLabel("Opening your workspaces…")
        loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        loading.setStyleSheet("color: palette(placeholder-text);")
        self.sidebar_slot.addWidget(loading)

        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(24, 16, 24, 16)
        self.notice = Notice()
        center_layout.addWidget(self.notice)
        self.header = ElidedLabel()
        self.header.setObjectName("chat-header")
        self.header.setAccessibleName("Chat title")
        self.header.setStyleSheet("#chat-header { font-size: 15px; font-weight: 600; }")
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        overview = QWidget()
        overview_layout = QVBoxLayout(overview)
        overview_layout.setContentsMargins(0, 0, 0, 0)
        overview_layout.addWidget(self.header)
        self.center_text = QLabel("")
        self.center_text.setObjectName("center-text")
        self.center_text.setAccessibleName("Conversation")
        self.center_text.setWordWrap(True)
        self.center_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.center_text.setStyleSheet("#center-text { color: palette(placeholder-text); }")
        overview_layout.addWidget(self.center_text, 1)
        self.center_stack = QStackedWidget()
        self.center_stack.addWidget(overview)
        self.overview = overview
        center_layout.addWidget(self.center_stack, 1)
        self.chat_panel: ChatPanel | None = None
        self.sharing: SharingFlows | None = None

        self.panel = QLabel("")
        self.panel.setObjectName("side-panel")
        self.panel.setAccessibleName("Workspace details")
        self.panel.setWordWrap(True)
        self.panel.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.panel.setMinimumWidth(220)
        self.panel.setContentsMargins(16, 16, 16, 16)
        self.panel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.split.addWidget(self.sidebar_slot)
        self.split.addWidget(center)
        self.split.addWidget(self.panel)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 1)
        self.split.setStretchFactor(2, 0)
        self.split.setSizes([290, 620, 270])
        self.setCentralWidget(self.split)
        self._show_welcome()

    def _build_shortcuts(self) -> None:
        def shortcut(keys: QKeySequence | str, slot: Callable[[], object]) -> None:
            act = QAction(self)
            act.setShortcut(QKeySequence(keys))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)

        # "Ctrl" is Cmd on macOS: Qt maps it.  One action per key, or Qt calls it ambiguous.
        self.add_action.setShortcut(QKeySequence("Ctrl+Shift+N"))
        self.new_chat_action.setShortcut(QKeySequence("Ctrl+N"))
        self.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        shortcut("Ctrl+F", self.focus_filter)

    # ----------------------------------------------------------------- the core

    def attach(self, cairn: Cairn, ops: Operations, bridge: EventBridge) -> None:
        """Fill the window in once the core has opened."""
        from ui.chat.panel import ChatPanel
        from ui.sharing import SharingFlows
        from ui.sidebar import Sidebar

        self.cairn, self.ops, self.bridge = cairn, ops, bridge
        self.sharing = SharingFlows(self, ops, cairn.registry)
        self.sidebar = Sidebar(cairn.registry, bridge, ops)
        self.sidebar.sig_chat_selected.connect(self._chat_selected)
        self.sidebar.sig_workspace_selected.connect(self._workspace_selected)
        self.sidebar.sig_error.connect(self.notice.say)
        self.sidebar.sig_export.connect(self.sharing.export)
        self.chat_panel = ChatPanel(cairn, ops, bridge, self.run_task)
        self.chat_panel.sig_error.connect(self.notice.say)
        self.chat_panel.sig_folders.connect(
            lambda folders: [self.run_task(self.open_folder(f)) for f in folders])
        self.center_stack.addWidget(self.chat_panel)
        self.sidebar_slot.addWidget(self.sidebar)
        self.sidebar_slot.setCurrentWidget(self.sidebar)
        for act in (self.add_action, self.new_chat_action, self.board_action,
                    self.settings_action, self.import_action, self.removed_action):
            act.setEnabled(True)
        bridge.sig_event.connect(self._core_changed)
        state = self._state()
        expanded = state.value("expanded", [])
        if isinstance(expanded, str):
            expanded = [expanded]
        self.sidebar.set_expanded_ids([str(i) for i in expanded or []])
        chat = state.value("chat")
        workspace = state.value("workspace")
        if chat and cairn.registry.chat(str(chat)) is not None:
            self.select_chat(str(chat))
        elif workspace and cairn.registry.workspace(str(workspace)) is not None:
            self.select_workspace(str(workspace))
        self._show_welcome()
        self.sidebar.tree.setFocus()  # keyboard first: arrows move in the tree at once
        self._ready_pending = True
        self.update()

    def run_task(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Start work on the loop, keep it referenced, and say its refusal as a notice."""
        import asyncio  # (not at the top: the window paints before asyncio is loaded)

        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if isinstance(error, CairnError):
            self.notice.say(str(error))
        elif error is not None:
            log.error("a window task failed", exc_info=error)
            self.notice.say(f"Something went wrong ({type(error).__name__}); nothing was "
                            "changed. The log folder has the details.")

    # ----------------------------------------------------------------- actions

    async def open_folder(self, path: str) -> str | None:
        """Add *path* (or find its workspace) and select it; the refusal sentence, or None."""
        if self.ops is None or self.sidebar is None:
            return "Cairn is still opening; try again in a moment."
        try:
            (ws, _), _ = await self.ops.add_workspace(path)
        except CairnError as error:
            self.notice.say(str(error))
            return str(error)
        self.select_workspace(ws.id)
        self.notice.hide()
        return None

    def choose_folder(self) -> None:
        folder = self.ask_folder()
        if folder:
            self.run_task(self.open_folder(folder))

    def ask_folder(self) -> str:
        """The folder dialog (a hook: tests replace it)."""
        return QFileDialog.getExistingDirectory(self, "Add a folder as a workspace")

    def new_chat(self) -> None:
        if self.ops is None or self.cairn is None:
            return
        folder: str | None = None
        ws_id = self._workspace_id
        if ws_id is None and self._chat_id is not None:
            chat = self.cairn.registry.chat(self._chat_id)
            ws_id = chat.workspace_id if chat is not None else None
        if ws_id is not None:
            ws = self.cairn.registry.workspace(ws_id)
            folder = ws.path if ws is not None else None
        self.run_task(self._new_chat(folder))

    async def _new_chat(self, folder: str | None) -> None:
        assert self.ops is not None and self.sidebar is not None
        chat, _ = await self.ops.new_chat(folder=folder)
        self.select_chat(chat.id)
        if self.chat_panel is not None:  # a new chat is for writing in
            self.chat_panel.composer.edit.setFocus()

    def focus_filter(self) -> None:
        if self.sidebar is not None:
            self.sidebar.focus_filter()

    def select_workspace(self, ws_id: str) -> None:
        """Select and show a workspace (the sidebar's own selection emits nothing)."""
        if self.sidebar is not None:
            self.sidebar.select_workspace(ws_id)
        self._workspace_selected(ws_id)

    def select_chat(self, chat_id: str) -> None:
        if self.sidebar is not None:
            self.sidebar.select_chat(chat_id)
        self._chat_selected(chat_id)

    def bring_forward(self) -> None:
        """A later start asked for this window: show it in front."""
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    # ----------------------------------------------------------------- what is shown

    def _chat_selected(self, chat_id: str) -> None:
        self._chat_id, self._workspace_id = chat_id, None
        self._show_selection()

    def _workspace_selected(self, ws_id: str) -> None:
        self._workspace_id, self._chat_id = ws_id, None
        self._show_selection()

    def _core_changed(self, _event: object) -> None:
        self._show_selection()

    def _show_welcome(self) -> None:
        if self.cairn is None:
            self.header.setText("")
            self.center_text.setText("")
            self.panel.setText("")
            return
        self._show_selection()

    def _show_selection(self) -> None:
        if self.cairn is None:
            return
        registry = self.cairn.registry
        chat = registry.chat(self._chat_id) if self._chat_id else None
        ws_id = chat.workspace_id if chat is not None else self._workspace_id
        ws = registry.workspace(ws_id) if ws_id else None
        if chat is None and ws is None:
            self._leave_chat()
            self.header.setText("")
            self.center_text.setText(
                "Pick a chat on the left, or start one with New chat (Ctrl+N).\n\n"
                "Add a folder with Add workspace (Ctrl+Shift+N), by dropping it here, or from "
                "a terminal with: cairn PATH")
            self.panel.setText("")
            return
        trail = []
        if ws is not None:
            chain = []
            node: str | None = ws.id
            while node is not None:
                found = registry.workspace(node)
                if found is None:
                    break
                chain.append(found.title)
                node = registry.parent_of(node)
            trail = list(reversed(chain))
        if chat is not None:
            trail.append(chat.title)
        self.header.setText(" › ".join(trail))
        self.setWindowTitle(f"{trail[-1]} — Cairn" if trail else "Cairn")
        if chat is not None and self.chat_panel is not None:
            self.center_stack.setCurrentWidget(self.chat_panel)
            self.chat_panel.show_chat(chat.id)
        else:
            self._leave_chat()
            self.center_text.setText("Start a chat in this workspace with New chat (Ctrl+N).")
        if ws is not None:
            status = "⚠ folder missing — use “Move to folder…”" if ws.status != "ok" else ""
            lines = [f"<b>{_escape(ws.title)}</b>", f"<small>{_escape(ws.path)}</small>",
                     f"Build status: {ws.build_status}"]
            if status:
                lines.append(status)
            if ws.description:
                lines.append(_escape(ws.description))
            self.panel.setText("<br>".join(lines))
        else:
            self.panel.setText("Ungrouped chat: no workspace knowledge.")

    def _leave_chat(self) -> None:
        self.center_stack.setCurrentWidget(self.overview)
        if self.chat_panel is not None:
            self.chat_panel.leave()

    async def before_quit(self) -> None:
        """The draft saved and streaming replies stopped and stored, within a bounded wait."""
        if self.chat_panel is not None:
            await self.chat_panel.before_quit()

    # ----------------------------------------------------------------- state

    def _state(self) -> QSettings:
        return QSettings(str(self.data_folder / STATE_FILE), QSettings.Format.IniFormat)

    def _restore_geometry(self) -> None:
        state = self._state()
        geometry = state.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        sizes = state.value("splitter")
        if isinstance(sizes, QByteArray) and not sizes.isEmpty():
            self.split.restoreState(sizes)

    def save_state(self) -> None:
        state = self._state()
        state.setValue("geometry", self.saveGeometry())
        state.setValue("splitter", self.split.saveState())
        if self.sidebar is not None:
            state.setValue("expanded", self.sidebar.expanded_ids())
        state.setValue("chat", self._chat_id or "")
        state.setValue("workspace", self._workspace_id or "")
        state.sync()

    # ----------------------------------------------------------------- Qt overrides

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # the system switched light/dark
            self._tint_icons()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        for path in paths:
            if path.lower().endswith(".cairn") and self.sharing is not None:
                self.sharing.import_bundle(path)  # a shared workspace: offered for import
            else:
                self.run_task(self.open_folder(path))
        event.acceptProposedAction()

    def closeEvent(self, event: QCloseEvent) -> None:
        try:
            self.save_state()
        except Exception:  # the window state is a comfort: never a reason not to quit
            log.warning("the window state could not be saved", exc_info=True)
        if self.bridge is not None:
            self.bridge.detach()
        super().closeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            self.sig_first_paint.emit()
        if self._ready_pending:
            self._ready_pending = False
            # The filled window has been laid out and painted: say so after this paint.
            QTimer.singleShot(0, self.sig_ready.emit)


def _escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


__all__ = ["MainWindow", "Notice", "icon"]
