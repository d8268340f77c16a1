"""Drivers of the window for widget tests: what a person does (start a chat, send, open a
folder's knowledge, pick a menu entry) and what they see, each in one place.

Test modules import these from here, never from one another (tests/core/test_test_layout.py
checks it).  Where a driver must read a widget's private state (no public way says it), it
reads it here, once, and says why: a change to the widget then breaks one driver, not the
tests of every module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QAbstractButton, QMenu, QWidget

from app.base.db import utc_now
from app.ops import Operations
from app.store.suggestions import Proposed
from tests.ui import helpers
from tests.ui.helpers import run, wait_for
from ui.app import Starter
from ui.knowledge.panel import KnowledgePanel
from ui.knowledge.suggestions import SuggestionsStrip

W = TypeVar("W", bound=QWidget)


# ------------------------------------------------------------------------------- finding

def named(parent: QWidget, kind: type[W], name: str) -> W:
    """The one *kind* under *parent* whose accessible name is *name* (as a screen reader
    finds it); fails unless there is exactly one."""
    found = [w for w in parent.findChildren(kind) if w.accessibleName() == name]
    assert len(found) == 1, f"{len(found)} {kind.__name__} named {name!r}"
    return found[0]


def click(parent: QWidget, name: str) -> None:
    """Click the button named *name* under *parent* (it must be enabled and shown)."""
    button = named(parent, QAbstractButton, name)
    assert button.isEnabled() and button.isVisible(), name
    helpers.QTBOT.mouseClick(button, Qt.MouseButton.LeftButton)


def press(widget: QWidget, key: Any,
          modifiers: Any = Qt.KeyboardModifier.NoModifier) -> None:
    """One key press (and release) on *widget*."""
    from PySide6.QtTest import QTest

    QTest.keyClick(widget, key, modifiers)


# --------------------------------------------------------------------------------- menus

def trigger(menu: QMenu | None, *path: str) -> None:
    """Trigger the menu action reached by its texts, e.g. ("Build status", "Shipped")."""
    assert menu is not None
    for text in path[:-1]:
        menu = next(a.menu() for a in menu.actions() if a.text() == text)
    action: QAction = next(a for a in menu.actions() if a.text() == path[-1])
    assert action.isEnabled()
    action.trigger()


def action_texts(menu: QMenu | None) -> list[str]:
    """The texts of *menu*'s entries, separators left out."""
    assert menu is not None
    return [a.text() for a in menu.actions() if not a.isSeparator()]


# ------------------------------------------------------------------------------ the core

def ops_of(starter: Starter) -> Operations:
    """The window's operations (there once the window is filled in)."""
    assert starter.ops is not None
    return starter.ops


def make_chat(starter: Starter, folder: str, title: str) -> str:
    """A chat titled *title* in *folder* (added as a workspace), not selected; its id."""
    ops = ops_of(starter)
    run(ops.add_workspace(folder))
    chat, _ = run(ops.new_chat(folder=folder, title=title))
    return chat.id


def bulk_messages(starter: Starter, chat_id: str, texts: list[str]) -> list[int]:
    """Many messages of one chat in one transaction (as an import writes them); their ids."""
    db = ops_of(starter).cairn.registry.db
    now = utc_now()
    ids = []
    with db.write() as conn:
        parent = conn.execute("SELECT leaf_id FROM chat WHERE id = ?", (chat_id,)).fetchone()[0]
        for n, text in enumerate(texts):
            role = "user" if n % 2 == 0 else "assistant"
            parent = conn.execute(
                "INSERT INTO message (chat_id, role, content, created_at, parent_id)"
                " VALUES (?, ?, ?, ?, ?)",
                (chat_id, role, json.dumps([{"type": "text", "text": text}]), now,
                 parent)).lastrowid
            ids.append(parent)
        conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?", (parent, chat_id))
    return ids


# ---------------------------------------------------------------------------------- chat

def new_chat(loop: Any, starter: Starter, folder: str | None) -> str:
    """A new chat (in *folder*, added as a workspace, or ungrouped), selected in the window
    and shown with its draft loaded; its id."""
    ops = ops_of(starter)
    if folder is not None:
        run(ops.add_workspace(folder))
    chat, _ = run(ops.new_chat(folder=folder))
    starter.window.select_chat(chat.id)
    panel = starter.window.chat_panel
    # The draft is loaded off the GUI thread and no signal says so: the panel's note of
    # whose draft it holds is the only witness.
    wait_for(lambda: panel.chat_id == chat.id and panel._draft_for == chat.id)
    return chat.id


