"""The knowledge panel in the real window, offscreen: edit and save (the button, Ctrl+S), the
unsaved guard (another selection, closing), a rebuild's result while unedited (at once, its
changes lit up) and while edited (merge, keep mine, reload — each checked against the stored
versions), history with its diff and Restore, instructions, files (drop, dialog, describe,
remove), a folder chat's documents, the status line with Retry now, folding the panel, and
accessible names.  Rebuild results are written through the core, as the rebuild writes them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QFont
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QTextBrowser,
    QTreeWidget,
    QWidget,
)

from tests.ui import helpers
from tests.ui.drivers import click, named, panel_of, show, workspace, workspace_clicked
from tests.ui.helpers import replies, run, wait_for
from ui.app import Starter, start
from ui.knowledge.panel import CANCEL, DISCARD, SAVE, KnowledgePanel


@pytest.fixture
def opened(offline_window: Starter) -> Starter:
    return offline_window












def type_keys(widget: QWidget, text: str) -> None:
    """Typed as keys (QTest knows no key for a line break: Return)."""
    for n, line in enumerate(text.split("\n")):
        if n:
            helpers.QTBOT.keyClick(widget, Qt.Key.Key_Return)
        if line:
            helpers.QTBOT.keyClicks(widget, line)


def type_into(panel: KnowledgePanel, text: str) -> None:
    edit = panel.editor.edit
    edit.setFocus()
    edit.moveCursor(edit.textCursor().MoveOperation.End)
    type_keys(edit, text)


def versions(starter: Starter, owner: str) -> list[tuple[int, str, str]]:
    store = starter.cairn.knowledge
    return [(v.version, v.source, store.version_text(owner, v.version))
            for v in reversed(store.history(owner))]


# ================================================================= edit and save


def test_edit_and_save_with_the_button_and_the_unsaved_dot(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    editor = named(panel, QPlainTextEdit, "Knowledge")
    assert editor.toPlainText() == "" and not editor.isReadOnly()
    dot = named(panel, QLabel, "Unsaved changes")
    assert not dot.isVisible() and not named(panel, QAbstractButton, "Save").isEnabled()
    type_into(panel, "## Facts\n- Launch is 2027-04-15\n")
    assert dot.isVisible() and panel.tabs.tabText(0) == "Knowledge ●"
    assert named(panel, QLabel, "Knowledge size").text() == "32 / 30,000 characters"
    click(panel, "Save")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 1)
    assert opened.cairn.knowledge.get(ws).text == "## Facts\n- Launch is 2027-04-15\n"
    assert opened.cairn.knowledge.get(ws).source == "user"
    wait_for(lambda: not dot.isVisible())
    assert panel.tabs.tabText(0) == "Knowledge"
    wait_for(lambda: named(panel, QLabel, "Knowledge status").text().startswith(
        "Edited by you just now"))
    # Undo and redo are the editor's own, with buttons.
    click(panel, "Undo")
    assert dot.isVisible()
    click(panel, "Redo")
    assert not dot.isVisible()


def test_ctrl_s_saves(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    type_into(panel, "- Prefers short answers\n")
    helpers.QTBOT.keyClick(panel.editor.edit, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: opened.cairn.knowledge.get(ws).text == "- Prefers short answers\n")
    wait_for(lambda: not panel.is_dirty())


def test_the_preview_renders_the_markdown(opened, folders):
    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    type_into(panel, "## Decisions\n- Ship the **German** site\n")
    click(panel, "Preview")
    preview = named(panel, QTextBrowser, "Knowledge preview")
    assert preview.isVisible() and not panel.editor.edit.isVisible()
    wait_for(lambda: "German" in preview.toPlainText())  # (built off the GUI thread)
    assert "**" not in preview.toPlainText()
    assert "<b>" in preview.toHtml() or "font-weight" in preview.toHtml()
    click(panel, "Preview")
    assert panel.editor.edit.isVisible()


# ================================================================= the unsaved guard


def test_the_guard_asks_before_another_selection_drops_unsaved_text(opened, folders):
    acme, thesis = folders("Acme Inc", "Thesis")
    first, second = workspace(opened, acme), workspace(opened, thesis)
    panel = show(opened, first)
    type_into(panel, "- Mine\n")
    asked: list[str] = []

    def answer(choice: str) -> Callable[[], str]:
        return lambda: (asked.append(choice), choice)[1]

    panel.ask_unsaved = replies(answer(CANCEL))
    opened.window.sidebar.select_workspace(second)  # as a click selects it
    workspace_clicked(opened.window, second)
    wait_for(lambda: asked == [CANCEL])
    assert panel.ws_id == first and panel.editor.text() == "- Mine\n"
    assert opened.window.sidebar.current_id() == first  # the selection went back

    panel.ask_unsaved = replies(answer(SAVE))
    workspace_clicked(opened.window, second)
    wait_for(lambda: panel.ws_id == second)
    assert opened.cairn.knowledge.get(first).text == "- Mine\n"  # saved before leaving

    wait_for(lambda: panel.editor.opened is not None and panel.editor.owner == second)
    type_into(panel, "- Thrown away\n")
    panel.ask_unsaved = replies(answer(DISCARD))
    workspace_clicked(opened.window, first)
    wait_for(lambda: panel.ws_id == first)
    assert opened.cairn.knowledge.get(second).version == 0  # nothing saved
    wait_for(lambda: panel.editor.text() == "- Mine\n")
    assert asked == [CANCEL, SAVE, DISCARD]

    # A chat of the same workspace keeps the panel (and the text) as it is: no question.
    type_into(panel, "- Still mine\n")
    chat, _ = run(opened.ops.new_chat(folder=acme))
    opened.window._chat_selected(chat.id)
    assert asked == [CANCEL, SAVE, DISCARD] and panel.is_dirty()


def test_the_guard_asks_before_the_window_closes(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    type_into(panel, "- Mine\n")
    panel.ask_unsaved = replies(lambda: CANCEL)
    opened.window.close()
    helpers.QTBOT.wait(50)
    assert opened.window.isVisible()
    panel.ask_unsaved = replies(lambda: SAVE)
    opened.window.close()
    wait_for(lambda: not opened.window.isVisible())
    assert opened.cairn.knowledge.get(ws).text == "- Mine\n"


# ================================================================= rebuild results


def rebuild_saves(starter: Starter, owner: str, text: str, chat_id: str | None = None) -> int:
    """What a rebuild's result does: a new version with source rebuild, through the core."""
    document = starter.cairn.knowledge.save(owner, text, source="rebuild", chat_id=chat_id)
    return document.document.version


