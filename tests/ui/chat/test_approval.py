"""The question before an MCP tool runs, in the real window against the fake Anthropic
server and mcp-server-time over stdio: the server, tool and arguments shown; Allow once runs
it and the reply streams; Always allow skips the question next time; Deny sends a declined
result; Escape denies; Stop ends the wait and the question goes."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.store.mcp import ServerConfig
from tests.ui.drivers import entries, idle, new_chat, send
from tests.ui.helpers import run, wait_for

TIME = str(Path(sys.executable).parent / "mcp-server-time")


def _with_time(opened, folder: str) -> str:
    chat_id = new_chat(None, opened, folder)
    ws = opened.cairn.registry.workspace_for_folder(folder)
    opened.cairn.mcp.add(ServerConfig("time", command=TIME, args=("--local-timezone", "UTC")))
    opened.cairn.mcp.turn_on("time", ws.id)
    return chat_id


def _results(fake) -> list[dict]:
    sent = [r for r in fake.requests if isinstance(r.body, dict) and "messages" in r.body]
    return [b for m in sent[-1].body["messages"] if m["role"] == "user"
            and isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]


def test_allow_once_then_always_then_no_question(opened, fake, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    _with_time(opened, acme)
    panel = opened.window.chat_panel
    bar = panel.approval
    fake.reply_tool_use("time__get_current_time", {"timezone": "Europe/Oslo"})
    fake.reply_text("It is morning in Oslo.")
    send(opened, "What time is it in Oslo?")
    wait_for(lambda: bar.isVisible(), timeout=60)
    text = bar.question.text()
    assert "get_current_time on the MCP server time" in text and "timezone: Europe/Oslo" in text
    assert "the server says: read-only, idempotent; not checked" in text
    assert bar.buttons["once"].hasFocus()  # answered at once by keyboard
    panel.grab().save(str(tmp_path / "approval.png"))
    QTest.keyClick(bar.buttons["once"], Qt.Key.Key_Space)
    wait_for(lambda: idle(opened) and not bar.isVisible(), timeout=60)
    assert "Europe/Oslo" in _results(fake)[0]["content"][0]["text"]
    assert "It is morning in Oslo." in entries(opened)[-1].text
    # Always allow: stored, so the next call runs without a question.
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Noon in UTC.")
    send(opened, "And UTC?")
    wait_for(lambda: bar.isVisible(), timeout=60)
    bar.buttons["always"].click()
    wait_for(lambda: idle(opened), timeout=60)
    ws = opened.cairn.registry.workspace_for_folder(acme)
    assert opened.cairn.mcp.policies([ws.id]) == {("time", "get_current_time"): "allow"}
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Still noon.")
    send(opened, "Again?")
    wait_for(lambda: idle(opened) and "Still noon." in entries(opened)[-1].text, timeout=60)
    assert bar.isHidden()


def test_deny_and_escape_send_a_declined_result(opened, fake, folders):
    (acme,) = folders("Acme Inc")
    _with_time(opened, acme)
    bar = opened.window.chat_panel.approval
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Without the time, then.")
    send(opened, "Time?")
    wait_for(lambda: bar.isVisible(), timeout=60)
    QTest.keyClick(bar, Qt.Key.Key_Escape)
    wait_for(lambda: idle(opened), timeout=60)
    (declined,) = _results(fake)
    assert declined["is_error"] is True and "declined" in declined["content"][0]["text"]
    assert "Without the time, then." in entries(opened)[-1].text


def test_stop_while_the_question_waits(opened, fake, folders):
    (acme,) = folders("Acme Inc")
    chat_id = _with_time(opened, acme)
    bar = opened.window.chat_panel.approval
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    send(opened, "Time?")
    wait_for(lambda: bar.isVisible(), timeout=60)
    turn = opened.cairn.engine.running(chat_id)
    assert turn is not None
    turn.cancel()  # Stop
    wait_for(lambda: idle(opened) and bar.isHidden(), timeout=60)
    assert run(turn.result()).status == "stopped"


def test_a_server_that_cannot_start_is_said_in_the_window(opened, fake, folders):
    (acme,) = folders("Acme Inc")
    new_chat(None, opened, acme)
    ws = opened.cairn.registry.workspace_for_folder(acme)
    opened.cairn.mcp.add(ServerConfig("gone", command="no-such-mcp-server-42"))
    opened.cairn.mcp.turn_on("gone", ws.id)
    said: list[str] = []
    opened.window.chat_panel.sig_error.connect(said.append)
    fake.reply_text("Hello anyway.")
    send(opened, "hi")
    wait_for(lambda: idle(opened) and said, timeout=60)
    assert said == ["The MCP server gone could not start: there is no program "
                    "'no-such-mcp-server-42' on this computer."]
    assert "Hello anyway." in entries(opened)[-1].text
