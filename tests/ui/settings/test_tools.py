"""Settings → Tools, offscreen: the configured MCP servers with what they run and where they
are on; Add (a program with its environment, a server at a URL with its headers: values in the
keychain, never the database); a refusal said in the dialog with what was typed kept; Remove
after a confirmation; Import from Claude Desktop (its own file, or one picked), said, each
imported server off everywhere.  Nothing here starts a server."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import keyring
import pytest
from PySide6.QtCore import Qt

from app.ops import Operations
from app.store.settings import KEYRING_SERVICE
from tests.ui.drivers import named
from tests.ui.helpers import wait_for
from ui.settings import SettingsDialog
from ui.settings.tools import AddServerDialog, ToolsPage

SECRET = "ghp_SECRET-from-the-window-7731"
SAMPLE = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"]},
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}},
        "files": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"],
                  "disabled": False},
    },
    "preferences": {"quickEntryShortcut": "off"},
}


@pytest.fixture
def page(qtbot: Any, loop: Any, online: Any) -> ToolsPage:
    made = ToolsPage(Operations(online), online.registry)
    qtbot.addWidget(made)
    made.resize(640, 480)
    made.show()
    with qtbot.waitSignal(made.sig_loaded, timeout=10_000):
        pass
    return made


def _rows(page: ToolsPage) -> list[list[str]]:
    return [[page.list.topLevelItem(i).text(c) for c in range(3)]
            for i in range(page.list.topLevelItemCount())]


def _database_text(online: Any) -> str:
    conn = sqlite3.connect(online.registry.db.path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    text = "\n".join(repr(conn.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)
    conn.close()
    return text


def _secrets() -> dict[str, str]:
    return {user: value for (service, user), value in keyring.get_keyring().secrets.items()
            if service == KEYRING_SERVICE and user.startswith("mcp:")}


def test_settings_has_a_tools_tab(qtbot, loop, online):
    dialog = SettingsDialog(Operations(online), registry=online.registry,
                            settings=online.settings, catalog=online.catalog)
    qtbot.addWidget(dialog)
    tabs = dialog._tabs
    assert [tabs.tabText(i) for i in range(tabs.count())][-1] == "Tools"
    assert isinstance(tabs.widget(tabs.count() - 1), ToolsPage)


def test_add_a_program_with_a_secret_then_remove_it(qtbot, page, online, workspace):
    assert page.empty.isVisible() and _rows(page) == []
    page.add_button.click()
    dialog = page.adding
    assert isinstance(dialog, AddServerDialog) and dialog.isVisible()
    dialog.name.setText("github")
    dialog.command.setText("npx")
    dialog.arguments.setPlainText("-y\n@modelcontextprotocol/server-github\n")
    dialog.env.setPlainText(f"GITHUB_PERSONAL_ACCESS_TOKEN={SECRET}")
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()
    assert _rows(page) == [["github", "npx -y @modelcontextprotocol/server-github",
                            "off everywhere"]]
    assert "Added github. It is off in every workspace" in page.message.text()
    assert _secrets() == {"mcp:github:env:GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}
    assert SECRET not in _database_text(online)
    # On in a workspace: the list says where (the workspace's title).
    online.mcp.turn_on("github", workspace.id)
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        page.reload()
    assert _rows(page)[0][2] == workspace.title
    # Remove: asked first; Cancel keeps it, Remove takes it and its secret.
    page.list.setCurrentItem(page.list.topLevelItem(0))
    asked: list[str] = []
    page.confirm_remove = lambda name: asked.append(name) or False  # type: ignore[method-assign]
    page.remove_button.click()
    assert asked == ["github"] and [c.name for c in online.mcp.servers()] == ["github"]
    page.confirm_remove = lambda name: True  # type: ignore[method-assign]
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        page.remove_button.click()
    assert _rows(page) == [] and online.mcp.servers() == [] and _secrets() == {}
    assert page.message.text() == "Removed github."


def test_add_a_server_at_a_url_with_a_header(qtbot, page, online):
    page.open_add()
    dialog = page.adding
    assert dialog is not None
    dialog.name.setText("docs")
    dialog.at_url.setChecked(True)
    assert dialog.fields.currentIndex() == 1
    dialog.url.setText("https://mcp.example.com/mcp")
    dialog.headers.setPlainText("Authorization: Bearer tok-99")
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        dialog.add_button.click()
    assert _rows(page) == [["docs", "https://mcp.example.com/mcp", "off everywhere"]]
    assert _secrets() == {"mcp:docs:headers:Authorization": "Bearer tok-99"}
    assert online.mcp.get("docs").headers == {"Authorization": ""}


def test_a_refused_server_is_said_in_the_dialog_and_what_was_typed_stays(qtbot, page, online):
    page.open_add()
    dialog = page.adding
    assert dialog is not None
    dialog.name.setText("git")
    dialog.command.setText("uvx")
    dialog.env.setPlainText("no equals sign here")
    dialog.add_button.click()
    assert dialog.isVisible()
    assert dialog.message.text() == ("Cannot add the MCP server 'git': line 1 of its "
                                     "environment variables is not KEY=VALUE")
    assert dialog.env.toPlainText() == "no equals sign here"
    # A name taken: refused by the core (on the writer), said the same way.
    online.mcp.add(__import__("app.store.mcp", fromlist=["ServerConfig"]).ServerConfig(
        "git", command="uvx"))
    dialog.env.setPlainText("")
    dialog.add_button.click()
    wait_for(lambda: "exists" in dialog.message.text())
    assert dialog.isVisible() and dialog.name.text() == "git"
    # Neither a command nor a URL.
    dialog.command.setText("")
    dialog.name.setText("other")
    dialog.add_button.click()
    assert "give either a command to run or a URL, not neither" in dialog.message.text()


def test_import_from_claude_desktop_and_from_a_file(qtbot, page, online, tmp_path,
                                                    monkeypatch, workspace):
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setattr("sys.platform", "linux")
    # No file where Claude Desktop keeps it: one sentence, nothing added.
    with qtbot.waitSignal(page.sig_said, timeout=10_000,
                          check_params_cb=lambda text: text != "Importing…"):
        page.import_button.click()
    assert page.message.text().startswith("Cannot import from Claude Desktop: there is no file")
    assert online.mcp.servers() == []
    own = home / "Claude" / "claude_desktop_config.json"
    own.parent.mkdir(parents=True)
    own.write_text(json.dumps(SAMPLE))
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        page.import_button.click()
    said = page.message.text()
    assert said.startswith("Added time, github, files from ") and str(own) in said
    assert "off in every workspace until you turn it on" in said
    assert [r[0] for r in _rows(page)] == ["files", "github", "time"]
    assert all(r[2] == "off everywhere" for r in _rows(page))
    assert online.mcp.on_in([workspace.id]) == []
    assert _secrets() == {"mcp:github:env:GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}
    assert SECRET not in _database_text(online)
    assert online.mcp.get("files").extra == {"disabled": False}
    # A file the person picks: the names taken are kept as they were.
    picked = tmp_path / "other.json"
    picked.write_text(json.dumps({"mcpServers": {
        "time": {"command": "other"}, "fetch": {"command": "uvx", "args": ["mcp-server-fetch"]}}}))
    page.ask_file = lambda: str(picked)  # type: ignore[method-assign]
    with qtbot.waitSignal(page.sig_loaded, timeout=10_000):
        page.import_file_button.click()
    assert page.message.text() == (f"Added fetch from {picked}; it is off in every workspace "
                                   "until you turn it on. Kept time as it was: a server of "
                                   "that name exists.")
    assert online.mcp.get("time").command == "uvx"


def test_controls_are_named(page):
    for name in ("Add MCP server", "Remove MCP server", "Import from Claude Desktop",
                 "Import a configuration file"):
        assert named(page, __import__("PySide6.QtWidgets", fromlist=["QPushButton"]).QPushButton,
                     name)
    assert page.list.accessibleName() == "MCP servers"


def test_the_add_dialog_closes_on_escape(qtbot, page):
    page.open_add()
    dialog = page.adding
    assert dialog is not None and dialog.isVisible()
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert not dialog.isVisible()


_ = Path
