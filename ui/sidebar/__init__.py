"""The sidebar: Pinned, the workspace tree with each workspace's chats, Ungrouped and
Archived, as one lazily read item model (``model``, composed of its rows ``rows``, the events
it follows ``updates`` and what a drop asks for ``drops``), its look (``delegate``), its menus
(``menus``), what they ask for (``actions``) and the widgets that hold them (``view``,
``tree``)."""

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
