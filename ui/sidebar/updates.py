"""How the sidebar follows the registry: which events are still on their way
(:class:`InFlight`), and each typed event as row inserts, removals and moves on the rows
(:class:`RowUpdates`), announced through the item model that shows them."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QModelIndex, QPersistentModelIndex

from app import events as ev
from app.records import Chat, ChatListing
from app.store.registry.nesting import Rows
from app.store.registry.registry import Registry
from ui.sidebar.kinds import ARCHIVED, CHAT_SECTIONS, PINNED, UNGROUPED
from ui.sidebar.rows import SidebarRows, Tree, place_of_workspace

log = logging.getLogger("ui.sidebar.model")

Index = QModelIndex | QPersistentModelIndex


class InFlight:
    """Events heard on the committing thread that the bridge has not delivered yet.

    Events come through the bridge, queued to the GUI thread, so the registry is usually a
    little ahead of them.  Reading a list while some of its events are still on their way
    would count them twice; so the model also hears each event on the committing thread (one
    deque append), reads only when none are in flight, and applies a delivered event only
    once it is matched with the one heard.
    """

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._pending: deque[ev.Event] = deque()
        self.skip = 0  # of those, how many the first read already covers

    def __len__(self) -> int:
        return len(self._pending)

    def heard(self, event: ev.Event) -> None:
        # On the committing thread, under the registry's lock: only note it.
        self._pending.append(event)

    def arrived(self, event: ev.Event | None) -> bool:
        """Match a delivered event (None: a Reset) with the one heard; True to apply it."""
        if not self._heads(event):
            self.barrier()  # the change may still be delivering: our listener comes after
            if not self._heads(event):
                return False  # emitted before this model listened: its first read covers it
        self._pending.popleft()
        if self.skip:
            self.skip -= 1
            return False
        return True

    def barrier(self) -> None:
        # The registry delivers a change's events while it holds its lock, and every locked
        # read waits for it: after this, whatever a change in progress emits has been heard.
        self._registry.child_count(None)

    def _heads(self, event: ev.Event | None) -> bool:
        if not self._pending:
            return False
        head = self._pending[0]
        return isinstance(head, ev.Reset) if event is None else head is event


class RowModel(Protocol):
    """What the updates need of the item model that shows the rows."""

    def beginInsertRows(self, parent: Index, first: int, last: int, /) -> None: ...
    def endInsertRows(self, /) -> None: ...
    def beginRemoveRows(self, parent: Index, first: int, last: int, /) -> None: ...
    def endRemoveRows(self, /) -> None: ...
    def beginMoveRows(self, sourceParent: Index, sourceFirst: int, sourceLast: int,
                      destinationParent: Index, destinationRow: int, /) -> bool: ...
    def endMoveRows(self, /) -> None: ...
    def beginResetModel(self, /) -> None: ...
    def endResetModel(self, /) -> None: ...
    def container_index(self, container: str | None) -> QModelIndex: ...
    def workspace_index(self, ws_id: str) -> QModelIndex: ...
    def changed(self, index: QModelIndex) -> None: ...
    def chat_changed(self, chat_id: str) -> None: ...
    def drifted(self, why: str) -> None: ...


class RowUpdates:
    """Applies the registry's events to *rows*, each change announced on *model*."""

    def __init__(self, rows: SidebarRows, model: RowModel) -> None:
        self._rows = rows
        self._model = model

    # ================================================================= public

    def apply(self, event: ev.Event) -> bool:
        """Apply a registry event; False when it is not one that moves rows."""
        handler = _HANDLERS.get(type(event))
        if handler is None:
            return False
        handler(self, event)
        return True

    def insert_chat(self, place: str, row: int, chat_id: str) -> None:
        rows = self._rows.lists.get(place)
        if rows is None:
            return  # not read yet: it will be, whole, when someone looks
        if chat_id in rows or not 0 <= row <= len(rows):
            self._model.drifted(f"chat {chat_id} cannot go to row {row} of {place}")
            return
        first = self._rows.offset(place) + row
        self._model.beginInsertRows(self._model.container_index(place), first, first)
        rows.insert(row, chat_id)
        if place not in (PINNED, ARCHIVED):
            self._rows.home[chat_id] = place
        self._model.endInsertRows()

    def remove_chat(self, place: str, row: int, chat_id: str) -> None:
        rows = self._rows.lists.get(place)
        if rows is None:
            return
        if chat_id not in rows:
            self._model.drifted(f"chat {chat_id} is not in {place}")
            return
        row = rows.row_of(chat_id)  # the event's row; read back so a drift cannot crash
        first = self._rows.offset(place) + row
        self._model.beginRemoveRows(self._model.container_index(place), first, first)
        rows.remove(chat_id)
        if self._rows.home.get(chat_id) == place:
            del self._rows.home[chat_id]
        self._model.endRemoveRows()

    def reset_to(self, tree: Tree, listing: ChatListing) -> None:
        """Everything again, from the state the registry re-read; lists read before stay read."""
        rows, model = self._rows, self._model
        was_read = rows.read_places()
        model.beginResetModel()
        old = set(rows.ws)
        rows.install_tree(tree)
        for ws_id in old - set(rows.ws):
            rows.forget_number(ws_id)
        by_place: dict[str, list[Chat]] = {ws.id: chats for ws, chats in listing.workspaces}
        by_place.update({PINNED: listing.pinned, UNGROUPED: listing.ungrouped,
                         ARCHIVED: listing.archived})
        rows.lists = {place: None for place in (*rows.ws, *CHAT_SECTIONS)}
        rows.home = {}
        for place in (was_read | {PINNED}) & set(rows.lists):
            rows.install_list(place, [c.id for c in by_place.get(place, [])])
        model.endResetModel()

    # ================================================================= workspaces

    def _on_workspace_added(self, e: ev.WorkspaceAdded) -> None:
        rows, model = self._rows, self._model
        kids = rows.kids.setdefault(e.parent, Rows())
        if e.id in rows.ws or not 0 <= e.row <= len(kids) or (
                e.parent is not None and e.parent not in rows.ws):
            model.drifted(f"workspace {e.id} cannot be added at row {e.row} of {e.parent}")
            return
        rows.number(e.id)
        model.beginInsertRows(model.container_index(e.parent), e.row, e.row)
        kids.insert(e.row, e.id)
        rows.ws[e.id] = e.record
        rows.parent[e.id] = e.parent
        rows.lists[e.id] = Rows()  # new: its chats (a move to folder) arrive as events
        model.endInsertRows()

    def _on_workspace_removed(self, e: ev.WorkspaceRemoved) -> None:
        rows, model = self._rows, self._model
        kids = rows.kids.get(e.parent)
        if kids is None or e.id not in kids:
            model.drifted(f"workspace {e.id} is not under {e.parent}")
            return
        row = kids.row_of(e.id)
        model.beginRemoveRows(model.container_index(e.parent), row, row)
        kids.remove(e.id)
        del rows.ws[e.id], rows.parent[e.id]
        for chat_id in rows.lists.pop(e.id, None) or ():  # none left, by the event's promise
            rows.home.pop(chat_id, None)
        rows.kids.pop(e.id, None)
        model.endRemoveRows()
        rows.forget_number(e.id)

    def _on_workspace_changed(self, e: ev.WorkspaceChanged) -> None:
        if e.id in self._rows.ws:
            self._rows.ws[e.id] = e.record
            self._model.changed(self._model.workspace_index(e.id))

    def _on_workspace_moved(self, e: ev.WorkspaceMoved) -> None:
        if e.old_parent == e.new_parent and e.row == e.old_row:
            return  # moved past workspaces of other parents: the tree is the same
        rows, model = self._rows, self._model
        source = rows.kids.get(e.old_parent, Rows())
        target = rows.kids.setdefault(e.new_parent, Rows())
        if e.id not in source or not 0 <= e.row <= len(target) - (target is source) or (
                e.new_parent is not None and e.new_parent not in rows.ws):
            model.drifted(f"workspace {e.id} cannot move from {e.old_parent} to {e.new_parent}")
            return

        def put() -> None:
            target.insert(e.row, e.id)
            rows.parent[e.id] = e.new_parent

        self._move(model.container_index(e.old_parent), source.row_of(e.id),
                   model.container_index(e.new_parent), e.row,
                   same=e.old_parent == e.new_parent, take=lambda: source.remove(e.id), put=put)

    def _move(self, source: QModelIndex, row: int, target: QModelIndex, to: int, *, same: bool,
              take: Callable[[], object], put: Callable[[], object]) -> None:
        """Move one row; *to* counts after it left (the events' way), Qt counts before."""
        model = self._model
        before = to + 1 if same and to > row else to
        if model.beginMoveRows(source, row, row, target, before):
            take()
            put()
            model.endMoveRows()
            return
        log.warning("sidebar: Qt refused a move of row %d to %d; removing and inserting", row, to)
        model.beginRemoveRows(source, row, row)
        take()
        model.endRemoveRows()
        model.beginInsertRows(target, to, to)
        put()
        model.endInsertRows()

    # ================================================================= chats

    def _on_chat_added(self, e: ev.ChatAdded) -> None:
        self.insert_chat(place_of_workspace(e.workspace), e.row, e.id)

    def _on_chat_changed(self, e: ev.ChatChanged) -> None:
        self._model.chat_changed(e.id)

    def _on_chat_moved(self, e: ev.ChatMoved) -> None:
        rows = self._rows.lists.get(e.workspace)
        if rows is None or e.new_row == (rows.row_of(e.id) if e.id in rows else -1):
            return
        if e.id not in rows or not 0 <= e.new_row < len(rows):
            self._model.drifted(f"chat {e.id} cannot move to row {e.new_row} of {e.workspace}")
            return
        first = self._rows.offset(e.workspace)
        container = self._model.container_index(e.workspace)
        moved = rows
        self._move(container, first + rows.row_of(e.id), container, first + e.new_row,
                   same=True, take=lambda: moved.remove(e.id),
                   put=lambda: moved.insert(e.new_row, e.id))

    def _on_chat_pinned(self, e: ev.ChatPinned) -> None:
        self.insert_chat(PINNED, e.row, e.id)

    def _on_chat_unpinned(self, e: ev.ChatUnpinned) -> None:
        self.remove_chat(PINNED, e.row, e.id)

    def _on_chat_archived(self, e: ev.ChatArchived) -> None:
        self.remove_chat(place_of_workspace(e.workspace), e.row, e.id)
        self.insert_chat(ARCHIVED, e.archived_row, e.id)

    def _on_chat_unarchived(self, e: ev.ChatUnarchived) -> None:
        self.remove_chat(ARCHIVED, e.archived_row, e.id)
        self.insert_chat(place_of_workspace(e.workspace), e.row, e.id)

    def _on_chat_removed(self, e: ev.ChatRemoved) -> None:
        if e.archived_row is not None:
            self.remove_chat(ARCHIVED, e.archived_row, e.id)
        elif e.row is not None:
            self.remove_chat(place_of_workspace(e.workspace), e.row, e.id)

    def _on_chats_regrouped(self, e: ev.ChatsRegrouped) -> None:
        for chat_id in e.ids:  # each leaves the list that shows it (if one was read)
            place = self._rows.home.get(chat_id)
            if place is not None:
                self.remove_chat(place, 0, chat_id)
        to = place_of_workspace(e.to)
        for chat_id, row in zip(e.ids, e.rows, strict=True):
            if row is not None:
                self.insert_chat(to, row, chat_id)


_HANDLERS: dict[type[ev.Event], Callable[[RowUpdates, Any], None]] = {
    ev.WorkspaceAdded: RowUpdates._on_workspace_added,
    ev.WorkspaceRemoved: RowUpdates._on_workspace_removed,
    ev.WorkspaceChanged: RowUpdates._on_workspace_changed,
    ev.WorkspaceMoved: RowUpdates._on_workspace_moved,
    ev.ChatAdded: RowUpdates._on_chat_added,
    ev.ChatChanged: RowUpdates._on_chat_changed,
    ev.ChatMoved: RowUpdates._on_chat_moved,
    ev.ChatPinned: RowUpdates._on_chat_pinned,
    ev.ChatUnpinned: RowUpdates._on_chat_unpinned,
    ev.ChatArchived: RowUpdates._on_chat_archived,
    ev.ChatUnarchived: RowUpdates._on_chat_unarchived,
    ev.ChatsRegrouped: RowUpdates._on_chats_regrouped,
    ev.ChatRemoved: RowUpdates._on_chat_removed,
}
