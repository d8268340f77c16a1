"""The one request adapter: how a turn's rounds and a rebuild's call reach the API.

Every call to the Messages API goes through here, so chat and knowledge never import the
SDK.  A turn streams (:func:`stream_round`); its body is encoded a message at a time, so
encoding a 3 MB request never holds the interpreter lock for long, and it is posted with
what ``client.messages.stream(...)`` would send.  A rebuild is one plain call
(:func:`complete`).  The failures callers tell apart are named here too.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.llm.client import BASE_URL, WEB_PAGE, ModelError, usage_of
from app.store.messages import Usage

log = logging.getLogger(__name__)

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

    Whatever the server does, this ends within ``DEADLINE`` with the round or a
    :class:`ModelError` that says what came back: a web page, JSON that is not JSON, an
    event too large or for a block never started, a stream cut off before ``message_stop``.
    A compatible server that answers with one plain JSON message gives the whole reply.
    A server tool's block (a web search, its results) is posted whole as
    ``("server tool", block)`` when it ends.  Waits before a retry are posted as
    ``("waiting", (seconds, why))``; the usage as
    ``("usage", …)`` when the stream opens (its output count a placeholder) and as
    ``("usage counted", …)`` when the server counted the output (a ``message_delta``).
    """
    from app.llm import client as limits

    token = limits.retry_listener.set(lambda wait, why: post("waiting", (wait, why)))
    try:
        async with asyncio.timeout(limits.DEADLINE):
            return await _stream_round(client, request, post)
    except TimeoutError:
        raise ModelError(f"The reply took longer than {limits.seconds(limits.DEADLINE)}, so "
                         "Cairn stopped waiting. What arrived is kept; send your message "
                         "again.", kind="deadline") from None
    finally:
        limits.retry_listener.reset(token)


async def _stream_round(client: Client, request: dict[str, Any],
                        post: Callable[[str, Any], None]) -> Round:
    """:func:`_answered`, until the reply's first event, within ANSWER_DEADLINE in all: the
    SDK's retries of a silent server (a read timeout is retried) never add up past it."""
    from app.llm import client as limits

    loop = asyncio.get_running_loop()
    silence = asyncio.timeout(limits.ANSWER_DEADLINE)
    told = limits.retry_listener.get()

    def heard(wait: float, why: str) -> None:
        if why != "network" and silence.when() is not None:
            # The server answered and asked for a wait: that is not silence.
            silence.reschedule(loop.time() + wait + limits.ANSWER_DEADLINE)
        if told is not None:
            told(wait, why)

    token = limits.retry_listener.set(heard)
    try:
        async with silence:
            return await _answered(client, request, post, silence)
    except TimeoutError:
        if silence.expired():
            raise limits.no_answer(limits.server_named(getattr(client, "base_url", None))) \
                from None
        raise
    finally:
        limits.retry_listener.reset(token)


