"""The one request adapter: how a turn's rounds and a rebuild's call reach the API.

Every call to the Messages API goes through here, so chat and knowledge never import the
SDK.  A turn streams (:func:`stream_round`); its body is encoded a message at a time, so
encoding a 3 MB request never holds the interpreter lock for long, and it is posted with
what ``client.messages.stream(...)`` would send.  A rebuild is one plain call
(:func:`complete`).  The failures callers tell apart are named here too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.llm.client import usage_of
from app.store.messages import Usage

if TYPE_CHECKING:
    from app.llm.client import Client, Reply

# What ``AsyncMessages.stream`` adds to a request's headers (anthropic 2.x,
# ``_STAINLESS_HELPER_METHOD_HEADER`` and ``_STAINLESS_STREAM_HELPER_HEADER``).
STREAM_HEADERS = {"X-Stainless-Helper-Method": "stream", "X-Stainless-Stream-Helper": "messages"}


@dataclass(frozen=True, slots=True)
class Round:
    """A round's final message, as plain data."""

    blocks: list[dict[str, Any]]  # stored exactly as received (thinking keeps its signature)
    stop_reason: str | None
    usage: Usage


async def stream_round(client: Client, request: dict[str, Any],
                       post: Callable[[str, Any], None]) -> Round:
    """On the network thread: stream one round, posting usage, text and thinking as they
    arrive; the final message is turned into plain data here too.

    The body is encoded here a message at a time (:func:`request_body`) and posted with the
    headers ``messages.stream`` sends, then handed to the SDK's own stream helper, which
    streams and parses exactly as ``messages.stream`` does (tests/core/test_requests.py holds
    the two side by side through the fake server).
    """
    from anthropic import AsyncStream
    from anthropic.lib.streaming import AsyncMessageStreamManager
    from anthropic.types import Message as APIMessage
    from anthropic.types import RawMessageStreamEvent

    sent = client.post("/v1/messages", cast_to=APIMessage, content=request_body(request),
                       options={"headers": STREAM_HEADERS}, stream=True,
                       stream_cls=AsyncStream[RawMessageStreamEvent])
    async with AsyncMessageStreamManager(sent) as stream:
        async for event in stream:
            if event.type == "message_start":
                post("usage", usage_of(event.message.usage))
            elif event.type == "text":
                post("text", event.text)
            elif event.type == "thinking":
                post("thinking", event.thinking)
        final = await stream.get_final_message()
    return Round([block.model_dump(exclude_none=True) for block in final.content],
                  final.stop_reason, usage_of(final.usage))


def request_body(request: dict[str, Any]) -> bytes:
    """A streaming request as the API takes it (the SDK's JSON: compact, UTF-8), encoded one
    message at a time.

    Encoding a 5,000-message chat (3 MB) in one ``json.dumps`` is one C call that holds the
    interpreter lock for 20–50 ms, so the event loop on its own thread would wait as long;
    between two messages' calls it gets its turn.
    """
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                              allow_nan=False).encode
    head = encode({**{k: v for k, v in request.items() if k != "messages"}, "stream": True})
    messages = ",".join(encode(message) for message in request.get("messages", ()))
    return f'{head[:-1]},"messages":[{messages}]}}'.encode()


async def complete(client: Client, request: dict[str, Any]) -> Reply:
    """One call that is not streamed (a rebuild's): the SDK's own ``messages.create``."""
    return await client.messages.create(**request)


def is_not_found(error: BaseException) -> bool:
    """The server does not know the model (it may have retired since the list was read)."""
    import anthropic

    return isinstance(error, anthropic.NotFoundError)


def is_invalid_request(error: BaseException) -> bool:
    """A 400 ``invalid_request_error``: the server refused the request's shape."""
    import anthropic

    if not isinstance(error, anthropic.BadRequestError):
        return False
    body = error.body if isinstance(error.body, dict) else {}
    detail = body.get("error", body)
    return isinstance(detail, dict) and detail.get("type") == "invalid_request_error"


def load_sdk() -> None:
    """Import the SDK (seconds without cached bytecode): warm-up calls this off the GUI thread."""
    import anthropic  # noqa: F401
