"""The fake Anthropic server holds against the real SDK (and the shared stream fixtures)."""

from __future__ import annotations

import asyncio
import json
import math
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import ToolUseBlock
from fake_anthropic import FakeAnthropic

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures"
MODEL = "claude-haiku-4-5"  # active and last year's shape: these tests are about the transport
HELLO = [{"role": "user", "content": "Hello"}]

# The SDK warns that claude-sonnet-4-5 is deprecated; the name is only a label here.
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test",
                                        max_retries=0, timeout=10) as c:
        yield c


def raw_events(fake: FakeAnthropic, body: dict[str, Any]) -> tuple[str, list[tuple[str, Any]]]:
    """POST to the fake without the SDK: the content type and the (event, data) pairs."""
    request = urllib.request.Request(
        fake.base_url + "/v1/messages", data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "x-api-key": "sk-test"})
    with urllib.request.urlopen(request, timeout=10) as response:
        content_type = response.headers["Content-Type"]
        text = response.read().decode()
    events = []
    for frame in text.split("\n\n"):
        if frame.strip():
            name, data = frame.split("\n")
            assert name.startswith("event: ") and data.startswith("data: ")
            events.append((name[7:], json.loads(data[6:])))
    return content_type, events


async def test_text_stream_gives_text_and_final_message_with_usage(fake, client):
    text = "Hello there! This reply arrives in several small pieces."
    usage = {"input_tokens": 120, "output_tokens": 33, "cache_creation_input_tokens": 7,
             "cache_read_input_tokens": 90}
    fake.reply_text(text, chunk=8, usage=usage)
    system = [{"type": "text", "text": "You are Cairn.", "cache_control": {"type": "ephemeral"}}]

    async with client.messages.stream(model=MODEL, max_tokens=100, system=system,
                                      messages=HELLO) as stream:
        pieces = [piece async for piece in stream.text_stream]
        final = await stream.get_final_message()

    assert "".join(pieces) == text
    assert len(pieces) == math.ceil(len(text) / 8)
    assert [(b.type, b.text) for b in final.content] == [("text", text)]
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.id.startswith("msg_")
    assert final.usage.input_tokens == 120
    assert final.usage.output_tokens == 33
    assert final.usage.cache_creation_input_tokens == 7
    assert final.usage.cache_read_input_tokens == 90

    [sent] = fake.requests
    assert (sent.method, sent.path, sent.stream) == ("POST", "/v1/messages", True)
    # SDK 2.14 sends the API key as a bearer token, not as x-api-key.
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert sent.api_key == "sk-test"
    assert sent.body["system"] == system
    assert sent.body["messages"] == HELLO
    assert fake.pending == 0


def test_stream_has_the_documented_shape(fake):
    fake.reply_text("x" * 130, chunk=10)
    content_type, events = raw_events(fake, {"model": "claude-haiku-4-5", "stream": True,
                                             "max_tokens": 10, "messages": HELLO})
    assert content_type.startswith("text/event-stream")
    assert all(data["type"] == name for name, data in events)
    names = [name for name, _ in events if name != "ping"]
    assert names == (["message_start", "content_block_start"] + ["content_block_delta"] * 13
                     + ["content_block_stop", "message_delta", "message_stop"])
    assert [name for name, _ in events].count("ping") >= 2
    message = events[0][1]["message"]
    assert message["model"] == "claude-haiku-4-5"  # the request's model by default
    assert message["role"] == "assistant" and message["content"] == []
    assert set(message["usage"]) == {"input_tokens", "cache_creation_input_tokens",
                                     "cache_read_input_tokens", "output_tokens"}
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "end_turn"
    assert isinstance(delta["usage"]["output_tokens"], int)


async def test_tool_use_stream_parses_into_a_tool_use_block(fake, client):
    tool_input = {"file_id": "wf_AbCdEf123456", "lines": [1, 2, 3],
                  "options": {"quote": "a \"quoted\" word", "unicode": "café ✓"}}
    fake.reply_tool_use("readWorkspaceFile", tool_input, text_before="Let me read the guide.",
                        tool_id="toolu_fixed")

    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO,
                                      tools=[{"name": "readWorkspaceFile",
                                              "input_schema": {"type": "object"}}]) as stream:
        final = await stream.get_final_message()

    assert final.stop_reason == "tool_use"
    text, tool = final.content
    assert (text.type, text.text) == ("text", "Let me read the guide.")
    assert isinstance(tool, ToolUseBlock)
    assert (tool.id, tool.name, tool.input) == ("toolu_fixed", "readWorkspaceFile", tool_input)
    assert fake.requests[0].body["tools"][0]["name"] == "readWorkspaceFile"


