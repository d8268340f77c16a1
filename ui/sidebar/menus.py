"""The sidebar's context menus, the removal question, and the description dialog.

The menus only name what can be done; each action calls back into the sidebar, which runs
the operation.  Texts that ask the person something live here so they read as one voice.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Protocol

from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMenu,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.records import BUILD_STATUSES, MISSING_DIR, Chat, Workspace
from ui.text import Label

# What the file manager is called where Cairn runs.
REVEAL = ("Show in Explorer" if os.name == "nt" else
          "Reveal in Finder" if sys.platform == "darwin" else "Open in file manager")
# Shift+Delete on a chat's row deletes it (after asking), as it deletes for good in file
# managers; Delete alone archives it.
DELETE_CHAT_KEY = "Shift+Del"
STATUS_TITLES = {"idea": "Idea", "planning": "Planning", "building": "Building",
                 "shipped": "Shipped"}


class Actions(Protocol):
    """What the menus call: the sidebar's handlers."""

    def new_chat(self, ws_id: str) -> None: ...
    def rename_workspace(self, ws_id: str) -> None: ...
    def edit_details(self, ws_id: str) -> None: ...
    def edit_web_search(self, ws_id: str) -> None: ...
    def set_build_status(self, ws_id: str, status: str) -> None: ...
    def move_to_folder(self, ws_id: str) -> None: ...
    def remove_workspace(self, ws_id: str) -> None: ...
    def export_workspace(self, ws_id: str) -> None: ...
    def learn_imported(self, ws_id: str) -> None: ...
    def reveal_folder(self, ws_id: str) -> None: ...
    def copy_path(self, ws_id: str) -> None: ...
    def open_terminal(self, ws_id: str) -> None: ...
    def rename_chat(self, chat_id: str) -> None: ...
    def pin_chat(self, chat_id: str) -> None: ...
    def unpin_chat(self, chat_id: str) -> None: ...
    def archive_chat(self, chat_id: str) -> None: ...
    def unarchive_chat(self, chat_id: str) -> None: ...
    def stop_and_archive_chat(self, chat_id: str) -> None: ...
    def export_chat(self, chat_id: str) -> None: ...
    def delete_chat(self, chat_id: str) -> None: ...


def _add(menu: QMenu, text: str, run: Callable[[], None]) -> QAction:
    action = menu.addAction(text)
    action.triggered.connect(lambda _checked=False: run())
    return action


def workspace_menu(actions: Actions, ws: Workspace, parent: QWidget | None = None) -> QMenu:
    menu = QMenu(parent)
    menu.setAccessibleName(f"{ws.title} actions")
    if ws.status != MISSING_DIR:  # a chat runs in the folder: none while it is gone
        _add(menu, "New chat", lambda: actions.new_chat(ws.id))
    _add(menu, "Rename…", lambda: actions.rename_workspace(ws.id)).setShortcut("F2")
    _add(menu, "Description and instructions…", lambda: actions.edit_details(ws.id))
    _add(menu, "Web search…", lambda: actions.edit_web_search(ws.id))
    statuses = menu.addMenu("Build status")
    group = QActionGroup(statuses)
    for status in BUILD_STATUSES:
        action = _add(statuses, STATUS_TITLES[status],
                      partial(actions.set_build_status, ws.id, status))
        action.setCheckable(True)
        action.setChecked(status == ws.build_status)
        group.addAction(action)
    if ws.status == MISSING_DIR:
        menu.addSeparator()
        _add(menu, "Move to folder…", lambda: actions.move_to_folder(ws.id))
    # The folder one click away.  A missing folder cannot be shown or opened:
    # only its path, which Move to folder… above helps find, is offered.
    menu.addSeparator()
    if ws.status != MISSING_DIR:
        _add(menu, REVEAL, lambda: actions.reveal_folder(ws.id))
    _add(menu, "Copy path", lambda: actions.copy_path(ws.id))
    if ws.status != MISSING_DIR:
        _add(menu, "Open in terminal", lambda: actions.open_terminal(ws.id))
    menu.addSeparator()
    _add(menu, "Export…", lambda: actions.export_workspace(ws.id))
    _add(menu, "Learn from imported chats…", lambda: actions.learn_imported(ws.id))
    _add(menu, "Remove…", lambda: actions.remove_workspace(ws.id)).setShortcut("Del")
    return menu


