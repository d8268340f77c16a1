"""Delete chat in the window: the chat's menu, the Chat menu and its key,
a question whose Enter keeps the chat, the sidebar and the open chat following the removal
(also another process's), and Restore from File › Recently removed."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from app.store.registry.registry import Registry
from tests.ui.helpers import run, wait_for
from ui.sidebar.kinds import UNGROUPED


def _answer(press: str, seen: list[tuple[str, str, str]]) -> None:
    """Answer the question about to open: Enter (press == "") or a click on *press*."""

    def go() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        default = box.defaultButton()
        assert isinstance(default, QPushButton)
        seen.append((box.windowTitle(), default.text(), box.text() + box.informativeText()))
        if not press:
            QTest.keyClick(box, Qt.Key.Key_Return)
            return
        next(b for b in box.buttons() if b.text() == press).click()

    QTimer.singleShot(0, go)


def test_delete_from_the_menus_asks_first_then_restore_brings_it_back(opened, folders):
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    registry = opened.cairn.registry
    keep = registry.new_chat(folder=acme, title="Keep")
    doomed = registry.new_chat(folder=acme, title="Doomed plans")
    window, sidebar = opened.window, opened.window.sidebar
    sidebar.select_chat(doomed.id)  # (its workspace expanded)
    wait_for(lambda: sidebar.model.chat_index(doomed.id, ws.id).isValid())
    window.select_chat(doomed.id)
    wait_for(lambda: window.chat_panel.chat_id == doomed.id)
    menu = sidebar.context_menu(sidebar.model.chat_index(doomed.id, ws.id))
    delete = next(a for a in menu.actions() if a.text() == "Delete chat…")
    assert delete.shortcut().toString() == "Shift+Del"
    seen: list[tuple[str, str, str]] = []
    # Enter takes Cancel: nothing is deleted.
    _answer("", seen)
    delete.trigger()
    assert seen[0][:2] == ("Delete chat?", "Cancel")
    assert "Recently removed" in seen[0][2] and "Doomed plans" in seen[0][2]
    assert registry.chat(doomed.id) is not None
    # Delete, clicked: gone from the sidebar; the window shows its workspace.
    _answer("Delete", seen)
    delete.trigger()
    wait_for(lambda: registry.chat(doomed.id) is None)
    wait_for(lambda: not sidebar.model.chat_index(doomed.id, ws.id).isValid())
    wait_for(lambda: window.chat_panel.chat_id is None or not window.chat_panel.isVisible())
    wait_for(lambda: "Deleted “Doomed plans”" in window.notice.label.text())
    assert sidebar.model.chat_index(keep.id, ws.id).isValid()
    # Undo in the notice brings it straight back; delete it again for the menu below.
    assert window.notice.action.isVisible() and window.notice.action.text() == "Undo"
    window.notice.action.click()
    wait_for(lambda: registry.chat(doomed.id) is not None)
    wait_for(lambda: sidebar.model.chat_index(doomed.id, ws.id).isValid())
    run(opened.ops.remove_chat(doomed.id))
    wait_for(lambda: not sidebar.model.chat_index(doomed.id, ws.id).isValid())
    # The Chat menu names Delete chat… with its key; with no chat open it says what to do.
    chat_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Chat")
    action = next(a for a in chat_menu.actions() if a.text() == "Delete chat…")
    assert action.shortcut().toString() == "Ctrl+Shift+Backspace"
    window.select_workspace(ws.id)
    action.trigger()
    assert window.notice.label.text().startswith("Open a chat first")
    # File › Recently removed lists it; Restore chat brings it back, opened.
    sharing = window.sharing
    sharing.show_removed()
    wait_for(lambda: sharing.removed_dialog is not None
             and sharing.removed_dialog.chats.count() == 1)
    dialog = sharing.removed_dialog
    assert dialog.chats.item(0).text().startswith("Doomed plans\nin Acme")
    assert dialog.restore_chat.accessibleName() == "Restore chat"
    dialog.restore_chat.click()
    wait_for(lambda: registry.chat(doomed.id) is not None)
    wait_for(lambda: dialog.chats.count() == 0 and not dialog.restore_chat.isEnabled())
    wait_for(lambda: sidebar.model.chat_index(doomed.id, ws.id).isValid())
    wait_for(lambda: window.chat_panel.chat_id == doomed.id)
    dialog.close()


def test_the_chat_menu_key_deletes_the_open_chat_and_shift_delete_in_the_sidebar(opened):
    registry = opened.cairn.registry
    first = registry.new_chat(title="First")
    second = registry.new_chat(title="Second")
    window, sidebar = opened.window, opened.window.sidebar
    wait_for(lambda: sidebar.model.chat_index(second.id, UNGROUPED).isValid())
    window.select_chat(first.id)
    wait_for(lambda: window.chat_panel.chat_id == first.id)
    seen: list[tuple[str, str, str]] = []
    _answer("Delete", seen)
    QTest.keyClick(window.chat_panel.composer.edit, Qt.Key.Key_Backspace,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    wait_for(lambda: registry.chat(first.id) is None)
    assert seen and seen[0][1] == "Cancel"
    # Shift+Delete on a chat's row in the sidebar asks the same question.
    sidebar.tree.setCurrentIndex(sidebar.model.chat_index(second.id, UNGROUPED))
    sidebar.tree.setFocus()
    _answer("Delete", seen)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Delete, Qt.KeyboardModifier.ShiftModifier)
    wait_for(lambda: registry.chat(second.id) is None)
    assert seen[-1][:2] == ("Delete chat?", "Cancel")


def test_a_chat_deleted_by_another_process_leaves_the_sidebar_and_the_open_chat(opened,
                                                                               isolated):
    registry = opened.cairn.registry
    chat = registry.new_chat(title="Shared")
    window, sidebar = opened.window, opened.window.sidebar
    wait_for(lambda: sidebar.model.chat_index(chat.id, UNGROUPED).isValid())
    window.select_chat(chat.id)
    wait_for(lambda: window.chat_panel.chat_id == chat.id)
    other = Registry.open(isolated)  # another process, as far as SQLite can tell
    try:
        other.remove_chat(chat.id)
    finally:
        other.close()
    assert registry.sync()  # what the window does on its timer and on activation
    wait_for(lambda: not sidebar.model.chat_index(chat.id, UNGROUPED).isValid())
    wait_for(lambda: window.center_stack.currentWidget() is not window.chat_panel)
