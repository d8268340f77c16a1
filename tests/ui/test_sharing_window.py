"""Sharing from the window: Export… in a workspace's menu, a dropped
.cairn file offered for import, Recently removed with Restore."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from tests.ui.helpers import replies, run, wait_for


def test_export_import_and_restore_from_the_window(opened, loop, folders, tmp_path):
    """The window's part of sharing: Export… in a workspace's menu, a dropped .cairn file offered
    for import, and Recently removed with Restore."""
    (acme,) = folders("Acme Inc")
    run(opened.ops.add_workspace(acme))
    registry = opened.cairn.registry
    ws = next(w for w in registry.top_level() if w.path == acme)
    opened.cairn.knowledge.save(ws.id, "## Facts\n- Launch is 2027-04-15\n", source="user")
    window = opened.window
    sharing = window.sharing
    bundle = tmp_path / "acme.cairn"
    sharing.ask_export_options = lambda title: (False, True)
    sharing.ask_export_file = lambda title: str(tmp_path / "acme")  # the suffix is added
    menu = window.sidebar.context_menu(window.sidebar.model.workspace_index(ws.id))
    next(a for a in menu.actions() if a.text() == "Export…").trigger()
    wait_for(lambda: window.notice.isVisible() and "Exported" in window.notice.label.text())
    assert bundle.exists()
    # A .cairn file dropped on the window is offered for import, into a folder chosen.
    target = tmp_path / "disk" / "Acme copy"
    sharing.ask_import_folder = replies(lambda name: str(target))
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(bundle))])
    window.dropEvent(QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                                Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    wait_for(lambda: any(w.path == str(target) for w in registry.top_level()))
    copy = next(w for w in registry.top_level() if w.path == str(target))
    assert opened.cairn.knowledge.get(copy.id).text == "## Facts\n- Launch is 2027-04-15\n"
    # Remove the original, then bring it back from Recently removed.
    run(opened.ops.remove_workspace(ws.id))
    assert registry.workspace(ws.id) is None
    sharing.show_removed()
    wait_for(lambda: sharing.removed_dialog is not None
             and sharing.removed_dialog.list.count() == 1)
    dialog = sharing.removed_dialog
    assert dialog.restore.accessibleName() == "Restore"
    dialog.restore.click()
    wait_for(lambda: registry.workspace(ws.id) is not None)
    assert opened.cairn.knowledge.get(ws.id).text == "## Facts\n- Launch is 2027-04-15\n"
    wait_for(lambda: dialog.list.count() == 0)  # (the list is refreshed by a task)
    dialog.close()


def test_the_file_menu_and_the_workspaces_menu_offer_sharing(opened, loop, folders, tmp_path):
    from tests.ui.drivers import action_texts

    (acme,) = folders("Acme Inc")
    run(opened.ops.add_workspace(acme))
    window = opened.window
    ws = next(w for w in opened.cairn.registry.top_level() if w.path == acme)
    sidebar = window.sidebar
    menu = sidebar.context_menu(sidebar.model.section_index("workspaces"))
    assert action_texts(menu) == ["Import workspace…", "Recently removed…"]
    file_menu = window.menuBar().actions()[0].menu()
    assert [a.text() for a in file_menu.actions() if a.text()] == [
        "Add workspace", "Export workspace…", "Import workspace…",
        "Import from Claude.ai or ChatGPT…", "Recently removed…", "Quit"]
    window.export_selected()  # nothing selected: it says what to do
    assert window.notice.label.text() == "Select a workspace (or one of its chats) to export it."
    window.select_workspace(ws.id)
    window.sharing.ask_export_options = lambda title: (True, False)
    window.sharing.ask_export_file = lambda title: str(tmp_path / "out.cairn")
    window.export_selected()
    wait_for(lambda: (tmp_path / "out.cairn").exists() and "Exported" in
             window.notice.label.text())


def test_recently_removed_flags_a_missing_folder_and_restores_it_elsewhere(opened, folders,
                                                                           tmp_path):
    """The list says the folder is missing before Restore is tried;
    Restore is off for it and "Restore into another folder…" brings it back there."""
    from pathlib import Path

    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    registry, sharing = opened.cairn.registry, opened.window.sharing
    run(opened.ops.remove_workspace(ws.id))
    moved = tmp_path / "moved" / "Acme"
    moved.parent.mkdir()
    Path(acme).rename(moved)
    sharing.show_removed()
    wait_for(lambda: sharing.removed_dialog is not None
             and sharing.removed_dialog.list.count() == 1)
    dialog = sharing.removed_dialog
    assert "(folder missing)" in dialog.list.item(0).text()
    assert not dialog.restore.isEnabled() and dialog.restore_into.isEnabled()
    assert "missing" in dialog.problem.text()
    sharing.ask_restore_folder = lambda: str(moved)
    dialog.restore_into.click()
    wait_for(lambda: registry.workspace(ws.id) is not None)
    assert registry.workspace(ws.id).path == str(moved.resolve())
    wait_for(lambda: dialog.list.count() == 0)
    wait_for(lambda: opened.window.sidebar.current_id() == ws.id)
    dialog.close()


def test_a_bundle_handed_to_the_running_window_starts_its_import(opened, loop, folders,
                                                                  tmp_path):
    """`cairn FILE.cairn` (a double-click in the file manager, Finder's
    open event, Explorer's association) with a window running: the import starts there, never
    an "is not a folder" refusal."""
    (acme,) = folders("Acme Inc")
    run(opened.ops.add_workspace(acme))
    registry = opened.cairn.registry
    ws = next(w for w in registry.top_level() if w.path == acme)
    opened.cairn.knowledge.save(ws.id, "## Facts\n- Shared by hand-over\n", source="user")
    bundle = tmp_path / "Acme.cairn"
    run(opened.ops.export_workspace(ws.id, bundle))
    target = tmp_path / "disk" / "Acme handed"
    asked: list[str] = []
    opened.window.sharing.ask_import_folder = replies(
        lambda name: asked.append(name) or str(target))
    answers: list[dict] = []
    opened._request({"open": str(bundle)}, answers.append)
    wait_for(lambda: any(w.path == str(target) for w in registry.top_level()))
    assert answers == [{"ok": True}] and "Acme.cairn" in asked[0]
    copy = next(w for w in registry.top_level() if w.path == str(target))
    assert opened.cairn.knowledge.get(copy.id).text == "## Facts\n- Shared by hand-over\n"