def test_a_rebuild_while_unedited_shows_at_once_with_its_changes_lit_up(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    opened.cairn.knowledge.save(ws, "## Facts\n- a\n- b\n", source="user")
    panel = show(opened, ws)
    chat, _ = run(opened.ops.new_chat(folder=acme))
    rebuild_saves(opened, ws, "## Facts\n- a\n- b (updated 2026-11-30)\n- c\n", chat.id)
    wait_for(lambda: panel.editor.text().endswith("- c\n"))
    assert panel.editor.edit.flashed == [2, 3]  # the changed entries, for a moment
    assert not panel.is_dirty() and panel.editor.opened.version == 2
    assert not named(panel, QWidget, "Knowledge conflict").isVisible()
    wait_for(lambda: panel.editor.status_line.label.text().startswith("Updated from a chat"))
    wait_for(lambda: panel.editor.edit.flashed == [], timeout=10)


@pytest.fixture
def conflict(opened, folders):  # type: ignore[no-untyped-def]
    """A document at version 1, the person's edit on it, and a rebuild's version 2 arriving."""
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    opened.cairn.knowledge.save(ws, "## Facts\n- a\n- b\n", source="user")
    panel = show(opened, ws)
    type_into(panel, "- mine\n")
    theirs = "## Facts\n- a\n- b\n- from a chat\n"
    chat, _ = run(opened.ops.new_chat(folder=acme))
    rebuild_saves(opened, ws, theirs, chat.id)
    bar = named(panel, QWidget, "Knowledge conflict")
    wait_for(bar.isVisible)
    text = named(panel, QLabel, "Knowledge conflict message").text()
    assert text.startswith("A chat updated this document while you were editing (now version 2)")
    assert panel.editor.text() == "## Facts\n- a\n- b\n- mine\n"  # the person's text stays
    return ws, panel, theirs


def test_the_status_line_agrees_with_the_bar_when_a_chat_saves_a_new_document(opened,
                                                                              folders):
    """Typing into a document never saved, while a chat saves version 1:
    the bar says "now version 1", and the status line no longer says "Not saved yet…"."""
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    line = panel.editor.status_line.label
    wait_for(lambda: line.text().startswith("Not saved yet"))
    type_into(panel, "## Facts\n- mine\n")
    chat, _ = run(opened.ops.new_chat(folder=acme))
    rebuild_saves(opened, ws, "## Facts\n- from a chat\n", chat.id)
    bar = named(panel, QWidget, "Knowledge conflict")
    wait_for(bar.isVisible)
    assert "(now version 1)" in named(panel, QLabel, "Knowledge conflict message").text()
    wait_for(lambda: line.text().startswith("Updated from a chat"))
    assert "Not saved yet" not in line.text()


def rebuilds_started(opened, monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    """The chats whose rebuild is started from now on (recorded, not run)."""
    ran: list[str] = []
    monkeypatch.setattr(opened.cairn.scheduler, "run_now", lambda chat_id: ran.append(chat_id))
    return ran


def test_while_editing_the_save_offers_the_choice_and_writes_nothing(opened, conflict):
    ws, panel, theirs = conflict
    click(panel, "Save")
    helpers.QTBOT.wait(100)
    wait_for(lambda: not panel.editor.status_line.pending)
    assert versions(opened, ws) == [(1, "user", "## Facts\n- a\n- b\n"), (2, "rebuild", theirs)]
    assert named(panel, QWidget, "Knowledge conflict").isVisible()


def test_merge_puts_the_incoming_changes_into_my_text(opened, conflict):
    ws, panel, theirs = conflict
    click(panel, "See incoming changes")
    incoming = named(panel, QTextBrowser, "Incoming changes")
    wait_for(lambda: "from a chat" in incoming.toPlainText())
    assert "+" in incoming.toPlainText()
    click(panel, "Merge")
    wait_for(lambda: "from a chat" in panel.editor.text())
    merged = panel.editor.text()
    assert "- mine" in merged and "- from a chat" in merged
    assert panel.editor.edit.flashed  # what came in is lit up
    assert panel.is_dirty() and panel.editor.opened.version == 2  # based on theirs now
    assert opened.cairn.knowledge.get(ws).version == 2  # nothing saved until Save
    click(panel, "Save")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 3)
    assert versions(opened, ws) == [(1, "user", "## Facts\n- a\n- b\n"), (2, "rebuild", theirs),
                                    (3, "user", merged)]
    wait_for(lambda: not panel.is_dirty())


def test_keep_mine_saves_my_text_as_the_newest_and_theirs_stays_in_the_history(opened, conflict,
                                                                              monkeypatch):
    ws, panel, theirs = conflict
    ran = rebuilds_started(opened, monkeypatch)
    click(panel, "Keep mine")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 3)
    assert versions(opened, ws) == [(1, "user", "## Facts\n- a\n- b\n"), (2, "rebuild", theirs),
                                    (3, "user", "## Facts\n- a\n- b\n- mine\n")]
    wait_for(lambda: not panel.is_dirty())
    assert not named(panel, QWidget, "Knowledge conflict").isVisible()
    (chat,) = opened.cairn.registry.chats_of(ws)
    assert ran == [chat.id]  # the rebuild it replaced runs again, on top of it