async def _answered(client: Client, request: dict[str, Any], post: Callable[[str, Any], None],
                    silence: asyncio.Timeout) -> Round:
    from anthropic.lib.streaming import AsyncMessageStreamManager
    from anthropic.types import Message as APIMessage

    raw = await client.post("/v1/messages", cast_to=APIMessage, content=request_body(request),
                            options={"headers": STREAM_HEADERS}, stream=True,
                            stream_cls=_bounded_stream())
    kind = raw.response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "text/event-stream":
        try:
            return await _whole_answer(raw.response, kind, post,
                                         getattr(client, "base_url", None))
        finally:
            await raw.response.aclose()

    async def opened() -> Any:
        return raw

    stopped = False
    try:
        async with AsyncMessageStreamManager(opened()) as stream:
            async for event in stream:
                if silence.when() is not None:  # the reply began: READ_TIMEOUT and DEADLINE
                    silence.reschedule(None)
                if event.type == "message_start":
                    post("usage", usage_of(event.message.usage))
                elif event.type == "message_delta":  # the server's count so far (cumulative)
                    post("usage counted", usage_of(stream.current_message_snapshot.usage))
                elif event.type == "text":
                    post("text", event.text)
                elif event.type == "thinking":
                    post("thinking", event.thinking)
                elif event.type == "content_block_stop" and event.content_block.type in (
                        "server_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
                    # A search or a page read, whole: shown as it happens (it takes seconds).
                    post("server tool", event.content_block.model_dump(exclude_none=True))
                elif event.type == "message_stop":
                    stopped = True
            if not stopped:
                raise ModelError("The reply was cut off before it ended (the server closed the "
                                 "stream without finishing it). What arrived is kept, marked "
                                 "as cut off; send your message again.", kind="cut-off")
            final = await stream.get_final_message()
    except (ModelError, asyncio.CancelledError):
        raise
    except json.JSONDecodeError:
        raise ModelError("The server sent part of the reply that is not valid JSON, so Cairn "
                         "stopped reading it. What arrived is kept; send your message again.",
                         kind="garbled") from None
    except IndexError:
        raise ModelError("The server sent part of the reply for a block it never started, so "
                         "Cairn stopped reading it. What arrived is kept; send your message "
                         "again.", kind="garbled") from None
    except (KeyError, TypeError, AttributeError, RuntimeError, AssertionError, ValueError
            ) as error:
        if _from_the_network(error):
            raise
        log.info("an unreadable stream: %s", type(error).__name__)
        raise ModelError("The server sent a reply Cairn could not read (it is not the shape of "
                         "Anthropic's API), so Cairn stopped reading it. What arrived is kept; "
                         "send your message again.", kind="garbled") from None
    return Round([block.model_dump(exclude_none=True) for block in final.content],
                 final.stop_reason, usage_of(final.usage))


def _from_the_network(error: BaseException) -> bool:
    """The transport's own errors (a read timeout, a dropped connection) go to ``explain``."""
    return type(error).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "anthropic")


async def _whole_answer(response: Any, kind: str, post: Callable[[str, Any], None],
                        base_url: Any = None) -> Round:
    """A 200 that is not an event stream: one plain JSON message is the whole reply (some
    compatible servers answer a streaming request so); anything else says what came back."""
    from anthropic.types import Message as APIMessage

    body = await response.aread()
    if len(body) > MAX_EVENT_BYTES:
        raise ModelError(f"The server's answer is larger than {MAX_EVENT_BYTES // 1_000_000} MB "
                         "and is not a reply, so Cairn did not read it. Your message is kept; "
                         "send it again.", kind="garbled")
    _refuse_a_web_page(kind, body)
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ModelError(f"The server's answer is not valid JSON, so it is not a reply Cairn "
                         f"can read (check {BASE_URL}). Your message is kept; send it again.",
                         kind="garbled") from None
    if isinstance(value, dict) and value.get("type") == "error":
        found = value.get("error")
        detail: dict[str, Any] = found if isinstance(found, dict) else {}
        message = str(detail.get("message") or detail.get("type") or "an error")[:300]
        from app.llm.client import server_named

        who = server_named(base_url)
        raise ModelError(f"{who[:1].upper()}{who[1:]} refused the request: "
                         f"{message.rstrip('.')}.",
                         kind="refused")
    try:
        message_ = APIMessage.model_validate(value)
    except Exception:
        raise ModelError(f"The server answered with JSON that is not a reply (not the shape of "
                         f"Anthropic's API; check {BASE_URL}). Your message is kept; send it "
                         "again.", kind="garbled") from None
    post("usage counted", usage_of(message_.usage))
    for block in message_.content:
        if block.type == "thinking":
            post("thinking", block.thinking)
        elif block.type == "text":
            post("text", block.text)
    return Round([block.model_dump(exclude_none=True) for block in message_.content],
                 message_.stop_reason, usage_of(message_.usage))


def _refuse_a_web_page(kind: str, body: bytes) -> None:
    head = body[:512].lstrip().lower()
    if kind in ("text/html", "application/xhtml+xml") or head.startswith((b"<!doctype html",
                                                                         b"<html")):
        raise ModelError(WEB_PAGE, kind="web-page")


