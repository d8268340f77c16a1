"""File dialogs as a person meets them: Import says a bad file before it
asks where to put it, the folder picker takes a folder not made yet, and Attach, Add files,
Export and Import open in the workspace's folder, not the current directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QFileDialog

from tests.ui.helpers import replies, run, wait_for


def test_import_says_a_bad_file_before_asking_for_a_folder(opened, tmp_path):
    window = opened.window
    sharing = window.sharing
    bogus = tmp_path / "notes.cairn"
    bogus.write_text("not a bundle")
    asked: list[str] = []
    sharing.ask_import_folder = replies(lambda name: (asked.append(name), None)[1])
    sharing.import_bundle(str(bogus))
    wait_for(lambda: window.notice.isVisible())
    assert "is not a Cairn bundle" in window.notice.label.text()
    assert asked == []


def test_import_names_the_bundles_workspace_when_it_asks_where(opened, folders, tmp_path):
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    bundle = tmp_path / "acme.cairn"
    run(opened.ops.export_workspace(ws.id, bundle))
    sharing = opened.window.sharing
    asked: list[str] = []
    sharing.ask_import_folder = replies(lambda name: (asked.append(name), None)[1])
    sharing.import_bundle(str(bundle))
    wait_for(lambda: asked)
    assert asked == ["“Acme” (acme.cairn)"] and sharing.start_folder == str(tmp_path)


def test_the_folder_picker_takes_a_folder_not_made_yet(qapp, tmp_path):
    from ui.dialogs import FolderDialog

    dialog = FolderDialog(None, "Import into which folder?", str(tmp_path))
    new = tmp_path / "Acme copy"
    dialog.selectFile(str(new))
    dialog.accept()
    assert dialog.result() == QFileDialog.DialogCode.Accepted
    assert dialog.chosen == str(new) and not new.exists()  # the import makes it


@pytest.fixture
def opened_where(monkeypatch: Any) -> list[tuple[str, str]]:
    """Every file dialog's (title, start folder), none shown."""
    seen: list[tuple[str, str]] = []

    def record(_parent: Any, title: str, start: str = "", *_a: Any, **_k: Any) -> Any:
        seen.append((title, start))
        return ([], "") if "files" in title.lower() else ("", "")

    for name in ("getOpenFileName", "getOpenFileNames", "getSaveFileName"):
        monkeypatch.setattr(QFileDialog, name, staticmethod(record))
    return seen


def test_file_dialogs_open_in_the_workspaces_folder(opened, folders, opened_where):
    window = opened.window
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    chat, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="Plans"))
    window.select_chat(chat.id)
    wait_for(lambda: window.chat_panel.chat_id == chat.id)
    window.chat_panel.composer.ask_files()  # Attach
    window.knowledge.files.ask_files()  # Add files
    window.sharing.ask_export_options = lambda title: (False, False)
    window.sharing.export(ws.id)  # Export…
    window.sharing.choose_bundle()  # Import…
    starts = dict(opened_where)
    assert starts["Attach files"] == acme
    assert starts["Add knowledge files"] == acme
    # Beside the workspace's folder, not inside it (the next export would take the bundle in).
    assert Path(starts["Export workspace"]).parent == Path(acme).parent
    assert starts["Import a workspace"] == acme


def test_export_opens_where_the_last_export_went(opened, folders, tmp_path):
    """The export's dialog remembers the folder of the last export."""
    window = opened.window
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    sharing = window.sharing
    starts: list[str] = []
    elsewhere = tmp_path / "exports"
    elsewhere.mkdir()

    def chosen(title: str) -> str:
        starts.append(sharing.start_folder)
        return str(elsewhere / title)

    sharing.ask_export_options = lambda title: (False, False)
    sharing.ask_export_file = chosen
    sharing.export(ws.id)
    wait_for(lambda: (elsewhere / "Acme.cairn").exists())
    (elsewhere / "Acme.cairn").unlink()
    sharing.export(ws.id)
    wait_for(lambda: (elsewhere / "Acme.cairn").exists())
    assert starts == [str(Path(acme).parent), str(elsewhere)]
