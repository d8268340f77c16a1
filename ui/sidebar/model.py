"""The sidebar as one item model: Pinned, the workspace tree, Ungrouped and Archived.

Four sections at the top level.  Under Workspaces, each top-level workspace holds its folders
(nested workspaces, display order) and then its chats (manual order).  The tree of workspaces
is read once (a thousand records at most); a list of chats is read only when its workspace or
section is expanded (``canFetchMore``/``fetchMore``), and from then on follows the registry's
events as row inserts, removals and moves.  The model resets only when the registry itself
re-read everything (``Reset``, another process wrote).

Events come through the bridge, queued to the GUI thread, so the registry is usually a little
ahead of them.  Reading a list while some of its events are still on their way would count
them twice; so the model also hears each event on the committing thread (one deque append)
and knows how many are in flight.  It reads only when none are, and otherwise does the read
once the queue drains.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Sequence
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
from app.nesting import Rows
from app.records import MISSING_DIR, Chat, Workspace
from app.registry import Registry
from ui.bridge import EventBridge
from ui.sidebar.drops import ModelDrops, folders_in
from ui.sidebar.kinds import (  # noqa: F401 - re-exported: the sidebar's names live here too
    ARCHIVED,
    CHAT,
    CHAT_SECTIONS,
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
from ui.sidebar.updates import ModelUpdates

log = logging.getLogger(__name__)

Index = QModelIndex | QPersistentModelIndex


_DROP = Qt.ItemFlag.ItemIsDropEnabled
_SECTION_FLAGS = Qt.ItemFlag.ItemIsEnabled | _DROP
_WORKSPACE_FLAGS = _SECTION_FLAGS | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsDragEnabled
_LISTED_CHAT_FLAGS = (_SECTION_FLAGS | Qt.ItemFlag.ItemIsSelectable  # Pinned, Archived: no order
                      | Qt.ItemFlag.ItemNeverHasChildren)
_CHAT_FLAGS = _LISTED_CHAT_FLAGS | Qt.ItemFlag.ItemIsDragEnabled

READ_ATTEMPTS = 8  # first reads tried before taking one that changes landed during

_ROOT = ""  # the container of the sections
_FIXED_NUMBERS = {key: n for n, key in enumerate((_ROOT, *SECTIONS), start=1)}
_NO_ROWS = Rows()


class SidebarModel(ModelUpdates, ModelDrops, QAbstractItemModel):
    """The sidebar's rows, over :class:`~app.registry.Registry` reads and bridge events.

    A drop asks for an operation through a signal; the sidebar runs it and the change comes
    back as events, like any other.
    """

    sig_move_chat = Signal(str, int)  # a chat id, its index among its workspace's chats
    sig_move_chat_to = Signal(str, str, int)  # a chat id, another workspace ("": Ungrouped), index
    sig_move_workspace = Signal(str, int)  # a workspace id, its index in the display order
    sig_pin_chat = Signal(str)  # a chat dropped on Pinned
    sig_add_folders = Signal(list)  # local paths dropped from the file manager
    sig_settled = Signal()  # every event heard so far is applied and wanted lists are read

    def __init__(self, registry: Registry, bridge: EventBridge,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._registry = registry
        self._ws: dict[str, Workspace] = {}
        self._parent: dict[str, str | None] = {}
        self._kids: dict[str | None, Rows] = {}  # folders by parent (None: the top level)
        # Chat lists by place (a workspace id, PINNED, UNGROUPED, ARCHIVED); None: not read yet.
        self._lists: dict[str, Rows | None] = {}
        self._home: dict[str, str] = {}  # chat -> the workspace list (or Ungrouped) showing it
        self._wanted: set[str] = set()  # lists to read once no event is in flight
        self._busy = False  # a change is under way: its signals must not start another
        self._verify = False  # the rows may have drifted: compare them at the next pause
        self._cid: dict[str, int] = {}  # container -> the internal id of its children's indexes
        self._container: dict[int, str] = {}
        self._next_cid = len(_FIXED_NUMBERS) + 1
        for key in (_ROOT, *SECTIONS):
            self._number(key)

        # In flight: heard on the committing thread, not yet delivered by the bridge.
        self._pending: deque[ev.Event] = deque()
        self._skip = 0  # of those, how many the first read already covers
        self._subscription = registry.hub.subscribe(self._heard, kinds=ev.REGISTRY_EVENTS)
        self.destroyed.connect(self._subscription.close)
        self._load_consistently()

        bridge.sig_event.connect(self._on_event)
        bridge.sig_reset.connect(self._on_reset)
        bridge.destroyed.connect(self._subscription.close)

    # ================================================================= public

    def detach(self) -> None:
        """Stop hearing the registry (the bridge's signals may still arrive; they are ignored)."""
        self._subscription.close()

    def is_settled(self) -> bool:
        """True when every event heard is applied and no wanted list waits to be read."""
        return not self._pending and not self._wanted and not self._verify

    def is_fetched(self, place: str) -> bool:
        """Whether the chats of *place* (a workspace id, or a chat section) have been read."""
        return self._lists.get(place) is not None

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
        return self._key_in(container, row)

    def item(self, index: Index) -> tuple[str, str, str] | None:
        """(kind, id, place) of a row in one call: *place* is the section or workspace id
        whose rows hold it."""
        return self._item(index)

    def workspace(self, ws_id: str) -> Workspace | None:
        return self._ws.get(ws_id)

    def parent_of(self, ws_id: str) -> str | None:
        return self._parent.get(ws_id)

    def folders_of(self, ws_id: str | None) -> list[str]:
        """A workspace's folders (None: the top-level workspaces), as the rows show them."""
        return list(self._kids.get(ws_id, _NO_ROWS))

    def chats_in(self, place: str) -> list[str] | None:
        """The chat ids a list shows, or None when it was not read yet."""
        rows = self._lists.get(place)
        return None if rows is None else list(rows)

    def section_index(self, section: str) -> QModelIndex:
        return self.createIndex(SECTIONS.index(section), 0, self._cid[_ROOT])

    def workspace_index(self, ws_id: str) -> QModelIndex:
        """The row of a workspace, or an invalid index when the model has no such workspace."""
        if ws_id not in self._ws:
            return QModelIndex()
        parent = self._parent[ws_id]
        container = WORKSPACES if parent is None else parent
        return self.createIndex(self._kids[parent].row_of(ws_id), 0, self._cid[container])

    def chat_index(self, chat_id: str, place: str) -> QModelIndex:
        """The row of a chat in *place*, or an invalid index when that list does not show it."""
        rows = self._lists.get(place)
        if rows is None or chat_id not in rows:
            return QModelIndex()
        return self.createIndex(self._offset(place) + rows.row_of(chat_id), 0, self._cid[place])

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
            return not self._kids.get(None)
        rows = self._lists.get(section)
        if rows is not None:
            return not rows
        if section == ARCHIVED:
            return self._registry.archived_count() == 0
        return self._registry.chat_count(None) == 0

    # ================================================================= Qt: the tree

    def index(self, row: int, column: int = 0, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if column != 0 or row < 0:
            return QModelIndex()
        container = self._children_key(parent)
        if container is None or row >= self._count(container):
            return QModelIndex()
        return self.createIndex(row, 0, self._cid[container])

    def parent(self, child: Index | None = None) -> Any:  # type: ignore[override]
        if child is None:  # QObject.parent()
            return super().parent()
        if not child.isValid():
            return QModelIndex()
        container = self._container.get(child.internalId())
        if container is None or container == _ROOT:
            return QModelIndex()
        if container in SECTIONS:
            return self.section_index(container)
        return self.workspace_index(container)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        if parent.isValid() and parent.column() != 0:
            return 0
        container = self._children_key(parent)
        return 0 if container is None else self._count(container)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 1

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        container = self._children_key(parent)
        if container is None:
            return False
        if container == _ROOT or self._count(container):
            return True
        if container == WORKSPACES:
            return False
        if self._lists.get(container) is not None:
            return False
        if container in CHAT_SECTIONS:
            return not self.is_empty(container)
        try:
            return self._registry.chat_count(container) > 0  # not read: the count says
        except KeyError:  # the registry is ahead and already forgot it: its event is coming
            return False

    def canFetchMore(self, parent: Index) -> bool:
        container = self._children_key(parent)
        return container is not None and container != _ROOT and container != WORKSPACES and \
            self._lists.get(container) is None

    def fetchMore(self, parent: Index) -> None:
        container = self._children_key(parent)
        if container is not None and container not in (_ROOT, WORKSPACES):
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
            ws = self._ws[key]
            if role == ICON_ROLE:
                return "warning" if ws.status == MISSING_DIR else "folder"
            if role == MISSING_ROLE:
                return ws.status == MISSING_DIR
            if role == Qt.ItemDataRole.ToolTipRole:
                if ws.status == MISSING_DIR:
                    return (f"The folder {ws.path} is missing. Use “Move to folder…” to point "
                            "this workspace at its new place.")
                return ws.path
            if role == Qt.ItemDataRole.AccessibleDescriptionRole:
                return "folder missing" if ws.status == MISSING_DIR else ws.path
        elif kind == CHAT:
            if role == ICON_ROLE:
                return {PINNED: "pin", ARCHIVED: "archive"}.get(place, "chat")
            if role == WORKING_ROLE:
                return bool(self._registry.live.kinds(key))
            if role == Qt.ItemDataRole.ToolTipRole:
                return self._title(kind, key)
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        # Called for every row the tree lays out: from the container alone, and constants.
        container = self._container.get(index.internalId()) if index.isValid() else None
        if container is None:
            return _DROP  # the empty space: a folder can land there
        if container == _ROOT:
            return _SECTION_FLAGS
        if container == WORKSPACES:
            return _WORKSPACE_FLAGS
        if container == PINNED or container == ARCHIVED:
            return _LISTED_CHAT_FLAGS
        if container == UNGROUPED or index.row() >= len(self._kids.get(container, _NO_ROWS)):
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
        return self._drop_plan(data, row, parent) is not None

    def dropMimeData(self, data: QMimeData, action: Qt.DropAction, row: int, column: int,
                     parent: Index) -> bool:
        if action == Qt.DropAction.IgnoreAction:
            return True
        folders = folders_in(data)
        if folders:
            self.sig_add_folders.emit(folders)
            return True
        plan = self._drop_plan(data, row, parent)
        if plan is None:
            return False
        plan()  # the rows move when the operation's events say so
        return True

    # ================================================================= private: reading

    def _load_consistently(self) -> None:
        """The tree and Pinned, read while no change lands; the events they cover are skipped."""
        for _attempt in range(READ_ATTEMPTS):
            heard = len(self._pending)
            tree = self._registry.tree()
            pinned = [self._registry.pinned_at(r).id for r in range(self._registry.pinned_count())]
            self._barrier()
            if len(self._pending) == heard:
                break
        else:  # changes keep landing (a writer in a loop): take this read, check it later
            self._drifted("changes landed during every first read")
        self._skip = heard
        self._install_tree(tree)
        self._lists = {ws_id: None for ws_id in self._ws}
        self._lists.update({PINNED: Rows(pinned), UNGROUPED: None, ARCHIVED: None})

    def _install_tree(self, tree: dict[str | None, list[Workspace]]) -> None:
        self._ws, self._parent, self._kids = {}, {}, {}
        for parent, kids in tree.items():
            self._kids[parent] = Rows(ws.id for ws in kids)
            for ws in kids:
                self._ws[ws.id] = ws
                self._parent[ws.id] = parent
        self._kids.setdefault(None, Rows())
        for ws_id in self._ws:
            self._number(ws_id)

    def _fetch(self, place: str) -> bool:
        if self._lists.get(place) is not None:
            return True
        if place not in self._ws and place not in CHAT_SECTIONS:
            self._wanted.discard(place)
            return False
        if self._pending or self._busy:
            # The registry is ahead of the rows, or rows are changing right now (a view
            # asking from inside a change's signals): read once that is over.
            self._wanted.add(place)
            return False
        ids = self._read_list(place)
        self._barrier()
        if self._pending:  # a change landed while reading: what was read may be ahead
            self._wanted.add(place)
            return False
        self._wanted.discard(place)
        self._lists[place] = Rows()  # read: asking again from inside the insert does nothing
        if not ids:
            return True
        first = self._offset(place)
        self._busy = True
        try:
            self.beginInsertRows(self._container_index(place), first, first + len(ids) - 1)
            self._lists[place] = Rows(ids)
            if place != PINNED and place != ARCHIVED:
                self._home.update(dict.fromkeys(ids, place))
            self.endInsertRows()
        finally:
            self._busy = False
        return True

    def _drain(self) -> None:
        """Read the lists asked for while events were in flight or rows were changing."""
        while self._wanted and not self._pending and not self._busy:
            place = min(self._wanted)
            if not self._fetch(place) and place in self._wanted:
                return  # an event came in meanwhile: after it

    def _read_list(self, place: str) -> list[str]:
        registry = self._registry
        if place == PINNED:
            return [registry.pinned_at(r).id for r in range(registry.pinned_count())]
        if place == ARCHIVED:
            return [registry.archived_at(r).id for r in range(registry.archived_count())]
        ws_id = None if place == UNGROUPED else place
        return [registry.chat_at(ws_id, r).id for r in range(registry.chat_count(ws_id))]

    def _barrier(self) -> None:
        # The registry delivers a change's events while it holds its lock, and every locked
        # read waits for it: after this, whatever a change in progress emits has been heard.
        self._registry.child_count(None)

    # ================================================================= private: rows

    def _number(self, key: str) -> int:
        """The internal id that *key*'s children carry in their indexes (never reused)."""
        cid = self._cid.get(key)
        if cid is None:
            cid = _FIXED_NUMBERS.get(key, 0)
            if not cid:
                cid, self._next_cid = self._next_cid, self._next_cid + 1
            self._cid[key] = cid
            self._container[cid] = key
        return cid

    def _forget_number(self, key: str) -> None:
        cid = self._cid.pop(key, None)
        if cid is not None:
            del self._container[cid]

    def _count(self, container: str) -> int:
        if container == _ROOT:
            return len(SECTIONS)
        if container == WORKSPACES:
            return len(self._kids[None])
        rows = self._lists.get(container)
        chats = 0 if rows is None else len(rows)
        if container in CHAT_SECTIONS:
            return chats
        return len(self._kids.get(container, _NO_ROWS)) + chats

    def _offset(self, place: str) -> int:
        """The row of a list's first chat in its container: a workspace's folders come first."""
        return 0 if place in CHAT_SECTIONS else len(self._kids.get(place, _NO_ROWS))

    def _children_key(self, parent: Index) -> str | None:
        """The container whose rows are *parent*'s children; None for a chat (no children)."""
        if not parent.isValid():
            return _ROOT
        container = self._container.get(parent.internalId())
        if container is None or container in CHAT_SECTIONS:
            return None  # a chat of Pinned, Ungrouped or Archived
        if container == _ROOT or container == WORKSPACES:
            return self._key_in(container, parent.row())
        folders = self._kids.get(container, _NO_ROWS)
        row = parent.row()
        return folders.at(row) if 0 <= row < len(folders) else None  # else a chat

    def _item(self, index: Index) -> tuple[str, str, str] | None:
        """(kind, id, place) of a row: place is the container it sits in."""
        if not index.isValid():
            return None
        container = self._container.get(index.internalId())
        if container is None:
            return None
        key = self._key_in(container, index.row())
        if key is None:
            return None
        if container == _ROOT:
            return SECTION, key, _ROOT
        if container == WORKSPACES or key in self._ws and self._parent.get(key) == container:
            return WORKSPACE, key, container
        return CHAT, key, container

    def _key_in(self, container: str, row: int) -> str | None:
        try:
            if container == _ROOT:
                return SECTIONS[row]
            if container == WORKSPACES:
                return self._kids[None].at(row)
            folders = (_NO_ROWS if container in CHAT_SECTIONS
                       else self._kids.get(container, _NO_ROWS))
            if row < len(folders):
                return folders.at(row)
            rows = self._lists.get(container)
            return rows.at(row - len(folders)) if rows is not None else None
        except (IndexError, KeyError):  # an index kept from before a change
            return None

    def _container_index(self, container: str | None) -> QModelIndex:
        if container is None or container == WORKSPACES:
            return self.section_index(WORKSPACES)
        if container == _ROOT:
            return QModelIndex()
        if container in SECTIONS:
            return self.section_index(container)
        return self.workspace_index(container)

    def _title(self, kind: str, key: str) -> str:
        if kind == SECTION:
            return SECTION_TITLES[key]
        if kind == WORKSPACE:
            return self._ws[key].title
        chat: Chat | None = self._registry.chat(key)
        return chat.title if chat is not None else ""

    def _changed(self, index: QModelIndex) -> None:
        if index.isValid():
            self.dataChanged.emit(index, index)

    def _chat_changed(self, chat_id: str) -> None:
        for place in (self._home.get(chat_id), PINNED, ARCHIVED):
            if place is not None:
                self._changed(self.chat_index(chat_id, place))

    # ----------------------------------------------------------------- chat rows

    def _place(self, ws_id: str | None) -> str:
        return UNGROUPED if ws_id is None else ws_id

    def _insert_chat(self, place: str, row: int, chat_id: str) -> None:
        rows = self._lists.get(place)
        if rows is None:
            return  # not read yet: it will be, whole, when someone looks
        if chat_id in rows or not 0 <= row <= len(rows):
            self._drifted(f"chat {chat_id} cannot go to row {row} of {place}")
            return
        first = self._offset(place) + row
        self.beginInsertRows(self._container_index(place), first, first)
        rows.insert(row, chat_id)
        if place not in (PINNED, ARCHIVED):
            self._home[chat_id] = place
        self.endInsertRows()

    def _remove_chat(self, place: str, row: int, chat_id: str) -> None:
        rows = self._lists.get(place)
        if rows is None:
            return
        if chat_id not in rows:
            self._drifted(f"chat {chat_id} is not in {place}")
            return
        row = rows.row_of(chat_id)  # the event's row; read back so a drift cannot crash
        first = self._offset(place) + row
        self.beginRemoveRows(self._container_index(place), first, first)
        rows.remove(chat_id)
        if self._home.get(chat_id) == place:
            del self._home[chat_id]
        self.endRemoveRows()
