"""File → Import from Claude.ai or ChatGPT…: pick the export, see what it holds,
a folder per project, import with a progress bar, the report; stopping keeps whole chats."""

from __future__ import annotations

import json
import zipfile

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from tests.history_exports import claude_message, write_claude_export, write_gpt_export
from tests.ui.helpers import wait_for


def open_dialog(opened):  # type: ignore[no-untyped-def]
    window = opened.window
    action = window.history_action
    assert action.isEnabled() and action.text() == "Import from Claude.ai or ChatGPT…"
    action.trigger()
    dialog = window.history_dialog
    assert dialog is not None and dialog.isVisible()
    return dialog


def test_a_claude_export_imports_from_the_window_with_a_folder_per_project(
        opened, loop, tmp_path):
    path = write_claude_export(tmp_path / "claude.zip")
    dialog = open_dialog(opened)
    dialog.resize(640, 480)
    dialog.ask_file = lambda: str(path)
    dialog.choose_zip.click()
    wait_for(lambda: dialog.pages.currentIndex() == 1)
    assert dialog.summary.text().startswith("A Claude.ai export: 2 chat(s)")
    field = dialog.findChild(QLineEdit, None)
    assert field is not None and field.accessibleName() == "Folder for Acme Inc"
    assert field.text().endswith("Imported/Acme Inc")
    target = tmp_path / "Clients" / "Acme"
    dialog.ask_folder = lambda start: str(target)
    next(b for b in dialog.findChildren(type(dialog.import_button))
         if b.accessibleName() == "Choose the folder for Acme Inc").click()
    assert field.text() == str(target)
    dialog.grab().save(str(tmp_path / "history-import.png"))
    dialog.import_button.click()
    wait_for(lambda: dialog.pages.currentIndex() == 3)
    assert dialog.report is not None and dialog.report.chats_new == 2
    assert dialog.bar.value() == dialog.bar.maximum() == 2
    text = dialog.report_view.toPlainText()
    assert text.startswith("Imported from Claude.ai: 2 new chat(s)")
    assert f"the workspace at {target}" in text
    dialog.grab().save(str(tmp_path / "history-report.png"))
    registry = opened.cairn.registry
    wait_for(lambda: registry.workspace_for_folder(str(target)) is not None)
    ws = registry.workspace_for_folder(str(target))
    assert ws is not None and ws.title == "Acme Inc"
    # The sidebar shows the imported chats, and search finds them at once.
    wait_for(lambda: any(c.title == "Trip to Lisbon"
                         for c in registry.chat_listing().ungrouped))
    hits = opened.cairn.search.find("Sintra")
    assert hits and hits[0].kind == "message"
    dialog.accept()
    assert not dialog.isVisible()


def test_a_refused_export_is_said_in_the_dialog_and_esc_closes_it(opened, loop, tmp_path):
    bad = tmp_path / "notes.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("notes.json", json.dumps({"hello": "world"}))
    dialog = open_dialog(opened)
    dialog.ask_file = lambda: str(bad)
    dialog.choose_zip.click()
    wait_for(lambda: dialog.problem.text() != "")
    assert "holds no chats, projects or memories from Claude.ai or ChatGPT" \
        in dialog.problem.text()
    assert dialog.pages.currentIndex() == 0
    from PySide6.QtTest import QTest

    QTest.keyClick(dialog, Qt.Key.Key_Escape)
    assert not dialog.isVisible()