def test_reload_shows_theirs_and_undo_brings_my_text_back(opened, conflict):
    ws, panel, theirs = conflict
    click(panel, "Reload")
    wait_for(lambda: panel.editor.text() == theirs)
    assert not panel.is_dirty() and panel.editor.opened.version == 2
    assert versions(opened, ws)[-1] == (2, "rebuild", theirs)  # nothing written
    panel.editor.edit.undo()  # the person's text was not lost
    assert panel.editor.text() == "## Facts\n- a\n- b\n- mine\n" and panel.is_dirty()


def test_reload_undo_save_learns_the_chat_again_on_top(opened, conflict, monkeypatch):
    """Reload, Ctrl+Z (the person's text back), Save: the save lacks what
    the chat taught, so it is kept as Keep mine keeps it — the person's text the newest,
    the chat's version in the history, and the chat's exchanges learned again on top."""
    ws, panel, theirs = conflict
    ran = rebuilds_started(opened, monkeypatch)
    click(panel, "Reload")
    wait_for(lambda: panel.editor.text() == theirs)
    panel.editor.edit.undo()
    assert panel.editor.text() == "## Facts\n- a\n- b\n- mine\n"
    click(panel, "Save")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 3)
    assert versions(opened, ws)[-1] == (3, "user", "## Facts\n- a\n- b\n- mine\n")
    (chat,) = opened.cairn.registry.chats_of(ws)
    wait_for(lambda: ran == [chat.id])  # what the chat taught is learned again


