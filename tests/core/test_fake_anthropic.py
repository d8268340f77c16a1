"""The fake Anthropic server holds against the real SDK (and the shared stream fixtures)."""

from __future__ import annotations

import asyncio
import json
import math
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, get_args, get_type_hints

import anthropic
import httpx2
import pydantic
import pytest
from anthropic.types import (
    CitationsDelta,
    CitationsWebSearchResultLocation,
    DocumentBlock,
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStreamEvent,
    ServerToolUsage,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolUnionParam,
    ToolUseBlock,
    WebFetchBlock,
    WebFetchToolResultBlock,
    WebFetchToolResultErrorBlock,
    WebSearchResultBlock,
    WebSearchToolResultBlock,
    WebSearchToolResultErrorObject,
)

from tests.fake_anthropic import (
    WEB_TOOL_VERSIONS,
    FakeAnthropic,
    cited_text,
    web_fetch_error,
    web_fetch_result,
    web_fetch_use,
    web_search_error,
    web_search_result,
    web_search_results,
    web_search_use,
)

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


# --- server tools: web search and fetch ----------------------------------------------------

SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
QT = web_search_result("https://www.qt.io/blog/qt-for-python-6.12",
                       "Qt for Python 6.12 released", page_age="November 20, 2026")
PYPI = web_search_result("https://pypi.org/project/PySide6/", "PySide6 · PyPI")
CLAIM = "PySide6 6.12 is built on Qt 6.12 and supports Python 3.10 to 3.14."


def script_the_fixture_reply(fake: FakeAnthropic, **kwargs: Any) -> None:
    """The reply of anthropic-stream-web-search.sse, scripted through the fake's helpers."""
    fake.reply_web_search("PySide6 6.12 release notes", [QT, PYPI], answer=[
        "Here is what the release notes say. ",
        cited_text(CLAIM, QT, cited="Qt for Python 6.12 is based on Qt 6.12 and supports "
                                    "Python 3.10 to 3.14."),
    ], **kwargs)


def assert_no_unknown_fields(value: Any, where: str = "") -> None:
    """Every field the fake sent is one the SDK's types declare (their models allow extras,
    so a misspelt key would otherwise pass unseen)."""
    if isinstance(value, pydantic.BaseModel):
        assert not value.model_extra, f"{where}: fields the SDK does not know: {value.model_extra}"
        for name in type(value).model_fields:
            assert_no_unknown_fields(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            assert_no_unknown_fields(item, f"{where}[{n}]")


def assert_types(values: list[Any], types: list[type]) -> None:
    assert len(values) == len(types), [type(v).__name__ for v in values]
    for value, expected in zip(values, types):
        assert isinstance(value, expected), (type(value).__name__, expected.__name__)


def typed_events(events: list[tuple[str, Any]]) -> list[Any]:
    """Each raw event validated (not merely constructed) against the SDK's event union."""
    adapter = pydantic.TypeAdapter(RawMessageStreamEvent)
    typed = []
    for name, data in events:
        if name == "ping":
            continue
        event = adapter.validate_python(data)
        assert_no_unknown_fields(event, name)
        typed.append(event)
    return typed


def skeleton(events: list[tuple[str, Any]]) -> list[tuple[Any, ...]]:
    """What a stream's shape is made of: event names, each block start's type and keys, each
    delta's type, the final usage's keys (ids, texts and counts left out)."""
    shape: list[tuple[Any, ...]] = []
    for name, data in events:
        if name == "ping":
            continue
        if name == "content_block_start":
            block = data["content_block"]
            shape.append((name, block["type"], tuple(sorted(block))))
        elif name == "content_block_delta":
            shape.append((name, data["delta"]["type"]))
        elif name == "message_delta":
            usage = data["usage"]
            shape.append((name, data["delta"]["stop_reason"], tuple(sorted(usage)),
                          tuple(sorted(usage.get("server_tool_use", {})))))
        else:
            shape.append((name,))
    return shape


def fixture_events(name: str) -> list[tuple[str, Any]]:
    events = []
    for frame in (FIXTURES / name).read_text(encoding="utf-8").split("\n\n"):
        if frame.strip():
            event, data = frame.strip().split("\n")
            events.append((event[7:], json.loads(data[6:])))
    return events


async def test_a_web_search_reply_accumulates_into_the_sdks_typed_blocks(fake, client):
    script_the_fixture_reply(fake)
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO,
                                      tools=[SEARCH_TOOL]) as stream:
        final = await stream.get_final_message()

    use, result, plain, cited = final.content
    assert isinstance(use, ServerToolUseBlock)
    assert use.name == "web_search" and use.id.startswith("srvtoolu_")
    assert use.input == {"query": "PySide6 6.12 release notes"}
    assert isinstance(result, WebSearchToolResultBlock) and result.tool_use_id == use.id
    assert all(isinstance(r, WebSearchResultBlock) for r in result.content)
    assert [(r.url, r.title, r.page_age) for r in result.content] == [
        ("https://www.qt.io/blog/qt-for-python-6.12", "Qt for Python 6.12 released",
         "November 20, 2026"),
        ("https://pypi.org/project/PySide6/", "PySide6 · PyPI", None)]
    encrypted = [r.encrypted_content for r in result.content]
    assert all(encrypted) and len(set(encrypted)) == 2
    assert isinstance(plain, TextBlock) and not plain.citations
    assert isinstance(cited, TextBlock) and cited.text == CLAIM
    [citation] = cited.citations
    assert isinstance(citation, CitationsWebSearchResultLocation)
    assert (citation.url, citation.title) == (QT["url"], QT["title"])
    assert citation.cited_text.startswith("Qt for Python 6.12 is based on")
    assert citation.encrypted_index
    assert final.stop_reason == "end_turn"
    assert isinstance(final.usage.server_tool_use, ServerToolUsage)
    assert (final.usage.server_tool_use.web_search_requests,
            final.usage.server_tool_use.web_fetch_requests) == (1, 0)
    assert fake.requests[0].body["tools"] == [SEARCH_TOOL]