def test_tool_input_arrives_in_several_json_pieces(fake):
    fake.reply_tool_use("search", {"query": "how do I configure the thing", "limit": 5})
    _, events = raw_events(fake, {"model": MODEL, "stream": True, "max_tokens": 10,
                                  "messages": HELLO})
    pieces = [data["delta"]["partial_json"] for name, data in events
              if name == "content_block_delta"]
    assert len([p for p in pieces if p]) >= 3
    assert json.loads("".join(pieces)) == {"query": "how do I configure the thing", "limit": 5}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


async def test_error_in_the_middle_of_a_stream_raises_api_status_error(fake, client):
    fake.reply_stream_error("The answer is", "overloaded_error", "Overloaded")
    received = []
    with pytest.raises(anthropic.APIStatusError) as caught:
        async with client.messages.stream(model=MODEL, max_tokens=100,
                                          messages=HELLO) as stream:
            async for piece in stream.text_stream:
                received.append(piece)
    assert "".join(received) == "The answer is"
    assert caught.value.body == {"type": "error",
                                 "error": {"type": "overloaded_error", "message": "Overloaded"}}


@pytest.mark.parametrize(("status", "error_type", "message", "error_class"), [
    (401, "authentication_error", "invalid x-api-key", anthropic.AuthenticationError),
    (404, "not_found_error", "model: claude-nope", anthropic.NotFoundError),
    (429, "rate_limit_error", "Number of requests has exceeded your rate limit",
     anthropic.RateLimitError),
    (529, "overloaded_error", "Overloaded", anthropic.InternalServerError),
    (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum",
     anthropic.BadRequestError),
])
@pytest.mark.parametrize("streaming", [True, False])
async def test_http_error_status_maps_to_the_sdk_exception(fake, client, status, error_type,
                                                           message, error_class, streaming):
    fake.reply_error_status(status, error_type, message, headers={"retry-after": "1"})
    with pytest.raises(error_class) as caught:
        if streaming:
            async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO):
                pass
        else:
            await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert caught.value.status_code == status
    assert caught.value.body == {"type": "error", "error": {"type": error_type,
                                                            "message": message}}
    assert message in str(caught.value)
    assert caught.value.response.headers["retry-after"] == "1"


async def test_non_streaming_create_returns_the_tool_use_json(fake, client):
    fake.reply_json("set_title", {"title": "Trip planning"}, usage={"input_tokens": 50})
    message = await client.messages.create(
        model=MODEL, max_tokens=100, messages=HELLO,
        tools=[{"name": "set_title", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "set_title"})
    [block] = message.content
    assert isinstance(block, ToolUseBlock)
    assert (block.name, block.input) == ("set_title", {"title": "Trip planning"})
    assert message.stop_reason == "tool_use"
    assert message.usage.input_tokens == 50
    [sent] = fake.requests
    assert not sent.stream
    assert sent.body["tool_choice"] == {"type": "tool", "name": "set_title"}


async def test_replies_are_consumed_in_order_then_unscripted_requests_fail(fake, client):
    fake.reply_text("first")
    fake.reply_text("second", model="claude-haiku-4-5")
    one = await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    async with client.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        two = await stream.get_final_message()
    assert [one.content[0].text, two.content[0].text] == ["first", "second"]
    assert two.model == "claude-haiku-4-5"

    with pytest.raises(anthropic.InternalServerError, match="scripted no reply"):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert len(fake.message_requests) == 3


async def test_the_sdk_does_not_retry_an_unscripted_request(fake):
    async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test") as c:
        with pytest.raises(anthropic.InternalServerError):
            await c.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert len(fake.requests) == 1


async def test_reply_events_streams_arbitrary_events(fake, client):
    fake.reply_events([
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_custom", "type": "message", "role": "assistant", "content": [],
            "model": MODEL, "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ("some_future_event", {"type": "some_future_event"}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "custom"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens",
                                                              "stop_sequence": None},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ])
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = await stream.get_final_message()
    assert final.id == "msg_custom"
    assert final.content[0].text == "custom"
    assert final.stop_reason == "max_tokens"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (3, 2)


