"""The knowledge panel's folder switches in the real window, offscreen: CAIRN.md on
writes the file, an edit made outside Cairn shows in the editor within two seconds (the
watcher) and in the history, a refused edit and a deleted file are said under the switch,
and the folder-access switch with its sentence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtWidgets import QCheckBox, QLabel

from tests.ui.drivers import named, show, workspace
from tests.ui.helpers import close_window, open_window, replies, run, wait_for
from ui.app import Starter
from ui.knowledge.folder_switches import ACCESS_SAYS
from ui.knowledge.panel import DISCARD


@pytest.fixture
def opened(qapp, loop, isolated) -> Iterator[Starter]:
    starter = open_window(qapp, isolated, size=(1200, 800))
    yield starter
    panel = starter.window.knowledge
    if panel is not None:
        panel.ask_unsaved = replies(lambda: DISCARD)
    close_window(starter)


def test_cairn_md_switch_writes_the_file_and_an_outside_edit_shows_within_two_seconds(
        opened, folders, qtbot):
    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    cairn = opened.cairn
    cairn.knowledge.save(ws_id, "## Facts\n- Budget 40000 EUR\n", source="user")
    panel = show(opened, ws_id)
    switch = named(panel, QCheckBox, "Keep this document as CAIRN.md in the folder")
    wait_for(lambda: not switch.isChecked() and switch.isVisible())
    switch.click()
    path = Path(root) / "CAIRN.md"
    wait_for(lambda: path.exists())
    assert path.read_text(encoding="utf-8") == "## Facts\n- Budget 40000 EUR\n"
    assert switch.isChecked()

    path.write_text("## Facts\n- Budget 52000 EUR (from my editor)\n", encoding="utf-8")
    # The watcher looks about once a second: within two seconds the editor shows it.
    qtbot.waitUntil(lambda: "52000" in panel.editor.text(), timeout=2000)
    assert cairn.knowledge.history(ws_id)[0].source == "file"
    opened.window.grab().save("/tmp/cairn-md-switch.png")

    # A binary written over it: refused under the switch, the document unchanged.
    path.write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    state = named(panel, QLabel, "CAIRN.md state")
    qtbot.waitUntil(lambda: state.isVisible() and "was not taken in" in state.text(),
                    timeout=3000)
    assert "it is a binary file, not text" in state.text()
    panel.grab().save("/tmp/cairn-md-refused.png")
    assert "52000" in cairn.knowledge.get(ws_id, outside=False).text

    # Deleted: said so, and the document is not emptied.
    path.unlink()
    run(opened.ops.knowledge_file(ws_id))
    qtbot.waitUntil(lambda: "not in the folder any more" in state.text(), timeout=3000)
    assert "52000" in cairn.knowledge.get(ws_id).text


def test_turning_cairn_md_on_over_the_folders_own_file_asks_which_to_keep(opened, folders):
    (root,) = folders("Acme")
    (Path(root) / "CAIRN.md").write_text("# Mine, by hand\n", encoding="utf-8")
    ws_id = workspace(opened, root)
    opened.cairn.knowledge.save(ws_id, "## Facts\n- In Cairn\n", source="user")
    panel = show(opened, ws_id)
    asked: list[str] = []
    panel.folder.ask_keep = replies(lambda path: (asked.append(path), "file")[1])
    switch = named(panel, QCheckBox, "Keep this document as CAIRN.md in the folder")
    wait_for(lambda: switch.isVisible())
    switch.click()
    wait_for(lambda: opened.cairn.knowledge.get(ws_id, outside=False).source == "file")
    assert asked == [f"{root}/CAIRN.md"]
    assert opened.cairn.knowledge.get(ws_id).text == "# Mine, by hand\n"


def test_the_folder_access_switch_says_what_it_allows(opened, folders):
    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    panel = show(opened, ws_id)
    switch = named(panel, QCheckBox, "Let Claude read this project's folder")
    says = named(panel, QLabel, "What folder access allows")
    assert says.text() == ACCESS_SAYS
    wait_for(lambda: switch.isVisible() and not switch.isChecked())
    switch.click()
    wait_for(lambda: opened.cairn.folders.get(ws_id).folder_access)
    # The allow list: hidden paths the person lets Claude read too.
    panel.folder.ask_allow = lambda allowed: [".github", "../outside"]
    allow = panel.folder.allow_button
    wait_for(lambda: allow.isVisible())
    errors: list[str] = []
    panel.folder.sig_error.connect(errors.append)
    allow.click()
    wait_for(lambda: errors)
    assert errors == ["cannot allow '../outside': it leaves the folder with '..'"]
    assert opened.cairn.folders.get(ws_id).allow == ()  # refused: nothing stored
    panel.folder.ask_allow = lambda allowed: [".github"]
    allow.click()
    wait_for(lambda: opened.cairn.folders.get(ws_id).allow == (".github",))


def test_folder_reads_show_as_quiet_lines_in_the_chat(qapp, loop, isolated, fake, folders):
    from tests.ui.drivers import entries, idle, new_chat, send
    from tests.ui.helpers import configure

    configure(isolated, fake)
    starter = open_window(qapp, isolated)
    try:
        (acme,) = folders("Acme Inc")
        (Path(acme) / "notes").mkdir()
        (Path(acme) / "notes" / "plan.md").write_text("# Plan\nApril.\n", encoding="utf-8")
        new_chat(loop, starter, acme)
        ws = next(w for w in starter.cairn.registry.top_level() if w.path == acme)
        run(starter.ops.switch_folder_access(ws.id, True))
        fake.reply_tool_use("listFolder", {"path": "notes"}, text_before="Looking.")
        fake.reply_tool_use("readFolderFile", {"path": "notes/plan.md"})
        fake.reply_text("The plan says April.")
        send(starter, "What does the plan say?")
        wait_for(lambda: idle(starter) and len(entries(starter)) == 2)
        parts = [(p.kind, p.text) for p in entries(starter)[1].parts]
        assert parts == [("text", "Looking."), ("tool", "Listed notes/ — 1 entry"),
                         ("tool", "Read notes/plan.md"), ("text", "The plan says April.")]
    finally:
        close_window(starter)


def test_copy_path_from_the_workspace_menu_puts_the_folder_on_the_clipboard(
        opened, folders, qtbot):
    from PySide6.QtGui import QGuiApplication

    from tests.ui.drivers import trigger

    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    sidebar = opened.window.sidebar
    wait_for(lambda: sidebar.model.workspace_index(ws_id).isValid())
    QGuiApplication.clipboard().setText("before")
    trigger(sidebar.context_menu(sidebar.model.workspace_index(ws_id)), "Copy path")
    assert QGuiApplication.clipboard().text() == root
    # The path is the sidebar's tooltip too.
    from PySide6.QtCore import Qt

    assert root in sidebar.model.workspace_index(ws_id).data(Qt.ItemDataRole.ToolTipRole)


def test_the_chat_header_shows_the_workspace_folder(opened, folders):
    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    chat, _ = run(opened.ops.new_chat(workspace_id=ws_id))
    opened.window.select_chat(chat.id)
    header = opened.window.chat_panel.header
    wait_for(lambda: opened.window.chat_panel.chat_id == chat.id and header.path.isVisible())
    assert header.path.accessibleDescription() == root
    opened.window.grab().save("/tmp/cairn-header-path.png")


def test_importing_into_a_folder_with_its_own_cairn_md_asks_which_to_keep(
        opened, folders, tmp_path):
    from app.sharing.export import export_workspace

    (root,) = folders("Acme")
    ws_id = workspace(opened, root)
    cairn = opened.cairn
    cairn.knowledge.save(ws_id, "## Facts\n- From the bundle\n", source="user")
    run(opened.ops.switch_knowledge_file(ws_id, True))
    bundle = tmp_path / "acme.cairn"
    export_workspace(cairn.registry, ws_id, bundle)
    (target,) = folders("Elsewhere")
    (Path(target) / "CAIRN.md").write_text("# The folder's own\n", encoding="utf-8")
    sharing = opened.window.sharing
    asked: list[str] = []
    sharing.ask_import_folder = replies(lambda name: target)
    sharing.ask_keep_cairn_md = replies(lambda path: (asked.append(path), "document")[1])
    sharing.import_bundle(str(bundle))
    wait_for(lambda: asked and (Path(target) / "CAIRN.md").read_text(encoding="utf-8")
             == "## Facts\n- From the bundle\n")
    assert asked == [f"{target}/CAIRN.md"]
    made = cairn.registry.workspace_for_folder(target)
    assert made is not None and cairn.folders.get(made.id).knowledge_file
