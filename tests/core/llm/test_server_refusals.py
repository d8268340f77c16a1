"""What a server answers that Cairn must not follow blindly (16 and 18):
a refused structured output is never answered with a forced tool a model refuses, a tool
input of the wrong shape gets an error result and leaves the chat usable, and a 429's wait
is said, counted and can be stopped."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from app.chat.turn import RetryWaiting
from tests.helpers import exchange_in, run


@pytest.fixture
def cairn(online):
    return online


# ----------------------------------------------------------------- item 7: the rebuild's shape


async def test_a_model_that_refuses_forced_tools_is_never_sent_one(cairn, fake, workspace):
    """Sonnet 5.5 says it takes structured outputs; should it refuse them anyway, Cairn says
    so, and does not fall back to a forced tool that today's models refuse too."""
    cairn.settings.set("model.knowledge", "claude-sonnet-5-5")
    fake.refuse_structured.add("claude-sonnet-5-5")
    chat_id = await exchange_in(cairn, fake, workspace)
    before = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed"
    sent = fake.message_requests[before:]
    assert len(sent) == 1 and "output_config" in sent[0].body
    assert all("tool_choice" not in r.body for r in sent)
    assert "structured outputs are not supported" in report.error
    assert ".." not in report.error
    assert cairn.catalog.knowledge_shape("claude-sonnet-5-5", cairn.engine.server()) \
        == "structured"  # not relearnt


async def test_a_refusal_of_something_else_is_not_tried_the_other_way(cairn, fake, workspace):
    """A 400 about anything but the shape (here: the request is too large) is said as it is;
    the other shape would be refused the same way."""
    cairn.settings.set("model.knowledge", "claude-haiku-4-5")
    chat_id = await exchange_in(cairn, fake, workspace)
    fake.reply_error_status(400, "invalid_request_error", "messages: the request is too large.")
    before = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed"
    assert len(fake.message_requests) - before == 1
    assert "the request is too large." in report.error and ".." not in report.error
    assert cairn.catalog.knowledge_shape("claude-haiku-4-5", cairn.engine.server()) == "structured"


# ----------------------------------------------------------------- item 16: tool inputs


@pytest.mark.parametrize("tool_input", [[1, 2], {"file_id": math.nan}, {"page": [math.inf]}],
                         ids=["list", "nan", "infinity"])
async def test_a_tool_input_of_the_wrong_shape_gets_an_error_result(cairn, fake, workspace,
                                                                    tool_input):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", tool_input)  # type: ignore[arg-type]
    fake.reply_text("I could not read it.")
    result = await cairn.engine.send(chat.id, "Read the brief.")
    assert (result.status, result.error) == ("complete", None)
    answered = fake.message_requests[-1].body["messages"]
    results = [b for m in answered for b in m["content"] if b.get("type") == "tool_result"]
    assert results and results[-1]["is_error"] is True
    calls = [b for m in answered for b in m["content"] if b.get("type") == "tool_use"]
    assert all(isinstance(c["input"], dict) for c in calls)  # what the API takes
    await the_chat_goes_on(cairn, fake, chat.id)


@pytest.mark.parametrize("tool_input", ["wf_abc", 3.5], ids=["string", "number"])
async def test_a_tool_input_the_sdk_cannot_read_fails_in_one_sentence(cairn, fake, workspace,
                                                                     tool_input):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", tool_input)  # type: ignore[arg-type]
    result = await cairn.engine.send(chat.id, "Read the brief.")
    assert result.status == "failed"
    assert "could not read" in result.error and "Error" not in result.error
    await the_chat_goes_on(cairn, fake, chat.id)


async def the_chat_goes_on(cairn, fake, chat_id: str) -> None:
    """The chat's later turns still work: what was stored is sent back as valid JSON."""
    fake.reply_text("Here is the next answer.")
    later = await cairn.engine.send(chat_id, "And now?")
    assert (later.status, later.error) == ("complete", None)
    json.dumps(fake.message_requests[-1].body, allow_nan=False)


