"""``cairn mcp …`` and ``cairn ask`` with MCP servers: list, add (a program or a URL, secrets
to the keychain), remove, import from Claude Desktop, on/off per workspace, a server's tools,
a tool's policy; ask declines without a terminal, --allow-tool allows one, --json lists the
calls; on a terminal the person is asked."""

from __future__ import annotations

import asyncio
import io
import json
import sys
from pathlib import Path

import keyring

from app.tools import ALLOW_CHAT, ALLOW_ONCE, ALWAYS_ALLOW, DENY, ApprovalRequest
from tests.helpers import run, run_json

TIME = str(Path(sys.executable).parent / "mcp-server-time")
SECRET = "sk-mcp-SECRET-9911"


def _workspace(capsys, tmp_path, name: str = "Acme") -> str:
    folder = tmp_path / name
    folder.mkdir()
    return run_json(capsys, "workspace", "add", str(folder))["id"]


def test_add_list_on_off_remove(isolated, capsys, tmp_path):
    ws = _workspace(capsys, tmp_path)
    # (--json before --: what follows -- is the program's, even --json)
    code, out, err = run(capsys, "mcp", "add", "time", "--json", "--env", f"TOKEN={SECRET}",
                         "--", TIME, "--local-timezone", "UTC")
    assert code == 0, err
    added = json.loads(out)
    assert added["config"] == {"command": TIME, "args": ["--local-timezone", "UTC"],
                               "env": {"TOKEN": "…"}} and added["workspaces"] == []
    assert keyring.get_password("Cairn", "mcp:time:env:TOKEN") == SECRET
    code, out, _ = run(capsys, "mcp", "list")
    assert code == 0 and "time  (stdio)" in out and "off everywhere" in out and SECRET not in out
    assert run_json(capsys, "mcp", "on", "time", "--workspace", ws)["on"] is True
    assert run_json(capsys, "mcp", "list")[0]["workspaces"] == [ws]
    assert run_json(capsys, "mcp", "off", "time", "--workspace", ws)["on"] is False
    assert run_json(capsys, "mcp", "remove", "time") == {"removed": "time"}
    assert run_json(capsys, "mcp", "list") == []
    assert keyring.get_password("Cairn", "mcp:time:env:TOKEN") is None


def test_add_a_server_at_a_url_with_a_header(isolated, capsys):
    added = run_json(capsys, "mcp", "add", "docs", "--url", "https://mcp.example.com/mcp",
                     "--header", f"Authorization=Bearer {SECRET}")
    assert added["transport"] == "http" and added["config"]["headers"] == {"Authorization": "…"}


def test_refusals_are_one_sentence(isolated, capsys, tmp_path):
    for argv, words in (
            (("mcp", "add", "x", "--url", "ftp://x"), "is not an http or https URL"),
            (("mcp", "add", "y"), "give the program after --"),
            (("mcp", "add", "z", "--url", "https://a.b", "--", "prog"), "not both"),
            (("mcp", "on", "nope", "--workspace", "ws_missing"), "no such workspace"),
            (("mcp", "remove", "nope"), "there is no such server"),
            (("mcp", "tools", "nope"), "there is no such server"),
            (("mcp", "import-claude-desktop", "--file", str(tmp_path / "none.json")),
             "there is no file")):
        code, out, err = run(capsys, *argv)
        assert code == 1 and words in err and err.count("\n") == 1, (argv, err)
    assert run_json(capsys, "mcp", "list") == []
    code, _, err = run(capsys, "workspace", "list", "--", "prog")
    assert code == 2 and "unrecognized arguments: -- prog" in err


