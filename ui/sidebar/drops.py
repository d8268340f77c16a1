"""What a drop on the sidebar asks for: a chat reordered, moved into another workspace or
pinned, a workspace moved in the list, folders from the file manager added.  Nothing moves
here: :func:`plan_drop` says what the drop asks for, the model emits it, the sidebar runs the
operation, and its events move the rows."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QMimeData, QUrl

from app.store.registry.registry import Registry
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
from ui.sidebar.rows import Item, SidebarRows

PIN_CHAT, MOVE_CHAT, MOVE_CHAT_TO, MOVE_WORKSPACE = (
    "pin_chat", "move_chat", "move_chat_to", "move_workspace")


@dataclass(frozen=True, slots=True)
class Drop:
    """One of the sidebar's operations, as a drop asks for it."""

    action: str  # PIN_CHAT, MOVE_CHAT, MOVE_CHAT_TO or MOVE_WORKSPACE
    item_id: str  # the chat or workspace dropped
    index: int = 0  # where it goes among its new siblings (not for PIN_CHAT)
    ws_id: str = ""  # MOVE_CHAT_TO: the workspace it goes into ("": Ungrouped)


def plan_drop(rows: SidebarRows, registry: Registry, data: QMimeData, row: int,
              target: Item | None) -> Drop | None:
    """What dropping our own item at *row* of *target* (the row dropped on or between the
    children of; None: the empty space) asks for, or None if it cannot land."""
    if not data.hasFormat(MIME_TYPE):
        return None
    try:
        items = json.loads(bytes(data.data(MIME_TYPE).data()).decode())
        (item,) = items
        kind, item_id, origin = item["kind"], item["id"], item["place"]
    except (ValueError, TypeError, KeyError):
        return None
    if kind == CHAT:
        if target is not None and (target[:2] == (SECTION, PINNED) or target[2] == PINNED):
            chat = registry.chat(item_id)
            if chat is None or chat.pinned or chat.archived:
                return None
            return Drop(PIN_CHAT, item_id)
        index = _chat_drop_index(rows, item_id, origin, row, target)
        if index is not None:
            return Drop(MOVE_CHAT, item_id, index)
        elsewhere = _chat_move_target(rows, registry, item_id, origin, row, target)
        if elsewhere is None:
            return None
        ws_id, at = elsewhere
        return Drop(MOVE_CHAT_TO, item_id, at, ws_id or "")
    if kind == WORKSPACE:
        index = _workspace_drop_index(rows, registry, item_id, row, target)
        return Drop(MOVE_WORKSPACE, item_id, index) if index is not None else None
    return None


def folders_in(data: QMimeData) -> list[str]:
    """The local paths of a drop from the file manager (the core decides what they are)."""
    if not data.hasUrls():
        return []
    urls: Iterable[QUrl] = data.urls()
    return [str(Path(url.toLocalFile())) for url in urls if url.isLocalFile()]


def _chat_drop_index(rows: SidebarRows, chat_id: str, origin: str, row: int,
                     target: Item | None) -> int | None:
    """Where a chat dragged within its workspace lands, as ``move_chat``'s index."""
    chats = rows.lists.get(origin)
    if origin in CHAT_SECTIONS or chats is None or chat_id not in chats or target is None:
        return None
    first = rows.offset(origin)
    if row >= 0 and target[:2] == (WORKSPACE, origin):  # between two rows of it
        before = row - first
    elif row < 0 and target[0] == CHAT and target[2] == origin:  # onto one of its chats
        before = chats.row_of(target[1])
        before += before > chats.row_of(chat_id)  # dragged down: it goes after that one
    else:
        return None
    if before < 0:
        return None
    now = chats.row_of(chat_id)
    index = before - 1 if before > now else before
    return min(index, len(chats) - 1)


def _chat_move_target(rows: SidebarRows, registry: Registry, chat_id: str, origin: str,
                      row: int, target: Item | None) -> tuple[str | None, int] | None:
    """Where a chat dragged out of its workspace (or Ungrouped) into another one lands:
    (workspace id, None for Ungrouped; index among its chats), or None."""
    if target is None or origin in (PINNED, ARCHIVED):
        return None
    chat = registry.chat(chat_id)
    if chat is None or chat.archived:
        return None
    kind, item_id, place = target
    if kind == SECTION and item_id == UNGROUPED or kind == CHAT and place == UNGROUPED:
        return (None, 0) if origin != UNGROUPED else None
    if kind == WORKSPACE and item_id != origin:
        chats = rows.lists.get(item_id)
        if row < 0 or chats is None:
            return item_id, 0  # onto the workspace: at the top of its chats
        return item_id, max(0, min(row - rows.offset(item_id), len(chats)))
    if kind == CHAT and place in rows.ws and place != origin:
        chats = rows.lists.get(place)
        at = chats.row_of(item_id) if chats is not None and item_id in chats else 0
        return place, at
    return None


def _workspace_drop_index(rows: SidebarRows, registry: Registry, ws_id: str, row: int,
                          target: Item | None) -> int | None:
    """Where a workspace dragged among its siblings lands, as ``move_workspace``'s index."""
    if ws_id not in rows.ws or target is None:
        return None
    parent = rows.parent[ws_id]
    container = WORKSPACES if parent is None else parent
    siblings = rows.kids[parent]
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
    order = [ws.id for ws in registry.workspaces() if ws.id != ws_id]
    try:
        if before < len(others):
            return order.index(others[before])
        return order.index(others[-1]) + 1 if others else 0
    except ValueError:  # the registry moved on meanwhile; the drop is not worth guessing
        return None
