"""The highlighted sidebar row is what the window shows: after a
right-click, archiving, Remove, Move to folder…, clearing the filter; arrow keys open the row
they rest on after a short pause, as in mail clients."""

from __future__ import annotations

import shutil
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMenu

from tests.ui.drivers import chat_open_in
from tests.ui.helpers import run, wait_for


def shown_id(window: Any) -> str | None:
    """What the window shows: the open chat, else the selected workspace."""
    return chat_open_in(window) or window._workspace_id


def agree(window: Any) -> bool:
    sidebar = window.sidebar
    return not sidebar.tasks() and sidebar.model.is_settled() and \
        sidebar.current_id() == shown_id(window)


def three_chats(opened: Any, folders: Any) -> tuple[Any, list[Any]]:
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    chats = []
    for title in ("one", "two", "three"):
        chat, _ = run(opened.ops.new_chat(workspace_id=ws.id, title=title))
        chats.append(chat)
    sidebar = opened.window.sidebar
    wait_for(lambda: sidebar.model.workspace_index(ws.id).isValid())
    sidebar.tree.expand(sidebar.model.workspace_index(ws.id))
    wait_for(lambda: sidebar.model.chats_in(ws.id) is not None
             and len(sidebar.model.chats_in(ws.id)) == 3)
    return ws, chats  # shown newest first: three, two, one


def row_rect(sidebar: Any, chat_id: str, place: str) -> Any:
    return sidebar.tree.visualRect(sidebar.model.chat_index(chat_id, place))


def test_arrow_keys_open_the_row_they_rest_on_after_a_pause(opened, folders):
    window = opened.window
    ws, (one, two, three) = three_chats(opened, folders)
    window.select_chat(three.id)
    wait_for(lambda: agree(window))
    sidebar = window.sidebar
    sidebar.tree.setFocus()
    opened_ids: list[str] = []
    sidebar.sig_chat_selected.connect(opened_ids.append)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Down)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Down)
    assert sidebar.current_id() == one.id and shown_id(window) == three.id  # not yet
    wait_for(lambda: shown_id(window) == one.id)
    assert opened_ids == [one.id]  # only where the keys rested, not each row passed
    assert window.chat_panel.chat_id == one.id


def test_a_right_click_leaves_the_highlight_on_what_is_open(opened, folders, monkeypatch):
    window = opened.window
    ws, (one, two, three) = three_chats(opened, folders)
    window.select_chat(three.id)
    wait_for(lambda: agree(window))
    sidebar = window.sidebar
    menus: list[list[str]] = []
    monkeypatch.setattr(QMenu, "popup", lambda menu, pos, at=None: menus.append(
        [a.text() for a in menu.actions() if not a.isSeparator()]))
    where = row_rect(sidebar, one.id, ws.id).center()
    QTest.mousePress(sidebar.tree.viewport(), Qt.MouseButton.RightButton, pos=where)
    sidebar.tree.contextMenuEvent(QContextMenuEvent(
        QContextMenuEvent.Reason.Mouse, where, sidebar.tree.viewport().mapToGlobal(where)))
    QTest.mouseRelease(sidebar.tree.viewport(), Qt.MouseButton.RightButton, pos=where)
    assert menus and "Rename…" in menus[0]  # the menu of the row under the pointer
    assert sidebar.current_id() == three.id and shown_id(window) == three.id


def test_archiving_the_open_chat_opens_the_row_the_highlight_moves_to(opened, folders):
    window = opened.window
    ws, (one, two, three) = three_chats(opened, folders)
    window.select_chat(two.id)
    wait_for(lambda: agree(window))
    window.sidebar.handlers.archive_chat(two.id)
    wait_for(lambda: window.cairn.registry.chat(two.id).archived)
    wait_for(lambda: agree(window) and shown_id(window) != two.id)
    assert window.chat_panel.chat_id == shown_id(window)


def test_removing_the_open_workspace_leaves_highlight_and_content_agreeing(opened, folders):
    window = opened.window
    a, b = folders("Alpha", "Beta")
    (wa, _), _ = run(opened.ops.add_workspace(a))
    (wb, _), _ = run(opened.ops.add_workspace(b))
    window.select_workspace(wb.id)
    wait_for(lambda: agree(window))
    sidebar = window.sidebar
    sidebar.handlers.confirm = lambda title, text, action: True
    sidebar.handlers.remove_workspace(wb.id)
    wait_for(lambda: window.cairn.registry.workspace(wb.id) is None)
    wait_for(lambda: agree(window) and shown_id(window) == wa.id)


def test_move_to_folder_keeps_the_moved_workspace_open_and_highlighted(opened, folders,
                                                                       tmp_path):
    window = opened.window
    a, old = folders("Alpha", "Thesis")
    run(opened.ops.add_workspace(a))
    (ws, _), _ = run(opened.ops.add_workspace(old))
    window.select_workspace(ws.id)
    wait_for(lambda: agree(window))
    new = tmp_path / "moved" / "Thesis"
    new.parent.mkdir()
    shutil.move(old, new)
    run(opened.ops.check_folders())
    sidebar = window.sidebar
    sidebar.handlers.ask_folder = lambda title: str(new)
    sidebar.handlers.move_to_folder(ws.id)
    wait_for(lambda: any(w.path == str(new.resolve()) for w in window.cairn.registry.workspaces()))
    moved = next(w for w in window.cairn.registry.workspaces() if w.path == str(new.resolve()))
    assert moved.id == ws.id  # the same workspace, at its new folder
    wait_for(lambda: agree(window) and shown_id(window) == ws.id)


def test_clearing_the_filter_keeps_the_highlight_on_what_was_opened_under_it(opened, folders):
    window = opened.window
    ws, (one, two, three) = three_chats(opened, folders)
    window.select_chat(three.id)
    wait_for(lambda: agree(window))
    sidebar = window.sidebar
    sidebar.set_filter("one")
    index = sidebar.proxy.mapFromSource(sidebar.model.chat_index(one.id, ws.id))
    QTest.mouseClick(sidebar.tree.viewport(), Qt.MouseButton.LeftButton,
                     pos=sidebar.tree.visualRect(index).center())
    wait_for(lambda: shown_id(window) == one.id)
    sidebar.set_filter("tw")  # the open chat no longer matches: no other row stands for it
    assert sidebar.current_id() != two.id
    sidebar.set_filter("")
    wait_for(lambda: agree(window))
    assert shown_id(window) == one.id
    # And a filter that hides what is open, then cleared: back on it, nothing else opened.
    sidebar.set_filter("three")
    sidebar.set_filter("")
    wait_for(lambda: agree(window))
    assert shown_id(window) == one.id