def test_reload_then_an_edit_that_keeps_the_chats_entry_is_a_plain_save(opened, conflict,
                                                                        monkeypatch):
    ws, panel, theirs = conflict
    ran = rebuilds_started(opened, monkeypatch)
    click(panel, "Reload")
    wait_for(lambda: panel.editor.text() == theirs)
    type_into(panel, "- mine again\n")
    click(panel, "Save")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 3)
    assert "- from a chat" in opened.cairn.knowledge.get(ws).text
    assert ran == []  # nothing the chat taught left: nothing to learn again


# ================================================================= history


def test_history_lists_versions_shows_a_diff_and_restores(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    chat, _ = run(opened.ops.new_chat(folder=acme, title="Launch copy"))
    opened.cairn.knowledge.save(ws, "## Facts\n- Launch 2027-03-01\n", source="user")
    rebuild_saves(opened, ws, "## Facts\n- Launch 2027-04-15 (updated 2026-11-30)\n- Dana signs\n",
                  chat.id)
    panel = show(opened, ws)
    click(panel, "History")
    rows = named(panel, QListWidget, "Versions")
    wait_for(lambda: rows.count() == 2)
    assert rows.item(0).text().startswith("Version 2 · just now\na chat: Launch copy · ")
    assert rows.item(1).text().startswith("Version 1 · just now\nyou · ")
    changes = named(panel, QTextBrowser, "Changes")
    wait_for(lambda: "Dana signs" in changes.toPlainText())
    assert "Launch 2027-03-01" in changes.toPlainText()  # the line it replaced, struck
    assert not named(panel, QAbstractButton, "Restore").isEnabled()  # already the current
    rows.setCurrentRow(1)
    named(panel, QComboBox, "Compare with").setCurrentIndex(1)  # against the current
    named(panel, QAbstractButton, "Side by side").setChecked(True)
    summary = named(panel, QLabel, "Changes summary")
    wait_for(lambda: summary.text().startswith("Version 1 → Current (version 2)"))
    click(panel, "Restore")
    wait_for(lambda: opened.cairn.knowledge.get(ws).version == 3)
    assert versions(opened, ws)[-1] == (3, "restore", "## Facts\n- Launch 2027-03-01\n")
    wait_for(lambda: rows.count() == 3 and rows.currentRow() == 0)
    wait_for(lambda: panel.editor.text() == "## Facts\n- Launch 2027-03-01\n")  # unedited
    click(panel, "Back to the document")
    assert panel.editor.edit.isVisible()


def test_a_new_version_while_the_history_is_open_is_listed(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    opened.cairn.knowledge.save(ws, "- one\n", source="user")
    panel = show(opened, ws)
    click(panel, "History")
    rows = named(panel, QListWidget, "Versions")
    wait_for(lambda: rows.count() == 1)
    rebuild_saves(opened, ws, "- one\n- two\n")
    wait_for(lambda: rows.count() == 2)
    assert rows.item(0).text().startswith("Version 2 · just now\na chat")


# ================================================================= instructions


def test_instructions_are_saved_and_a_change_elsewhere_offers_the_choice(opened, folders):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    panel.tabs.setCurrentWidget(panel.instructions)
    description = named(panel, QPlainTextEdit, "Description")
    instructions = named(panel, QPlainTextEdit, "Instructions")
    helpers.QTBOT.keyClicks(description, "B2B analytics")
    helpers.QTBOT.keyClicks(instructions, "Formal tone")
    assert panel.tabs.tabText(1) == "Instructions ●"
    click(panel, "Save instructions")
    registry = opened.cairn.registry
    wait_for(lambda: registry.workspace(ws).instructions == "Formal tone")
    assert registry.workspace(ws).description == "B2B analytics"
    wait_for(lambda: not panel.instructions.is_dirty())

    helpers.QTBOT.keyClicks(instructions, ", short answers")
    registry.update_workspace(ws, instructions="Cite the brand guide")  # the command line
    wait_for(named(panel, QWidget, "Instructions conflict").isVisible)
    assert instructions.toPlainText() == "Formal tone, short answers"
    click(panel, "Keep my instructions")
    wait_for(lambda: registry.workspace(ws).instructions == "Formal tone, short answers")
    wait_for(lambda: not panel.instructions.is_dirty())


# ================================================================= files


def test_files_added_by_drop_and_dialog_described_and_removed(opened, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    panel.tabs.setCurrentWidget(panel.files)
    brief = tmp_path / "brief.md"
    brief.write_text("# Launch brief\n")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(brief))])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    panel.files.dropEvent(drop)
    listed = named(panel, QTreeWidget, "Knowledge files")
    wait_for(lambda: listed.topLevelItemCount() == 1)
    item = listed.topLevelItem(0)
    assert [item.text(c) for c in range(3)] == ["brief.md", "15 B", "Markdown"]
    guide = tmp_path / "guide.txt"
    guide.write_text("Use the stacked logo.\n")
    panel.files.ask_files = lambda: [str(guide)]
    click(panel, "Add files")
    wait_for(lambda: listed.topLevelItemCount() == 2)

    listed.setCurrentItem(listed.topLevelItem(0))
    (record,) = [f for f in opened.cairn.files.of_workspaces([ws]) if f.name == "brief.md"]
    manifest = named(panel, QLabel, "Manifest line")
    assert manifest.text() == f"- [{record.id}] brief.md (15 B, project)"
    assert manifest.font().styleHint() == QFont.StyleHint.Monospace  # the model's line
    listed.clearSelection()
    listed.setCurrentItem(None)
    wait_for(lambda: manifest.text().startswith("Select a file"))
    # The hint in the line's place reads as text, not as code.
    assert manifest.font().family() == panel.files.font().family()
    assert manifest.font().styleHint() != QFont.StyleHint.Monospace
    listed.setCurrentItem(listed.topLevelItem(0))
    wait_for(lambda: manifest.text() == f"- [{record.id}] brief.md (15 B, project)")
    field = named(panel, QLineEdit, "File description")
    field.setText("The Q3 launch brief")
    click(panel, "Save description")
    wait_for(lambda: manifest.text().endswith("— The Q3 launch brief"))
    assert opened.cairn.files.get(record.id).description == "The Q3 launch brief"

    blob = opened.cairn.files.blobs.path(record.sha256)
    asked: list[str] = []
    panel.files.confirm_remove = lambda name: (asked.append(name), False)[1]
    click(panel, "Remove file")
    assert asked == ["brief.md"] and listed.topLevelItemCount() == 2  # not confirmed
    panel.files.confirm_remove = lambda name: True
    click(panel, "Remove file")
    wait_for(lambda: listed.topLevelItemCount() == 1)
    assert [f.name for f in opened.cairn.files.of_workspaces([ws])] == ["guide.txt"]
    assert not blob.exists()


