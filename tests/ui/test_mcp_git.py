"""mcp-server-git from the index, in the real window offscreen, on a temporary repository: a
chat in a workspace with it on calls git_status and git_log, each asked for and allowed once;
their results go back to Claude and show as lines that unfold.  And quitting the window with
three servers running leaves no process behind (children counted in /proc)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.store.mcp import ServerConfig
from tests.helpers import children
from tests.ui.drivers import entries, idle, new_chat, send
from tests.ui.helpers import close_window, configure, open_window, run, wait_for

GIT_SERVER = str(Path(sys.executable).parent / "mcp-server-git")
TEST_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_test_server.py")



def _repository(where: Path) -> Path:
    where.mkdir(parents=True)
    git = ["git", "-C", str(where), "-c", "user.name=Ada", "-c", "user.email=ada@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (where / "README.md").write_text("# Launch plan\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "First draft of the launch plan"], check=True)
    (where / "notes.txt").write_text("untracked\n")
    return where


def _results(fake) -> list[dict]:
    sent = [r for r in fake.requests if isinstance(r.body, dict) and "messages" in r.body]
    return [b for m in sent[-1].body["messages"] if m["role"] == "user"
            and isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]


def test_git_status_and_log_through_approval(opened, fake, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    repo = str(_repository(tmp_path / "repo"))
    new_chat(None, opened, acme)
    ws = opened.cairn.registry.workspace_for_folder(acme)
    opened.cairn.mcp.add(ServerConfig("git", command=GIT_SERVER, args=("--repository", repo)))
    opened.cairn.mcp.turn_on("git", ws.id)
    panel = opened.window.chat_panel
    bar = panel.approval
    fake.reply_tool_use("git__git_status", {"repo_path": repo})
    fake.reply_tool_use("git__git_log", {"repo_path": repo, "max_count": 5})
    fake.reply_text("One commit so far, and notes.txt is untracked.")
    send(opened, "What is the state of the repository?")
    for tool in ("git_status", "git_log"):
        wait_for(lambda: bar.isVisible(), timeout=60)
        text = bar.question.text()
        assert f"{tool} on the MCP server git" in text and f"repo_path: {repo}" in text
        assert "read-only" in text  # the server's claim, shown; it skipped no question
        bar.buttons["once"].click()
        wait_for(lambda: not bar.isVisible(), timeout=60)
    wait_for(lambda: idle(opened) and entries(opened)
             and "untracked" in entries(opened)[-1].text, timeout=60)
    status, log = _results(fake)
    assert "notes.txt" in status["content"][0]["text"] and not status.get("is_error")
    assert "First draft of the launch plan" in log["content"][0]["text"]
    reply = entries(opened)[-1]
    lines = [reply.parts[n].text for n in reply.calls()]
    assert [line.split(" · ")[:2] for line in lines] == [["git", "git_status"],
                                                         ["git", "git_log"]]
    assert "First draft of the launch plan" in reply.parts[reply.calls()[1]].detail


@pytest.mark.skipif(not Path("/proc/self/task").exists(),
                    reason="children are counted in /proc (Linux)")
def test_quitting_with_three_servers_running_leaves_no_process(qapp, loop, isolated, fake,
                                                               folders):
    configure(isolated, fake)
    starter = open_window(qapp, isolated)
    before = children()
    try:
        mcp = starter.cairn.mcp
        for name in ("a", "b", "stubborn"):
            mcp.add(ServerConfig(name, command=sys.executable, args=(
                TEST_SERVER, *(("--ignore-term",) if name == "stubborn" else ()))))
            run(starter.ops.start_mcp_tools(name))  # as the Tools page's Show tools does
        assert len(children() - before) == 3
    finally:
        close_window(starter)
    assert children() - before == set()
