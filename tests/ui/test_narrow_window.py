"""Narrow windows, resizing the real window offscreen: the chat column
keeps priority (at least ``CHAT_MIN`` pixels) and the knowledge panel folds itself when there
is no room, coming back when there is; the panel's tabs are never elided; the History list
and its "Compare with" box fit the panel at its narrowest."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QListWidget, QTabBar

from tests.ui.helpers import replies, run, wait_for
from ui.app import Starter
from ui.columns import CHAT_MIN
from ui.knowledge.panel import DISCARD


def open_chat(starter: Starter, folder: str) -> str:
    assert starter.ops is not None
    (ws, _), _ = run(starter.ops.add_workspace(folder))
    chat, _ = run(starter.ops.new_chat(folder=folder))
    starter.window.select_chat(chat.id)
    wait_for(lambda: starter.window.chat_panel.chat_id == chat.id)
    return ws.id


def chat_width(starter: Starter) -> int:
    return starter.window.split.widget(1).width()


def knowledge_shown(starter: Starter) -> bool:
    panel = starter.window.knowledge
    return panel is not None and panel.isVisible() and panel.width() > 0


def test_a_narrow_window_keeps_the_chat_and_folds_the_knowledge_panel(opened, folders):
    (acme,) = folders("Acme Inc")
    open_chat(opened, acme)
    window = opened.window
    window.resize(1280, 800)
    wait_for(lambda: knowledge_shown(opened) and chat_width(opened) >= CHAT_MIN)
    for width in (900, 860, 800):
        window.resize(width, 640)
        wait_for(lambda: window.width() == width)  # never held wider by the panel
        wait_for(lambda: not knowledge_shown(opened))
        assert chat_width(opened) >= CHAT_MIN
        assert not window.knowledge_action.isChecked()  # the toolbar's toggle says so
    window.resize(1280, 800)
    wait_for(lambda: knowledge_shown(opened))  # room again: it comes back by itself
    assert chat_width(opened) >= CHAT_MIN and window.knowledge_action.isChecked()


def test_narrower_still_the_sidebar_gives_way_before_the_chat(opened, folders):
    """With the panel folded, a window narrower than the sidebar and the chat need: the
    sidebar narrows to its minimum first (it kept its width and the chat got the rest)."""
    (acme,) = folders("Acme Inc")
    open_chat(opened, acme)
    window = opened.window
    window.resize(1280, 800)
    wait_for(lambda: knowledge_shown(opened))
    sidebar = window.split.widget(0)
    for width in (860, 700, 600):  # (folded at 860 already: then only the chat narrowed)
        window.resize(width, 600)
        wait_for(lambda: window.width() == width and not knowledge_shown(opened))
        wait_for(lambda: chat_width(opened) >= CHAT_MIN
                 or sidebar.width() == sidebar.minimumWidth())
        assert chat_width(opened) >= min(CHAT_MIN, width - sidebar.minimumWidth() - 20)


def test_a_wider_window_gives_the_chat_its_room_before_the_panel_keeps_its_own(opened,
                                                                              folders):
    """Between the two, the panel gives way first (down to its minimum) and stays open."""
    (acme,) = folders("Acme Inc")
    open_chat(opened, acme)
    window = opened.window
    window.resize(1280, 800)
    wait_for(lambda: knowledge_shown(opened))
    window.resize(1020, 700)
    wait_for(lambda: window.width() == 1020)
    wait_for(lambda: chat_width(opened) >= CHAT_MIN)
    assert knowledge_shown(opened)


def test_a_panel_the_person_hid_stays_hidden_when_the_window_widens(opened, folders):
    (acme,) = folders("Acme Inc")
    open_chat(opened, acme)
    window = opened.window
    window.resize(860, 640)
    wait_for(lambda: not knowledge_shown(opened))
    window.resize(1280, 800)
    wait_for(lambda: knowledge_shown(opened))
    window.knowledge_action.trigger()  # the person hides it
    wait_for(lambda: not knowledge_shown(opened))
    window.resize(860, 640)
    window.resize(1300, 800)
    wait_for(lambda: window.width() == 1300)
    assert not knowledge_shown(opened) and not window.knowledge_action.isChecked()
    window.knowledge_action.trigger()  # and shows it again: it opens
    wait_for(lambda: knowledge_shown(opened))


def test_the_panel_tabs_are_never_elided_even_with_unsaved_marks(opened, folders):
    (acme,) = folders("Acme Inc")
    open_chat(opened, acme)
    window = opened.window
    window.resize(1100, 800)
    wait_for(lambda: knowledge_shown(opened))
    panel = window.knowledge
    assert panel is not None
    wait_for(lambda: panel.editor.opened is not None)
    panel.ask_unsaved = replies(lambda: DISCARD)  # (nothing asks when the test closes the window)
    panel.editor.edit.setPlainText("## Facts\n- mine\n")  # "Knowledge ●"
    wait_for(lambda: panel.tabs.tabText(0) == "Knowledge ●")
    window.split.setSizes([290, 2000, 1])  # the panel dragged as narrow as it goes
    bar = panel.tabs.findChild(QTabBar)
    assert bar is not None and bar.elideMode() == Qt.TextElideMode.ElideNone
    wait_for(lambda: all(bar.tabRect(i).width() > bar.fontMetrics().horizontalAdvance(
        bar.tabText(i)) for i in range(bar.count())))
    assert bar.tabRect(bar.count() - 1).right() <= bar.width()


def test_the_history_list_and_compare_box_fit_the_panel_at_its_narrowest(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = open_chat(opened, acme)
    window = opened.window
    window.resize(1100, 800)
    wait_for(lambda: knowledge_shown(opened))
    chat_id = window.chat_panel.chat_id
    opened.cairn.knowledge.save(ws, "## Facts\n- one\n", source="user")
    opened.cairn.knowledge.save(ws, "## Facts\n- one\n- two\n", source="rebuild",
                                chat_id=chat_id)
    panel = window.knowledge
    assert panel is not None
    window.split.setSizes([290, 2000, 1])  # the panel at its minimum width
    panel.editor.show_history()
    versions = panel.findChild(QListWidget)
    assert versions is not None and versions.accessibleName() == "Versions"
    wait_for(lambda: versions.count() == 2)
    wait_for(lambda: versions.isVisible())
    viewport = versions.viewport().width()
    for row in range(versions.count()):
        rect = versions.visualItemRect(versions.item(row))
        assert rect.right() <= viewport, versions.item(row).text()
    assert versions.horizontalScrollBar().maximum() == 0  # nothing sideways
    against = next(c for c in panel.findChildren(QComboBox) if c.accessibleName() == "Compare with")
    assert against.width() >= against.sizeHint().width()  # its text shown whole
    assert against.geometry().right() < panel.width()