# ----------------------------------------------------------------- item 18: a 429's wait


async def test_a_429_says_it_waits_and_how_long_then_goes_on(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "1"})
    fake.reply_text("Here after the wait.")
    heard: list[RetryWaiting] = []
    result = await cairn.engine.send(chat.id, "Hello?", on_wait=heard.append)
    assert (result.status, result.text) == ("complete", "Here after the wait.")
    assert [(w.seconds, w.why) for w in heard] == [(1.0, "rate-limited")]
    assert heard[0].sentence() == (f"The server at 127.0.0.1:{fake.port} is rate-limiting "
                                   "this key; trying again in 1 second.")
    assert RetryWaiting("t", 20, "rate-limited", generation=0).sentence() == (
        "Anthropic is rate-limiting this key; trying again in 20 seconds.")
    assert heard[0].sentence(left=0.2) .endswith("trying again in 0 seconds.")


async def test_stop_ends_the_wait_at_once(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "50"})
    turn = await cairn.engine.start_turn(chat.id, "Hello?")
    waiting = asyncio.Event()
    turn.subscribe(lambda event: isinstance(event, RetryWaiting) and waiting.set())
    await asyncio.wait_for(waiting.wait(), 30)
    turn.cancel()
    result = await asyncio.wait_for(turn.result(), 10)  # not the 50 seconds asked for
    assert result.status == "stopped"
    assert len(fake.message_requests) == 1
    stored = cairn.chats.messages(chat.id)
    assert stored[0].role == "user"


def test_cairn_ask_prints_the_wait_on_stderr(online, fake, workspace, capsys):
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "1"})
    fake.reply_text("Here after the wait.")
    fake.reply_json("update_knowledge", {"ops": []})
    online.close()
    code, out, err = run(capsys, "ask", "--folder", workspace.path, "Hello?")
    assert code == 0, err
    assert "Here after the wait." in out
    assert (f"The server at 127.0.0.1:{fake.port} is rate-limiting this key; trying again in "
            "1 second. (Ctrl+C stops.)" in err)


def test_a_knowledge_update_s_failure_says_nothing_of_a_message():
    """"Your message is kept" is for a chat's failure: a knowledge update that fails involves
    no message of the person's, and its failure says so without one."""
    import anthropic
    import httpx2 as httpx  # (the HTTP library this SDK is built on)

    from app.llm.client import OVERLOADED_AFTER_RETRYING, WEB_PAGE, ModelError, explain

    request = httpx.Request("POST", "http://127.0.0.1/v1/messages")

    def status(code: int, **headers: str) -> httpx.Response:
        return httpx.Response(code, request=request, headers=headers)

    failures: list[BaseException] = [
        anthropic.APIConnectionError(request=request),
        anthropic.APITimeoutError(request=request),
        anthropic.InternalServerError("boom", response=status(500),
                                      body={"error": {"type": "api_error", "message": "boom"}}),
        anthropic.RateLimitError("slow", response=status(429, **{"retry-after": "600"}),
                                 body=None),
        anthropic.RateLimitError("slow", response=status(429), body=None),
        anthropic.AuthenticationError("no", response=status(401), body=None),
        anthropic.APIStatusError("mid", response=status(200),
                                 body={"error": {"type": "api_error", "message": "mid"}}),
        ModelError(WEB_PAGE, kind="web-page"),
        ModelError(OVERLOADED_AFTER_RETRYING, kind="overloaded"),
        RuntimeError("unexpected"),
    ]
    for failure in failures:
        chat = str(explain(failure, model="claude-x", purpose="chat"))
        knowledge = str(explain(failure, model="claude-x", purpose="knowledge"))
        assert "message" not in knowledge.lower(), knowledge
        assert "send" not in knowledge.lower(), knowledge
        assert knowledge.endswith(".") and ".." not in knowledge and ". ." not in knowledge
        if "kept" in chat:
            assert chat != knowledge