def answer_the_question(button: str) -> list[str]:
    """Press *button* of the next modal question, once it is open; its text, for the test."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    seen: list[str] = []

    def press() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(20, press)
            return
        seen.append(box.text())
        (chosen,) = [b for b in box.buttons() if b.text().replace("&", "") == button]
        chosen.click()

    QTimer.singleShot(20, press)
    return seen


def test_the_real_questions_ask_and_answer(opened, folders, tmp_path):
    """The confirmation before a removal and the unsaved question, as the person sees them."""
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    seen = answer_the_question("Cancel")
    assert panel.files.confirm_remove("brief.md") is False
    assert seen and "Remove “brief.md”" in seen[0]
    seen = answer_the_question("Remove")
    assert panel.files.confirm_remove("brief.md") is True
    seen = answer_the_question("Discard")
    assert run(panel.ask_unsaved()) == DISCARD
    assert seen == ["Save your changes to the knowledge document before leaving?"]


def test_while_the_unsaved_question_is_open_the_window_s_other_work_goes_on(opened, folders):
    """The question is asked inside a task: asked with an event loop of its own, every other
    task that came due meanwhile was refused by asyncio and never ran again — the catch-up
    with the command line and the folders' checks stopped for the rest of the session."""
    from PySide6.QtWidgets import QApplication, QMessageBox

    acme, brand = folders("Acme Inc", "Brand")
    first, second = workspace(opened, acme), workspace(opened, brand)
    panel = show(opened, first)
    type_into(panel, "- Mine, not saved\n")
    assert panel.is_dirty()
    opened.window.sidebar.select_workspace(second)  # as a click selects it
    workspace_clicked(opened.window, second)
    wait_for(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    ran: list[str] = []

    async def other_work() -> None:
        ran.append("ran")

    opened.window.run_task(other_work())  # (as the catch-up's timer starts its task)
    wait_for(lambda: ran == ["ran"])
    box = QApplication.activeModalWidget()
    assert isinstance(box, QMessageBox)
    box.button(QMessageBox.StandardButton.Cancel).click()
    wait_for(lambda: QApplication.activeModalWidget() is None)
    assert panel.ws_id == first and panel.is_dirty()  # cancelled: nothing went
    opened.window.run_task(other_work())  # and after it, as before it
    wait_for(lambda: ran == ["ran", "ran"])


def test_a_file_that_cannot_be_added_is_said(opened, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    panel.files.ask_files = lambda: [str(tmp_path / "missing.txt")]
    panel.files.choose_files()
    wait_for(opened.window.notice.isVisible)
    assert "missing.txt" in opened.window.notice.label.text()


# ================================================================= folders, status, folding


def test_a_folder_chat_switches_between_the_folder_and_the_project_document(opened, folders):
    acme, brand = folders("Acme Inc", "Acme Inc/Brand")
    project, folder = workspace(opened, acme), workspace(opened, brand)
    opened.cairn.knowledge.save(project, "- project fact\n", source="user")
    opened.cairn.knowledge.save(folder, "- folder fact\n", source="user")
    chat, _ = run(opened.ops.new_chat(folder=brand))
    opened.window.select_chat(chat.id)
    panel = panel_of(opened)
    wait_for(lambda: panel.editor.text() == "- folder fact\n")
    box = named(panel, QComboBox, "Document")
    assert box.isVisible()
    assert [box.itemText(i) for i in range(box.count())] == ["Project: Acme Inc", "Folder: Brand"]
    box.setCurrentIndex(0)
    box.activated.emit(0)
    wait_for(lambda: panel.editor.text() == "- project fact\n")
    assert panel.instructions.ws_id == project and panel.files.ws_id == project


def test_the_status_line_says_the_last_failure_and_retry_now_runs_the_chats(opened, folders,
                                                                            monkeypatch):
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    chat, _ = run(opened.ops.new_chat(folder=acme))
    cairn = opened.cairn
    cairn.chats.append(chat.id, "user", [{"type": "text", "text": "Launch is in April."}])
    cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "Noted. " * 20}])
    with cairn.registry.db.write() as conn:
        conn.execute("INSERT INTO knowledge_status (owner, last_error, last_error_at) VALUES"
                     " (?, ?, '2026-11-30T10:00:00Z')",
                     (ws, "Cannot reach the server; check your internet connection."))
    ran: list[str] = []
    monkeypatch.setattr(cairn.scheduler, "run_now", lambda chat_id: ran.append(chat_id))
    panel = show(opened, ws)
    status = named(panel, QLabel, "Knowledge status")
    wait_for(lambda: status.text().startswith("Cannot reach the server"))
    assert "1 exchange waiting" in status.text()
    click(panel, "Retry now")
    wait_for(lambda: ran == [chat.id])