def chat_menu(actions: Actions, chat: Chat, *, working: bool,
              parent: QWidget | None = None) -> QMenu:
    menu = QMenu(parent)
    menu.setAccessibleName(f"{chat.title} actions")
    _add(menu, "Rename…", lambda: actions.rename_chat(chat.id)).setShortcut("F2")
    if chat.archived:
        _add(menu, "Unarchive", lambda: actions.unarchive_chat(chat.id))
        menu.addSeparator()
        _add(menu, "Delete chat…", lambda: actions.delete_chat(chat.id)).setShortcut(
            DELETE_CHAT_KEY)
        return menu
    if chat.pinned:
        _add(menu, "Unpin", lambda: actions.unpin_chat(chat.id))
    else:
        _add(menu, "Pin", lambda: actions.pin_chat(chat.id))
    _add(menu, "Export chat as Markdown…", lambda: actions.export_chat(chat.id))
    menu.addSeparator()
    if working:  # archiving would be refused while a reply or a rebuild runs
        _add(menu, "Stop and archive", lambda: actions.stop_and_archive_chat(chat.id))
    else:
        _add(menu, "Archive", lambda: actions.archive_chat(chat.id)).setShortcut("Del")
    _add(menu, "Delete chat…", lambda: actions.delete_chat(chat.id)).setShortcut(DELETE_CHAT_KEY)
    return menu


# ----------------------------------------------------------------- questions


def removal_question(ws: Workspace, *, chats: int, folders: list[str],
                     parent: str | None) -> str:
    """What removing a workspace takes away and what it leaves, in plain words.

    *folders* are the titles of its folders; *parent* the title of the workspace it is a
    folder of (None: it is a top-level workspace).
    """
    gone = ("It leaves the list. Its description, instructions, knowledge document and "
            "uploaded knowledge files are kept for 30 days: File › Recently removed brings it "
            "back.")
    kept = [f"The folder {ws.path} and everything in it stay untouched."]
    if chats:
        kept.append(f"Its {chats} chat{'s stay' if chats != 1 else ' stays'}, under Ungrouped.")
    if folders:
        names = ", ".join(folders[:3]) + (f" and {len(folders) - 3} more" if len(folders) > 3
                                           else "")
        one = len(folders) == 1
        where = ("become top-level workspaces" if parent is None
                 else f"move up into {parent}")
        if one:
            where = ("becomes a top-level workspace" if parent is None
                     else f"moves up into {parent}")
        kept.append(f"Its folder{'' if one else 's'} {names} {where}, with "
                    f"{'its' if one else 'their'} chats; restoring it puts "
                    f"{'it' if one else 'them'} back under it.")
    return f"{gone}\n\n{' '.join(kept)}"


def archive_question(chat: Chat) -> str:
    return (f"Archive “{chat.title}”? It leaves the list and waits under Archived, "
            "where Unarchive brings it back.")


def delete_question(chat: Chat, *, working: bool) -> str:
    running = (f"A reply or a knowledge update is running in “{chat.title}”: deleting stops "
               "it. " if working else "")
    return (f"{running}Delete “{chat.title}”? It leaves the list and search at once. File › "
            "Recently removed keeps it for 30 days and can bring it back; what the knowledge "
            "document learned from it stays.")


class DetailsDialog(QDialog):
    """A workspace's description and custom instructions, edited together."""

    def __init__(self, ws: Workspace, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"{ws.title}: description and instructions")
        self.setAccessibleName("Description and instructions")
        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        self.description = QPlainTextEdit(ws.description)
        self.description.setAccessibleName("Description")
        self.description.setPlaceholderText("What this workspace is about, in a line or two")
        self.description.setTabChangesFocus(True)
        self.description.setFixedHeight(self.description.fontMetrics().lineSpacing() * 3 + 16)
        self.instructions = QPlainTextEdit(ws.instructions)
        self.instructions.setAccessibleName("Instructions")
        self.instructions.setPlaceholderText("How Claude should work in this workspace")
        self.instructions.setTabChangesFocus(True)
        for label, field in (("Description", self.description),
                             ("Custom instructions", self.instructions)):
            caption = Label(label)
            caption.setBuddy(field)
            layout.addWidget(caption)
            layout.addWidget(field)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(520, 420)

    def values(self) -> tuple[str, str]:
        return self.description.toPlainText(), self.instructions.toPlainText()
