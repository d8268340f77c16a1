"""The sidebar widget: a filter line above the tree of Pinned, workspaces, Ungrouped and
Archived, with its context menus, drag and drop, and keyboard.

Everything the person asks for runs as an :class:`~app.ops.Operations` call through
:attr:`Sidebar.handlers` (:class:`~ui.sidebar.actions.SidebarActions`), awaited on the qasync
loop; the tree changes when the operation's events arrive, never before.  Refusals come back
as the core's sentence, emitted as ``sig_error`` (and shown in a message box when nobody
listens: ``show_error``, a hook tests can replace, like the actions' dialogs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPoint,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAction,
    QKeyEvent,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QMenu,
    QMessageBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.store.registry.registry import Registry
from ui.bridge import EventBridge
from ui.icons import tinted
from ui.sidebar import menus
from ui.sidebar.actions import SidebarActions
from ui.sidebar.delegate import quiet_colour
from ui.sidebar.model import (
    ARCHIVED,
    CHAT,
    CHAT_SECTIONS,
    ID_ROLE,
    KIND_ROLE,
    PINNED,
    SECTION,
    SECTIONS,
    UNGROUPED,
    WORKSPACE,
    WORKSPACES,
    SidebarModel,
)
from ui.sidebar.ops import SidebarOps
from ui.sidebar.tree import FilterProxy, SidebarTree
from ui.text import Label, message_box

log = logging.getLogger(__name__)

Index = QModelIndex | QPersistentModelIndex
FILTER_DELAY_MS = 120  # typing pauses this long before the tree filters
OPEN_DELAY_MS = 350  # arrow keys rest this long on a row before it opens (as mail clients do)
MAX_MATCHES = 300  # chats the filter shows at most: type more to narrow
DEFAULT_OPEN = (PINNED, WORKSPACES, UNGROUPED)
OPEN_UNGROUPED_UP_TO = 200  # a longer Ungrouped starts folded


class Sidebar(QWidget):
    """Pinned, the workspace tree and Ungrouped (Archived on demand), filtered as you type."""

    sig_chat_selected = Signal(str)  # a chat id: the person opened it
    sig_told = Signal(str)  # an operation ended well and says so ("Exported …")
    sig_undoable = Signal(str, object)  # said, with what its Undo does ("Deleted …")
    sig_action_done = Signal()  # an action succeeded (a folder added, moved…): older words go
    sig_chat_chosen = Signal(str)  # a chat id: opened by a click or Enter (not arrows): type there
    sig_workspace_selected = Signal(str)  # a workspace id: the person opened it
    sig_error = Signal(str)  # a refusal, as the core's sentence
    sig_export = Signal(str)  # a workspace id: the person asked to export it
    sig_learn = Signal(str)  # a workspace id: learn from its imported chats (issue 40)
    sig_import = Signal()  # the person asked to import a .cairn bundle
    sig_recently_removed = Signal()  # the person asked for Recently removed
    sig_all_loaded = Signal()  # (from the loading thread) every chat is in memory

    def __init__(self, registry: Registry, bridge: EventBridge, ops: SidebarOps,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self._registry = registry
        self._wish: tuple[str, str, bool] | None = None  # a selection waiting for its row
        # What is open: the row the highlight stands for.  Kept here so that the highlight
        # and the open content agree (the selection is the one source of what is open).
        self._opened: tuple[str, str] | None = None
        self._quiet = 0  # selecting on the window's behalf: the highlight moves, nothing opens
        self._lost_place = False  # the rows moved the highlight: back to what is open
        self._saved_open: list[str] | None = None  # what was expanded before filtering
        # What was open, selected and scrolled to when the model began a reset.
        self._reset_state: tuple[list[str], str | None, int] | None = None
        self._show_archived = False

        self.show_error: Callable[[str], None] = self._show_error  # a hook tests can replace
        self.handlers = SidebarActions(registry, ops, self)  # what menus, keys, drops ask for
        self.handlers.sig_refused.connect(self._refused)
        self.handlers.sig_export_requested.connect(self.sig_export)
        self.handlers.sig_learn_requested.connect(self.sig_learn)
        self.handlers.sig_select_workspace_requested.connect(
            lambda ws_id: self.open_item(WORKSPACE, ws_id))
        self.handlers.sig_select_chat_requested.connect(lambda c: self.open_item(CHAT, c))
        self.handlers.sig_told.connect(self.sig_told)
        self.handlers.sig_undoable.connect(self.sig_undoable)
        for done in (self.handlers.sig_select_workspace_requested,
                     self.handlers.sig_select_chat_requested):
            done.connect(lambda _id: self.sig_action_done.emit())
        self.handlers.sig_open_chat_requested.connect(self._opened_new_chat)

        self.model = SidebarModel(registry, bridge, self)
        self.proxy = FilterProxy(self)

        self.filter = QLineEdit()
        self.filter.setObjectName("sidebarFilter")
        self.filter.setAccessibleName("Filter")
        self.filter.setPlaceholderText("Filter")
        self.filter.setClearButtonEnabled(True)
        self._search_action = QAction(self.filter)
        self.filter.addAction(self._search_action, QLineEdit.ActionPosition.LeadingPosition)
        self.filter.installEventFilter(self)
        self._filter_soon = QTimer(self, singleShot=True, interval=FILTER_DELAY_MS)
        self._filter_soon.timeout.connect(lambda: self.set_filter(self.filter.text()))
        self.filter.textChanged.connect(lambda _text: self._filter_soon.start())
        self.filter.returnPressed.connect(self._filter_now)

        self.archived_button = QToolButton()
        self.archived_button.setAccessibleName("Show archived")
        self.archived_button.setToolTip("Show archived chats")
        self.archived_button.setCheckable(True)
        self.archived_button.setAutoRaise(True)
        self.archived_button.toggled.connect(self.set_show_archived)

        self.capped_note = Label(f"Showing the first {MAX_MATCHES} chats that match: "
                                  "type more to narrow.")
        self.capped_note.setWordWrap(True)
        self.capped_note.setContentsMargins(12, 0, 12, 4)
        self.capped_note.setStyleSheet("color: palette(placeholder-text);")
        self.capped_note.hide()

        self.tree = SidebarTree(self)
        self.tree.setModel(self.model)
        self.tree.clicked.connect(self._open)
        # Every workspace ever expanded (Qt says so for each expansion, by hand, by key or by
        # code): what to look at when saving the expanded ones, not each of thousands.
        self._once_expanded: set[str] = set()
        self.tree.expanded.connect(lambda index: self._once_expanded.add(str(index.data(ID_ROLE))))
        self.tree.sig_open_requested.connect(self._enter)
        self.tree.sig_rename_requested.connect(self._rename)
        self.tree.sig_delete_requested.connect(self._delete)
        self.tree.sig_delete_chat_requested.connect(self._delete_chat)
        self.tree.sig_menu_requested.connect(self._pop_menu)
        self.tree.sig_current_moved.connect(self._current_moved)
        self._open_soon = QTimer(self, singleShot=True, interval=OPEN_DELAY_MS)
        self._open_soon.timeout.connect(self._open_current)

        top = QHBoxLayout()
        top.setContentsMargins(8, 8, 6, 4)
        top.setSpacing(4)
        top.addWidget(self.filter, 1)
        top.addWidget(self.archived_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addWidget(self.capped_note)
        layout.addWidget(self.tree, 1)
        self._style_icons()

        model = self.model
        model.sig_move_chat.connect(self.handlers.move_chat)
        model.sig_move_chat_to.connect(self.handlers.move_chat_to)
        model.sig_move_workspace.connect(self.handlers.move_workspace)
        model.sig_pin_chat.connect(self.handlers.pin_chat)
        model.sig_add_folders.connect(self.handlers.add_folders)
        model.sig_settled.connect(self._settled)
        self.sig_all_loaded.connect(lambda: self.set_filter(self.filter.text()),
                                    Qt.ConnectionType.QueuedConnection)
        model.rowsInserted.connect(self._rows_changed)
        model.rowsRemoved.connect(self._rows_changed)
        model.modelAboutToBeReset.connect(self._before_reset)
        self.tree.sig_reset.connect(self._after_reset)
        for section in DEFAULT_OPEN:
            if section == UNGROUPED and registry.chat_count(None) > OPEN_UNGROUPED_UP_TO:
                continue  # thousands of loose chats: listed when the person opens them
            self.tree.expand(model.section_index(section))
        self._update_sections()

    # ================================================================= public

    def focus_filter(self) -> None:
        """Put the cursor in the filter line, its text selected (Ctrl/Cmd+F)."""
        self.filter.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter.selectAll()

    def set_filter(self, text: str) -> None:
        """Show only workspaces and chats whose title holds *text* (any case), with what
        holds them; '' shows everything again.  At most ``MAX_MATCHES`` chats are shown."""
        self._filter_soon.stop()
        with self._quietly():
            self._set_filter(text)
            if not self._agree() and self.tree.currentIndex().isValid():
                # What is open is filtered out: no other row pretends to be it.
                self.tree.selectionModel().clear()

    def _set_filter(self, text: str) -> None:
        if self.filter.text() != text:
            self.filter.blockSignals(True)
            self.filter.setText(text)
            self.filter.blockSignals(False)
        needle = text.strip().casefold()
        if not needle:
            self._end_filter()
            return
        if not self._registry.loaded(None):
            # The start-up load is still reading chats: filter once it has them all (never
            # wait for it here, on the GUI thread).
            self._registry.when_loaded(None, self.sig_all_loaded.emit)
            return
        shown, places, capped = self._matches(needle)
        for place in places:  # the lists the matches are in (only those)
            self.model.fetch(place)
        if self.tree.model() is not self.proxy:
            self._saved_open = self.expanded_ids()
            current = self._current_source()
            self.proxy.setSourceModel(self.model)
            self.proxy.show_only(shown)
            self.tree.setModel(self.proxy)
            self.tree.setDragEnabled(False)  # rows out of context: no reordering
            self._select_source(current, scroll=False)
        else:
            self.proxy.show_only(shown)
        self.capped_note.setVisible(capped)
        self._expand_matches()

    def filter_text(self) -> str:
        return self.filter.text().strip()

    def set_show_archived(self, shown: bool) -> None:
        """Show or hide the Archived section."""
        if self.archived_button.isChecked() != shown:
            self.archived_button.setChecked(shown)  # comes back here through toggled
            return
        self._show_archived = shown
        if shown:
            self.tree.expand(self._view_index(self.model.section_index(ARCHIVED)))
            self.model.fetch(ARCHIVED)  # (the tree would at its next layout)
        if self.tree.model() is self.proxy:
            self.set_filter(self.filter.text())
        self._update_sections()

    def select_workspace(self, ws_id: str) -> None:
        """Select a workspace's row (expanding what holds it); emits nothing.

        A workspace the tree does not show yet (an operation's event still on its way) is
        selected when it arrives.
        """
        self._opened = (WORKSPACE, ws_id)
        self._wish = (WORKSPACE, ws_id, False)
        self._fulfil_wish()

    def select_chat(self, chat_id: str) -> None:
        """Select a chat's row: in Pinned when pinned, else in its workspace or Ungrouped
        (Archived when archived, which shows that section).  Emits nothing."""
        self._opened = (CHAT, chat_id)
        self._wish = (CHAT, chat_id, False)
        self._fulfil_wish()

    def open_item(self, kind: str, item_id: str) -> None:
        """Select a workspace's or chat's row and open it (emits its signal), as a click on
        it would: what an action made or moved (a folder added, moved, a chat unarchived)."""
        self._wish = (kind, item_id, True)
        self._fulfil_wish()

    def current_id(self) -> str | None:
        """The id of the selected workspace or chat, if any."""
        index = self.tree.currentIndex()
        if not index.isValid() or index.data(KIND_ROLE) == SECTION:
            return None
        return str(index.data(ID_ROLE))

    def expanded_ids(self) -> list[str]:
        """The expanded sections (by name) and workspaces (by id), to restore at next start."""
        if self.tree.model() is self.proxy and self._saved_open is not None:
            return list(self._saved_open)
        opened = [s for s in SECTIONS if self.tree.isExpanded(self.model.section_index(s))]
        once = self._once_expanded
        opened += [ws_id for ws_id in self._workspace_ids() if ws_id in once
                   and self.tree.isExpanded(self.model.workspace_index(ws_id))]
        return opened

    def set_expanded_ids(self, ids: list[str], *, fresh: bool = False) -> None:
        """Expand exactly these workspaces; sections follow the list when it names any.
        *fresh*: no workspace is expanded yet (a sidebar just built), so only these are
        looked at, not each of the (maybe thousands of) workspaces."""
        if self.tree.model() is self.proxy:
            self._saved_open = list(ids)
            return
        wanted = set(ids)
        tree, model = self.tree, self.model
        # One layout for all of them, not one per expansion (each walks every shown row).
        tree.scheduleDelayedItemsLayout()
        if wanted & set(SECTIONS):
            for section in SECTIONS:
                tree.setExpanded(model.section_index(section), section in wanted)
        if fresh:
            for ws_id in wanted.difference(SECTIONS):
                index = model.workspace_index(ws_id)
                if index.isValid():
                    tree.setExpanded(index, True)
            return
        for ws_id in self._workspace_ids():
            index = model.workspace_index(ws_id)
            if (ws_id in wanted) != tree.isExpanded(index):
                tree.setExpanded(index, ws_id in wanted)

    def context_menu(self, index: QModelIndex) -> QMenu | None:
        """The menu for a row of the tree (an index of the tree's model), or None."""
        if not index.isValid():
            return None
        kind, item_id = index.data(KIND_ROLE), str(index.data(ID_ROLE))
        if kind == WORKSPACE:
            ws = self._registry.workspace(item_id)
            return menus.workspace_menu(self.handlers, ws, self) if ws is not None else None
        if kind == CHAT:
            chat = self._registry.chat(item_id)
            if chat is None:
                return None
            working = bool(self._registry.live.kinds(item_id))
            return menus.chat_menu(self.handlers, chat, working=working, parent=self)
        if item_id == ARCHIVED:
            menu = QMenu(self)
            menu.addAction("Hide archived").triggered.connect(
                lambda _c=False: self.set_show_archived(False))
            return menu
        if item_id == WORKSPACES:  # the list itself: what adds to it, or brings one back
            menu = QMenu(self)
            menu.setAccessibleName("Workspaces actions")
            menu.addAction("Import workspace…").triggered.connect(
                lambda _c=False: self.sig_import.emit())
            menu.addAction("Recently removed…").triggered.connect(
                lambda _c=False: self.sig_recently_removed.emit())
            return menu
        return None

    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """The operations still running (tests wait for them)."""
        return self.handlers.runner.tasks()

    def stop(self) -> None:
        """Cancel the operations still awaited and stop following the registry."""
        self.handlers.runner.cancel()
        self.model.detach()

    # ================================================================= private: the person

    def _open(self, index: QModelIndex) -> None:
        self._wish = None  # the person chose: forget a selection waiting for its row
        kind, item_id = index.data(KIND_ROLE), str(index.data(ID_ROLE))
        if kind == SECTION:
            self.tree.setExpanded(index, not self.tree.isExpanded(index))
        elif kind in (CHAT, WORKSPACE):
            self._emit_open(kind, item_id)
            if kind == CHAT:  # a chat chosen, not passed by with the arrows: its box is next
                self.sig_chat_chosen.emit(item_id)

    def _emit_open(self, kind: str, item_id: str) -> None:
        self._open_soon.stop()
        self._opened = (kind, item_id)
        if kind == CHAT:
            self.sig_chat_selected.emit(item_id)
        else:
            self.sig_workspace_selected.emit(item_id)

    # ----------------------------------------------------------------- the highlight is what is open

    def _current_moved(self) -> None:
        """The highlight moved: by the person (arrow keys: open after a pause), or by the
        rows (what was open left its place: once they settle, back to it if it shows, else
        what the highlight landed on opens)."""
        if self._quiet:
            return
        if self.model.is_changing():
            self._lost_place = True
        self._open_soon.start()

    def _open_current(self) -> None:
        if not self.model.is_settled():
            self._lost_place = True  # again when it settles
            return
        lost, self._lost_place = self._lost_place, False
        if lost and self._agree():
            return
        index = self.tree.currentIndex()
        kind = index.data(KIND_ROLE) if index.isValid() else None
        if kind in (CHAT, WORKSPACE) and (kind, str(index.data(ID_ROLE))) != self._opened:
            self._emit_open(kind, str(index.data(ID_ROLE)))

    def _agree(self) -> bool:
        """Put the highlight on what is open when its row shows; True when it does."""
        if self._opened is None:
            return False
        source = self._shown_source(*self._opened)
        if source is None:
            return False
        if self._current_source() != QPersistentModelIndex(source):
            self._select_source(source, scroll=False)
        return True

    def _shown_source(self, kind: str, item_id: str) -> QModelIndex | None:
        """The source row that shows a workspace or chat now, visible in the tree (every
        row holding it expanded), without reading or opening anything; None when none."""
        model = self.model
        if kind == WORKSPACE:
            source = model.workspace_index(item_id)
        else:
            chat = self._registry.chat(item_id)
            if chat is None:
                return None
            place = model.place_of(item_id)
            source = model.chat_index(item_id, PINNED) if chat.pinned else QModelIndex()
            if not source.isValid() and place is not None and (
                    place != ARCHIVED or self._show_archived):
                source = model.chat_index(item_id, place)
        view = self._view_index(source) if source.isValid() else QModelIndex()
        if not view.isValid():
            return None
        parent = view.parent()
        while parent.isValid():
            if not self.tree.isExpanded(parent):
                return None
            parent = parent.parent()
        return source

    @contextlib.contextmanager
    def _quietly(self) -> Iterator[None]:
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def _enter(self, index: QModelIndex) -> None:
        """Enter on a row opens it; on a section heading it only unfolds a folded section
        (folding a whole section is Left's, as in any tree, never a side effect of Enter)."""
        if index.data(KIND_ROLE) == SECTION:
            if not self.tree.isExpanded(index):
                self.tree.expand(index)
            return
        self._open(index)

    def _first_row(self) -> QModelIndex:
        """The first workspace or chat the tree shows (under the filter: the first match,
        not a row shown only because it holds one)."""
        view = self.tree.model()
        needle = self.filter_text().casefold() if view is self.proxy else ""

        def first(parent: QModelIndex) -> QModelIndex:
            for row in range(view.rowCount(parent)):
                if self.tree.isRowHidden(row, parent):
                    continue
                index = view.index(row, 0, parent)
                if index.data(KIND_ROLE) != SECTION and needle in str(index.data()).casefold():
                    return index
                if self.tree.isExpanded(index):
                    found = first(index)
                    if found.isValid():
                        return found
            return QModelIndex()

        return first(QModelIndex())

    def _pop_menu(self, index: QModelIndex, where: QPoint) -> None:
        menu = self.context_menu(index)
        if menu is not None:
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            menu.popup(where)

    def _rename(self, index: QModelIndex) -> None:
        self.handlers.rename(index.data(KIND_ROLE), str(index.data(ID_ROLE)))

    def _delete(self, index: QModelIndex) -> None:
        self.handlers.delete(index.data(KIND_ROLE), str(index.data(ID_ROLE)))

    def _delete_chat(self, index: QModelIndex) -> None:
        if index.data(KIND_ROLE) == CHAT:
            self.handlers.delete_chat(str(index.data(ID_ROLE)))

    def _opened_new_chat(self, chat_id: str) -> None:
        self.select_chat(chat_id)
        self.sig_chat_selected.emit(chat_id)

    def _refused(self, sentence: str) -> None:
        heard = self.receivers("2sig_error(QString)") > 0
        self.sig_error.emit(sentence)
        if not heard:
            self.show_error(sentence)

    def _show_error(self, sentence: str) -> None:
        box = message_box(QMessageBox.Icon.Warning, "Cairn", sentence, parent=self)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()  # never blocks the loop the operations run on

    # ================================================================= private: the tree

    def _workspace_ids(self) -> Iterator[str]:
        stack = self.model.folders_of(None)
        while stack:
            ws_id = stack.pop()
            yield ws_id
            stack.extend(self.model.folders_of(ws_id))

    def _view_index(self, source: Index) -> Index:
        if self.tree.model() is self.proxy:
            return self.proxy.mapFromSource(source)
        return source

    def _source_index(self, index: QModelIndex) -> QModelIndex:
        if index.isValid() and index.model() is self.proxy:
            return self.proxy.mapToSource(index)
        return index

    def _current_source(self) -> QPersistentModelIndex:
        return QPersistentModelIndex(self._source_index(self.tree.currentIndex()))

    def _select_source(self, source: QModelIndex | QPersistentModelIndex, *,
                       scroll: bool = True) -> None:
        index = self._view_index(source)
        if not index.isValid():
            return
        with self._quietly():
            self.tree.selectionModel().setCurrentIndex(
                index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        if scroll:
            self.tree.scrollTo(index)

    def _update_sections(self) -> None:
        if self.tree.model() is not self.model:
            return  # the filter shows a section only when something in it matches
        for row, section in enumerate(SECTIONS):
            hidden = self.model.is_empty(section) or (section == ARCHIVED
                                                      and not self._show_archived)
            if self.tree.isRowHidden(row, QModelIndex()) != hidden:
                self.tree.setRowHidden(row, QModelIndex(), hidden)

    def _rows_changed(self, parent: QModelIndex, first: int, last: int) -> None:
        if not parent.isValid() or parent.data(KIND_ROLE) == SECTION:
            self._update_sections()

    def _settled(self) -> None:
        self._update_sections()
        self._fulfil_wish()
        if self._lost_place and not self._open_soon.isActive():
            self._open_current()
        if self.tree.model() is self.proxy and not self._filter_soon.isActive():
            self._filter_soon.start()  # the filter looks again at what changed

    def _before_reset(self) -> None:
        """A change from another process re-reads every row: what the person sees is kept
        (the expanded rows, the selection, the scroll position; the filter keeps its text)."""
        if self._reset_state is None:  # (a second reset before the view caught up: the first)
            self._reset_state = (self.expanded_ids(), self.current_id(),
                                 self.tree.verticalScrollBar().value())

    def _after_reset(self) -> None:
        if self._reset_state is None or self.tree.model() is None:
            return
        opened, current, scrolled = self._reset_state
        self._reset_state = None
        if self.tree.model() is self.proxy:
            self._saved_open = opened
            self.set_filter(self.filter.text())  # the matches again, over the new rows
        else:
            self.set_expanded_ids(opened)
            self._update_sections()
        # The selection model forgets its rows after the view does (it heard the reset
        # later): the selection and the scroll position once the reset is over.
        QTimer.singleShot(0, lambda: self._restore_place(current, scrolled))

    def _restore_place(self, current: str | None, scrolled: int) -> None:
        if self._wish is None and self.current_id() is None and self._agree():
            current = None  # back on what is open
        if current is not None and self._wish is None and self.current_id() is None:
            kind = WORKSPACE if self.model.workspace(current) is not None else CHAT
            source = self._locate(kind, current)
            if source is not None and source.isValid() and self._view_index(source).isValid():
                self._select_source(source, scroll=False)
        self.tree.verticalScrollBar().setValue(scrolled)

    def _fulfil_wish(self) -> None:
        """Select the row asked for by select_workspace/select_chat once the model has it."""
        if self._wish is None:
            return
        kind, item_id, then_open = self._wish
        source = self._locate(kind, item_id)
        if source is None:  # no such row, ever: forget it
            self._wish = None
            return
        if not source.isValid():
            return  # on its way: tried again when the model settles
        self._wish = None
        if self.tree.model() is self.proxy and not self.proxy.mapFromSource(source).isValid():
            self.set_filter("")  # the filter hides it: show everything again
        parent = source.parent()
        while parent.isValid():
            self.tree.expand(self._view_index(parent))
            parent = parent.parent()
        self._select_source(source)
        if then_open:
            self._emit_open(kind, item_id)

    def _locate(self, kind: str, item_id: str) -> QModelIndex | None:
        """The source row of a workspace or chat: invalid while it is on its way, None when
        the registry has no such thing."""
        model = self.model
        if kind == WORKSPACE:
            if self._registry.workspace(item_id) is None:
                return None
            return model.workspace_index(item_id)
        chat = self._registry.chat(item_id)
        if chat is None:
            return None
        if chat.pinned:
            pinned = model.chat_index(item_id, PINNED)
            if pinned.isValid():
                return pinned
        place = model.place_of(item_id) or UNGROUPED
        if place == ARCHIVED and not self._show_archived:
            self.set_show_archived(True)
        if place not in (ARCHIVED, UNGROUPED):  # its workspace shows it when expanded
            self.tree.expand(self._view_index(model.workspace_index(place)))
        if not model.fetch(place):
            return QModelIndex()
        return model.chat_index(item_id, place)

    def _matches(self, needle: str) -> tuple[frozenset[str], list[str], bool]:
        """What the filter shows, from the registry's memory: the keys of the rows to show
        (matching workspaces, matching chats in tree order up to ``MAX_MATCHES``, and every
        section and workspace holding one), the lists those chats are in, and whether the
        chats were capped."""
        registry, model = self._registry, self.model
        shown: set[str] = set()

        def with_holders(place: str) -> None:
            if place in (PINNED, UNGROUPED, ARCHIVED):
                shown.add(place)
                return
            shown.add(WORKSPACES)
            ws_id: str | None = place
            while ws_id is not None and ws_id not in shown:
                shown.add(ws_id)
                ws_id = model.parent_of(ws_id)

        for ws in registry.workspaces():
            if needle in ws.title.casefold() and model.workspace(ws.id) is not None:
                with_holders(ws.id)
        listing = registry.chat_listing()
        lists = [(PINNED, listing.pinned), *((ws.id, chats) for ws, chats in listing.workspaces),
                 (UNGROUPED, listing.ungrouped)]
        if self._show_archived:
            lists.append((ARCHIVED, listing.archived))
        places: list[str] = []
        found = 0
        for at, (place, chats) in enumerate(lists):
            hits = [c.id for c in chats if needle in c.title.casefold()]
            if not hits or (place not in CHAT_SECTIONS and model.workspace(place) is None):
                continue
            places.append(place)
            with_holders(place)
            shown.update(hits[:MAX_MATCHES - found])
            found += len(hits)
            if found >= MAX_MATCHES:
                more = found > MAX_MATCHES or any(
                    needle in c.title.casefold() for _, rest in lists[at + 1:] for c in rest)
                return frozenset(shown), places, more
        return frozenset(shown), places, False

    def _expand_matches(self) -> None:
        def expand(parent: QModelIndex) -> None:
            for row in range(self.proxy.rowCount(parent)):
                index = self.proxy.index(row, 0, parent)
                if self.proxy.rowCount(index):
                    self.tree.expand(index)
                    expand(index)

        expand(QModelIndex())

    def _filter_now(self) -> None:
        self.set_filter(self.filter.text())
        first = self._first_row()
        if first.isValid():
            self.tree.setFocus(Qt.FocusReason.TabFocusReason)
            self.tree.selectionModel().setCurrentIndex(
                first, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def _end_filter(self) -> None:
        self.capped_note.hide()
        if self.tree.model() is self.model:
            return
        current = self._current_source()
        opened = self._opened
        self.tree.setModel(self.model)
        # Unfiltered, changes go to the tree alone.  (None detaches it: the stubs miss that.)
        self.proxy.setSourceModel(None)  # type: ignore[arg-type]
        self.tree.setDragEnabled(True)
        self.set_expanded_ids(self._saved_open or list(DEFAULT_OPEN))
        self._saved_open = None
        self._update_sections()
        if opened is not None:  # the filter may have hidden what is open: back to it
            current = QPersistentModelIndex(self._locate(*opened) or QModelIndex())
        if current.isValid():
            self._select_source(current)

    def _style_icons(self) -> None:
        colour = quiet_colour(self.palette()).name()
        ratio = self.devicePixelRatioF()
        self._search_action.setIcon(tinted("search", colour, 16, ratio))
        self.archived_button.setIcon(tinted("archive", colour, 16, ratio))

    # ================================================================= Qt overrides

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.filter and isinstance(event, QKeyEvent) and \
                event.type() == QKeyEvent.Type.KeyPress:
            if event.key() == Qt.Key.Key_Escape and self.filter.text():
                self.set_filter("")
                return True
            if event.key() == Qt.Key.Key_Down:
                # Into the tree, on its first row, highlighted with the focus ring (it opens
                # after the pause arrow keys take).
                self.tree.setFocus(Qt.FocusReason.TabFocusReason)
                first = self._first_row()
                if first.isValid():
                    self.tree.selectionModel().setCurrentIndex(
                        first, QItemSelectionModel.SelectionFlag.ClearAndSelect)
                    self.tree.scrollTo(first)
                return True
        return super().eventFilter(watched, event)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._style_icons()

