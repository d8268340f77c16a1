"""A notice is about what the person was doing: "the folder … is missing"
goes once Move to folder… fixed it and never shows over an unrelated chat; "Imported …" goes
once another chat is opened; a problem of the whole window stays."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.ui.helpers import run, wait_for


def test_a_missing_folders_notice_goes_with_the_fix_and_with_another_chat(opened, folders,
                                                                          tmp_path):
    window = opened.window
    acme, other = folders("Acme", "Other")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    (elsewhere, _), _ = run(opened.ops.add_workspace(other))
    unrelated, _ = run(opened.ops.new_chat(workspace_id=elsewhere.id, title="Unrelated"))
    moved = tmp_path / "moved" / "Acme"
    moved.parent.mkdir()
    shutil.move(acme, moved)
    run(opened.ops.check_folders())
    window.select_workspace(ws.id)
    window.new_chat()  # refused: the folder is missing
    wait_for(lambda: window.notice.isVisible() and "missing" in window.notice.label.text())
    assert "missing" in window.notice.label.accessibleName()  # read out with its words
    window.select_chat(unrelated.id)  # another chat: the sentence was not about it
    wait_for(lambda: window.chat_panel.chat_id == unrelated.id)
    assert not window.notice.isVisible()
    window.select_workspace(ws.id)
    window.new_chat()
    wait_for(lambda: window.notice.isVisible())
    window.sidebar.handlers.ask_folder = lambda title: str(moved)
    window.sidebar.handlers.move_to_folder(ws.id)  # Move to folder… fixes it
    wait_for(lambda: opened.cairn.registry.workspace(ws.id) is not None
             and Path(opened.cairn.registry.workspace(ws.id).path) == moved.resolve())
    wait_for(lambda: not window.notice.isVisible())


def test_a_problem_of_the_whole_window_stays(opened, folders):
    window = opened.window
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    one, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="One"))
    two, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="Two"))
    window.select_chat(one.id)
    window.notice.say("The search index is damaged.", lasting=True)
    window.select_chat(two.id)
    wait_for(lambda: window.chat_panel.chat_id == two.id)
    assert window.notice.isVisible()
    window.notice.say("Imported “Acme” into /tmp/acme (3 files, 2 chats).")
    window.select_chat(one.id)
    wait_for(lambda: window.chat_panel.chat_id == one.id)
    assert not window.notice.isVisible()
