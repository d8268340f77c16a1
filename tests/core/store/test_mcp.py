"""MCP servers configured once in Claude Desktop's shape, their secrets in the keychain (never
the database or the logs), on per workspace, an imported server off everywhere."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import keyring
import pytest

from app.base.db import SCHEMA_VERSION
from app.errors import Refused
from app.store.mcp import ServerConfig, claude_desktop_file, read_claude_desktop

SECRET = "ghp_SECRET-token-4242"

SAMPLE = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"]},
        "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}, "disabled": False},
        "Files.local": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                                   "/tmp"], "type": "stdio"},
    },
    "preferences": {"quickEntryShortcut": "off"},
}


@pytest.fixture
def cairn(isolated):
    from app.cairn import Cairn

    opened = Cairn.open()
    yield opened
    opened.close()


def _everything_stored(cairn) -> str:
    """Every row of every table, and every log, as one text."""
    db = Path(cairn.registry.db.path)
    conn = sqlite3.connect(db)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    rows = [repr(conn.execute(f"SELECT * FROM \"{t}\"").fetchall()) for t in tables]
    conn.close()
    logs = [p.read_text(errors="replace") for p in (db.parent / "logs").rglob("*") if p.is_file()]
    raw = b"".join(p.read_bytes() for p in db.parent.glob("cairn.db*"))
    return "\n".join(rows + logs) + raw.decode("latin-1")


def test_the_migration_makes_the_tables(cairn):
    tables = {r[0] for r in cairn.registry.db.query(
        "SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"mcp_server", "workspace_mcp", "mcp_tool_policy"} <= tables
    assert SCHEMA_VERSION >= 14  # 14 when written (its number may move when branches merge)


def test_import_claude_desktop_keeps_its_shape_and_puts_secrets_in_the_keychain(cairn, tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps(SAMPLE))
    added, kept = cairn.mcp.import_servers(read_claude_desktop(path))
    assert sorted(added) == ["Files.local", "github", "time"] and kept == []
    github = cairn.mcp.get("github")
    assert github.imported and github.extra == {"disabled": False}
    assert cairn.mcp.get("Files.local").extra == {"type": "stdio"}
    assert github.to_json()["env"] == {"GITHUB_PERSONAL_ACCESS_TOKEN": "…"}
    assert cairn.mcp.with_secrets(github).env == {"GITHUB_PERSONAL_ACCESS_TOKEN": SECRET}
    assert keyring.get_password("Cairn", "mcp:github:env:GITHUB_PERSONAL_ACCESS_TOKEN") == SECRET
    assert SECRET not in _everything_stored(cairn)
    # Imported: off in every workspace until the person turns it on.
    ws, _ = cairn.registry.add_workspace(str(tmp_path))
    assert cairn.mcp.on_in([ws.id]) == []
    # A second import keeps what is there.
    again, kept = cairn.mcp.import_servers(read_claude_desktop(path))
    assert again == [] and sorted(kept) == ["Files.local", "github", "time"]


def test_on_per_workspace_and_the_chain(cairn, tmp_path):
    (tmp_path / "p" / "c").mkdir(parents=True)
    project, _ = cairn.registry.add_workspace(str(tmp_path / "p"))
    child, _ = cairn.registry.add_workspace(str(tmp_path / "p" / "c"))
    cairn.mcp.add(ServerConfig("time", command="uvx", args=("mcp-server-time",)))
    assert cairn.mcp.on_in([project.id, child.id]) == []
    cairn.mcp.turn_on("time", project.id)
    assert cairn.mcp.on_in([project.id, child.id]) == ["time"]
    assert cairn.mcp.on_in([child.id]) == []
    cairn.mcp.turn_off("time", project.id)
    assert cairn.mcp.on_in([project.id]) == []


def test_policies_nearest_workspace_wins(cairn, tmp_path):
    cairn.mcp.add(ServerConfig("time", command="uvx"))
    cairn.mcp.set_policy("time", "get_current_time", "ws_p", "off")
    cairn.mcp.set_policy("time", "get_current_time", "ws_c", "allow")
    assert cairn.mcp.policies(["ws_p", "ws_c"]) == {("time", "get_current_time"): "allow"}
    cairn.mcp.set_policy("time", "get_current_time", "ws_c", "ask")  # the default: no row
    assert cairn.mcp.policies(["ws_p", "ws_c"]) == {("time", "get_current_time"): "off"}
    with pytest.raises(Refused, match="ask, allow or off"):
        cairn.mcp.set_policy("time", "x", "ws_c", "sometimes")


def test_remove_forgets_the_secrets_and_the_workspaces(cairn, tmp_path):
    cairn.mcp.add(ServerConfig("remote", url="https://mcp.example.com/mcp",
                               headers={"Authorization": f"Bearer {SECRET}"}))
    cairn.mcp.turn_on("remote", "ws_a")
    assert keyring.get_password("Cairn", "mcp:remote:headers:Authorization") == f"Bearer {SECRET}"
    assert SECRET not in _everything_stored(cairn)
    cairn.mcp.remove("remote")
    assert keyring.get_password("Cairn", "mcp:remote:headers:Authorization") is None
    assert cairn.mcp.servers() == [] and cairn.mcp.on_in(["ws_a"]) == []


@pytest.mark.parametrize("config, words", [
    (ServerConfig("", command="x"), "a server's name is 1 to 48"),
    (ServerConfig("a/b", command="x"), "a server's name is 1 to 48"),
    (ServerConfig("x" * 49, command="x"), "a server's name is 1 to 48"),
    (ServerConfig("both", command="x", url="https://a.b"), "not both"),
    (ServerConfig("neither"), "not neither"),
    (ServerConfig("u", url="ftp://a.b"), "not an http or https URL"),
    (ServerConfig("u", url="https://me:pw@a.b"), "credentials in a header"),
    (ServerConfig("e", command="x", env={"BAD KEY": "v"}), "not a valid environment variable"),
    (ServerConfig("h", url="https://a.b", headers={"X": "a\r\nInjected: 1"}), "one line"),
    (ServerConfig("h", command="x", headers={"X": "1"}), "headers are for a server at a URL"),
    (ServerConfig("n", command="x\0y"), "must be text"),
])
def test_refusals_are_one_sentence_and_store_nothing(cairn, config, words):
    with pytest.raises(Refused, match=words) as refused:
        cairn.mcp.add(config)
    assert "\n" not in str(refused.value)
    assert cairn.mcp.servers() == [] and keyring.get_keyring().secrets == {}


def test_a_taken_name_is_refused_whatever_its_case(cairn):
    cairn.mcp.add(ServerConfig("Time", command="uvx"))
    with pytest.raises(Refused, match="a server of that name exists"):
        cairn.mcp.add(ServerConfig("time", command="other", env={"K": "v"}))
    assert [s.command for s in cairn.mcp.servers()] == ["uvx"]
    assert keyring.get_keyring().secrets == {}


@pytest.mark.parametrize("content, words", [
    (b"not json", "is not JSON"),
    (b"[]", "has no \"mcpServers\" object"),
    (json.dumps({"mcpServers": {"ok": {"command": "x"}, "bad/name": {"command": "y"}}}).encode(),
     "a server's name"),
    (json.dumps({"mcpServers": {"ok": {"command": "x", "args": "one string"}}}).encode(),
     "args must be a list"),
])
def test_a_broken_claude_desktop_file_imports_nothing(cairn, tmp_path, content, words):
    path = tmp_path / "c.json"
    path.write_bytes(content)
    with pytest.raises(Refused, match=words):
        cairn.mcp.import_servers(read_claude_desktop(path))
    assert cairn.mcp.servers() == []


def test_a_missing_file_is_one_sentence(tmp_path):
    with pytest.raises(Refused, match="there is no file"):
        read_claude_desktop(tmp_path / "nowhere.json")


def test_where_claude_desktop_keeps_its_file(monkeypatch, tmp_path):
    monkeypatch.setattr("sys.platform", "darwin")
    assert claude_desktop_file().parts[-4:] == ("Library", "Application Support", "Claude",
                                                "claude_desktop_config.json")
    monkeypatch.setattr("sys.platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert claude_desktop_file() == tmp_path / "Roaming" / "Claude" / "claude_desktop_config.json"
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert claude_desktop_file() == tmp_path / "cfg" / "Claude" / "claude_desktop_config.json"


def test_a_fifo_or_a_device_is_refused_at_once(tmp_path):
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # a reader without a writer would block forever
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(Refused, match="is not a file"):
            read_claude_desktop(path)
