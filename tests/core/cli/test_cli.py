"""The command line: subcommands, JSON shapes, exit codes 0 / 1 / 2, messages verbatim."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.helpers import fresh_python
from ui.main import main


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def empty(isolated, capsys):
    """Start from an empty list: remove the first-use workspace made at first start."""
    (first,) = run_json(capsys, "workspace", "list")
    run(capsys, "workspace", "remove", first["id"])


def test_version_and_help(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("Cairn ")
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "workspace" in out and "chat" in out
    for argv in (["open", "--help"], ["open", "-h"], ["some/folder", "--help"]):
        code, out, err = run(capsys, *argv)  # the window's own usage, never a window
        assert (code, err) == (0, "") and out.startswith("usage: cairn [open] [PATH]"), argv
    code, out, _ = run(capsys, "workspace", "--help")
    assert code == 0 and "advance" in out


def test_workspace_lifecycle(empty, capsys, folders):
    acme, brand = folders("Acme", "Acme/Brand")
    ws = run_json(capsys, "workspace", "add", acme)
    assert set(ws) >= {"id", "title", "path", "status", "parent", "build_status",
                       "created_at", "updated_at"}
    assert (ws["title"], ws["path"], ws["status"], ws["parent"], ws["build_status"]) == (
        "Acme", acme, "ok", None, "idea")
    folder = run_json(capsys, "workspace", "add", brand, "--end")
    assert folder["parent"] == ws["id"]
    assert [w["id"] for w in run_json(capsys, "workspace", "list")] == [ws["id"], folder["id"]]
    assert run_json(capsys, "workspace", "rename", ws["id"], "Acme Inc")["title"] == "Acme Inc"
    changed = run_json(capsys, "workspace", "set", ws["id"], "--description", "Brand work",
                       "--status", "building")
    assert (changed["description"], changed["build_status"]) == ("Brand work", "building")
    assert run_json(capsys, "workspace", "advance", ws["id"])["build_status"] == "shipped"
    assert run_json(capsys, "workspace", "show", ws["id"])["title"] == "Acme Inc"
    code, out, _ = run(capsys, "workspace", "list")
    assert code == 0 and "Acme Inc" in out and "  " + folder["id"] in out  # folder indented
    assert run_json(capsys, "workspace", "remove", ws["id"]) == {"id": ws["id"], "removed": True}
    assert run_json(capsys, "workspace", "list")[0]["parent"] is None
    code, out, _ = run(capsys, "workspace", "remove", "ws_gone")
    assert code == 0 and "nothing to remove" in out


@pytest.mark.parametrize("argv, message", [
    (["workspace", "add", "relative/dir"], "Workspace path is not fully qualified: 'relative/dir'\n"),
    (["workspace", "add", "."], "Workspace path is not fully qualified: '.'\n"),
    (["workspace", "show", "ws_x"], "cannot show workspace 'ws_x': no such workspace\n"),
    (["chat", "archive", "ch_x"],
     "cannot archive session 'ch_x': live sessions and session persistence hold no such session\n"),
    (["chat", "pin", "ch_x"], "cannot pin session 'ch_x': no such session\n"),
])
def test_refusals_exit_1_with_the_message_verbatim(isolated, capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (1, "", message)


def test_missing_path_and_file_refused(isolated, capsys, tmp_path):
    code, _, err = run(capsys, "workspace", "add", str(tmp_path / "nope"))
    assert code == 1 and err == f"cannot create a workspace at '{tmp_path / 'nope'}': path does not exist\n"
    (tmp_path / "f.txt").write_text("x")
    code, _, err = run(capsys, "workspace", "add", str(tmp_path / "f.txt"))
    assert code == 1 and err.endswith("path is not a directory\n")


@pytest.mark.parametrize("argv", [
    ["workspace"], ["workspace", "bogus"], ["workspace", "add"], ["chat", "move", "ch_x"],
    ["chat", "move", "ch_x", "--to", "two"], ["workspace", "set", "ws_x", "--status", "done"],
])
def test_bad_usage_exits_2(isolated, capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2 and "usage:" in err
    assert len(err.splitlines()) == 1, err  # what is wrong, then the usage, on one line


def test_chat_commands(empty, capsys, folders):
    (acme,) = folders("Acme")
    ws = run_json(capsys, "workspace", "add", acme)
    first = run_json(capsys, "chat", "new", "--folder", acme, "--title", "Launch copy")
    second = run_json(capsys, "chat", "new", "--folder", acme)
    loose = run_json(capsys, "chat", "new", "--folder", "not/qualified")
    # DESIGN §8: resolved against the current directory, recorded even if missing.
    assert (first["workspace"], loose["workspace"], loose["folder"]) == (
        ws["id"], None, os.path.abspath("not/qualified"))
    assert second["title"] == "New chat"
    assert run_json(capsys, "chat", "pin", first["id"])["pinned"] is True
    assert run_json(capsys, "chat", "move", first["id"], "--to", "1")["id"] == first["id"]
    listing = run_json(capsys, "chat", "list")
    assert set(listing) == {"pinned", "workspaces", "ungrouped", "archived"}
    assert [c["id"] for c in listing["pinned"]] == [first["id"]]
    assert [c["id"] for c in listing["workspaces"][0]["chats"]] == [first["id"], second["id"]]
    assert [c["id"] for c in listing["ungrouped"]] == [loose["id"]]
    archived = run_json(capsys, "chat", "archive", first["id"])
    assert archived["archived"] is True and archived["pinned"] is False
    code, _, err = run(capsys, "chat", "pin", first["id"])
    assert (code, err) == (1, f"cannot pin session '{first['id']}': the session is archived\n")
    listing = run_json(capsys, "chat", "list")
    assert listing["pinned"] == [] and [c["id"] for c in listing["archived"]] == [first["id"]]
    assert run_json(capsys, "chat", "unarchive", first["id"])["pinned"] is False
    assert run_json(capsys, "chat", "show", first["id"])["archived"] is False
    assert run_json(capsys, "chat", "unpin", first["id"])["pinned"] is False
    code, out, _ = run(capsys, "chat", "list")
    assert code == 0 and "WORKSPACES" in out and "Launch copy" in out and "UNGROUPED" in out


def test_data_dir_flag(tmp_path, capsys):
    other = tmp_path / "elsewhere"
    code, _, _ = run(capsys, "--data-dir", str(other), "workspace", "list")
    assert code == 0 and (other / "cairn.db").exists()


def test_the_installed_command_lists_without_qt_or_the_sdk(isolated):
    probe = (
        "import sys; from ui.main import main; code = main(['workspace', 'list', '--json']);"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('PySide6', 'shiboken6', 'qasync', 'anthropic', 'httpx', 'httpx2'));"
        "print('HEAVY', heavy); raise SystemExit(code)"
    )
    printed = fresh_python(probe)
    assert "HEAVY []" in printed
    assert json.loads(printed.split("HEAVY")[0])[0]["title"] == "Cairn"


def test_workspace_move_for_a_missing_folder(empty, capsys, folders, tmp_path):
    (old,) = folders("Thesis")
    ws = run_json(capsys, "workspace", "add", old)
    Path(old).rename(tmp_path / "Thesis-2026")
    moved = run_json(capsys, "workspace", "move", ws["id"], str(tmp_path / "Thesis-2026"))
    assert moved["title"] == "Thesis" and moved["path"] == str(tmp_path / "Thesis-2026")
    assert [w["id"] for w in run_json(capsys, "workspace", "list")] == [moved["id"]]


def test_list_indents_folders_under_their_parents_whatever_the_order(empty, capsys, folders):
    acme, brand, logo = folders("Acme", "Acme/Brand", "Acme/Brand/Logo")
    for path in (acme, brand, logo):  # each new one leads the list: children come first
        run_json(capsys, "workspace", "add", path)
    code, out, _ = run(capsys, "workspace", "list")
    lines = out.splitlines()
    titles = [(len(line) - len(line.lstrip()), line.split()[1]) for line in lines]
    assert titles == [(0, "Acme"), (2, "Brand"), (4, "Logo")]


def test_chat_list_shows_nested_workspaces_nested_and_in_order(empty, capsys, folders):
    """A folder under its workspace, indented, as the sidebar shows it."""
    acme, brand, thesis = folders("Acme", "Acme/Brand", "Thesis")
    run_json(capsys, "workspace", "add", thesis)
    run_json(capsys, "workspace", "add", brand)
    a = run_json(capsys, "workspace", "add", acme)  # leads the list; Brand nests under it
    run_json(capsys, "chat", "new", "--folder", brand, "--title", "Logo ideas")
    run_json(capsys, "chat", "new", "--folder", acme, "--title", "Q3 plans")
    code, out, _ = run(capsys, "chat", "list")
    lines = out.splitlines()
    start = lines.index("WORKSPACES")
    assert code == 0
    shown = [re.sub(r"ch_\w+  |  \(ws_\w+\)", "", line) for line in lines[start + 1:start + 6]]
    assert shown == ["  Acme", "    Brand", "      Logo ideas", "    Q3 plans", "  Thesis"]
    listing = run_json(capsys, "chat", "list")
    assert [(w["title"], w["parent"]) for w in listing["workspaces"]] == [
        ("Acme", None), ("Brand", a["id"]), ("Thesis", None)]


def test_a_command_reads_the_chats_it_needs_and_checks_the_database_first(
        isolated, capsys, tmp_path, monkeypatch):
    """`workspace list` reads no chat (at 50,000 chats that was most of its time); a command
    that lists or changes chats reads them all, from the same snapshot; the integrity check
    runs at the start of every command, once."""
    import random

    from app.base import db as db_module
    from app.store.registry.loader import Loader
    from tests.scale_data import build

    build(isolated, tmp_path / "folders", random.Random(5), chats=600, workspaces=12)
    whole = run_json(capsys, "chat", "list")  # (the first command also marks the check done)
    pages: list[str] = []
    checks: list[str] = []
    real_pages, real_scan = Loader._read_pages, Loader._scan_ungrouped
    monkeypatch.setattr(Loader, "_read_pages",
                        lambda self, load, ids: (pages.extend(ids), real_pages(self, load, ids)))
    monkeypatch.setattr(Loader, "_scan_ungrouped",
                        lambda self, load: (pages.append("ungrouped"), real_scan(self, load)))
    real_check = db_module._check
    monkeypatch.setattr(db_module, "_check",
                        lambda conn, path: (checks.append("check"), real_check(conn, path)))

    assert len(run_json(capsys, "workspace", "list")) == 12
    assert pages == [] and checks == ["check"]
    checks.clear()
    assert run_json(capsys, "chat", "list") == whole
    assert len(pages) > 12 and "ungrouped" in pages and checks == ["check"]
