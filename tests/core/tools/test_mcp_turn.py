"""MCP tools in a turn, through the real SDK and real servers over stdio (mcp-server-time from
the index; the tests' own server for images, errors, huge answers): offered as server__tool,
asked for before they run (allow once, in this chat, always, deny), their results stored as
tool_result blocks and sent back, and never the person's words for knowledge."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from app.store.mcp import ServerConfig
from app.tools import ALLOW_CHAT, ALLOW_ONCE, ALWAYS_ALLOW, DENY, ApprovalRequest
from app.tools.mcp import api_name
from app.tools.mcp_client import Timeouts

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "mcp_test_server.py")
TIME = str(Path(sys.executable).parent / "mcp-server-time")


class Approver:
    """Answers as told, and keeps what it was asked."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> str:
        self.asked.append(request)
        return self.answers.pop(0)


@pytest.fixture
def time_on(online, workspace):
    online.mcp.add(ServerConfig("time", command=TIME, args=("--local-timezone", "UTC")))
    online.mcp.turn_on("time", workspace.id)
    return workspace


@pytest.fixture
def ours_on(online, workspace):
    online.mcp.add(ServerConfig("test", command=sys.executable, args=(SERVER,)))
    online.mcp.turn_on("test", workspace.id)
    return workspace


def _sent(fake: Any) -> list[Any]:
    """The message requests the fake received (not the models list)."""
    return [r for r in fake.requests if isinstance(r.body, dict) and "messages" in r.body]


def _results(request: Any) -> list[dict[str, Any]]:
    return [b for m in request.body["messages"] if m["role"] == "user" and
            isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]


async def test_allow_once_runs_it_and_the_reply_streams(online, time_on, fake):
    chat = online.registry.new_chat(folder=time_on.path)
    fake.reply_tool_use("time__get_current_time", {"timezone": "Europe/Oslo"})
    fake.reply_text("It is morning in Oslo.")
    approver = Approver(ALLOW_ONCE)
    result = await online.engine.send(chat.id, "What time is it in Oslo?", approver=approver)
    assert result.status == "complete" and result.text == "It is morning in Oslo."
    (asked,) = approver.asked
    assert (asked.server, asked.tool, asked.arguments) == ("time", "get_current_time",
                                                           {"timezone": "Europe/Oslo"})
    offered = {t["name"] for t in _sent(fake)[0].body["tools"]}
    assert {"time__get_current_time", "time__convert_time"} <= offered
    (sent,) = _results(_sent(fake)[1])
    assert "Europe/Oslo" in sent["content"][0]["text"] and not sent.get("is_error")
    assert result.tool_calls == ({"name": "time__get_current_time", "outcome": "allowed",
                                  "server": "time", "tool": "get_current_time"},)
    # Once is once: the next call is asked for again.
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Done.")
    again = Approver(ALLOW_ONCE)
    await online.engine.send(chat.id, "And in UTC?", approver=again)
    assert len(again.asked) == 1


async def test_always_allow_is_stored_and_skips_the_question_next_time(online, time_on, fake):
    chat = online.registry.new_chat(folder=time_on.path)
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Noon.")
    await online.engine.send(chat.id, "Time?", approver=Approver(ALWAYS_ALLOW))
    assert online.mcp.policies([time_on.id]) == {("time", "get_current_time"): "allow"}
    other = online.registry.new_chat(folder=time_on.path)
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("Still noon.")
    never = Approver()  # asking it would fail the test (no answers)
    result = await online.engine.send(other.id, "Time again?", approver=never)
    assert never.asked == [] and result.tool_calls[0]["outcome"] == "allowed"


async def test_deny_returns_a_declined_result_and_the_turn_goes_on(online, time_on, fake):
    chat = online.registry.new_chat(folder=time_on.path)
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("I will not look it up, then.")
    result = await online.engine.send(chat.id, "Time?", approver=Approver(DENY))
    assert result.status == "complete" and result.text == "I will not look it up, then."
    (sent,) = _results(_sent(fake)[1])
    assert sent["is_error"] is True and "declined" in sent["content"][0]["text"]
    assert result.tool_calls[0]["outcome"] == "declined"
    stored = [b for m in online.chats.messages(chat.id) for b in m.content
              if b["type"] == "tool_result"]
    assert stored[0]["is_error"] is True


async def test_without_an_approver_a_call_that_is_not_allowed_is_declined(online, time_on, fake):
    chat = online.registry.new_chat(folder=time_on.path)
    fake.reply_tool_use("time__get_current_time", {"timezone": "UTC"})
    fake.reply_text("No time.")
    result = await online.engine.send(chat.id, "Time?")
    assert result.tool_calls[0]["outcome"] == "declined"
    assert "no one could be asked" in _results(_sent(fake)[1])[0]["content"][0]["text"]


