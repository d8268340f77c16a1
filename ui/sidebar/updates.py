"""How the sidebar model follows the registry: each typed event as row inserts, removals and
moves (a mixin of :class:`~ui.sidebar.model.SidebarModel`, which holds the rows)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex

from app import events as ev
from app.nesting import Rows
from app.records import Chat
from ui.bridge import Snapshot
from ui.sidebar.kinds import ARCHIVED, CHAT_SECTIONS, PINNED, UNGROUPED

log = logging.getLogger("ui.sidebar.model")


class ModelUpdates:
    """The event half of the sidebar model."""

    # ================================================================= private: events

    def _heard(self, event: ev.Event) -> None:
        # On the committing thread, under the registry's lock: only note it.
        self._pending.append(event)

    def _arrived(self, event: ev.Event | None) -> bool:
        """Match a delivered event (None: a Reset) with the one heard; True to apply it."""
        if not self._heads(event):
            self._barrier()  # the change may still be delivering: our listener comes after
            if not self._heads(event):
                return False  # emitted before this model listened: its first read covers it
        self._pending.popleft()
        if self._skip:
            self._skip -= 1
            return False
        return True

    def _heads(self, event: ev.Event | None) -> bool:
        if not self._pending:
            return False
        head = self._pending[0]
        return isinstance(head, ev.Reset) if event is None else head is event

    def _on_event(self, event: ev.Event) -> None:
        if isinstance(event, (ev.WorkStarted, ev.WorkEnded)):
            self._chat_changed(event.chat)
            return
        handler = self._HANDLERS.get(type(event))
        if handler is None:
            return  # a Reset comes with its snapshot (sig_reset); other stores are not ours
        if self._arrived(event):
            self._busy = True
            try:
                handler(self, event)
            finally:
                self._busy = False
        self._after_event()

    def _after_event(self) -> None:
        self._drain()
        if self._verify and not self._pending and not self._busy:
            self._check_rows()
        if self.is_settled():
            self.sig_settled.emit()

    def _drifted(self, why: str) -> None:
        """Something did not fit (it never should): compare with the registry when it pauses."""
        if not self._verify:
            log.warning("sidebar: %s; the rows are compared with the registry at its next pause",
                        why)
        self._verify = True

    def _check_rows(self) -> None:
        """Compare every row with a fresh read; re-read everything (a reset) if they differ."""
        snapshot = Snapshot(tree=self._registry.tree(), chats=self._registry.chat_listing())
        self._barrier()
        if self._pending:
            return  # a change landed meanwhile: at the next pause
        self._verify = False
        listing = snapshot.chats
        lists: dict[str, list[str]] = {ws.id: [c.id for c in chats]
                                       for ws, chats in listing.workspaces}
        lists.update({PINNED: [c.id for c in listing.pinned],
                      UNGROUPED: [c.id for c in listing.ungrouped],
                      ARCHIVED: [c.id for c in listing.archived]})
        same = (
            {p: [w.id for w in kids] for p, kids in snapshot.tree.items() if kids}
            == {p: list(kids) for p, kids in self._kids.items() if kids}
            and self._ws == {w.id: w for kids in snapshot.tree.values() for w in kids}
            and all(list(rows) == lists.get(place) for place, rows in self._lists.items()
                    if rows is not None)
        )
        if same:
            return
        log.warning("sidebar: the rows drifted from the registry; reading everything again")
        self._busy = True
        try:
            self._reset_to(snapshot)
        finally:
            self._busy = False

    # ----------------------------------------------------------------- workspaces

    def _on_workspace_added(self, e: ev.WorkspaceAdded) -> None:
        kids = self._kids.setdefault(e.parent, Rows())
        if e.id in self._ws or not 0 <= e.row <= len(kids) or (
                e.parent is not None and e.parent not in self._ws):
            self._drifted(f"workspace {e.id} cannot be added at row {e.row} of {e.parent}")
            return
        self._number(e.id)
        container = self._container_index(e.parent)
        self.beginInsertRows(container, e.row, e.row)
        kids.insert(e.row, e.id)
        self._ws[e.id] = e.record
        self._parent[e.id] = e.parent
        self._lists[e.id] = Rows()  # new: its chats (a move to folder) arrive as events
        self.endInsertRows()

    def _on_workspace_removed(self, e: ev.WorkspaceRemoved) -> None:
        kids = self._kids.get(e.parent)
        if kids is None or e.id not in kids:
            self._drifted(f"workspace {e.id} is not under {e.parent}")
            return
        row = kids.row_of(e.id)
        self.beginRemoveRows(self._container_index(e.parent), row, row)
        kids.remove(e.id)
        del self._ws[e.id], self._parent[e.id]
        for chat_id in self._lists.pop(e.id, None) or ():  # none left, by the event's promise
            self._home.pop(chat_id, None)
        self._kids.pop(e.id, None)
        self._wanted.discard(e.id)
        self.endRemoveRows()
        self._forget_number(e.id)

    def _on_workspace_changed(self, e: ev.WorkspaceChanged) -> None:
        if e.id in self._ws:
            self._ws[e.id] = e.record
            self._changed(self.workspace_index(e.id))

    def _on_workspace_moved(self, e: ev.WorkspaceMoved) -> None:
        if e.old_parent == e.new_parent and e.row == e.old_row:
            return  # moved past workspaces of other parents: the tree is the same
        source = self._kids.get(e.old_parent, Rows())
        target = self._kids.setdefault(e.new_parent, Rows())
        if e.id not in source or not 0 <= e.row <= len(target) - (target is source) or (
                e.new_parent is not None and e.new_parent not in self._ws):
            self._drifted(f"workspace {e.id} cannot move from {e.old_parent} to {e.new_parent}")
            return

        def put() -> None:
            target.insert(e.row, e.id)
            self._parent[e.id] = e.new_parent

        self._move(self._container_index(e.old_parent), source.row_of(e.id),
                   self._container_index(e.new_parent), e.row,
                   same=e.old_parent == e.new_parent, take=lambda: source.remove(e.id), put=put)

    def _move(self, source: QModelIndex, row: int, target: QModelIndex, to: int, *, same: bool,
              take: Callable[[], object], put: Callable[[], object]) -> None:
        """Move one row; *to* counts after it left (the events' way), Qt counts before."""
        before = to + 1 if same and to > row else to
        if self.beginMoveRows(source, row, row, target, before):
            take()
            put()
            self.endMoveRows()
            return
        log.warning("sidebar: Qt refused a move of row %d to %d; removing and inserting", row, to)
        self.beginRemoveRows(source, row, row)
        take()
        self.endRemoveRows()
        self.beginInsertRows(target, to, to)
        put()
        self.endInsertRows()

    # ----------------------------------------------------------------- chats

    def _on_chat_added(self, e: ev.ChatAdded) -> None:
        self._insert_chat(self._place(e.workspace), e.row, e.id)

    def _on_chat_changed(self, e: ev.ChatChanged) -> None:
        self._chat_changed(e.id)

    def _on_chat_moved(self, e: ev.ChatMoved) -> None:
        rows = self._lists.get(e.workspace)
        if rows is None or e.new_row == (rows.row_of(e.id) if e.id in rows else -1):
            return
        if e.id not in rows or not 0 <= e.new_row < len(rows):
            self._drifted(f"chat {e.id} cannot move to row {e.new_row} of {e.workspace}")
            return
        first = self._offset(e.workspace)
        container = self._container_index(e.workspace)
        self._move(container, first + rows.row_of(e.id), container, first + e.new_row,
                   same=True, take=lambda: rows.remove(e.id),
                   put=lambda: rows.insert(e.new_row, e.id))

    def _on_chat_pinned(self, e: ev.ChatPinned) -> None:
        self._insert_chat(PINNED, e.row, e.id)

    def _on_chat_unpinned(self, e: ev.ChatUnpinned) -> None:
        self._remove_chat(PINNED, e.row, e.id)

    def _on_chat_archived(self, e: ev.ChatArchived) -> None:
        self._remove_chat(self._place(e.workspace), e.row, e.id)
        self._insert_chat(ARCHIVED, e.archived_row, e.id)

    def _on_chat_unarchived(self, e: ev.ChatUnarchived) -> None:
        self._remove_chat(ARCHIVED, e.archived_row, e.id)
        self._insert_chat(self._place(e.workspace), e.row, e.id)

    def _on_chats_regrouped(self, e: ev.ChatsRegrouped) -> None:
        for chat_id in e.ids:  # each leaves the list that shows it (if one was read)
            place = self._home.get(chat_id)
            if place is not None:
                self._remove_chat(place, 0, chat_id)
        to = self._place(e.to)
        for chat_id, row in zip(e.ids, e.rows, strict=True):
            if row is not None:
                self._insert_chat(to, row, chat_id)

    # ----------------------------------------------------------------- another process

    def _on_reset(self, snapshot: Snapshot) -> None:
        if self._arrived(None):
            self._busy = True
            try:
                self._reset_to(snapshot)
            finally:
                self._busy = False
        self._after_event()

    def _reset_to(self, snapshot: Snapshot) -> None:
        """Everything again, from the state the registry re-read; lists read before stay read."""
        was_read = {place for place, rows in self._lists.items() if rows is not None}
        listing = snapshot.chats
        self.beginResetModel()
        old = set(self._ws)
        self._install_tree(snapshot.tree)
        for ws_id in old - set(self._ws):
            self._forget_number(ws_id)
        by_place: dict[str, list[Chat]] = {ws.id: chats for ws, chats in listing.workspaces}
        by_place.update({PINNED: listing.pinned, UNGROUPED: listing.ungrouped,
                         ARCHIVED: listing.archived})
        self._lists = {place: None for place in (*self._ws, *CHAT_SECTIONS)}
        self._home = {}
        self._wanted &= set(self._lists)
        for place in (was_read | {PINNED}) & set(self._lists):
            ids = [c.id for c in by_place.get(place, [])]
            self._lists[place] = Rows(ids)
            if place not in (PINNED, ARCHIVED):
                self._home.update(dict.fromkeys(ids, place))
        self.endResetModel()


    _HANDLERS: dict[type[ev.Event], Callable[[Any, Any], None]] = {
        ev.WorkspaceAdded: _on_workspace_added,
        ev.WorkspaceRemoved: _on_workspace_removed,
        ev.WorkspaceChanged: _on_workspace_changed,
        ev.WorkspaceMoved: _on_workspace_moved,
        ev.ChatAdded: _on_chat_added,
        ev.ChatChanged: _on_chat_changed,
        ev.ChatMoved: _on_chat_moved,
        ev.ChatPinned: _on_chat_pinned,
        ev.ChatUnpinned: _on_chat_unpinned,
        ev.ChatArchived: _on_chat_archived,
        ev.ChatUnarchived: _on_chat_unarchived,
        ev.ChatsRegrouped: _on_chats_regrouped,
    }
