"""The one request adapter (app/llm/requests.py) sends what the SDK's own helper sends.

A turn's rounds are posted by hand (the body encoded a message at a time, so a 3 MB request
never holds the interpreter lock for long) and read by the SDK's stream manager.  Here the
same request goes to the fake server both ways, ``stream_round`` and
``client.messages.stream(...)``: body and headers must be equal, so that an SDK release that
changes what ``messages.stream`` sends shows in CI.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic

from app.llm.requests import Round, complete, request_body, stream_round
from tests.memory_keyring import TEST_KEY

# Headers that differ between any two requests, whoever sends them.
PER_REQUEST = {"content-length", "x-stainless-retry-count", "x-stainless-read-timeout",
               "x-stainless-timeout",  # a rebuild sets its own time for a whole answer
               "idempotency-key"}

REQUEST: dict[str, Any] = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 1024,
    "system": [{"type": "text", "text": "You are Cairn.", "cache_control": {"type": "ephemeral"}}],
    "thinking": {"type": "adaptive"},
    "output_config": {"effort": "medium"},
    "tools": [{"name": "readWorkspaceFile", "description": "Read a file.",
               "input_schema": {"type": "object", "properties": {"file_id": {"type": "string"}},
                                "required": ["file_id"], "additionalProperties": False}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Héllo — “quoted” ✓"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hi."}]},
        {"role": "user", "content": [{"type": "text", "text": "Again",
                                      "cache_control": {"type": "ephemeral"}}]},
    ],
}


def _client(fake: Any) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key=TEST_KEY, base_url=fake.base_url, max_retries=0)


def _headers(request: Any) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k not in PER_REQUEST}


def test_a_turns_round_sends_what_messages_stream_sends(fake):
    fake.reply_text("First reply, streamed.")
    fake.reply_text("First reply, streamed.")
    posted: list[tuple[str, Any]] = []

    async def both() -> tuple[Round, str]:
        client = _client(fake)
        ours = await stream_round(client, REQUEST, lambda kind, value: posted.append((kind, value)))
        async with client.messages.stream(**REQUEST) as stream:
            theirs = await stream.get_final_text()
        await client.close()
        return ours, theirs

    ours, theirs = asyncio.run(both())
    adapter, sdk = fake.requests[-2], fake.requests[-1]
    assert (adapter.method, adapter.path) == (sdk.method, sdk.path) == ("POST", "/v1/messages")
    assert adapter.body == sdk.body
    assert adapter.body["stream"] is True
    assert _headers(adapter) == _headers(sdk)
    # And what came back is read the same way.
    assert "".join(v for k, v in posted if k == "text") == theirs
    assert [b.get("text") for b in ours.blocks if b["type"] == "text"] == [theirs]
    assert ours.stop_reason == "end_turn"


def test_the_body_is_the_sdks_json(fake):
    """Encoded a message at a time, the body parses to exactly the request (plus stream)."""
    import json

    assert json.loads(request_body(REQUEST)) == {**REQUEST, "stream": True}


def test_a_rebuilds_call_sends_what_messages_create_sends(fake):
    request = {k: v for k, v in REQUEST.items() if k not in ("tools", "thinking")}
    fake.reply_text("Plain answer.")
    fake.reply_text("Plain answer.")

    async def both() -> tuple[Any, Any]:
        client = _client(fake)
        ours = await complete(client, request)
        theirs = await client.messages.create(**request)
        await client.close()
        return ours, theirs

    ours, theirs = asyncio.run(both())
    adapter, sdk = fake.requests[-2], fake.requests[-1]
    assert adapter.body == sdk.body and "stream" not in adapter.body
    assert _headers(adapter) == _headers(sdk)
    def text(message: Any) -> str:
        return "".join(b.text for b in message.content if b.type == "text")

    assert text(ours) == text(theirs) == "Plain answer."


def test_a_person_hears_from_a_silent_server_within_90_seconds():
    """The configured waits: a turn first asks for the models list (once a
    day, bounded as a whole) and then waits for its reply to begin (bounded, the SDK's retries
    included); together under 90 s.  tests/core/llm/test_misbehaving_server.py shows each bound holds."""
    from app.llm import catalog, client

    assert catalog.REFRESH_TIMEOUT + client.ANSWER_DEADLINE <= 90
    assert client.CONNECT_TIMEOUT < client.ANSWER_DEADLINE  # a connection is inside it
    assert "within 75 seconds" in str(client.no_answer())