def test_stop_keeps_whole_chats_and_shows_the_report(opened, loop, tmp_path, monkeypatch):
    chats = [{"uuid": f"c{i}", "name": f"Chat {i}", "created_at": "2025-01-01T00:00:00Z",
              "updated_at": "2025-01-01T00:00:00Z", "chat_messages": [
                  claude_message(f"m{i}", "human", f"question {i}", "2025-01-01T00:00:00Z"),
                  claude_message(f"r{i}", "assistant", f"answer {i}", "2025-01-01T00:00:01Z")]}
             for i in range(600)]
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("conversations.json", json.dumps(chats))
    dialog = open_dialog(opened)
    dialog.ask_file = lambda: str(path)
    dialog.choose_zip.click()
    wait_for(lambda: dialog.pages.currentIndex() == 1)
    # The import's thread waits at its first chat until Stop was clicked (a condition, so
    # the race between a fast import and the click is decided).
    import threading

    from app.history import importing

    clicked = threading.Event()
    real_tick = importing._tick

    def tick(*args):  # type: ignore[no-untyped-def]
        real_tick(*args)
        clicked.wait(20)

    monkeypatch.setattr(importing, "_tick", tick)

    def click_stop(_value: int) -> None:
        if not clicked.is_set() and dialog.stop_button.isEnabled():
            dialog.stop_button.click()
            clicked.set()

    dialog.import_button.click()
    dialog.bar.valueChanged.connect(click_stop)  # (after the bar was reset to 0)
    wait_for(lambda: dialog.pages.currentIndex() == 3)
    report = dialog.report
    assert report is not None and report.cancelled
    assert 0 < report.chats_new < 600
    assert "Stopped: the chats imported so far are kept" in dialog.report_view.toPlainText()
    rows = opened.cairn.registry.db.query(
        "SELECT count(*), sum(leaf_id IS NULL) FROM chat WHERE title LIKE 'Chat %'")
    assert rows[0] == (report.chats_new, 0)
    dialog.accept()


def test_a_chatgpt_export_shows_its_counts(opened, loop, tmp_path):
    path = write_gpt_export(tmp_path / "gpt.zip")
    dialog = open_dialog(opened)
    dialog.open_source(str(path))
    wait_for(lambda: dialog.pages.currentIndex() == 1)
    assert dialog.summary.text().startswith("A ChatGPT export: 2 chat(s)")
    assert not dialog.projects_scroll.isVisible()
    dialog.import_button.click()
    wait_for(lambda: dialog.pages.currentIndex() == 3)
    assert dialog.report is not None and dialog.report.chats_new == 2
    dialog.accept()


def test_learn_from_imported_chats_asks_with_the_cost_then_runs_in_the_background(
        opened, loop, tmp_path, fake):
    from app.history.importing import import_history
    from tests import history_exports as ex
    from tests.helpers import add_op
    from tests.ui.drivers import action_texts

    chats = ex.claude_new_chats()
    chats[1]["chat_messages"][1] = ex.claude_message(
        "n2", "assistant", "Our brand colour is orange #FF5500, chosen in 2024 for the "
        "relaunch campaign, for print and web alike.", "2025-04-02T09:00:09Z", parent="n1")
    path = tmp_path / "learn.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("conversations.json", json.dumps(chats))
        zf.writestr("projects.json", json.dumps(ex.claude_projects()))
    cairn = opened.cairn
    target = tmp_path / "Clients" / "Acme"
    import_history(cairn.registry, cairn.files, path, folders={"Acme Inc": str(target)})
    window = opened.window
    ws = cairn.registry.workspace_for_folder(str(target))
    wait_for(lambda: window.sidebar.model.workspace_index(ws.id).isValid())
    menu = window.sidebar.context_menu(window.sidebar.model.workspace_index(ws.id))
    assert "Learn from imported chats…" in action_texts(menu)
    asked: list[str] = []

    async def yes(estimate: str) -> bool:
        asked.append(estimate)
        return True

    from ui.history import LearnImported

    window.learning = LearnImported(window, opened.ops)
    window.learning.ask = yes
    window.learn_imported(ws.id)
    fake.reply_json("update_knowledge", {"ops": [add_op(
        "Brand colour is orange #FF5500", "Our brand colour is orange #FF5500")]})
    wait_for(lambda: "Learned from 1 of 1 imported chat(s)" in window.notice.label.text())
    assert asked and asked[0].startswith("Learning from 1 exchange(s) in 1 imported chat(s) "
                                         "costs about $")
    assert "#FF5500" in cairn.knowledge.get(ws.id).text
