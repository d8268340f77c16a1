"""What CAIRN.md asks the person to decide, in the real window's knowledge panel, offscreen:
an outside save that removed entries Cairn wrote is
said with Restore and Dismiss; a sync conflict copy beside CAIRN.md is offered with Compare,
Merge and Dismiss; the "CAIRN.md already exists" question's default button replaces nothing.
Screenshots of the bars, light and dark, go to /tmp."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QDialog,
    QLabel,
    QMessageBox,
    QTextBrowser,
    QWidget,
)

from tests.ui.drivers import click, named, show, workspace
from tests.ui.helpers import close_window, open_window, replies, run, wait_for
from ui.app import Starter
from ui.knowledge.panel import DISCARD
from ui.theme import apply_theme

START = "## Facts\n- Budget 40000 EUR\n- Venue: town hall\n"
DROPBOX = "CAIRN (Ana's conflicted copy 2026-12-01).md"


@pytest.fixture
def opened(qapp, loop, isolated) -> Iterator[Starter]:
    starter = open_window(qapp, isolated, size=(1280, 800))
    yield starter
    panel = starter.window.knowledge
    if panel is not None:
        panel.ask_unsaved = replies(lambda: DISCARD)
    close_window(starter)
    apply_theme(qapp, dark=False)


def on_in(starter: Starter, folders) -> tuple[str, Path]:
    (root,) = folders("Acme")
    ws_id = workspace(starter, root)
    starter.cairn.cairn_file_sync.switch(ws_id, True)
    starter.cairn.knowledge.save(ws_id, START, source="user")
    return ws_id, Path(root)


def appears(panel: QWidget, name: str) -> QLabel:
    """The label named *name*, once it is made and shown (a conflict copy's bar is made when
    the watcher finds the copy)."""
    def shown() -> list[QLabel]:
        return [w for w in panel.findChildren(QLabel)
                if w.accessibleName() == name and w.isVisible()]

    wait_for(lambda: len(shown()) == 1, timeout=5)
    return shown()[0]


def shots(widget: QWidget, name: str) -> None:
    """The widget light and dark, for a person to look at."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    for dark in (False, True):
        apply_theme(app, dark=dark)
        QApplication.processEvents()
        widget.grab().save(f"/tmp/{name}-{'dark' if dark else 'light'}.png")
    apply_theme(app, dark=False)


def test_an_outside_save_that_removed_cairns_entries_offers_restore(opened, folders, qtbot):
    ws_id, root = on_in(opened, folders)
    cairn = opened.cairn
    cairn.knowledge.save(ws_id, START + "- Launch 2027-04-15\n", source="rebuild")
    panel = show(opened, ws_id)
    # An editor that had the file open before saves its older text.
    (root / "CAIRN.md").write_text(START.replace("40000", "45000"), encoding="utf-8")
    said = named(panel, QLabel, "Entries removed from CAIRN.md")
    qtbot.waitUntil(lambda: said.isVisible(), timeout=3000)
    assert "removed an entry Cairn wrote since it last read the file" in said.text()
    assert "“Launch 2027-04-15”" in said.text()
    assert said.accessibleDescription() == said.text()
    shots(panel, "cairn-md-removed")
    click(panel, "Restore removed entries")
    qtbot.waitUntil(lambda: not said.isVisible(), timeout=3000)
    text = cairn.knowledge.get(ws_id).text
    assert text == "## Facts\n- Budget 45000 EUR\n- Venue: town hall\n- Launch 2027-04-15\n"
    wait_for(lambda: "Launch 2027-04-15" in panel.editor.text())
    assert (root / "CAIRN.md").read_text(encoding="utf-8") == text


def test_dismissing_the_removal_keeps_the_outside_save(opened, folders, qtbot):
    ws_id, root = on_in(opened, folders)
    panel = show(opened, ws_id)
    (root / "CAIRN.md").write_text("## Facts\n- Budget 40000 EUR\n", encoding="utf-8")
    said = named(panel, QLabel, "Entries removed from CAIRN.md")
    qtbot.waitUntil(lambda: said.isVisible(), timeout=3000)
    click(panel, "Keep the removal")
    qtbot.waitUntil(lambda: not said.isVisible(), timeout=3000)
    assert opened.cairn.knowledge.get(ws_id).text == "## Facts\n- Budget 40000 EUR\n"


def test_a_sync_conflict_copy_is_offered_with_compare_merge_and_dismiss(opened, folders,
                                                                         qtbot):
    ws_id, root = on_in(opened, folders)
    panel = show(opened, ws_id)
    (root / DROPBOX).write_text(START + "- From Ana's laptop\n", encoding="utf-8")
    said = appears(panel, "CAIRN.md conflict copy")
    assert DROPBOX in said.text()
    shots(panel, "cairn-md-conflict-copy")
    click(panel, "Compare the conflict copy")
    qtbot.waitUntil(lambda: panel.folder.compared is not None
                    and panel.folder.compared.isVisible(), timeout=3000)
    dialog = panel.folder.compared
    assert isinstance(dialog, QDialog)
    view = named(dialog, QTextBrowser, "Differences from the conflict copy")
    assert "From Ana's laptop" in view.toPlainText()
    dialog.grab().save("/tmp/cairn-md-compare.png")
    dialog.reject()
    click(panel, "Merge the conflict copy")
    qtbot.waitUntil(lambda: not panel.folder.notices.isVisible(), timeout=3000)
    assert opened.cairn.knowledge.get(ws_id).text == START + "- From Ana's laptop\n"
    assert (root / DROPBOX).exists()


def test_dismissing_a_conflict_copy_leaves_the_file_and_the_document(opened, folders, qtbot):
    ws_id, root = on_in(opened, folders)
    panel = show(opened, ws_id)
    name = "CAIRN.sync-conflict-20261201-101010-ABCDEFG.md"
    (root / name).write_text("## Facts\n- Budget 1 EUR\n", encoding="utf-8")
    appears(panel, "CAIRN.md conflict copy")
    click(panel, "Dismiss the conflict copy")
    qtbot.waitUntil(lambda: not panel.folder.notices.isVisible(), timeout=3000)
    assert opened.cairn.knowledge.get(ws_id).text == START and (root / name).exists()


def test_enter_in_the_cairn_md_exists_question_replaces_nothing(opened, folders, qtbot):
    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    opened.cairn.knowledge.save(ws_id, START, source="user")
    (Path(root) / "CAIRN.md").write_text("# My own notes\n", encoding="utf-8")
    panel = show(opened, ws_id)
    switch = named(panel, QCheckBox, "Keep this document as CAIRN.md in the folder")
    wait_for(lambda: switch.isVisible())
    task = asyncio.ensure_future(panel.folder.ask_keep(f"{root}/CAIRN.md"))

    def asked() -> list[QMessageBox]:
        return [w for w in QApplication.topLevelWidgets()
                if isinstance(w, QMessageBox) and w.isVisible()]

    qtbot.waitUntil(lambda: bool(asked()), timeout=3000)
    (question,) = asked()
    default = question.defaultButton()
    assert default is not None and question.standardButton(default) == \
        QMessageBox.StandardButton.Cancel
    assert "Either way the other's text stays in the document's history" in question.text()
    qtbot.keyClick(question, Qt.Key.Key_Return)
    assert run(task) is None
    assert (Path(root) / "CAIRN.md").read_text(encoding="utf-8") == "# My own notes\n"