def test_each_web_event_validates_against_the_sdks_event_types(fake):
    fake.reply_message([
        web_search_use("opening hours"), web_search_results(QT, PYPI),
        web_search_use("opening hours again"), web_search_error("max_uses_exceeded"),
        web_fetch_use(QT["url"]), web_fetch_result(QT["url"], "Page text", title="Qt"),
        web_fetch_use("https://example.com/x"), web_fetch_error("url_not_in_prior_context"),
        cited_text(CLAIM, QT, PYPI)], stop_reason="pause_turn")
    _, events = raw_events(fake, {"model": MODEL, "stream": True, "max_tokens": 10,
                                  "messages": HELLO})
    typed = typed_events(events)
    starts = [e.content_block for e in typed if isinstance(e, RawContentBlockStartEvent)]
    assert_types(starts, [
        ServerToolUseBlock, WebSearchToolResultBlock, ServerToolUseBlock,
        WebSearchToolResultBlock, ServerToolUseBlock, WebFetchToolResultBlock,
        ServerToolUseBlock, WebFetchToolResultBlock, TextBlock])
    assert isinstance(starts[3].content, WebSearchToolResultErrorObject)
    assert starts[3].content.error_code == "max_uses_exceeded"
    assert starts[3].tool_use_id == starts[2].id  # a result answers the use before it
    fetched = starts[5].content
    assert isinstance(fetched, WebFetchBlock) and fetched.url == QT["url"]
    assert isinstance(fetched.content, DocumentBlock)
    assert fetched.content.source.data == "Page text" and fetched.content.title == "Qt"
    assert isinstance(starts[7].content, WebFetchToolResultErrorBlock)
    assert starts[7].content.error_code == "url_not_in_prior_context"
    deltas = [e.delta for e in typed if isinstance(e, RawContentBlockDeltaEvent)]
    citations = [d.citation for d in deltas if isinstance(d, CitationsDelta)]
    assert [type(c) for c in citations] == [CitationsWebSearchResultLocation] * 2
    assert [c.url for c in citations] == [QT["url"], PYPI["url"]]
    queries = "".join(d.partial_json for d in deltas
                      if isinstance(d, InputJSONDelta))
    assert queries.count('"query"') == 2 and queries.count('"url"') == 2
    [message_delta] = [e for e in typed if isinstance(e, RawMessageDeltaEvent)]
    assert message_delta.delta.stop_reason == "pause_turn"
    assert message_delta.usage.server_tool_use == ServerToolUsage(web_search_requests=2,
                                                                   web_fetch_requests=2)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the repo")
