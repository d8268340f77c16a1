"""What a drop on the sidebar asks for: a chat reordered, moved into another workspace or
pinned, a workspace moved in the list, folders from the file manager added (a mixin of
:class:`~ui.sidebar.model.SidebarModel`).  Nothing moves here: the plan emits the model's
signal, the sidebar runs the operation, and its events move the rows."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

from PySide6.QtCore import QMimeData, QModelIndex, QPersistentModelIndex, QUrl

from ui.sidebar.kinds import (
    ARCHIVED,
    CHAT,
    CHAT_SECTIONS,
    MIME_TYPE,
    PINNED,
    SECTION,
    UNGROUPED,
    WORKSPACE,
    WORKSPACES,
)

Index = QModelIndex | QPersistentModelIndex


class ModelDrops:
    """The drop half of the sidebar model."""

    # ================================================================= private: drops

    def _drop_plan(self, data: QMimeData, row: int, parent: Index) -> Callable[[], None] | None:
        """What dropping our own item at (*row*, *parent*) asks for, or None if it cannot land."""
        if not data.hasFormat(MIME_TYPE):
            return None
        try:
            items = json.loads(bytes(data.data(MIME_TYPE).data()).decode())
            (item,) = items
            kind, item_id, origin = item["kind"], item["id"], item["place"]
        except (ValueError, TypeError, KeyError):
            return None
        target = self._item(parent)
        if kind == CHAT:
            if target is not None and (target[:2] == (SECTION, PINNED) or target[2] == PINNED):
                chat = self._registry.chat(item_id)
                if chat is None or chat.pinned or chat.archived:
                    return None
                return lambda: self.sig_pin_chat.emit(item_id)
            index = self._chat_drop_index(item_id, origin, row, target)
            if index is not None:
                return lambda: self.sig_move_chat.emit(item_id, index)
            elsewhere = self._chat_move_target(item_id, origin, row, target)
            if elsewhere is None:
                return None
            ws_id, at = elsewhere
            return lambda: self.sig_move_chat_to.emit(item_id, ws_id or "", at)
        if kind == WORKSPACE:
            index = self._workspace_drop_index(item_id, row, target)
            if index is None:
                return None
            return lambda: self.sig_move_workspace.emit(item_id, index)
        return None

    def _chat_drop_index(self, chat_id: str, origin: str, row: int,
                         target: tuple[str, str, str] | None) -> int | None:
        """Where a chat dragged within its workspace lands, as ``move_chat``'s index."""
        rows = self._lists.get(origin)
        if origin in CHAT_SECTIONS or rows is None or chat_id not in rows or target is None:
            return None
        first = self._offset(origin)
        if row >= 0 and target[:2] == (WORKSPACE, origin):  # between two rows of it
            before = row - first
        elif row < 0 and target[0] == CHAT and target[2] == origin:  # onto one of its chats
            before = rows.row_of(target[1])
            before += before > rows.row_of(chat_id)  # dragged down: it goes after that one
        else:
            return None
        if before < 0:
            return None
        now = rows.row_of(chat_id)
        index = before - 1 if before > now else before
        return min(index, len(rows) - 1)

    def _chat_move_target(self, chat_id: str, origin: str, row: int,
                          target: tuple[str, str, str] | None
                          ) -> tuple[str | None, int] | None:
        """Where a chat dragged out of its workspace (or Ungrouped) into another one lands:
        (workspace id, None for Ungrouped; index among its chats), or None."""
        if target is None or origin in (PINNED, ARCHIVED):
            return None
        chat = self._registry.chat(chat_id)
        if chat is None or chat.archived:
            return None
        kind, item_id, place = target
        if kind == SECTION and item_id == UNGROUPED or kind == CHAT and place == UNGROUPED:
            return (None, 0) if origin != UNGROUPED else None
        if kind == WORKSPACE and item_id != origin:
            rows = self._lists.get(item_id)
            if row < 0 or rows is None:
                return item_id, 0  # onto the workspace: at the top of its chats
            return item_id, max(0, min(row - self._offset(item_id), len(rows)))
        if kind == CHAT and place in self._ws and place != origin:
            rows = self._lists.get(place)
            at = rows.row_of(item_id) if rows is not None and item_id in rows else 0
            return place, at
        return None

    def _workspace_drop_index(self, ws_id: str, row: int,
                              target: tuple[str, str, str] | None) -> int | None:
        """Where a workspace dragged among its siblings lands, as ``move_workspace``'s index."""
        if ws_id not in self._ws or target is None:
            return None
        parent = self._parent[ws_id]
        container = WORKSPACES if parent is None else parent
        siblings = self._kids[parent]
        if row >= 0 and target[1] == container and target[0] != CHAT:  # between two rows
            before = row
        elif row < 0 and target[0] == WORKSPACE and target[2] == container:  # onto a sibling
            before = siblings.row_of(target[1])
            before += before > siblings.row_of(ws_id)
        else:
            return None
        if before > len(siblings):
            return None  # among the chats: folders come first
        others = [s for s in siblings if s != ws_id]
        before -= before > siblings.row_of(ws_id)
        order = [ws.id for ws in self._registry.workspaces() if ws.id != ws_id]
        try:
            if before < len(others):
                return order.index(others[before])
            return order.index(others[-1]) + 1 if others else 0
        except ValueError:  # the registry moved on meanwhile; the drop is not worth guessing
            return None


def folders_in(data: QMimeData) -> list[str]:
    """The local paths of a drop from the file manager (the core decides what they are)."""
    if not data.hasUrls():
        return []
    urls: Iterable[QUrl] = data.urls()
    return [str(Path(url.toLocalFile())) for url in urls if url.isLocalFile()]