def test_import_claude_desktop(isolated, capsys, tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(json.dumps({"mcpServers": {
        "time": {"command": TIME}, "gh": {"command": "npx", "env": {"GH_TOKEN": SECRET}},
        "fs": {"command": "npx", "args": ["-y", "server-filesystem", "/tmp"]}},
        "preferences": {}}))
    done = run_json(capsys, "mcp", "import-claude-desktop", "--file", str(path))
    assert sorted(done["added"]) == ["fs", "gh", "time"] and done["kept"] == []
    assert all(s["imported"] and s["workspaces"] == [] for s in run_json(capsys, "mcp", "list"))
    code, out, _ = run(capsys, "mcp", "import-claude-desktop", "--file", str(path))
    assert code == 0 and "Kept gh as it was" in out


def test_tools_starts_it_and_lists_them(isolated, capsys):
    run(capsys, "mcp", "add", "time", "--", TIME, "--local-timezone", "UTC")
    listed = run_json(capsys, "mcp", "tools", "time")
    assert {t["name"] for t in listed} == {"get_current_time", "convert_time"}
    assert listed[0]["annotations"].get("read_only_hint") is True
    code, out, _ = run(capsys, "mcp", "tools", "time")
    assert code == 0 and "get_current_time" in out and "read_only_hint" in out


def test_policies(isolated, capsys, tmp_path):
    ws = _workspace(capsys, tmp_path)
    run(capsys, "mcp", "add", "time", "--", TIME)
    assert run_json(capsys, "mcp", "deny", "time", "convert_time", "--workspace", ws)[
        "policy"] == "off"
    assert run_json(capsys, "mcp", "allow", "time", "get_current_time", "--workspace", ws)[
        "policy"] == "allow"
    assert run_json(capsys, "mcp", "ask", "time", "get_current_time", "--workspace", ws)[
        "policy"] == "ask"


def test_ask_declines_without_a_terminal_and_allow_tool_allows_one(online, workspace, fake,
                                                                     capsys):
    from app import cli

    online.mcp.add(__import__("app.store.mcp", fromlist=["ServerConfig"]).ServerConfig(
        "time", command=TIME, args=("--local-timezone", "UTC")))
    online.mcp.turn_on("time", workspace.id)
    online.close()
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("I could not look.")
    assert cli.main(["ask", "--folder", workspace.path, "Time?"]) == 0
    _, err = capsys.readouterr()
    assert "Declined time.get_current_time; allow it for one message with --allow-tool " \
           "time.get_current_time" in err
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("It is noon.")
    assert cli.main(["ask", "--folder", workspace.path, "--allow-tool", "time.get_current_time",
                     "--json", "Time now?"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tool_calls"] == [{"name": "time__get_current_time", "outcome": "allowed",
                                      "server": "time", "tool": "get_current_time"}]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_person_is_asked():
    from app.cli.mcp import approver

    request = ApprovalRequest("time", "get_current_time", {"timezone": "UTC", "long": "x" * 500},
                              "ch_1", "ws_1", {"read_only_hint": True})
    for typed, answer in (("o\n", ALLOW_ONCE), ("c\n", ALLOW_CHAT), ("a\n", ALWAYS_ALLOW),
                          ("d\n", DENY), ("\n", DENY), ("maybe\n", DENY)):
        err = Terminal()
        assert asyncio.run(approver([], stdin=Terminal(typed), stderr=err)(request)) == answer
        shown = err.getvalue()
        assert "get_current_time on the MCP server time" in shown and "timezone: UTC" in shown
        assert "… (500 characters)" in shown and "the server says: read-only" in shown
    # Not a terminal: declined without a word; --allow-tool: allowed without a question.
    assert asyncio.run(approver([], stdin=io.StringIO("o\n"))(request)) == DENY
    quiet = Terminal()
    assert asyncio.run(approver(["time.get_current_time"], stdin=Terminal(""),
                                stderr=quiet)(request)) == ALLOW_ONCE
    assert quiet.getvalue() == ""


def test_the_windows_answers_are_the_cores():
    import app.tools as core
    import ui.chat.approval as window

    assert (window.ALLOW_ONCE, window.ALLOW_CHAT, window.ALWAYS_ALLOW, window.DENY) == (
        core.ALLOW_ONCE, core.ALLOW_CHAT, core.ALWAYS_ALLOW, core.DENY)