def test_the_fakes_web_search_stream_has_the_fixtures_shape(fake):
    fake.thinking = True  # the fixture's reply opens with thinking, as a current model's do
    script_the_fixture_reply(fake)
    _, events = raw_events(fake, {"model": "claude-sonnet-5-5", "stream": True,
                                  "max_tokens": 10, "messages": HELLO, "tools": [SEARCH_TOOL]})
    mine, theirs = skeleton(events), skeleton(fixture_events("anthropic-stream-web-search.sse"))
    # The fake cuts text and JSON into more pieces than the fixture: compare runs of deltas.
    def squash(shape: list) -> list:
        return [s for n, s in enumerate(shape) if n == 0 or s != shape[n - 1]]

    assert squash(mine) == squash(theirs)
    typed_events(fixture_events("anthropic-stream-web-search.sse"))  # the fixture holds too


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="shared/fixtures is not beside the repo")
async def test_the_web_search_fixture_served_raw_gives_the_same_blocks(fake, client):
    fake.reply_raw_sse((FIXTURES / "anthropic-stream-web-search.sse").read_text("utf-8"))
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = await stream.get_final_message()
    assert_types(final.content, [
        ThinkingBlock, ServerToolUseBlock, WebSearchToolResultBlock, TextBlock, TextBlock])
    assert final.content[1].input == {"query": "PySide6 6.12 release notes"}
    assert isinstance(final.content[4].citations[0], CitationsWebSearchResultLocation)
    assert final.usage.server_tool_use.web_search_requests == 1


async def test_a_web_reply_without_streaming_has_the_same_typed_blocks(fake, client):
    script_the_fixture_reply(fake)
    message = await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO,
                                           tools=[SEARCH_TOOL])
    assert_types(message.content, [
        ServerToolUseBlock, WebSearchToolResultBlock, TextBlock, TextBlock])
    assert isinstance(message.content[3].citations[0], CitationsWebSearchResultLocation)
    assert message.usage.server_tool_use.web_search_requests == 1
    assert_no_unknown_fields(message)


async def test_a_paused_turn_continues_when_sent_back_as_it_was(fake, client):
    current = "claude-sonnet-5-5"  # refuses a prefill: only the paused reply may come back
    fake.reply_web_search("supplier opening hours", [QT], stop_reason="pause_turn")
    async with client.messages.stream(model=current, max_tokens=100, messages=HELLO,
                                      tools=[SEARCH_TOOL]) as stream:
        paused = await stream.get_final_message()
    assert paused.stop_reason == "pause_turn"
    partial = [b.model_dump(exclude_none=True) for b in paused.content]

    fake.reply_message([cited_text("They open at nine.", QT)])
    go_on = HELLO + [{"role": "assistant", "content": partial}]
    async with client.messages.stream(model=current, max_tokens=100, messages=go_on,
                                      tools=[SEARCH_TOOL]) as stream:
        final = await stream.get_final_message()
    assert final.content[-1].text == "They open at nine."
    assert fake.message_requests[-1].body["messages"][-1]["content"] == partial

    # Any other trailing assistant turn is still a prefill, which a current model refuses.
    changed = partial[:-1] + [{"type": "text", "text": "Something else"}]
    with pytest.raises(anthropic.BadRequestError, match="prefill"):
        await client.messages.create(model=current, max_tokens=100, tools=[SEARCH_TOOL],
                                     messages=HELLO + [{"role": "assistant",
                                                        "content": changed}])


