"""An MCP call's quiet line in the chat (server · tool · its arguments · time) unfolds to its
full arguments and result as plain text — by mouse (its link) and by keyboard (the message's
menu, Shift+F10) — with the real mcp-server-time in the real window; a huge result is shown
bounded; a declined call and one never run say so."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from app.store.mcp import ServerConfig
from app.store.messages import Message
from app.tools.mcp import call_details
from tests.ui.drivers import entries, follow_link, idle, new_chat, send
from tests.ui.helpers import wait_for
from ui.chat.entries import CALL, build

TIME = str(Path(sys.executable).parent / "mcp-server-time")
LINE = re.compile(r"^time · get_current_time · timezone=Europe/Oslo · \d\d:\d\d$")


def _texts(view, entry, row):
    return [b.doc.toPlainText() for b in view.messages.layout(entry, view.viewport().width(),
                                                               row).blocks]


def test_a_call_line_unfolds_by_mouse_and_keyboard(opened, fake, folders, monkeypatch):
    (acme,) = folders("Acme Inc")
    new_chat(None, opened, acme)
    ws = opened.cairn.registry.workspace_for_folder(acme)
    mcp = opened.cairn.mcp
    mcp.add(ServerConfig("time", command=TIME, args=("--local-timezone", "UTC")))
    mcp.turn_on("time", ws.id)
    mcp.set_policy("time", "get_current_time", ws.id, "allow")
    fake.reply_tool_use("time__get_current_time", {"timezone": "Europe/Oslo"})
    fake.reply_text("It is morning in Oslo.")
    send(opened, "What time is it in Oslo?")
    wait_for(lambda: idle(opened) and entries(opened)
             and "morning" in entries(opened)[-1].text, timeout=60)
    reply = entries(opened)[-1]
    (n,) = reply.calls()
    part = reply.parts[n]
    assert LINE.match(part.text), part.text
    assert part.detail.startswith('Arguments:\n{\n  "timezone": "Europe/Oslo"\n}\n\nResult:\n')
    assert '"timezone": "Europe/Oslo"' in part.detail.split("Result:")[1]  # the server's JSON
    view = opened.window.chat_panel.view
    row = len(entries(opened)) - 1
    texts = _texts(view, reply, row)
    assert any(t.startswith("▸ time · get_current_time") for t in texts)
    assert not any("Result:" in t for t in texts)
    # Mouse: a click on the line's link.
    layout = view.messages.layout(reply, view.viewport().width(), row)
    block = next(b for b in layout.blocks if b.doc.toPlainText().startswith("▸ time"))
    rect = view.visualRect(view.conversation.index(row, 0))
    where = QPoint(int(rect.x() + block.x + 20), int(rect.y() + block.y
                                                      + block.doc.size().height() / 2))
    href, _ = view.messages.anchor_at(reply, view.viewport().width(), row,
                                      QPointF(where - rect.topLeft()))
    assert href == f"{CALL}{n}"
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=where)
    wait_for(lambda: reply.parts[n].open)
    texts = _texts(view, reply, row)
    assert any(t.startswith("▾ time · get_current_time") for t in texts)
    assert any(t.startswith("Arguments:") and "Result:" in t for t in texts)
    assert "Result:" in view.conversation.data(view.conversation.index(row, 0),
                                               Qt.ItemDataRole.AccessibleTextRole)
    # Keyboard: the message's menu (Shift+F10) hides it again.
    menus: list[list] = []
    monkeypatch.setattr(view, "run_menu", lambda menu, where: menus.append(menu.actions()))
    view.setFocus()
    view.setCurrentIndex(view.conversation.index(row, 0))
    QTest.keyClick(view, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    (actions,) = menus
    hide = [a for a in actions if a.text().startswith("Hide the call time · get_current_time")]
    assert len(hide) == 1
    hide[0].trigger()
    assert not reply.parts[n].open
    assert not any("Result:" in t for t in _texts(view, reply, row))


def _message(ident: int, role: str, content: list) -> Message:
    return Message(ident, "c1", role, content, "complete", None, None, None, None,
                   "2026-12-06T12:00:00Z")


def test_declined_huge_and_unrun_calls_as_stored():
    huge = "x" * 3_000_000
    messages = [
        _message(1, "user", [{"type": "text", "text": "go"}]),
        _message(2, "assistant", [
            {"type": "tool_use", "id": "a", "name": "git__git_log", "input": {"max_count": 3}},
            {"type": "tool_use", "id": "b", "name": "big__dump", "input": {}},
            {"type": "tool_use", "id": "c", "name": "readFile", "input": {"file_id": "f1"}}]),
        _message(3, "user", [
            {"type": "tool_result", "tool_use_id": "a", "is_error": True, "content": [
                {"type": "text", "text": "The person declined this call of git_log on the MCP "
                                         "server git (you declined it); do not call it again"}]},
            {"type": "tool_result", "tool_use_id": "b", "content": [
                {"type": "text", "text": huge}]},
            {"type": "tool_result", "tool_use_id": "c", "content": [
                {"type": "text", "text": "[notes.md — page 1 of 1]\nhello"}]}]),
        _message(4, "assistant", [
            {"type": "tool_use", "id": "d", "name": "git__git_status", "input": {}}]),
    ]
    (_person, reply) = build(messages)
    lines = [p.text for p in reply.parts]
    assert re.match(r"^git · git_log · max_count=3 · declined · \d\d:\d\d$", lines[0])
    assert re.match(r"^big · dump · \d\d:\d\d$", lines[1])
    assert lines[2] == "Read notes.md"  # Cairn's own tools keep their lines
    assert lines[3] == "git · git_status · not run"
    assert reply.calls() == [0, 1]
    detail = reply.parts[1].detail
    assert len(detail) < 20_200
    assert detail.endswith("… (the first 20,000 of 3,000,000 characters shown)")


def test_call_details_are_plain_and_name_images():
    text = call_details({"q": "<b>x</b>"}, [
        {"type": "text", "text": "<script>"},
        {"type": "attachment", "name": "image", "media_type": "image/png", "size": 1234,
         "sha256": "0" * 64}], is_error=False)
    assert text == ('Arguments:\n{\n  "q": "<b>x</b>"\n}\n\nResult:\n<script>\n'
                    "[image/png image, 1,234 bytes, sent to Claude as an image]")


def test_a_call_line_unfolds_while_the_reply_streams(opened, fake, folders):
    """While the next call's question waits, the call before it can be read in full."""
    (acme,) = folders("Acme Inc")
    new_chat(None, opened, acme)
    ws = opened.cairn.registry.workspace_for_folder(acme)
    opened.cairn.mcp.add(ServerConfig("time", command=TIME, args=("--local-timezone", "UTC")))
    opened.cairn.mcp.turn_on("time", ws.id)
    panel = opened.window.chat_panel
    bar = panel.approval
    fake.reply_tool_use("time__get_current_time", {"timezone": "Europe/Oslo"})
    fake.reply_tool_use("time__get_current_time", {"timezone": "Asia/Tokyo"})
    fake.reply_text("Morning in Oslo, evening in Tokyo.")
    send(opened, "Oslo, then Tokyo?")
    wait_for(lambda: bar.isVisible(), timeout=60)
    bar.buttons["once"].click()
    wait_for(lambda: bar.isVisible() and "Asia/Tokyo" in bar.question.text(), timeout=60)
    live = entries(opened)[-1]
    (n,) = live.calls()
    assert LINE.match(live.parts[n].text)
    assert '"timezone": "Europe/Oslo"' in live.parts[n].detail.split("Result:")[1]
    follow_link(panel, live, f"{CALL}{n}", None)  # as its link does
    assert live.parts[n].open
    bar.buttons["once"].click()
    wait_for(lambda: idle(opened) and "Tokyo." in entries(opened)[-1].text, timeout=60)