def test_a_rebuild_failure_naming_a_command_shows_no_backticks(opened, folders):
    """The status line and the chat header show a core sentence's
    `code` as plain words."""
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    chat, _ = run(opened.ops.new_chat(folder=acme))
    failure = ("The model 'claude-nope' was not found. Pick another model in Settings or with "
               "`cairn settings set model.knowledge MODEL`.")
    with opened.cairn.registry.db.write() as conn:
        conn.execute("INSERT INTO knowledge_status (owner, last_error, last_error_at) VALUES"
                     " (?, ?, '2026-11-30T10:00:00Z')", (ws, failure))
    panel = show(opened, ws)
    status = named(panel, QLabel, "Knowledge status")
    wait_for(lambda: status.text().startswith("The model 'claude-nope' was not found."))
    assert "with cairn settings set model.knowledge MODEL." in status.text()
    assert "`" not in status.text()
    opened.window.select_chat(chat.id)
    header = opened.window.chat_panel.header
    wait_for(lambda: header.knowledge.accessibleDescription().startswith("The model"))
    shown = header.knowledge.toolTip() + header.knowledge.accessibleDescription()
    assert "cairn settings set model.knowledge MODEL" in shown and "`" not in shown


def test_a_running_rebuild_shows_a_bar_and_the_size_is_told_against_the_caps(opened, folders):
    from app.events import RebuildStarted, WorkEnded
    from ui.knowledge.editor import size_line

    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    chat, _ = run(opened.ops.new_chat(folder=acme))
    other, _ = run(opened.ops.new_chat())  # Ungrouped: not this document's
    panel = show(opened, ws)
    line = panel.editor.status_line
    hub = opened.cairn.registry.hub
    hub.emit(RebuildStarted(other.id))
    helpers.QTBOT.wait(50)
    assert not line.progress.isVisible()
    hub.emit(RebuildStarted(chat.id))
    wait_for(line.progress.isVisible)
    wait_for(lambda: line.label.text().startswith("Learning from a chat…"))
    hub.emit(WorkEnded(chat.id, "background job"))
    wait_for(lambda: not line.progress.isVisible())
    # One limit counted against, the same as the document grows.
    assert size_line(12_345) == ("12,345 / 30,000 characters", False)
    assert size_line(25_000)[0].startswith("25,000 / 30,000 characters — past 20,000")
    assert size_line(31_000) == ("31,000 / 30,000 characters — over the limit: chats compress "
                                 "it, and each message gets its most relevant entries", True)
    panel.editor.edit.setPlainText("x" * 20_001)
    label = named(panel, QLabel, "Knowledge size")
    assert label.text().startswith("20,001 / 30,000")
    panel.editor.edit.setPlainText("x" * 30_001)
    # Its warning whole at the panel's width: wrapped, never cut off.
    assert label.wordWrap()
    wait_for(lambda: label.height() >= label.heightForWidth(label.width()))