async def replay_of(fake: FakeAnthropic, client: anthropic.AsyncAnthropic) -> list[Any]:
    """A search turn, and the next request's messages sending it back as the SDK gave it."""
    script_the_fixture_reply(fake)
    async with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO,
                                      tools=[SEARCH_TOOL]) as stream:
        final = await stream.get_final_message()
    return HELLO + [{"role": "assistant",
                     "content": [b.model_dump(exclude_none=True) for b in final.content]},
                    {"role": "user", "content": "And the one before?"}]


async def test_a_web_turn_sent_back_whole_is_taken(fake, client):
    messages = await replay_of(fake, client)
    fake.reply_text("6.11 came out in the summer.")
    reply = await client.messages.create(model=MODEL, max_tokens=100, messages=messages,
                                         tools=[SEARCH_TOOL])
    assert reply.content[0].text == "6.11 came out in the summer."


@pytest.mark.parametrize(("strip", "where"), [
    (lambda blocks: blocks[1]["content"][0].pop("encrypted_content"),
     "messages.1.content.1.content.0.encrypted_content: Field required"),
    (lambda blocks: blocks[1]["content"][1].update(encrypted_content=""),
     "messages.1.content.1.content.1.encrypted_content: Field required"),
    (lambda blocks: blocks[3]["citations"][0].pop("encrypted_index"),
     "messages.1.content.3.citations.0.encrypted_index: Field required"),
])
async def test_a_web_result_sent_back_without_its_encrypted_content_is_refused(
        fake, client, strip, where):
    messages = await replay_of(fake, client)
    strip(messages[1]["content"])
    fake.reply_text("never sent")
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model=MODEL, max_tokens=100, messages=messages,
                                     tools=[SEARCH_TOOL])
    assert caught.value.body == {"type": "error", "error": {
        "type": "invalid_request_error", "message": where}}
    assert fake.pending == 1  # refused before any model answered


def test_the_fakes_web_tool_versions_are_the_sdks():
    declared = {get_args(get_type_hints(param, include_extras=True)["type"].__args__[0])[0]
                for param in get_args(ToolUnionParam)
                if param.__name__.startswith(("WebSearchTool", "WebFetchTool"))}
    assert declared == {v for versions in WEB_TOOL_VERSIONS.values() for v in versions}


@pytest.mark.parametrize("tool", [{"type": version, "name": family}
                                  for family, versions in WEB_TOOL_VERSIONS.items()
                                  for version in versions])
async def test_every_web_tool_version_the_sdk_knows_is_taken(fake, client, tool):
    fake.reply_text("ok")
    reply = await client.messages.create(model="claude-sonnet-5-5", max_tokens=10,
                                         messages=HELLO, tools=[tool])
    assert reply.content[-1].text == "ok"


@pytest.mark.parametrize(("tool", "message"), [
    ({"type": "web_search_20990101", "name": "web_search"},
     "tools.0: Input tag 'web_search_20990101' found using 'type' does not match"),
    ({"type": "web_fetch_2025", "name": "web_fetch"}, "tools.0: Input tag 'web_fetch_2025'"),
    ({"type": "web_search_20250305", "name": "search"}, "tools.0.name: Input should be"),
    ({"type": "web_search_20250305", "name": "web_search", "allowed_domains": ["a.com"],
      "blocked_domains": ["b.com"]}, "tools.0: allowed_domains and blocked_domains cannot"),
    ({"type": "web_search_20250305", "name": "web_search", "max_uses": 0},
     "tools.0.max_uses: Input should be greater than or equal to 1"),
])
async def test_a_web_tool_the_api_does_not_know_is_refused(fake, client, tool, message):
    fake.reply_text("never sent")
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, tools=[tool])
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert caught.value.body["error"]["message"].startswith(message)
    assert fake.pending == 1


async def test_a_model_without_server_tools_refuses_web_search(fake, client):
    fake.model(MODEL)["capabilities"]["server_tools"] = {"supported": False}
    with pytest.raises(anthropic.BadRequestError, match="not supported for this model"):
        await client.messages.create(model=MODEL, max_tokens=10, messages=HELLO,
                                     tools=[SEARCH_TOOL])