def entries(starter: Starter) -> list[Any]:
    """The entries of the open chat, as its view shows them (messages and notices)."""
    return starter.window.chat_panel.view.conversation.entries


def idle(starter: Starter) -> bool:
    """True when the chat panel has no turn going: nothing sending, streaming or live.
    (The panel keeps the first two privately; a turn shows only as a disabled send.)"""
    panel = starter.window.chat_panel
    return not panel._live and not panel._sending and not panel.composer.streaming


def send(starter: Starter, text: str) -> None:
    """Type *text* into the composer and send it, as Enter does."""
    panel = starter.window.chat_panel
    panel.composer.set_text(text)
    panel.composer.edit.setFocus()
    panel.composer.send()


def exchange(loop: Any, starter: Starter, fake: Any, folder: str, question: str,
             reply: str) -> None:
    """A new chat in *folder*, *question* sent, *reply* streamed back and shown."""
    new_chat(loop, starter, folder)
    fake.reply_text(reply)
    send(starter, question)
    wait_for(lambda: idle(starter) and len(entries(starter)) == 2)


# ------------------------------------------------------------------------ knowledge panel

PREFERENCES = ("## Working style & preferences\n- Write in a warm, friendly tone.\n"
               "- Keep answers short.\n- Use metric units only.\n")


def panel_of(starter: Starter) -> KnowledgePanel:
    """The window's knowledge panel."""
    panel = starter.window.knowledge
    assert panel is not None
    return panel


def workspace(starter: Starter, folder: str) -> str:
    """*folder* added as a workspace; its id."""
    (ws, _), _ = run(ops_of(starter).add_workspace(folder))
    return ws.id


def show(starter: Starter, ws_id: str) -> KnowledgePanel:
    """Select the workspace as a click in the sidebar does, and wait for its document."""
    starter.window.sidebar.select_workspace(ws_id)
    # A click in the sidebar reaches the window through this slot (the sidebar's signal is
    # connected to it); selecting in code emits nothing, so the driver calls it.
    starter.window._workspace_selected(ws_id)
    panel = panel_of(starter)
    wait_for(lambda: panel.editor.owner == ws_id and panel.editor.opened is not None)
    return panel


def with_document(starter: Starter, folder: Path, text: str) -> str:
    """*folder* as a workspace whose knowledge document is *text* (saved by hand); its id."""
    ws_id = workspace(starter, str(folder))
    ops_of(starter).cairn.knowledge.save(ws_id, text, source="user")
    return ws_id


def strip_of(starter: Starter, ws_id: str) -> SuggestionsStrip:
    """The suggestions strip of the workspace's knowledge, the workspace shown."""
    panel = show(starter, ws_id)
    return panel.editor.suggestions


def suggest(starter: Starter, owner: str, *items: Proposed) -> None:
    """What a rebuild leaves: its suggestions, written in its own transaction."""
    cairn = starter.ops.cairn
    chat = cairn.registry.new_chat(title="Style talk")
    assert cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={},
                                        suggestions=list(items))


def merge(owner: str) -> Proposed:
    """A refused merge of the three preferences of PREFERENCES, as a suggestion for *owner*."""
    return Proposed(owner, "merge", "Working style & preferences",
                    ("Write in a warm, friendly tone.", "Keep answers short.",
                     "Use metric units only."), "Keep answers short.",
                    "The merge was refused: it drops words of P1 and P3.",
                    "short answers, please", "person")


# ------------------------------------------------------ what the window keeps to itself
# No public way says these; each is read (or called) here only, so that a change to the
# widget breaks one driver, not the tests of every module.

def draft_of(panel: Any) -> str | None:
    """The id of the chat whose draft the chat *panel* holds: None until the draft, loaded off
    the GUI thread, has arrived (no signal says so)."""
    return panel._draft_for


def chat_open_in(window: Any) -> str | None:
    """The id of the chat the *window* shows (None when a workspace or nothing is open)."""
    return window._chat_id


def workspace_clicked(window: Any, ws_id: str) -> None:
    """What a click on the workspace's row does in the *window*: the sidebar's signal reaches
    this slot (selecting the row in code emits nothing)."""
    window._workspace_selected(ws_id)


def follow_link(panel: Any, entry: Any, href: str, text: str | None) -> None:
    """Follow the link *href* of *entry* in the chat *panel*, as a click on it does (*text*:
    the block a copy link copies)."""
    panel._anchor(entry, href, text)


def turns_going(panel: Any) -> bool:
    """True while the chat *panel* follows a turn of some chat (started, not yet ended)."""
    return bool(panel._live)
