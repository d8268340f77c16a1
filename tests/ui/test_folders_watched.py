"""Workspaces' folders watched while the window runs."""

from __future__ import annotations

from pathlib import Path

from tests.ui.drivers import workspace_clicked


def test_a_folder_deleted_while_the_window_runs_shows_missing_and_new_chat_is_refused(
        opened, folders):
    """No restart, no focus change: the folder gone shows *missing* within
    seconds, New chat on it is refused in one sentence that offers Move to folder… (and its
    menu offers no New chat), and the workspace is ok again when the folder comes back."""
    import shutil

    from app.records import MISSING_DIR, OK
    from tests.ui.helpers import run, wait_for
    from ui.sidebar.menus import workspace_menu

    (thesis,) = folders("Thesis")
    (ws, _), _ = run(opened.ops.add_workspace(thesis))
    window, registry = opened.window, opened.cairn.registry
    sidebar = window.sidebar
    wait_for(lambda: sidebar.model.workspace_index(ws.id).isValid())
    window.sidebar.select_workspace(ws.id)
    workspace_clicked(window, ws.id)
    shutil.rmtree(thesis)
    wait_for(lambda: registry.workspace(ws.id).status == MISSING_DIR)
    menu = workspace_menu(sidebar.handlers, registry.workspace(ws.id))
    assert "New chat" not in [a.text() for a in menu.actions()]
    assert "Move to folder…" in [a.text() for a in menu.actions()]
    # A missing folder is neither shown nor opened in a terminal.
    from ui.sidebar.menus import REVEAL

    assert REVEAL not in [a.text() for a in menu.actions()]
    assert "Open in terminal" not in [a.text() for a in menu.actions()]
    chats_before = registry.chat_count(None)
    said: list[str] = []
    window.notice.say = said.append
    window.new_chat()  # Ctrl+N with the workspace selected
    wait_for(lambda: said)
    assert said[0].startswith("cannot create a chat in 'Thesis': its folder ")
    assert "Move to folder…" in said[0] and "\n" not in said[0]
    assert registry.chat_count(None) == chats_before  # no Ungrouped chat made instead
    assert registry.chat_count(ws.id) == 0
    Path(thesis).mkdir()
    wait_for(lambda: registry.workspace(ws.id).status == OK)


def test_the_sidebar_row_follows_the_folder_going_and_coming_back(opened, folders):
    """The row shows the folder missing, then ok again (it once stayed missing: a status
    change delivered its events without holding readers off; tests/core/test_events.py)."""
    import shutil

    from tests.ui.helpers import run, wait_for
    from ui.sidebar.kinds import MISSING_ROLE

    (thesis,) = folders("Thesis")
    (ws, _), _ = run(opened.ops.add_workspace(thesis))
    sidebar = opened.window.sidebar
    wait_for(lambda: sidebar.model.workspace_index(ws.id).isValid())
    shutil.rmtree(thesis)
    wait_for(lambda: sidebar.model.workspace_index(ws.id).data(MISSING_ROLE) is True)
    Path(thesis).mkdir()
    wait_for(lambda: sidebar.model.workspace_index(ws.id).data(MISSING_ROLE) is False)
