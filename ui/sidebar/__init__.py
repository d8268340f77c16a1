"""The sidebar: Pinned, the workspace tree with each workspace's chats, Ungrouped and
Archived, as one lazily read item model (``model``), its look (``delegate``), its menus and
dialogs (``menus``) and the widget that holds them (``view``)."""

from ui.sidebar.model import (
    ARCHIVED,
    CHAT,
    ID_ROLE,
    KIND_ROLE,
    PINNED,
    PLACE_ROLE,
    SECTION,
    UNGROUPED,
    WORKSPACE,
    WORKSPACES,
    SidebarModel,
)
from ui.sidebar.view import Sidebar

__all__ = [
    "ARCHIVED", "CHAT", "ID_ROLE", "KIND_ROLE", "PINNED", "PLACE_ROLE", "SECTION", "UNGROUPED",
    "WORKSPACE", "WORKSPACES", "Sidebar", "SidebarModel",
]
