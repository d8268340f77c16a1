"""The sidebar's item roles, row kinds and sections: the names its model, view, delegate and
tests share."""

from __future__ import annotations

from PySide6.QtCore import Qt

ID_ROLE = Qt.ItemDataRole.UserRole + 1  # a workspace's or chat's id; a section's name
KIND_ROLE = Qt.ItemDataRole.UserRole + 2  # SECTION, WORKSPACE or CHAT
PLACE_ROLE = Qt.ItemDataRole.UserRole + 3  # the list a row is in: a section or a workspace id
ICON_ROLE = Qt.ItemDataRole.UserRole + 4  # the name of its icon in resources/icons
MISSING_ROLE = Qt.ItemDataRole.UserRole + 5  # a workspace whose folder is gone
WORKING_ROLE = Qt.ItemDataRole.UserRole + 6  # a chat with a reply or a rebuild running
HINT_ROLE = Qt.ItemDataRole.UserRole + 7  # a repeated title's folder ("work/Acme"), or ""

SECTION, WORKSPACE, CHAT = "section", "workspace", "chat"
PINNED, WORKSPACES, UNGROUPED, ARCHIVED = "pinned", "workspaces", "ungrouped", "archived"
SECTIONS: tuple[str, ...] = (PINNED, WORKSPACES, UNGROUPED, ARCHIVED)
SECTION_TITLES = {PINNED: "Pinned", WORKSPACES: "Workspaces", UNGROUPED: "Ungrouped",
                  ARCHIVED: "Archived"}
CHAT_SECTIONS = (PINNED, UNGROUPED, ARCHIVED)

MIME_TYPE = "application/x-cairn-sidebar-item"
URI_LIST = "text/uri-list"