# The largest event a stream may send (a reply's delta is a few words; 10 MB in one event is
# a broken or hostile server), and the largest plain answer read whole.
MAX_EVENT_BYTES = 4_000_000


def _bounded_stream() -> Any:
    """The SDK's event stream, reading at most MAX_EVENT_BYTES of one event's lines before
    it refuses: what a line holds is kept in memory until it ends."""
    from anthropic import AsyncStream
    from anthropic.types import RawMessageStreamEvent

    class BoundedStream(AsyncStream[RawMessageStreamEvent]):
        async def _iter_events(self) -> Any:  # the SDK's, over a byte source that is bounded
            async for sse in self._decoder.aiter_bytes(_bounded(self.response.aiter_bytes())):
                yield sse

    return BoundedStream


async def _bounded(chunks: Any) -> Any:
    pending = 0  # bytes since the last line break
    async for data in chunks:
        cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
        pending = len(data) - cut - 1 if cut >= 0 else pending + len(data)
        if pending > MAX_EVENT_BYTES:
            raise ModelError(f"The server sent a piece of the reply larger than "
                             f"{MAX_EVENT_BYTES // 1_000_000} MB, so Cairn stopped reading it. "
                             "What arrived is kept; send your message again.", kind="garbled")
        yield data


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
    """One call that is not streamed (a rebuild's): the SDK's own ``messages.create``, with
    the time a whole answer may take to come (nothing arrives before it is written) and the
    same refusal of a web page or an answer that is not a reply as a turn's."""
    from app.llm import client as limits

    try:
        async with asyncio.timeout(limits.DEADLINE):
            reply = await client.messages.create(**request,
                                                 timeout=limits.timeouts(read=limits.DEADLINE))
    except TimeoutError:
        who = limits.server_named(getattr(client, "base_url", None))
        raise ModelError(f"{who[:1].upper()}{who[1:]} took longer than "
                         f"{limits.seconds(limits.DEADLINE)} to answer, so Cairn stopped "
                         "waiting.", kind="timeout") from None
    if isinstance(reply, (str, bytes)):  # the SDK hands back a body that is not JSON as is
        body = reply.encode() if isinstance(reply, str) else reply
        _refuse_a_web_page("", body)
        raise ModelError(f"The server's answer is not a reply Cairn can read (not the shape of "
                         f"Anthropic's API; check {BASE_URL}).", kind="garbled")
    return reply


def is_not_found(error: BaseException) -> bool:
    """The server does not know the model (it may have retired since the list was read)."""
    import anthropic

    return isinstance(error, anthropic.NotFoundError)


# Words a refusal of a request's shape says, and the words naming each shape.  Looked for
# anywhere in the refusal: a proxy wraps the API's own ("litellm.BadRequestError:
# AnthropicException - {… "message":"tool_choice: … not supported …"}").
_UNSUPPORTED = ("not supported", "unsupported", "not permitted", "extra inputs", "unknown field",
                "unrecognized", "not allowed", "does not support")
_SHAPE_WORDS = (("structured", ("output_config.format", "output_config:", "output_format",
                                "structured output")),
                ("tool", ("tool_choice",)))


def unsupported_shape(error: BaseException) -> str | None:
    """Which way of asking for a structured answer the server said it does not support:
    ``structured`` (``output_config.format``) or ``tool`` (a forced ``tool_choice``); None
    for any other refusal, which trying the other way would not mend.

    Any 400 counts (a proxy types its wrapped refusals "None", not ``invalid_request_error``),
    and the words may stand anywhere in it; where both shapes are named, the first named is
    the one refused."""
    import anthropic

    if not isinstance(error, anthropic.BadRequestError):
        return None
    from app.llm.client import refusal_of

    said = refusal_of(error)[1].casefold()
    if not any(word in said for word in _UNSUPPORTED):
        return None
    if "output_config.format.schema" in said or "input_schema" in said:
        return None  # the schema itself was refused: the other shape carries the same schema
    found = [(said.find(word), shape) for shape, words in _SHAPE_WORDS for word in words
             if word in said and not (word == "structured output" and "schema" in said)]
    return min(found)[1] if found else None


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