async def test_allow_in_this_chat_lasts_for_the_chat_only(online, ours_on, fake):
    chat = online.registry.new_chat(folder=ours_on.path)
    for _ in range(2):
        fake.reply_tool_use("test__echo", {"text": "hi"})
        fake.reply_text("ok")
    approver = Approver(ALLOW_CHAT)
    await online.engine.send(chat.id, "one", approver=approver)
    await online.engine.send(chat.id, "two", approver=approver)
    assert len(approver.asked) == 1 and approver.asked[0].annotations == {"read_only_hint": True}
    other = online.registry.new_chat(folder=ours_on.path)
    fake.reply_tool_use("test__echo", {"text": "hi"})
    fake.reply_text("ok")
    elsewhere = Approver(ALLOW_ONCE)
    await online.engine.send(other.id, "three", approver=elsewhere)
    assert len(elsewhere.asked) == 1  # (a read-only hint never skips the question)


async def test_a_policy_of_off_hides_the_tool_and_allow_skips_the_question(online, ours_on, fake):
    online.mcp.set_policy("test", "crash", ours_on.id, "off")
    online.mcp.set_policy("test", "echo", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    fake.reply_tool_use("test__echo", {"text": "hi"})
    fake.reply_text("ok")
    never = Approver()
    result = await online.engine.send(chat.id, "go", approver=never)
    offered = {t["name"] for t in _sent(fake)[0].body["tools"]}
    assert "test__echo" in offered and "test__crash" not in offered
    assert never.asked == [] and result.tool_calls[0]["outcome"] == "allowed"


async def test_a_server_that_is_off_is_never_started(online, workspace, fake):
    online.mcp.add(ServerConfig("test", command=sys.executable, args=(SERVER,)))
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_text("Hello.")
    await online.engine.send(chat.id, "hi")
    assert online.mcp_servers.owner("test") is None
    assert not any(t["name"].startswith("test__") for t in _sent(fake)[0].body.get("tools", []))


async def test_results_image_resource_structured_and_error(online, ours_on, fake):
    online.mcp.set_policy("test", "picture", ours_on.id, "allow")
    online.mcp.set_policy("test", "document", ours_on.id, "allow")
    online.mcp.set_policy("test", "weather", ours_on.id, "allow")
    online.mcp.set_policy("test", "fail", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    fake.reply_message([{"type": "tool_use", "name": n, "input": i} for n, i in (
        ("test__picture", {}), ("test__document", {}), ("test__weather", {"city": "Oslo"}),
        ("test__fail", {}))], stop_reason="tool_use")
    fake.reply_text("Seen.")
    result = await online.engine.send(chat.id, "Show me.")
    assert result.status == "complete"
    picture, document, weather, fail = _results(_sent(fake)[1])
    assert picture["content"][0]["type"] == "image"  # sent to Claude as an image
    assert picture["content"][0]["source"]["media_type"] == "image/png"
    assert "the notes' text" in document["content"][0]["text"]
    assert '"celsius": 21' in weather["content"][0]["text"]
    assert fail["is_error"] is True and [c["outcome"] for c in result.tool_calls] == [
        "allowed", "allowed", "allowed", "error"]
    stored = [b for m in online.chats.messages(chat.id) for b in m.content
              if b["type"] == "tool_result"]
    assert stored[0]["content"][0]["type"] == "attachment"  # by reference, not inline


async def test_a_huge_answer_is_cut_at_the_turns_bound(online, ours_on, fake):
    online.mcp.set_policy("test", "huge", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    # 6 MB: under Cairn's 8 MB for one message, so it is taken, and cut at the turn's bound.
    fake.reply_tool_use("test__huge", {"megabytes": 6})
    fake.reply_text("Too long to read.")
    result = await online.engine.send(chat.id, "Read it all.")
    # Cut at what one call may answer (the turn's 4 MB), said at the cut; the reply goes on.
    assert result.status == "complete" and result.text == "Too long to read."
    (sent,) = [b for m in online.chats.messages(chat.id) for b in m.content
               if b["type"] == "tool_result"]
    assert len(sent["content"][0]["text"].encode()) <= 4_000_000
    assert sent["content"][0]["text"].endswith("limit of 4 MB.]")


async def test_an_answer_past_what_cairn_parses_is_one_sentence(online, ours_on, fake):
    online.mcp.set_policy("test", "huge", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    fake.reply_tool_use("test__huge", {"megabytes": 50})
    fake.reply_text("It was too long.")
    result = await online.engine.send(chat.id, "Read it all.")
    assert result.status == "complete" and result.text == "It was too long."
    (sent,) = [b for m in online.chats.messages(chat.id) for b in m.content
               if b["type"] == "tool_result"]
    assert sent["is_error"] is True
    assert sent["content"] == [{"type": "text", "text": "The MCP server test's answer to huge "
                                "was 50 MB, past Cairn's 8 MB for one answer: left out."}]


async def test_a_server_that_cannot_start_is_one_sentence_and_the_turn_goes_on(online, workspace,
                                                                                fake):
    online.mcp.add(ServerConfig("gone", command="no-such-mcp-server-42"))
    online.mcp.turn_on("gone", workspace.id)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_text("Hello anyway.")
    result = await online.engine.send(chat.id, "hi")
    assert result.status == "complete" and result.text == "Hello anyway."
    assert result.tool_notices == ("The MCP server gone could not start: there is no program "
                                   "'no-such-mcp-server-42' on this computer.",)


async def test_a_slow_call_is_one_sentence_as_the_result(online, ours_on, fake):
    online.mcp_servers.timeouts = Timeouts(start=20, call=0.5)
    online.mcp.set_policy("test", "never", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    fake.reply_tool_use("test__never", {})
    fake.reply_text("It did not answer.")
    result = await online.engine.send(chat.id, "Wait.")
    assert result.status == "complete" and result.tool_calls[0]["outcome"] == "failed"
    (sent,) = _results(_sent(fake)[1])
    assert sent["content"][0]["text"] == ("The MCP server test did not answer never within 0.5 "
                                          "seconds; it was stopped and starts again at its "
                                          "next use.")


async def test_a_tool_result_is_never_the_persons_words(online, ours_on, fake):
    from app.knowledge.rebuild import exchanges_of

    online.mcp.set_policy("test", "echo", ours_on.id, "allow")
    chat = online.registry.new_chat(folder=ours_on.path)
    fake.reply_tool_use("test__echo", {"text": "I prefer tabs over spaces"})
    fake.reply_text("Echoed.")
    await online.engine.send(chat.id, "Echo something.")
    (exchange,) = exchanges_of(online.chats.messages(chat.id))
    assert "tabs" not in exchange.user and "Echo something." in exchange.user


def test_names_are_made_valid_for_the_api_and_kept_apart():
    assert api_name("time", "get_current_time") == "time__get_current_time"
    assert api_name("Files.local", "read file") == "Files_local__read_file"
    long = api_name("s" * 40, "t" * 40)
    assert len(long) == 64
    first = api_name("a.b", "x")
    second = api_name("a_b", "x", {first})
    assert first != second and len(second) <= 64
    import re

    for name in (long, first, second, api_name("ünï", "çödé")):
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", name)


async def test_env_secrets_reach_the_server_from_the_keychain_and_nowhere_else(online, workspace,
                                                                              fake, isolated):
    import logging

    secret = "sk-live-MCP-SECRET-5150"
    online.mcp.add(ServerConfig("test", command=sys.executable, args=(SERVER,),
                                env={"SERVICE_TOKEN": secret}))
    online.mcp.turn_on("test", workspace.id)
    online.mcp.set_policy("test", "variable", workspace.id, "allow")
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("test__variable", {"name": "SERVICE_TOKEN"})
    fake.reply_text("Seen.")
    logging.getLogger().setLevel(logging.DEBUG)  # even debug logs never hold it
    try:
        await online.engine.send(chat.id, "What does the server see?")
    finally:
        logging.getLogger().setLevel(logging.WARNING)
    (sent,) = _results(_sent(fake)[1])
    assert sent["content"][0]["text"] == secret  # the program got it (and Claude, as asked)
    online.stop_mcp_servers()
    stored = [b for m in online.chats.messages(chat.id) for b in m.content
              if b["type"] == "tool_result"]
    # Only the chat's own result holds it (the tool answered it); config and logs never.
    conn_rows = online.registry.db.query("SELECT config, secret_keys FROM mcp_server")
    assert secret not in repr(conn_rows) and stored
    for path in (isolated / "logs").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


async def test_servers_that_hang_at_start_are_each_one_sentence(online, workspace, fake):
    online.mcp_servers.timeouts = Timeouts(start=0.5, call=5)
    for name in ("slow-a", "slow-b"):
        online.mcp.add(ServerConfig(name, command=sys.executable,
                                    args=(SERVER, "--hang-at-start")))
        online.mcp.turn_on(name, workspace.id)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_text("Hello without them.")
    result = await online.engine.send(chat.id, "hi")
    assert result.status == "complete" and result.text == "Hello without them."
    assert [n.split(" did not start")[0] for n in result.tool_notices] == [
        "The MCP server slow-a", "The MCP server slow-b"]
