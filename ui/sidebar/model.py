"""The sidebar as one item model: Pinned, the workspace tree, Ungrouped and Archived.

Four sections at the top level.  Under Workspaces, each top-level workspace holds its folders
(nested workspaces, display order) and then its chats (manual order).  The tree of workspaces
is read once (a thousand records at most); a list of chats is read only when its workspace or
section is expanded (``canFetchMore``/``fetchMore``), and from then on follows the registry's
events as row inserts, removals and moves.  The model resets only when the registry itself
re-read everything (``Reset``, another process wrote).

The model is composed of plain parts: the rows (``rows.py``), the events in flight and the
row changes each event makes (``updates.py``), and what a drop asks for (``drops.py``).  It
reads a list only when no event is in flight, and otherwise once the queue drains.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QMimeData,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from app import events as ev
from app.records import MISSING_DIR, Chat, Workspace
from app.store.registry.nesting import Rows
from app.store.registry.registry import Registry
from app.store.registry.state import UNGROUPED as UNGROUPED_PAGE
from ui.bridge import EventBridge, Snapshot
from ui.sidebar.drops import (
    MOVE_CHAT,
    MOVE_CHAT_TO,
    MOVE_WORKSPACE,
    PIN_CHAT,
    folders_in,
    plan_drop,
)
from ui.sidebar.kinds import (  # noqa: F401 - re-exported: the sidebar's names live here too
    ARCHIVED,
    CHAT,
    CHAT_SECTIONS,
    HINT_ROLE,
    ICON_ROLE,
    ID_ROLE,
    KIND_ROLE,
    MIME_TYPE,
    MISSING_ROLE,
    PINNED,
    PLACE_ROLE,
    SECTION,
    SECTION_TITLES,
    SECTIONS,
    UNGROUPED,
    URI_LIST,
    WORKING_ROLE,
    WORKSPACE,
    WORKSPACES,
)
from ui.sidebar.rows import NO_ROWS, ROOT, Item, SidebarRows
from ui.sidebar.updates import InFlight, RowUpdates
from ui.text import tip

log = logging.getLogger(__name__)

Index = QModelIndex | QPersistentModelIndex


_DROP = Qt.ItemFlag.ItemIsDropEnabled
_SECTION_FLAGS = Qt.ItemFlag.ItemIsEnabled | _DROP
_WORKSPACE_FLAGS = _SECTION_FLAGS | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled
_LISTED_CHAT_FLAGS = (_SECTION_FLAGS | Qt.ItemFlag.ItemIsSelectable  # Pinned, Archived: no order
                      | Qt.ItemFlag.ItemNeverHasChildren)
_CHAT_FLAGS = _LISTED_CHAT_FLAGS | Qt.ItemFlag.ItemIsDragEnabled

READ_ATTEMPTS = 8  # first reads tried before taking one that changes landed during


def folder_hint(path: str) -> str:
    """The last two segments of a folder's path ("work/Acme"): what tells two workspaces
    of the same title apart."""
    parts = [p for p in PurePath(path).parts if p not in ("/", "\\")]
    return "/".join(parts[-2:]) if parts else path


class SidebarModel(QAbstractItemModel):
    """The sidebar's rows, over :class:`~app.store.registry.registry.Registry` reads and
    bridge events.

    A drop asks for an operation through a signal; the sidebar runs it and the change comes
    back as events, like any other.
    """

    sig_move_chat = Signal(str, int)  # a chat id, its index among its workspace's chats
    sig_move_chat_to = Signal(str, str, int)  # a chat id, another workspace ("": Ungrouped), index
    sig_move_workspace = Signal(str, int)  # a workspace id, its index in the display order
    sig_pin_chat = Signal(str)  # a chat dropped on Pinned
    sig_add_folders = Signal(list)  # local paths dropped from the file manager
    sig_settled = Signal()  # every event heard so far is applied and wanted lists are read
    sig_page_loaded = Signal()  # (from the loading thread) a list waited for is in memory

    def __init__(self, registry: Registry, bridge: EventBridge,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._registry = registry
        self._rows = SidebarRows()
        self._updates = RowUpdates(self._rows, self)
        self._wanted: set[str] = set()  # lists to read once no event is in flight
        self._busy = False  # a change is under way: its signals must not start another
        self._verify = False  # the rows may have drifted: compare them at the next pause
        self._asked: set[str] = set()  # lists whose page the start-up load was asked for
        self.sig_page_loaded.connect(self._after_event, Qt.ConnectionType.QueuedConnection)
        self._repeated: set[str] = set()  # titles two or more workspaces share (casefolded)

        # In flight: heard on the committing thread, not yet delivered by the bridge.
        self._in_flight = InFlight(registry)
        self._subscription = registry.hub.subscribe(self._in_flight.heard,
                                                    kinds=ev.REGISTRY_EVENTS)
        self.destroyed.connect(self._subscription.close)
        self._load_consistently()
        self._repeated = self._repeated_titles()

        bridge.sig_event.connect(self._on_event)
        bridge.sig_reset.connect(self._on_reset)
        bridge.destroyed.connect(self._subscription.close)

    # ================================================================= public

    def detach(self) -> None:
        """Stop hearing the registry (the bridge's signals may still arrive; they are ignored)."""
        self._subscription.close()

    def is_settled(self) -> bool:
        """True when every event heard is applied and no wanted list waits to be read."""
        return not self._in_flight and not self._wanted and not self._verify

    def is_changing(self) -> bool:
        """True while rows are being changed (an event applied, a list read, a reset): a
        view's current row that moves now was moved by the rows, not by the person."""
        return self._busy

    def is_fetched(self, place: str) -> bool:
        """Whether the chats of *place* (a workspace id, or a chat section) have been read."""
        return self._rows.lists.get(place) is not None

    def fetch(self, place: str) -> bool:
        """Read the chats of *place* now, or as soon as no event is in flight; True when done."""
        done = self._fetch(place)
        self._drain()  # lists asked for from inside this one's insert
        return done

    def key_at(self, row: int, parent: Index) -> str | None:
        """The id (a section's name) of *parent*'s child at *row*, without making an index."""
        container = self._children_key(parent)
        if container is None:
            return None
        return self._rows.key_in(container, row)

    def item(self, index: Index) -> Item | None:
        """(kind, id, place) of a row in one call: *place* is the section or workspace id
        whose rows hold it."""
        return self._item(index)

    def workspace(self, ws_id: str) -> Workspace | None:
        return self._rows.ws.get(ws_id)

    def workspace_ids(self) -> list[str]:
        """Every workspace the rows show, folders included."""
        return list(self._rows.ws)

    def parent_of(self, ws_id: str) -> str | None:
        return self._rows.parent.get(ws_id)

    def folders_of(self, ws_id: str | None) -> list[str]:
        """A workspace's folders (None: the top-level workspaces), as the rows show them."""
        return list(self._rows.kids.get(ws_id, NO_ROWS))

    def chats_in(self, place: str) -> list[str] | None:
        """The chat ids a list shows, or None when it was not read yet."""
        rows = self._rows.lists.get(place)
        return None if rows is None else list(rows)

    def section_index(self, section: str) -> QModelIndex:
        return self.createIndex(SECTIONS.index(section), 0, self._rows.cid(ROOT))

    def workspace_index(self, ws_id: str) -> QModelIndex:
        """The row of a workspace, or an invalid index when the model has no such workspace."""
        rows = self._rows
        if ws_id not in rows.ws:
            return QModelIndex()
        parent = rows.parent[ws_id]
        container = WORKSPACES if parent is None else parent
        return self.createIndex(rows.kids[parent].row_of(ws_id), 0, rows.cid(container))

    def chat_index(self, chat_id: str, place: str) -> QModelIndex:
        """The row of a chat in *place*, or an invalid index when that list does not show it."""
        row = self._rows.chat_row(chat_id, place)
        if row is None:
            return QModelIndex()
        return self.createIndex(row, 0, self._rows.cid(place))

    def container_index(self, container: str | None) -> QModelIndex:
        """The row whose children *container* holds (None: the top-level workspaces')."""
        if container is None or container == WORKSPACES:
            return self.section_index(WORKSPACES)
        if container == ROOT:
            return QModelIndex()
        if container in SECTIONS:
            return self.section_index(container)
        return self.workspace_index(container)

    def place_of(self, chat_id: str) -> str | None:
        """Where a chat lives now (its workspace or Ungrouped; Archived), by the registry."""
        chat = self._registry.chat(chat_id)
        if chat is None:
            return None
        if chat.archived:
            return ARCHIVED
        return chat.workspace_id or UNGROUPED

    def is_empty(self, section: str) -> bool:
        """Whether a section has nothing to show (an unread list asks the registry's count)."""
        if section == WORKSPACES:
            return not self._rows.kids.get(None)
        rows = self._rows.lists.get(section)
        if rows is not None:
            return not rows
        if section == ARCHIVED:
            return self._registry.archived_count() == 0
        return self._registry.chat_count(None) == 0

    # ----------------------------------------------------------------- for the updates

    def changed(self, index: QModelIndex) -> None:
        """A row's data changed (its title, its folder's status)."""
        if index.isValid():
            self.dataChanged.emit(index, index)

    def chat_changed(self, chat_id: str) -> None:
        """A chat's data changed, wherever it shows."""
        for place in (self._rows.home.get(chat_id), PINNED, ARCHIVED):
            if place is not None:
                self.changed(self.chat_index(chat_id, place))

    def drifted(self, why: str) -> None:
        """Something did not fit (it never should): compare with the registry when it pauses."""
        if not self._verify:
            log.warning("sidebar: %s; the rows are compared with the registry at its next pause",
                        why)
        self._verify = True

    # ================================================================= Qt: the tree

    def index(self, row: int, column: int = 0, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if column != 0 or row < 0:
            return QModelIndex()
        container = self._children_key(parent)
        if container is None or row >= self._rows.count(container):
            return QModelIndex()
        return self.createIndex(row, 0, self._rows.cid(container))

    def parent(  # type: ignore[override]
            self, child: Index | None = None) -> QModelIndex | QObject | None:
        if child is None:  # QObject.parent()
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        container = self._rows.container(child.internalId())
        if container is None or container == ROOT:
            return QModelIndex()
        if container in SECTIONS:
            return self.section_index(container)
        return self.workspace_index(container)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() and parent.column() != 0:
            return 0
        container = self._children_key(parent)
        return 0 if container is None else self._rows.count(container)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 1

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        container = self._children_key(parent)
        if container is None:
            return False
        if container == ROOT or self._rows.count(container):
            return True
        if container == WORKSPACES:
            return False
        if self._rows.lists.get(container) is not None:
            return False
        if container in CHAT_SECTIONS:
            return not self.is_empty(container)
        try:
            return self._registry.chat_count(container) > 0  # not read: the count says
        except KeyError:  # the registry is ahead and already forgot it: its event is coming
            return False

    def canFetchMore(self, parent: Index) -> bool:
        container = self._children_key(parent)
        return container is not None and container != ROOT and container != WORKSPACES and \
            self._rows.lists.get(container) is None

    def fetchMore(self, parent: Index) -> None:
        container = self._children_key(parent)
        if container is not None and container not in (ROOT, WORKSPACES):
            self.fetch(container)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        item = self._item(index)
        if item is None:
            return None
        kind, key, place = item
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole,
                    Qt.ItemDataRole.EditRole):
            return self._title(kind, key)
        if role == ID_ROLE:
            return key
        if role == KIND_ROLE:
            return kind
        if role == PLACE_ROLE:
            return place
        if kind == WORKSPACE:
            ws = self._rows.ws[key]
            if role == ICON_ROLE:
                return "warning" if ws.status == MISSING_DIR else "folder"
            if role == MISSING_ROLE:
                return ws.status == MISSING_DIR
            if role == HINT_ROLE:
                return folder_hint(ws.path) if ws.title.casefold() in self._repeated else ""
            if role == Qt.ItemDataRole.ToolTipRole:
                if ws.status == MISSING_DIR:
                    return tip(f"The folder {ws.path} is missing. Use “Move to folder…” to "
                               "point this workspace at its new place.")
                return tip(ws.path)
            if role == Qt.ItemDataRole.AccessibleDescriptionRole:
                return "folder missing" if ws.status == MISSING_DIR else ws.path
        elif kind == CHAT:
            if role == ICON_ROLE:
                return {PINNED: "pin", ARCHIVED: "archive"}.get(place, "chat")
            if role == WORKING_ROLE:
                return bool(self._registry.live.kinds(key))
            if role == Qt.ItemDataRole.ToolTipRole:
                return tip(self._title(kind, key))
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        # Called for every row the tree lays out: from the container alone, and constants.
        container = self._rows.container(index.internalId()) if index.isValid() else None
        if container is None:
            return _DROP  # the empty space: a folder can land there
        if container == ROOT:
            return _SECTION_FLAGS
        if container == WORKSPACES:
            return _WORKSPACE_FLAGS
        if container == PINNED or container == ARCHIVED:
            return _LISTED_CHAT_FLAGS
        if container == UNGROUPED or \
                index.row() >= len(self._rows.kids.get(container, NO_ROWS)):
            return _CHAT_FLAGS
        return _WORKSPACE_FLAGS

    # ================================================================= Qt: drag and drop

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction | Qt.DropAction.CopyAction | Qt.DropAction.LinkAction

    def mimeTypes(self) -> list[str]:
        return [MIME_TYPE, URI_LIST]

    def mimeData(self, indexes: Sequence[QModelIndex]) -> QMimeData:
        items = []
        for index in indexes:
            item = self._item(index)
            if item is not None and item[0] != SECTION:
                items.append({"kind": item[0], "id": item[1], "place": item[2]})
        data = QMimeData()
        data.setData(MIME_TYPE, json.dumps(items).encode())
        return data

    def canDropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                        parent: Index) -> bool:
        if folders_in(data):
            return True
        return plan_drop(self._rows, self._registry, data, row, self._item(parent)) is not None

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                     parent: Index) -> bool:
        if action == Qt.DropAction.IgnoreAction:
            return True
        folders = folders_in(data)
        if folders:
            self.sig_add_folders.emit(folders)
            return True
        drop = plan_drop(self._rows, self._registry, data, row, self._item(parent))
        if drop is None:
            return False
        # The rows move when the operation's events say so.
        if drop.action == PIN_CHAT:
            self.sig_pin_chat.emit(drop.item_id)
        elif drop.action == MOVE_CHAT:
            self.sig_move_chat.emit(drop.item_id, drop.index)
        elif drop.action == MOVE_CHAT_TO:
            self.sig_move_chat_to.emit(drop.item_id, drop.ws_id, drop.index)
        elif drop.action == MOVE_WORKSPACE:
            self.sig_move_workspace.emit(drop.item_id, drop.index)
        return True

    # ================================================================= private: reading

    def _load_consistently(self) -> None:
        """The tree and Pinned, read while no change lands; the events they cover are skipped."""
        registry, in_flight = self._registry, self._in_flight
        for _attempt in range(READ_ATTEMPTS):
            heard = len(in_flight)
            tree = registry.tree()
            pinned = [registry.pinned_at(r).id for r in range(registry.pinned_count())]
            in_flight.barrier()
            if len(in_flight) == heard:
                break
        else:  # changes keep landing (a writer in a loop): take this read, check it later
            self.drifted("changes landed during every first read")
        in_flight.skip = heard
        self._rows.install_tree(tree)
        self._rows.lists = {ws_id: None for ws_id in self._rows.ws}
        self._rows.lists.update({PINNED: Rows(pinned), UNGROUPED: None, ARCHIVED: None})

    def _fetch(self, place: str) -> bool:
        rows = self._rows
        if rows.lists.get(place) is not None:
            # (Wanted, then read another way: a workspace removed and added again with its
            # id, by Move to folder… or Restore, comes back with its list read and empty.)
            self._wanted.discard(place)
            return True
        if place not in rows.ws and place not in CHAT_SECTIONS:
            self._wanted.discard(place)
            return False
        if self._in_flight or self._busy:
            # The registry is ahead of the rows, or rows are changing right now (a view
            # asking from inside a change's signals): read once that is over.
            self._wanted.add(place)
            return False
        if not self._loaded(place):
            # Still in the start-up load: never wait for it here (the GUI thread); read the
            # list when its page is in memory, which the load now reads next.
            self._wanted.add(place)
            if place not in self._asked:
                self._asked.add(place)
                self._registry.when_loaded(_page(place), self.sig_page_loaded.emit)
            return False
        ids = self._read_list(place)
        self._in_flight.barrier()
        if self._in_flight:  # a change landed while reading: what was read may be ahead
            self._wanted.add(place)
            return False
        self._wanted.discard(place)
        rows.lists[place] = Rows()  # read: asking again from inside the insert does nothing
        if not ids:
            return True
        first = rows.offset(place)
        self._busy = True
        try:
            self.beginInsertRows(self.container_index(place), first, first + len(ids) - 1)
            rows.install_list(place, ids)
            self.endInsertRows()
        finally:
            self._busy = False
        return True

    def _drain(self) -> None:
        """Read the lists asked for while events were in flight or rows were changing."""
        while self._wanted and not self._in_flight and not self._busy:
            ready = [p for p in self._wanted if self._loaded(p)]
            if not ready:
                return  # the start-up load tells when a page is in (sig_page_loaded)
            place = min(ready)
            if not self._fetch(place) and place in self._wanted:
                return  # an event came in meanwhile: after it

    def _loaded(self, place: str) -> bool:
        """Whether the registry holds *place*'s chats (Pinned's are read first of all)."""
        if place == PINNED:
            return True
        return self._registry.loaded(_page(place))

    def _read_list(self, place: str) -> list[str]:
        registry = self._registry
        if place == PINNED:
            return [registry.pinned_at(r).id for r in range(registry.pinned_count())]
        if place == ARCHIVED:
            return [registry.archived_at(r).id for r in range(registry.archived_count())]
        ws_id = None if place == UNGROUPED else place
        return [registry.chat_at(ws_id, r).id for r in range(registry.chat_count(ws_id))]

    # ================================================================= private: events

    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, (ev.WorkStarted, ev.WorkEnded)):
            self.chat_changed(event.chat)
            return
        if not isinstance(event, ev.REGISTRY_EVENTS) or isinstance(event, ev.Reset):
            return  # a Reset comes with its snapshot (sig_reset); other stores are not ours
        if self._in_flight.arrived(event):
            self._busy = True
            try:
                self._updates.apply(event)
            finally:
                self._busy = False
            if isinstance(event, (ev.WorkspaceAdded, ev.WorkspaceRemoved, ev.WorkspaceChanged)):
                self._titles_changed()
        self._after_event()

    def _on_reset(self, snapshot: Snapshot) -> None:
        if self._in_flight.arrived(None):
            self._reset_to(snapshot)
        self._after_event()

    def _after_event(self) -> None:
        self._drain()
        if self._verify and not self._in_flight and not self._busy:
            self._check_rows()
        if self.is_settled():
            self.sig_settled.emit()

    def _check_rows(self) -> None:
        """Compare every row with a fresh read; re-read everything (a reset) if they differ."""
        if not self._registry.loaded(None):  # at the end of the start-up load
            self._registry.when_loaded(None, self.sig_page_loaded.emit)
            return
        snapshot = Snapshot(tree=self._registry.tree(), chats=self._registry.chat_listing())
        self._in_flight.barrier()
        if self._in_flight:
            return  # a change landed meanwhile: at the next pause
        self._verify = False
        if self._rows.matches(snapshot.tree, snapshot.chats):
            return
        log.warning("sidebar: the rows drifted from the registry; reading everything again")
        self._reset_to(snapshot)

    def _reset_to(self, snapshot: Snapshot) -> None:
        self._busy = True
        try:
            self._updates.reset_to(snapshot.tree, snapshot.chats)
        finally:
            self._busy = False
        self._wanted &= set(self._rows.lists)
        self._titles_changed()

    def _repeated_titles(self) -> set[str]:
        seen: set[str] = set()
        repeated: set[str] = set()
        for ws in self._rows.ws.values():
            key = ws.title.casefold()
            (repeated if key in seen else seen).add(key)
        return repeated

    def _titles_changed(self) -> None:
        """Workspaces whose title now repeats (or no longer does) show their folder's hint
        (or stop): repaint those rows."""
        repeated = self._repeated_titles()
        if repeated == self._repeated:
            return
        flipped = repeated ^ self._repeated
        self._repeated = repeated
        for ws_id, ws in self._rows.ws.items():
            if ws.title.casefold() in flipped:
                self.changed(self.workspace_index(ws_id))

    # ================================================================= private: rows

    def _children_key(self, parent: Index) -> str | None:
        """The container whose rows are *parent*'s children; None for a chat (no children)."""
        if not parent.isValid():
            return ROOT
        container = self._rows.container(parent.internalId())
        return None if container is None else self._rows.children_of(container, parent.row())

    def _item(self, index: Index) -> Item | None:
        """(kind, id, place) of a row: place is the container it sits in."""
        if not index.isValid():
            return None
        container = self._rows.container(index.internalId())
        return None if container is None else self._rows.item(container, index.row())

    def _title(self, kind: str, key: str) -> str:
        if kind == SECTION:
            return SECTION_TITLES[key]
        if kind == WORKSPACE:
            return self._rows.ws[key].title
        chat: Chat | None = self._registry.chat(key)
        return chat.title if chat is not None else ""


def _page(place: str) -> str | None:
    """The registry's start-up page that holds *place*'s chats (None: the whole load)."""
    return UNGROUPED_PAGE if place == UNGROUPED else None if place in CHAT_SECTIONS else place
