"""A chat opened with a click or Enter puts the caret in the message box
(typing no longer jumps between sidebar rows), and Ctrl+F then finds in the chat; arrow keys
still leave the keyboard in the sidebar."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from tests.ui.drivers import chat_open_in
from tests.ui.helpers import run, wait_for
from ui.sidebar import ID_ROLE


def _row(sidebar, chat_id):
    return next(index for index in _indexes(sidebar.tree.model())
                if index.data(ID_ROLE) == chat_id)


def _indexes(model, parent=None):
    from PySide6.QtCore import QModelIndex

    parent = parent or QModelIndex()
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        yield index
        yield from _indexes(model, index)


def _two_chats(opened, folders):
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    plans, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="Plans"))
    budget, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="Budget"))
    sidebar = opened.window.sidebar
    sidebar.select_workspace(ws.id)
    wait_for(lambda: sidebar.model.is_settled())
    sidebar.tree.expandAll()
    opened.window.activateWindow()
    sidebar.tree.setFocus()
    wait_for(sidebar.tree.hasFocus)
    return plans, budget


def test_a_click_on_a_chat_puts_the_caret_in_the_message_box(opened, folders):
    window = opened.window
    plans, _budget = _two_chats(opened, folders)
    tree = window.sidebar.tree
    rect = tree.visualRect(_row(window.sidebar, plans.id))
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    wait_for(lambda: window.chat_panel.chat_id == plans.id)
    edit = window.chat_panel.composer.edit
    wait_for(edit.hasFocus)
    QTest.keyClicks(edit, "b")  # typed into the message, not a jump to "Budget"
    assert window.chat_panel.chat_id == plans.id
    assert edit.toPlainText() == "b"
    # Ctrl+F finds in the chat, not in the sidebar.
    QTest.keyClick(edit, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: window.chat_panel.find_bar.isVisible())
    assert window.chat_panel.find_bar.field.hasFocus()
    assert not window.sidebar.filter.hasFocus()


def test_enter_on_a_chat_puts_the_caret_in_the_message_box(opened, folders):
    window = opened.window
    _plans, budget = _two_chats(opened, folders)
    tree = window.sidebar.tree
    tree.setCurrentIndex(_row(window.sidebar, budget.id))
    QTest.keyClick(tree, Qt.Key.Key_Return)
    wait_for(lambda: window.chat_panel.chat_id == budget.id)
    wait_for(window.chat_panel.composer.edit.hasFocus)


def test_arrow_keys_keep_the_keyboard_in_the_sidebar(opened, folders):
    window = opened.window
    plans, budget = _two_chats(opened, folders)
    tree = window.sidebar.tree
    tree.setCurrentIndex(_row(window.sidebar, budget.id))
    wait_for(lambda: chat_open_in(window) == budget.id)
    QTest.keyClick(tree, Qt.Key.Key_Down)  # the next row opens after a pause
    wait_for(lambda: chat_open_in(window) not in (None, budget.id))
    assert tree.hasFocus()


def test_ctrl_n_again_and_again_keeps_one_empty_chat(opened, folders, capsys):
    """The window and ``cairn chat list`` show one empty "New chat", not
    one per Ctrl+N."""
    import json

    from ui.main import main

    window = opened.window
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    window.select_workspace(ws.id)
    for _ in range(3):
        window.new_chat_action.trigger()
        wait_for(lambda: chat_open_in(window) is not None)
        wait_for(lambda: not window._tasks.tasks())
    assert [c.title for c in opened.cairn.registry.chats_of(ws.id)] == ["New chat"]
    capsys.readouterr()
    assert main(["chat", "list", "--json"]) == 0  # the command line, on the same data folder
    listed = json.loads(capsys.readouterr().out)
    chats = listed["workspaces"] if isinstance(listed, dict) else listed
    assert [c["id"] for c in _chats_of(chats, ws.id)] == [chat_open_in(window)]


def _chats_of(listed, ws_id):
    """The chats of *ws_id* in ``cairn chat list --json`` (whatever its nesting)."""
    if isinstance(listed, dict):
        if listed.get("workspace") == ws_id and "title" in listed and "id" in listed:
            yield listed
        for value in listed.values():
            if isinstance(value, (list, dict)):
                yield from _chats_of(value, ws_id)
    elif isinstance(listed, list):
        for item in listed:
            yield from _chats_of(item, ws_id)