def test_the_panel_folds_away_and_comes_back(opened, folders):
    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    click(panel, "Hide knowledge panel")
    assert not panel.isVisible() and not opened.window.knowledge_action.isChecked()
    opened.window.knowledge_action.trigger()
    assert panel.isVisible()
    helpers.QTBOT.keyClick(opened.window, Qt.Key.Key_K,
                    Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert not panel.isVisible()


def test_a_closed_window_reads_nothing_more(qapp, loop, isolated, folders):
    """After quit the status line's minute timer is stopped and a hidden panel reads
    nothing: a window closed in one test must never start work on a later test's loop."""
    starter = start(qapp, isolated)
    starter.begin()
    wait_for(lambda: starter.ops is not None and starter.window.knowledge is not None)
    (acme,) = folders("Acme Inc")
    panel = show(starter, workspace(starter, acme))
    line = panel.editor.status_line
    starter.window.close()
    run(starter.finish())
    assert not line._timer.isActive() and not line.isVisible()
    started: list[object] = []
    line.run_task = lambda work: (started.append(work), work.close())  # type: ignore[assignment]
    line.refresh()
    assert started == []


def test_an_ungrouped_chat_says_it_has_no_workspace_knowledge(opened):
    chat, _ = run(opened.ops.new_chat())
    opened.window.select_chat(chat.id)
    message = named(panel_of(opened), QLabel, "Knowledge panel message")
    assert message.isVisible() and message.text().startswith("An Ungrouped chat")


def test_every_control_in_the_panel_has_an_accessible_name(opened, folders):
    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    from PySide6.QtWidgets import QAbstractItemView, QCheckBox, QHeaderView, QTextEdit

    controls = [w for kind in (QAbstractButton, QLineEdit, QComboBox, QPlainTextEdit,
                               QTextEdit, QAbstractItemView, QCheckBox)
                for w in panel.findChildren(kind)
                if not isinstance(w.parent(), QComboBox)  # a combo box's own parts
                and not isinstance(w.parent().parent(), QComboBox)
                and not isinstance(w, QHeaderView)  # the file list's own column headers
                and type(w).__name__ not in ("QTabBar", "QToolBarExtension")]
    unnamed = [f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} in "
               f"{type(w.parent()).__name__} in {type(w.parent().parent()).__name__}"
               for w in controls if not w.accessibleName()]
    assert unnamed == []
    for kind, name in ((QPlainTextEdit, "Knowledge"), (QAbstractButton, "Save"),
                       (QAbstractButton, "History"), (QAbstractButton, "Restore")):
        named(panel, kind, name)


def test_no_panel_path_touches_the_disk_on_the_gui_thread(opened, folders, tmp_path):
    """Loading, saving, history and files run as operations: the document read on the GUI
    thread would have to go through Operations, which runs on the writer thread."""
    import threading

    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    store = opened.cairn.knowledge
    gui = threading.get_ident()
    touched: list[str] = []
    for name in ("get", "save", "history", "version_text"):
        original = getattr(store, name)

        def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
            if threading.get_ident() == gui:
                touched.append(_name)
            return _original(*args, **kw)

        setattr(store, name, spy)
    panel = show(opened, ws)
    type_into(panel, "- Mine\n")
    click(panel, "Save")
    wait_for(lambda: not panel.is_dirty())
    click(panel, "History")
    wait_for(lambda: named(panel, QListWidget, "Versions").count() == 1)
    assert touched == []
    assert Path(tmp_path).exists()


