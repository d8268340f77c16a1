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

# Not ``Qt`` itself at the top: importing that name makes PySide6 set up the whole namespace
# (about 30 ms), which the first paint does not wait for; the methods that run after it
# import it where they need it.
from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QSize, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QIcon,
    QKeyEvent,
    QKeySequence,
    QPaintEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QFileDialog,
    QLabel,
    QMainWindow,
    QSizePolicy,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.columns import Columns
from ui.tasks import TaskRunner
from ui.text import Label
from ui.widgets import ElidedLabel, Notice

if TYPE_CHECKING:
    import asyncio

    from app.cairn import Cairn
    from app.events import ChatChanged, ChatRemoved, ChatsRegrouped
    from app.ops import Operations
    from app.store.registry.state import FirstPaint
    from ui.bridge import EventBridge
    from ui.chat.panel import ChatPanel
    from ui.history import HistoryImport, LearnImported
    from ui.knowledge import KnowledgePanel
    from ui.search.box import Target
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
    sig_panels = Signal()  # the chat and knowledge panels are built (after sig_ready)
    sig_typing = Signal()  # the person started writing a message (the chat panel's, once)
    # Issue 40: File → Import from Claude.ai or ChatGPT…, and a workspace's learning.
    history_dialog: HistoryImport | None
    learning: LearnImported | None
    sig_board_requested = Signal()
    sig_closing = Signal()  # the main window closes: Cairn quits, its other windows with it
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
        # Not cancelled at close: quitting still awaits what runs (a draft being saved).
        self._tasks = TaskRunner(self._say)
        self._chat_id: str | None = None
        self._workspace_id: str | None = None
        self.knowledge: KnowledgePanel | None = None
        self._may_close = False  # the knowledge panel's unsaved changes were dealt with
        self.setWindowTitle("Cairn")
        self.setWindowIcon(QIcon(str(ICONS / "cairn.png")))  # (PNG: no SVG plugin yet)
        self.setAcceptDrops(True)  # a folder dropped anywhere on the window is added
        self.resize(1180, 760)
        self._polished = False
        self._build_toolbar()
        self._build_menu()
        self._build_body()
        self._restore_geometry()
        # The rest once the window has painted (see _polish).

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
        self.addToolBar(bar)
        self._bar = bar

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
        # Tinted after the first paint (see paintEvent): drawing the SVG set loads QtSvg,
        # which the first paint need not wait for (the buttons read the same with their text).

    def _build_menu(self) -> None:
        """File: adding, importing, restoring and quitting (the toolbar has the daily ones)."""
        menu = self.menuBar().addMenu("&File")
        menu.addAction(self.add_action)
        self.export_action = menu.addAction("Export workspace…")
        self.export_action.triggered.connect(self.export_selected)
        self.import_action = menu.addAction("Import workspace…")
        self.import_action.triggered.connect(self._choose_bundle)
        self.history_action = menu.addAction("Import from Claude.ai or ChatGPT…")
        self.history_action.triggered.connect(self.import_history)
        self.removed_action = menu.addAction("Recently removed…")
        self.removed_action.triggered.connect(self._show_removed)
        menu.addSeparator()
        quit_action = menu.addAction("Quit")
        quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        quit_action.triggered.connect(self.close)  # Ctrl+Q / Cmd+Q: set in _polish
        self._quit_action = quit_action
        for act in (self.export_action, self.import_action, self.history_action,
                    self.removed_action):
            act.setEnabled(False)  # until the core is attached
        # Where a newcomer finds what exists and its keys: the same actions as the
        # toolbar's, and the shortcuts list.  On macOS this is the system's menu bar.
        chats = self.menuBar().addMenu("&Chat")
        chats.addAction(self.new_chat_action)
        self.find_action = chats.addAction("Find in chat")
        self.find_action.triggered.connect(self.find_in_chat)
        self.search_action = chats.addAction("Search…")
        self.search_action.triggered.connect(self.open_search)
        chats.addSeparator()
        self.delete_chat_action = chats.addAction("Delete chat…")
        self.delete_chat_action.triggered.connect(self.delete_open_chat)
        self.delete_chat_action.setEnabled(False)  # until the core is attached
        self.view_menu = self.menuBar().addMenu("&View")  # the knowledge panel's toggle joins
        self.view_menu.addAction(self.board_action)
        self.view_menu.addAction(self.settings_action)
        help_menu = self.menuBar().addMenu("&Help")
        self.shortcuts_action = help_menu.addAction("Keyboard shortcuts")
        self.shortcuts_action.triggered.connect(self.show_shortcuts)
        about = help_menu.addAction("About Cairn")  # version and licences (macOS: app menu)
        # (addAction(text) and a connect, not addAction(text, slot): resolving that overload
        # sets up PySide6's Qt namespace, which the first paint does not wait for.)
        about.triggered.connect(self._about)
        about.setMenuRole(QAction.MenuRole.AboutRole)

    def import_history(self) -> None:
        """File → Import from Claude.ai or ChatGPT…: the import's dialog (one at a time)."""
        if self.ops is None:
            return
        from ui.history import HistoryImport

        dialog = self.history_dialog
        if dialog is None or not dialog.isVisible():
            dialog = HistoryImport(self.ops, self.run_task, self)
            self.history_dialog = dialog
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()

    def learn_imported(self, ws_id: str) -> None:
        """A workspace's "Learn from imported chats…" (the estimate, then the background run)."""
        if self.ops is None:
            return
        learning = self.learning
        if learning is None:
            from ui.history import LearnImported

            learning = LearnImported(self, self.ops)
            self.learning = learning
        learning.start(ws_id)

    def _choose_bundle(self) -> None:
        if self.sharing is not None:
            self.sharing.choose_bundle()

    def _show_removed(self) -> None:
        if self.sharing is not None:
            self.sharing.show_removed()

    def _export(self, ws_id: str) -> None:
        if self.sharing is not None:
            self.sharing.export(ws_id)

    def show_shortcuts(self) -> None:
        """Help › Keyboard shortcuts (Ctrl+/): the list, beside the window."""
        from PySide6.QtCore import Qt

        from ui.shortcuts import ShortcutsDialog

        dialog = ShortcutsDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.shortcuts_dialog = dialog
        dialog.open()

    def find_in_chat(self) -> None:
        """Chat › Find in chat: the open chat's find bar (no chat open: the sidebar's
        filter, as Ctrl+F)."""
        panel = self.chat_panel
        if panel is not None and panel.isVisible() and panel.chat_id is not None:
            panel.find_bar.open_bar()
        elif self.sidebar is not None:
            self.sidebar.focus_filter()

    def _about(self) -> None:
        from ui.about import show_about

        show_about(self)

    def _tint_icons(self) -> None:
        """Toolbar icons in the text colour of the current palette (light or dark)."""
        colour = self.palette().color(self.foregroundRole()).name()
        for act in (self.add_action, self.new_chat_action, self.board_action,
                    self.settings_action):
            act.setIcon(icon(str(act.data()), colour))

    def _build_body(self) -> None:
        self.split = Columns()
        self.split.setObjectName("main-split")
        self.split.setChildrenCollapsible(False)
        self.sidebar_slot = QStackedWidget()
        self.sidebar_slot.setMinimumWidth(220)
        self._loading = Label("Opening your workspaces…")
        self.sidebar_slot.addWidget(self._loading)

        center = QWidget()
        center_layout = QVBoxLayout(center)
        center_layout.setContentsMargins(24, 16, 24, 16)
        self._center_layout = center_layout
        self.header = ElidedLabel()
        self.header.setObjectName("chat-header")
        self.header.setAccessibleName("Chat title")
        overview = QWidget()
        overview_layout = QVBoxLayout(overview)
        overview_layout.setContentsMargins(0, 0, 0, 0)
        overview_layout.addWidget(self.header)
        self.center_text = Label("")
        self.center_text.setObjectName("center-text")
        self.center_text.setAccessibleName("Welcome")
        self.center_text.setWordWrap(True)
        overview_layout.addWidget(self.center_text, 1)
        self.center_stack = QStackedWidget()
        self.center_stack.addWidget(overview)
        self.overview = overview
        center_layout.addWidget(self.center_stack, 1)
        self.chat_panel: ChatPanel | None = None
        self._sharing: SharingFlows | None = None
        self.history_dialog = None
        self.learning = None

        self.panel = Label("")
        self.panel.setObjectName("side-panel")
        self.panel.setAccessibleName("Workspace details")
        self.panel.setWordWrap(True)
        self.panel.setMinimumWidth(220)
        self.panel.setContentsMargins(16, 16, 16, 16)

        self.split.addWidget(self.sidebar_slot)
        self.split.addWidget(center)
        self.split.addWidget(self.panel)
        self.split.setStretchFactor(0, 0)
        self.split.setStretchFactor(1, 1)
        self.split.setStretchFactor(2, 0)
        self.split.setSizes([290, 620, 270])
        self.setCentralWidget(self.split)

    def _polish(self) -> None:
        """What the first paint did not wait for: alignments, text interaction, shortcuts,
        the banner and the icons.  (Any of these touches PySide6's ``Qt`` namespace, whose
        first use costs about 30 ms of enum set-up; a bare window never pays it.)"""
        if self._polished:
            return
        self._polished = True
        from PySide6.QtCore import Qt

        self._bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        # (A key sequence makes PySide6 set up the key enums: after the first paint too.)
        self._quit_action.setShortcut(QKeySequence("Ctrl+Q"))  # Cmd+Q on macOS
        # From every window of Cairn (the status board too): Quit quits.
        self._quit_action.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        # Style sheets too: the first one sets up Qt's style-sheet style (milliseconds).
        self._loading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._loading.setStyleSheet("color: palette(placeholder-text); padding: 16px;")
        self.header.setStyleSheet("#chat-header { font-size: 15px; font-weight: 600; }")
        self.center_text.setStyleSheet("#center-text { color: palette(placeholder-text); }")
        self.notice = Notice()
        self._center_layout.insertWidget(0, self.notice)
        self.key_notice = Notice()  # no API key yet: said at once, apart from refusals
        self.key_notice.setObjectName("key-notice")
        self.key_notice.setStyleSheet("#key-notice { background: palette(alternate-base);"
                                      " border: 1px solid palette(mid); border-radius: 6px; }")
        self.key_notice.setAccessibleName("API key")
        self._center_layout.insertWidget(0, self.key_notice)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.center_text.setAlignment(Qt.AlignmentFlag.AlignCenter)
        if isinstance(self.panel, QLabel):
            self.panel.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            self.panel.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._build_shortcuts()
        self._tint_icons()
        from ui import focus  # the keyboard's place, plainly visible

        app = QApplication.instance()
        if isinstance(app, QApplication):
            focus.install(app)
        self._show_welcome()

    def _build_shortcuts(self) -> None:
        from PySide6.QtCore import Qt

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
        self.board_action.setShortcut(QKeySequence("Ctrl+Shift+B"))
        self.shortcuts_action.setShortcut(QKeySequence("Ctrl+/"))
        self.delete_chat_action.setShortcut(QKeySequence("Ctrl+Shift+Backspace"))
        shortcut("Ctrl+F", self.focus_filter)
        shortcut("Ctrl+K", self.open_search)  # Cmd+K on macOS: find anything
        # The menus name the keys their window-wide actions answer (shown, not bound again).
        self.find_action.setShortcut(QKeySequence("Ctrl+F"))
        self.find_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.search_action.setShortcut(QKeySequence("Ctrl+K"))
        self.search_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        # A toolbar gives its buttons no keyboard focus: Tab reaches them here.
        # (Its buttons only: the spacer before Settings is no stop for Tab.)
        from PySide6.QtWidgets import QToolButton

        for act in self._bar.actions():
            button = self._bar.widgetForAction(act)
            if isinstance(button, QToolButton):
                button.setFocusPolicy(Qt.FocusPolicy.TabFocus)

    # ----------------------------------------------------------------- the core

    def attach(self, cairn: Cairn, ops: Operations, bridge: EventBridge) -> None:
        """Fill the window in once the core has opened: the sidebar on the data, and the
        header's trail of what was left open.  The chat and knowledge panels and the search
        box come right after this paint (:meth:`attach_panels`): their modules and widgets
        cost ~100 ms at start, and the sidebar does not wait for them."""
        self._polish()  # (the first paint has usually come and gone by now)
        from ui.sidebar import Sidebar

        self.cairn, self.ops, self.bridge = cairn, ops, bridge
        self.sidebar = Sidebar(cairn.registry, bridge, ops)
        self.sidebar.sig_chat_selected.connect(self._chat_selected)
        self.sidebar.sig_chat_chosen.connect(self._chat_chosen)
        self.sidebar.sig_action_done.connect(self.notice.moved_on)
        self.sidebar.sig_told.connect(self.notice.say)
        self.sidebar.sig_undoable.connect(self._say_undoable)
        self.sidebar.sig_workspace_selected.connect(self._workspace_selected)
        self.sidebar.sig_error.connect(self.notice.say)
        self.sidebar.sig_export.connect(self._export)
        self.sidebar.sig_learn.connect(self.learn_imported)
        self.sidebar.sig_import.connect(self._choose_bundle)
        self.sidebar.sig_recently_removed.connect(self._show_removed)
        self.sidebar_slot.addWidget(self.sidebar)
        for act in (self.add_action, self.new_chat_action, self.board_action,
                    self.settings_action, self.export_action, self.import_action,
                    self.history_action, self.removed_action, self.delete_chat_action):
            act.setEnabled(True)
        # What the header, the title and the side panel show: the selected chat, its place,
        # and the titles of the workspaces on its trail (never each streamed message).
        for signal in (bridge.sig_workspace_changed, bridge.sig_workspace_moved,
                       bridge.sig_workspace_removed, bridge.sig_reset):
            signal.connect(lambda _event: self._show_selection())
        bridge.sig_chat_changed.connect(self._chat_changed)
        bridge.sig_chats_regrouped.connect(self._chats_regrouped)
        bridge.sig_chat_removed.connect(self._chat_removed)
        state = self._state()
        expanded = state.value("expanded", [])
        if isinstance(expanded, str):  # (QSettings gives a list of one as its one item)
            expanded = [expanded]
        # Expanded before the sidebar is shown: showing it lays out every row (1,000
        # workspaces), and an expansion after that would lay them all out again.
        self.sidebar.set_expanded_ids([str(i) for i in expanded]
                                      if isinstance(expanded, list) else [], fresh=True)
        self.sidebar_slot.setCurrentWidget(self.sidebar)
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

    @property
    def sharing(self) -> SharingFlows | None:
        """Export…, Import… and Recently removed, made at first use once the core is
        attached (None before)."""
        if self._sharing is None and self.ops is not None and self.cairn is not None:
            from ui.sharing import SharingFlows

            self._sharing = SharingFlows(self, self.ops, self.cairn.registry)
        return self._sharing

    def attach_panels(self) -> None:
        """The chat panel, the knowledge panel and the search box, once the filled window
        has painted (the Starter calls it then); what was left open shows in them at once."""
        if self.chat_panel is not None or self.cairn is None or self.ops is None \
                or self.bridge is None:
            return
        from ui.chat.panel import ChatPanel

        cairn, ops, bridge = self.cairn, self.ops, self.bridge
        self.chat_panel = ChatPanel(ops, bridge, self.run_task, registry=cairn.registry,
                                    settings=cairn.settings, catalog=cairn.catalog)
        self.chat_panel.sig_error.connect(self.notice.say)
        self.chat_panel.sig_folders.connect(
            lambda folders: [self.run_task(self.open_folder(f)) for f in folders])
        self.chat_panel.sig_typing.connect(self.sig_typing)
        self.chat_panel.sig_open_chat.connect(self._open_forked)  # Fork from here (issue 38)
        # A workspace's web search stored: the composer's toggle follows it.
        if self.sidebar is not None:
            self.sidebar.handlers.sig_web_changed.connect(
                lambda _ws: self.chat_panel.refresh_web() if self.chat_panel else None)
        self.center_stack.addWidget(self.chat_panel)
        self._attach_knowledge(cairn, ops, bridge)
        self._attach_search(ops)
        self._show_selection()
        self.sig_panels.emit()

    def _attach_knowledge(self, cairn: Cairn, ops: Operations, bridge: EventBridge) -> None:
        """The knowledge panel takes the side panel's place: collapsible from its header,
        the toolbar (Ctrl+Shift+K) and the splitter; Ctrl+S saves it."""
        from PySide6.QtCore import Qt

        from ui.knowledge import KnowledgePanel

        self.knowledge = KnowledgePanel(cairn.registry, ops, bridge, self.run_task)
        self.knowledge.sig_error.connect(self.notice.say)
        self.knowledge.sig_undoable.connect(self._say_undoable)
        old = self.split.replaceWidget(2, self.knowledge)
        if old is not None:
            old.hide()
            old.deleteLater()
        self.panel = self.knowledge  # type: ignore[assignment]  # the placeholder's place
        self.split.setCollapsible(2, True)
        self.split.splitterMoved.connect(lambda _pos, _index: self._panel_moved())
        toggle = QAction("Knowledge", self)
        toggle.setCheckable(True)
        toggle.setToolTip("Show or hide the knowledge panel (Ctrl+Shift+K)")
        toggle.setShortcut(QKeySequence("Ctrl+Shift+K"))
        toggle.toggled.connect(self.show_knowledge_panel)
        bar = self.findChild(QToolBar, "main-toolbar")
        if bar is not None:
            bar.insertAction(self.settings_action, toggle)
            button = bar.widgetForAction(toggle)
            button.setAccessibleName("Knowledge panel")
            button.setFocusPolicy(Qt.FocusPolicy.TabFocus)  # reached by Tab, as the others
        self.addAction(toggle)
        self.view_menu.insertAction(self.board_action, toggle)
        self.knowledge_action = toggle
        self.knowledge.sig_hide.connect(lambda: self.show_knowledge_panel(False))
        save = QAction(self)
        save.setShortcut(QKeySequence.StandardKey.Save)
        save.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        save.triggered.connect(self.knowledge.save)
        self.addAction(save)
        hidden = self._state().value("knowledge_hidden", "false") in ("true", True)
        self.show_knowledge_panel(not hidden)
        self.split.sig_folded_for_room.connect(self._panel_folded_for_room)
        self.split.foldable = True
        self.split.fit()  # a narrow window: the chat first

    def _attach_search(self, ops: Operations) -> None:
        """The search box (Ctrl+K), and the start-up check of its index said in the banner."""
        from ui.search.box import SearchBox

        self.search_box = SearchBox(ops, self.run_task, self)
        self.search_box.sig_open.connect(self.open_result)
        app = QApplication.instance()
        if app is not None:  # Ctrl+K in a field, Ctrl+Q in a dialog; gone with the window
            self._window_keys: _WindowKeys | None = _WindowKeys(self)
            app.installEventFilter(self._window_keys)
            app.aboutToQuit.connect(self._drop_window_keys)

        async def check() -> None:
            problem = await ops.search_problem()
            if problem is not None:
                self.notice.say(problem, lasting=True)

        self.run_task(check())

    def open_search(self) -> None:
        box = getattr(self, "search_box", None)
        if box is not None:
            box.open_box()

    def open_result(self, target: Target) -> None:
        """Open what the search box's Enter chose (see ``ui.search.box.Target``)."""
        from ui.search import opening

        if target.kind == "workspace" and target.workspace:
            self.select_workspace(target.workspace)
        elif target.kind in ("chat", "message") and target.chat:
            self.select_chat(target.chat)
            if self.chat_panel is not None:
                if target.message is not None:
                    self.chat_panel.reveal(target.chat, target.message, target.words)
                self.chat_panel.view.setFocus()
        elif target.kind == "knowledge" and target.owner:
            if target.owner == "personal":  # personal memory lives in Settings
                self.sig_settings_requested.emit()
                return
            self.select_workspace(target.owner)
            if self.knowledge is None:
                return
            editor = self.knowledge.editor
            self.show_knowledge_panel(True)
            self.knowledge.tabs.setCurrentWidget(editor)
            line, owner = target.line or 0, target.owner
            opening.when_loaded(lambda: editor.owner == owner and editor.opened is not None,
                                editor.sig_loaded, lambda: opening.select_line(editor.edit, line))
        elif target.kind == "file" and target.workspace and target.file:
            panel = self.knowledge
            self.select_workspace(target.workspace)
            if panel is None:
                return
            self.show_knowledge_panel(True)
            panel.tabs.setCurrentWidget(panel.files)
            file_id = target.file
            files = panel.files.list
            opening.when_loaded(lambda: opening.select_file(files, file_id),
                                panel.files.sig_loaded,
                                lambda: None if opening.select_file(files, file_id) else None)

    def show_knowledge_panel(self, shown: bool) -> None:
        if self.knowledge is None:
            return
        self.knowledge.setVisible(shown)
        if shown:  # folded by the splitter, or for room: open it again
            focus = QApplication.focusWidget()
            in_sidebar = focus is not None and self.sidebar_slot.isAncestorOf(focus)
            self.split.open_panel()
            if self.split.sidebar_away and in_sidebar and self.chat_panel is not None \
                    and self.chat_panel.chat_id is not None:
                # The keyboard was in the sidebar that stepped aside: to the message box,
                # not to the next control in the chain (the chat's title, as if to rename).
                self.chat_panel.focus_message()
        else:
            self.split.panel_closed()
        self.split.folded_for_room = False  # the person's choice now
        if self.knowledge_action.isChecked() != shown:
            self.knowledge_action.setChecked(shown)

    def _panel_folded_for_room(self, folded: bool) -> None:
        """The panel folded itself (or came back) with the window's width: the toolbar's
        toggle shows it, and the person's choice (shown) is what the window remembers."""
        self.knowledge_action.blockSignals(True)
        self.knowledge_action.setChecked(not folded)
        self.knowledge_action.blockSignals(False)

    def _panel_moved(self) -> None:
        folded = self.split.sizes()[2] == 0
        if self.knowledge is not None and self.knowledge_action.isChecked() == folded:
            self.knowledge_action.blockSignals(True)
            self.knowledge_action.setChecked(not folded)
            self.knowledge_action.blockSignals(False)

    def run_task(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Start work on the loop, keep it referenced, and say its refusal as a notice."""
        return self._tasks.run(coroutine)

    async def end_tasks(self, timeout: float = 1.0) -> None:
        """At quit, once the core is closed: what the window still had under way (a chat
        opening, a panel's read) is cancelled and unwinds while the loop runs; left for
        later, it would resume after the loop has stopped and fail asking for it."""
        import asyncio

        tasks = self._tasks.tasks()
        self._tasks.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)

    def _say(self, sentence: str) -> None:
        self.notice.say(sentence)

    async def check_key(self) -> None:
        """No key yet (or a keychain that cannot keep one): say so at once, with a way to
        add it, before the first message fails.  The keychain is asked off the GUI thread."""
        if self.ops is None or self.cairn is None:
            return
        from app.store.settings import no_key_sentence

        settings = self.cairn.settings
        key = await self.ops.api_key()
        if key:
            self.key_notice.hide()
            return
        problem = settings.keychain_problem
        owner = settings.key_owner()
        whose = "your Anthropic API key" if owner == "Anthropic" else f"the API key for {owner}"
        self.key_notice.say(no_key_sentence(problem) if problem else (
            f"No API key yet: add {whose} to start chatting (it is kept in your "
            "system keychain), or set ANTHROPIC_API_KEY."))
        self.key_notice.offer("Add your API key…", self.sig_settings_requested.emit)

    # ----------------------------------------------------------------- actions

    async def open_path(self, path: str) -> str | None:
        """A folder opens as a workspace; a ``.cairn`` bundle (dropped, double-clicked in the
        file manager, or ``cairn FILE.cairn``) starts its import; a ``cairn://`` link selects
        its workspace or opens its chat; the refusal, or None."""
        from app.base.cairn_link import is_link
        from app.base.file_types import is_bundle

        if is_link(path):
            return self.open_link(path)
        if is_bundle(path):
            if self.sharing is None:
                return "Cairn is still opening; try again in a moment."
            self.sharing.import_bundle(path)  # checked, then a folder is asked for
            return None
        return await self.open_folder(path)

    def open_link(self, text: str) -> str | None:
        """A ``cairn://`` link (hostile input: checked again here, whoever sent it): select
        its workspace or open its chat; the one-sentence refusal, or None."""
        from app.base.cairn_link import parse

        if self.cairn is None or self.sidebar is None:
            return "Cairn is still opening; try again in a moment."
        try:
            link = parse(text)
        except CairnError as refused:
            self.notice.say(str(refused))
            return str(refused)
        registry = self.cairn.registry
        if link.kind == "workspace":
            if registry.workspace(link.id) is None:
                refusal = f"The link names workspace {link.id}, which is not in this data folder."
                self.notice.say(refusal)
                return refusal
            self.select_workspace(link.id)
        else:
            if registry.chat(link.id) is None:
                refusal = f"The link names chat {link.id}, which is not in this data folder."
                self.notice.say(refusal)
                return refusal
            self.select_chat(link.id)
        self.notice.hide()
        return None

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
        ws_id = self._workspace_id
        if ws_id is None and self._chat_id is not None:
            chat = self.cairn.registry.chat(self._chat_id)
            ws_id = chat.workspace_id if chat is not None else None
        if ws_id is not None and self.cairn.registry.workspace(ws_id) is None:
            ws_id = None
        self.run_task(self._new_chat(ws_id))

    async def _new_chat(self, ws_id: str | None) -> None:
        """A chat in *ws_id* (refused, said in the banner, when its folder is gone), or an
        Ungrouped one."""
        assert self.ops is not None and self.sidebar is not None
        # The list's empty "New chat", when it has one: never one more per press.
        chat, _ = await self.ops.new_chat(workspace_id=ws_id, reuse_untouched=True)
        self.select_chat(chat.id)
        if ws_id is None:  # never silently: where it went, and how to start one elsewhere
            self.notice.say("This chat is in Ungrouped, outside any folder. To start a chat "
                            "in a workspace's folder, select the workspace first.")
        if self.chat_panel is not None:  # a new chat is for writing in
            self.chat_panel.composer.edit.setFocus()

    def selected_workspace_id(self) -> str | None:
        """The selected workspace, or the open chat's (None: neither)."""
        ws_id = self._workspace_id
        if ws_id is None and self._chat_id is not None and self.cairn is not None:
            chat = self.cairn.registry.chat(self._chat_id)
            ws_id = chat.workspace_id if chat is not None else None
        return ws_id

    def export_selected(self) -> None:
        """File › Export workspace…: the selected workspace, or the open chat's."""
        if self.sharing is None or self.cairn is None:
            return
        ws_id = self.selected_workspace_id()
        if ws_id is None:
            self.notice.say("Select a workspace (or one of its chats) to export it.")
            return
        self.sharing.export(ws_id)

    def focus_filter(self) -> None:
        """Ctrl+F: find in the chat when the chat has the focus, else the
        sidebar's filter."""
        focus = QApplication.focusWidget()
        panel = self.chat_panel
        if panel is not None and panel.isVisible() and panel.chat_id is not None and \
                focus is not None and panel.isAncestorOf(focus):
            panel.find_bar.open_bar()
            return
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

    def _open_forked(self, chat_id: str) -> None:
        """A fork just made: opened, ready to write in."""
        self.select_chat(chat_id)
        if self.chat_panel is not None:
            self.chat_panel.focus_message()

    def bring_forward(self) -> None:
        """A later start asked for this window: show it in front."""
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    # ----------------------------------------------------------------- what is shown

    def _chat_selected(self, chat_id: str) -> None:
        chat = self.cairn.registry.chat(chat_id) if self.cairn is not None else None
        self._guarded(chat.workspace_id if chat is not None else None, chat_id, None)

    def _chat_chosen(self, chat_id: str) -> None:
        """A chat opened by a click or Enter: the keyboard goes where the person writes (as
        in Claude Desktop and ChatGPT), so typing no longer jumps between sidebar rows and
        Ctrl+F finds in the chat."""
        if self.chat_panel is not None and self._chat_id == chat_id \
                and self.center_stack.currentWidget() is self.chat_panel:
            self.chat_panel.focus_message()

    def _workspace_selected(self, ws_id: str) -> None:
        self._guarded(ws_id, None, ws_id)

    def _guarded(self, ws_id: str | None, chat_id: str | None, selected_ws: str | None) -> None:
        """Select, after asking about the knowledge panel's unsaved changes when they
        would go; Cancel puts the sidebar's selection back."""

        def select() -> None:
            if (self._chat_id, self._workspace_id) != (chat_id, selected_ws):
                self.notice.moved_on()  # what was said was about what is left
            self._chat_id, self._workspace_id = chat_id, selected_ws
            self._show_selection()

        panel = self.knowledge
        if panel is None or not panel.would_leave(ws_id):
            select()
            return
        before = (self._chat_id, self._workspace_id)

        async def ask() -> None:
            if await panel.may_leave():
                select()
            elif self.sidebar is not None:
                if before[0] is not None:
                    self.sidebar.select_chat(before[0])
                elif before[1] is not None:
                    self.sidebar.select_workspace(before[1])

        self.run_task(ask())

    def _chat_changed(self, event: ChatChanged) -> None:
        if event.id == self._chat_id:
            self._show_selection()

    def _say_undoable(self, text: str, undo: Callable[[], object]) -> None:
        """A sentence with Undo beside it (a dismissed suggestion)."""

        def undone() -> None:
            self.notice.hide()
            undo()

        self.notice.say(text)
        self.notice.offer("Undo", undone)

    def _chat_removed(self, event: ChatRemoved) -> None:
        """The open chat was deleted (here or by another process): its workspace shows."""
        if event.id == self._chat_id:
            self._chat_id = None
            self._workspace_id = event.workspace
            self._show_selection()

    def delete_open_chat(self) -> None:
        """Chat › Delete chat… (Ctrl+Shift+Backspace): the open chat, after asking."""
        if self.sidebar is None:
            return
        if self._chat_id is None or self.cairn is None \
                or self.cairn.registry.chat(self._chat_id) is None:
            self.notice.say("Open a chat first: Delete chat… deletes the chat that is open.")
            return
        self.sidebar.handlers.delete_chat(self._chat_id)

    def _chats_regrouped(self, event: ChatsRegrouped) -> None:
        if self._chat_id in event.ids:
            self._show_selection()

    def _show_welcome(self) -> None:
        if self.cairn is None:
            self.header.setText("")
            self.center_text.setText("")
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
                "a terminal with: cairn\u00a0PATH")  # one piece, never "cairn" then "PATH"
            if self.knowledge is not None:
                self.knowledge.show_workspace(None)
            return
        trail = [w.title for w in registry.lineage(ws.id if ws is not None else None)]
        if chat is not None:
            trail.append(chat.title)
        self.header.setText(" › ".join(trail))
        self.setWindowTitle(f"{trail[-1]} — Cairn" if trail else "Cairn")
        if chat is not None and self.chat_panel is not None:
            from ui.dialogs import workspace_folder  # Attach opens in the chat's folder

            self.chat_panel.composer.start_folder = workspace_folder(
                registry, ws.id if ws is not None else None, chat.folder)
            self.center_stack.setCurrentWidget(self.chat_panel)
            self.chat_panel.show_chat(chat.id)
        elif chat is not None:  # the chat panel comes right after the filled paint
            self.center_text.setText("")
        else:
            self._leave_chat()
            self.center_text.setText("Start a chat in this workspace with New chat (Ctrl+N).")
        if self.knowledge is not None:
            self.knowledge.show_workspace(ws.id if ws is not None else None,
                                          ungrouped=chat is not None and ws is None)

    def _leave_chat(self) -> None:
        self.center_stack.setCurrentWidget(self.overview)
        if self.chat_panel is not None:
            self.chat_panel.leave()

    async def before_quit(self) -> None:
        """The draft saved and streaming replies stopped and stored, within a bounded wait."""
        if self.knowledge is not None:
            self.knowledge.stop()
        if self.chat_panel is not None:
            await self.chat_panel.before_quit()

    # ----------------------------------------------------------------- state

    def first_paint(self) -> FirstPaint:
        """What the window will show filled in, as it was left (the expanded workspaces, the
        open chat): the core reads these first and the other chats after the first paint."""
        from app.store.registry.state import FirstPaint

        state = self._state()
        expanded = state.value("expanded", [])
        if isinstance(expanded, str):  # (QSettings gives a list of one as its one item)
            expanded = [expanded]
        chat = state.value("chat")
        return FirstPaint(expanded=[str(i) for i in expanded] if isinstance(expanded, list)
                          else [], chat=str(chat) if chat else None)

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
        if self.knowledge is not None:
            shown = self.knowledge_action.isChecked() or self.split.folded_for_room
            state.setValue("knowledge_hidden", "false" if shown else "true")
        state.sync()

    # ----------------------------------------------------------------- Qt overrides

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self._polished:  # light/dark switched
            self._tint_icons()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        for path in paths:
            self.run_task(self.open_path(path))
        event.acceptProposedAction()

    def closeEvent(self, event: QCloseEvent) -> None:
        panel = self.knowledge
        if panel is not None and panel.is_dirty() and not self._may_close:
            event.ignore()  # ask first; close again once the changes are saved or may go

            async def ask() -> None:
                if await panel.may_leave():
                    self._may_close = True
                    self.close()

            self.run_task(ask())
            return
        try:
            self.save_state()
        except Exception:  # the window state is a comfort: never a reason not to quit
            log.warning("the window state could not be saved", exc_info=True)
        if self.bridge is not None:
            self.bridge.detach()
        self._drop_window_keys()
        super().closeEvent(event)
        self.sig_closing.emit()

    def _drop_window_keys(self) -> None:
        """The application-wide key filter goes with the window: one left behind per window
        (tests open hundreds in one process) would see every event of every later one."""
        keys = getattr(self, "_window_keys", None)
        app = QApplication.instance()
        if keys is not None and app is not None:
            app.removeEventFilter(keys)
            self._window_keys = None

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if not self._painted:
            self._painted = True
            self.sig_first_paint.emit()
            QTimer.singleShot(0, self._polish)  # once this paint is on the screen
        if self._ready_pending:
            self._ready_pending = False
            # The filled window has been laid out and painted: say so after this paint.
            QTimer.singleShot(0, self.sig_ready.emit)


__all__ = ["MainWindow", "Notice", "icon"]


class _WindowKeys(QObject):
    """Ctrl+K reaches the window's shortcut from any field of its window, even one that
    would take the key for itself (a line edit's "delete to the end of the line").  And
    Ctrl+Q (Cmd+Q) quits from a dialog too: Qt keeps a window's shortcuts, even the
    application's, from a modal dialog in front of it; the dialog is cancelled first."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self._window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress) \
                or not isinstance(event, QKeyEvent) or not isinstance(watched, QWidget):
            return False
        from PySide6.QtCore import Qt

        control = event.modifiers() == Qt.KeyboardModifier.ControlModifier
        if kind == QEvent.Type.ShortcutOverride and watched.window() is self._window \
                and control and event.key() == Qt.Key.Key_K:
            event.ignore()  # not the field's: the window's shortcut gets it
            return True
        if kind == QEvent.Type.KeyPress and control and event.key() == Qt.Key.Key_Q \
                and watched.window() is not self._window:
            return self._quit_from_a_dialog()
        return False

    def _quit_from_a_dialog(self) -> bool:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QDialog) or not self._is_ours(dialog):
            return False
        while isinstance(dialog, QDialog) and dialog.isVisible() and self._is_ours(dialog):
            dialog.reject()  # as Esc: what it asked is cancelled; a question asks again
            dialog = QApplication.activeModalWidget()
        QTimer.singleShot(0, self._window._quit_action.trigger)
        return True

    def _is_ours(self, dialog: QWidget) -> bool:
        parent = dialog.parentWidget()
        while parent is not None and parent is not self._window:
            parent = parent.parentWidget()
        return parent is self._window