async def test_a_bad_script_answers_500_instead_of_dropping_the_connection(fake, client):
    fake.reply_message([{"type": "image"}])
    with pytest.raises(anthropic.InternalServerError, match="cannot stream"):
        async with client.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as s:
            await s.get_final_message()
    assert len(fake.errors) == 1


async def test_delayed_stream_still_arrives_whole(fake, client):
    fake.reply_text("slow but steady", chunk=3, delay=0.005)
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        assert await stream.get_final_text() == "slow but steady"


async def test_hang_holds_the_stream_until_the_reader_is_cancelled(fake, client):
    fake.hang(text_before="Thinking")
    first_text = asyncio.Event()

    async def read() -> None:
        async with client.messages.stream(model=MODEL, max_tokens=100,
                                          messages=HELLO) as stream:
            async for _ in stream.text_stream:
                first_text.set()

    task = asyncio.create_task(read())
    await asyncio.wait_for(first_text.wait(), timeout=10)
    assert fake.hung.is_set()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(fake.disconnected.wait, 10)


async def test_stop_ends_a_hung_stream():
    fake = FakeAnthropic().start()
    try:
        async with anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test",
                                            max_retries=0, timeout=10) as c:
            fake.hang()
            async with c.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
                await asyncio.to_thread(fake.hung.wait, 10)
                await asyncio.to_thread(fake.stop)
                # The SDK does not wrap a transport error in the middle of a body.
                with pytest.raises((anthropic.APIError, httpx2.HTTPError)):
                    await stream.get_final_message()
    finally:
        fake.stop()


async def test_models_list_and_its_failure(fake, client):
    page = await client.models.list()
    assert [m.id for m in page.data] == ["claude-sonnet-5-5", "claude-haiku-5-5",
                                         "claude-opus-5-5", "claude-haiku-4-5",
                                         "claude-sonnet-4-5"]
    assert page.data[0].display_name == "Claude Sonnet 5.5"
    assert page.data[0].lifecycle == "active" and page.data[-1].lifecycle == "retired"
    assert page.data[0].capabilities.thinking.types.adaptive.supported
    assert [m.id async for m in await client.models.list()] == [m.id for m in page.data]
    assert (await client.models.retrieve("claude-haiku-4-5")).display_name == "Claude Haiku 4.5"

    fake.models_status = 500
    with pytest.raises(anthropic.InternalServerError):
        await client.models.list()
    assert fake.requests[-1].method == "GET"
    assert fake.requests[-1].path == "/v1/models"


def test_start_gives_a_loopback_base_url_and_stop_is_idempotent():
    fake = FakeAnthropic()
    fake.start()
    base_url = fake.base_url
    assert base_url.startswith("http://127.0.0.1:")
    with urllib.request.urlopen(base_url + "/v1/models", timeout=10) as response:
        assert json.load(response)["has_more"] is False
    fake.stop()
    fake.stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(base_url + "/v1/models", timeout=2)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the repo")
@pytest.mark.parametrize("name", ["anthropic-stream-text.sse", "anthropic-stream-tool-use.sse",
                                  "anthropic-stream-error.sse"])
async def test_fixture_streams_parse_with_the_sdk_when_served_raw(fake, client, name):
    fake.reply_raw_sse((FIXTURES / name).read_text(encoding="utf-8"))
    stream_call = client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO)
    if name == "anthropic-stream-error.sse":
        with pytest.raises(anthropic.APIStatusError) as caught:
            async with stream_call as stream:
                await stream.get_final_message()
        assert caught.value.body["error"]["type"] == "overloaded_error"
        return
    async with stream_call as stream:
        final = await stream.get_final_message()
    if name == "anthropic-stream-text.sse":
        assert final.content[0].text == "Hello!"
        assert (final.usage.input_tokens, final.usage.output_tokens) == (25, 15)
        assert final.stop_reason == "end_turn"
    else:
        text, tool = final.content
        assert text.text == "Let me read the guide."
        assert isinstance(tool, ToolUseBlock)
        assert (tool.name, tool.input) == ("readWorkspaceFile", {"file_id": "wf_AbCdEf123456"})
        assert final.stop_reason == "tool_use"