# ================================================================= a hostile document


def test_the_preview_is_built_off_the_gui_thread_and_bounded(opened, folders, monkeypatch):
    """200 KB of nested emphasis (Qt's import is quadratic in the nesting: 16 s, the window
    frozen): the preview is built on a worker thread, the GUI thread keeps running while it
    is built (held here until the test lets it go), and what it lays out is bounded."""
    import threading

    from PySide6.QtCore import QTimer

    from ui.knowledge import preview as preview_module

    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    depth = 8_000
    hostile = (("*a _b " * depth) + "x" + (" b_ a*" * depth)) * 2
    assert len(hostile) > 190_000
    panel.editor.edit.setPlainText(hostile)
    builds: list[int] = []
    release = threading.Event()
    real = preview_module.build

    def held(*args: Any) -> Any:
        builds.append(threading.get_ident())
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(preview_module, "build", held)
    click(panel, "Preview")
    wait_for(lambda: builds)
    ticked: list[bool] = []
    QTimer.singleShot(0, lambda: ticked.append(True))
    wait_for(lambda: ticked)  # the GUI thread's events run while the build waits
    assert threading.get_ident() not in builds
    release.set()
    preview = named(panel, QTextBrowser, "Knowledge preview")
    wait_for(lambda: "The preview shows the first" in preview.toPlainText())
    assert preview.document().characterCount() <= preview_module.PREVIEW_CHARS + 200
    assert len(panel.editor.text()) == len(hostile)  # the editor holds all of it


def test_the_preview_drops_a_build_of_text_that_moved_on(opened, folders, monkeypatch):
    import threading

    from ui.knowledge import preview as preview_module

    (acme,) = folders("Acme Inc")
    panel = show(opened, workspace(opened, acme))
    type_into(panel, "- First text\n")
    release = threading.Event()
    real = preview_module.build
    texts: list[str] = []

    def held(text: str, *args: Any) -> Any:
        texts.append(text)
        release.wait(30)
        return real(text, *args)

    monkeypatch.setattr(preview_module, "build", held)
    click(panel, "Preview")
    wait_for(lambda: texts)
    panel.editor.edit.setPlainText("- Second text\n")
    panel.editor._render_preview()
    release.set()
    preview = named(panel, QTextBrowser, "Knowledge preview")
    wait_for(lambda: "Second text" in preview.toPlainText())
    assert texts[-1] == "- Second text\n" and "First" not in preview.toPlainText()


def test_the_bound_keeps_whole_blocks_and_deep_nesting_is_flattened():
    from ui.chat.markdown import MAX_INLINE_DEPTH, render
    from ui.knowledge.preview import bounded

    text = "".join(f"Paragraph {n} " + "word " * 30 + "\n\n" for n in range(100))
    shown, cut = bounded(text, 1_000)
    assert cut and len(shown) <= 1_000 and shown.rstrip().endswith("word")
    assert text.startswith(shown)
    assert bounded("short", 1_000) == ("short", False)
    deep = "".join(f"*{n} _" for n in range(50)) + "x" + "".join("_ *" for _ in range(50))
    html = render(deep).html
    assert html.count("<em>") + html.count("<strong>") <= MAX_INLINE_DEPTH


def test_the_unsaved_question_names_what_was_edited(opened, folders):
    """"Unsaved knowledge" was asked when only the instructions changed."""
    (acme,) = folders("Acme Inc")
    ws = workspace(opened, acme)
    panel = show(opened, ws)
    panel.tabs.setCurrentWidget(panel.instructions)
    helpers.QTBOT.keyClicks(named(panel, QPlainTextEdit, "Instructions"), "Formal tone")
    assert panel.unsaved_question()[0] == "Unsaved instructions"
    assert "instructions" in panel.unsaved_question()[1]
    assert "knowledge" not in panel.unsaved_question()[1]
    panel.tabs.setCurrentWidget(panel.editor)
    editor = panel.editor.findChild(QPlainTextEdit)
    helpers.QTBOT.keyClicks(editor, "x")
    assert panel.editor.is_dirty()
    assert panel.unsaved_question()[0] == "Unsaved changes"
