"""A fake Anthropic Messages API on a loopback port, for tests. Standard library only.

    with FakeAnthropic() as fake:
        fake.reply_text("Hello!")
        client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test")
        ...
        assert fake.requests[0].body["messages"] == [...]
        assert fake.requests[0].api_key == "sk-test"  # SDK 2.14 sends `Authorization: Bearer`

Replies are scripted in a FIFO queue; each POST /v1/messages consumes one. Message-shaped
replies (`reply_text`, `reply_tool_use`, `reply_message`, `reply_json`) are sent as an SSE
stream when the request body says `"stream": true` and as one message JSON otherwise. Streams
follow the documented event shape (message_start, content_block_start, ping,
content_block_delta, content_block_stop, message_delta, message_stop), one flushed chunk per
event, chunked transfer encoding on HTTP/1.1. With nothing queued the server answers 500 with
an error body naming the unscripted request (and `x-should-retry: false`, so the SDK does not
retry it).

Error replies mirror the real API, so the SDK retries 429/5xx unless the client was made with
`max_retries=0` (or the reply passes `headers={"x-should-retry": "false"}`).

Each model behaves as its entry in `fake.models` says (today's list, from the API's
`GET /v1/models` shape, checked against the SDK 2.14 types on 2026-11-30):

- a model missing from the list, or `retired`, answers 404 `not_found_error` (a server
  without a models endpoint, `models_status != 200`, accepts any model, last year's way);
- a *current* model (thinking `adaptive` only: the 5.5 family) refuses a forced
  `tool_choice` (`tool`/`any`), `temperature`/`top_p`/`top_k` and an assistant prefill with 400
  `invalid_request_error`, opens every reply with a signed `thinking` block (`fake.thinking`),
  and refuses a tool round whose last assistant turn does not start with that block exactly
  as sent (text and signature);
- a *legacy* model (thinking `enabled` only, or no capability data: Haiku 4.5, a local server)
  takes all of that, last year's way;
- `output_config.format` (structured outputs) is refused where `structured_outputs` is not
  supported (or the model is in `fake.refuse_structured`), and its schema is held to the
  subset the API takes (every object declares `properties` and `additionalProperties: false`;
  no numeric, length or size bounds); the answer is a text block holding the JSON;
- `output_config.effort` is refused where `effort` is not supported; `thinking.type` where the
  model does not take that type;
- prompt caching is modelled: a `cache_control` breakpoint whose prefix (tools, system,
  messages; tokens estimated as characters / 4) reaches the model's minimum writes a cache
  entry, and a later request with the same prefix reads it.

Behind LiteLLM's proxy (`fake.as_litellm(master_key=...)`), as LiteLLM 1.108.7's
`/v1/messages` and `/v1/models` answered on 2026-12-06: the models list without lifecycle or
capability data (type, id, display_name, a fixed created_at, max_input_tokens, max_tokens),
every error wrapped as the proxy wraps the API's (`{"type": "error", "error": {"type": <the
API's>, "message": "litellm.BadRequestError: AnthropicException - {…the API's JSON…}\n\n
LiteLLM: model group '…' failed with the error above. No fallback was attempted."}}`), and a
key other than the master key refused with the proxy's own 400 (`{"error": {"message": "No
connected db.", "type": "no_db_connection", "param": null, "code": "400"}}`). The models
behind it behave as their entries in `fake.models` say.

Server tools (web search and fetch), in the shapes of the SDK 2.14 types and of
shared/fixtures/anthropic-stream-web-search.sse:

- a reply may hold `server_tool_use` (its input streamed as `input_json_delta`s),
  `web_search_tool_result` and `web_fetch_tool_result` blocks (each arrives whole in its
  `content_block_start`) and text blocks with `citations` (a `citations_delta` per citation,
  before the block's text). Build them with `web_search_use`, `web_search_result`,
  `web_search_results`, `web_search_error`, `web_fetch_use`, `web_fetch_result`,
  `web_fetch_error` and `cited_text`, or script a whole search with `fake.reply_web_search`.
  Ids, encrypted contents and indexes left out are issued by the fake; a result's
  `tool_use_id` defaults to the server_tool_use before it. `usage.server_tool_use` counts the
  reply's searches and fetches (`web_search_requests`, `web_fetch_requests`);
- `stop_reason="pause_turn"`: the client continues by sending the assistant turn back as it
  is, as the last message; a current model takes that trailing assistant message (it refuses
  any other prefill) when it ends with the paused reply's blocks;
- refused with 400 `invalid_request_error`, as the API does: a tool of an unknown web tool
  version (`web_search_*`, `web_fetch_*` outside `WEB_TOOL_VERSIONS`), a web tool with both
  `allowed_domains` and `blocked_domains`, a web tool for a model whose capabilities say it has
  no server tools, and a request that replays a `web_search_result` without its
  `encrypted_content` or a web citation without its `encrypted_index`.
"""

from __future__ import annotations

import collections
import copy
import hashlib
import json
import math
import secrets
import select
import socket
import string
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_INPUT_TOKENS = 25
THINKING_TEXT = "Let me think about what was asked."

# GET /v1/models as the API answers it this month (a copy of shared/fixtures).
MODELS: list[dict[str, Any]] = json.loads(
    (Path(__file__).with_name("anthropic_models.json")).read_text(encoding="utf-8"))["data"]

# The smallest prefix (in tokens) each model caches; below it nothing is cached, nothing fails.
CACHE_MINIMUM: dict[str, int] = {
    "claude-sonnet-5-5": 1024, "claude-haiku-5-5": 512, "claude-opus-5-5": 1024,
    "claude-haiku-4-5": 4096, "claude-sonnet-4-5": 1024,
}

# Schema keywords structured outputs refuse (limits are enforced in code after the answer).
_REFUSED_SCHEMA_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                        "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
                        "uniqueItems", "minProperties", "maxProperties")


def estimate_tokens(value: Any) -> int:
    """The fake's token count: characters of the compact JSON over four."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) // 4


def _supported(model: Mapping[str, Any] | None, *path: str) -> bool:
    node: Any = (model or {}).get("capabilities")
    for key in path:
        if not isinstance(node, dict):
            return False
        node = node.get(key)
    return isinstance(node, dict) and node.get("supported") is True


def is_current(model: Mapping[str, Any] | None) -> bool:
    """Today's thinking models: adaptive thinking only (they refuse last year's requests)."""
    return (_supported(model, "thinking", "types", "adaptive")
            and not _supported(model, "thinking", "types", "enabled"))

# The web tool versions the SDK 2.14 types define (tool_union_param.py); anything else under
# these names is refused as the API refuses an unknown tag.
WEB_TOOL_VERSIONS: dict[str, tuple[str, ...]] = {
    "web_search": ("web_search_20250305", "web_search_20260209", "web_search_20260318"),
    "web_fetch": ("web_fetch_20250910", "web_fetch_20260209", "web_fetch_20260309",
                  "web_fetch_20260318"),
}

_ALPHABET = string.ascii_letters + string.digits


def _random_id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(24))


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


# LiteLLM's exception class for each status it passes on (litellm/exceptions.py).
_LITELLM_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                   404: "NotFoundError", 408: "Timeout", 422: "UnprocessableEntityError",
                   429: "RateLimitError", 500: "InternalServerError", 503: "ServiceUnavailableError",
                   529: "InternalServerError"}


def _litellm_error(status: int, body: Any, model_group: str) -> dict[str, Any]:
    """*body*, the API's error, as LiteLLM 1.108.7's /v1/messages sends it on."""
    name = _LITELLM_ERRORS.get(status, "APIError")
    inner = body.get("error") if isinstance(body, dict) else None
    error_type = inner.get("type") if isinstance(inner, dict) else "api_error"
    message = (f"litellm.{name}: AnthropicException - {json.dumps(body)}\n\nLiteLLM: model "
               f"group '{model_group}' failed with the error above. No fallback was attempted.")
    return {"type": "error", "error": {"type": error_type, "message": message}}


def sse_frame(event: str, data: Any) -> bytes:
    """One SSE event: `event: X\\ndata: {json}\\n\\n` (a str `data` is sent as is)."""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"event: {event}\ndata: {payload}\n\n".encode()


@dataclass
class FakeRequest:
    """One request the fake received."""

    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]  # names lower-cased
    raw: bytes
    body: Any = None  # parsed JSON, or None when the body was empty or not JSON

    @property
    def api_key(self) -> str | None:
        """The key sent as `x-api-key` or, as SDK 2.14 does, as `Authorization: Bearer <key>`."""
        if "x-api-key" in self.headers:
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True


# --- replies -----------------------------------------------------------------------------

class _Reply:
    def send(self, h: _Handler, request: FakeRequest) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass
class _MessageReply(_Reply):
    """A complete assistant message, sent as a stream or as JSON depending on the request."""

    content: list[dict[str, Any]]
    stop_reason: str | None = "end_turn"
    usage: Mapping[str, Any] | None = None
    model: str | None = None
    chunk: int = 20
    delay: float = 0.0
    message_id: str = field(default_factory=lambda: _random_id("msg_"))

    def _blocks(self, h: _Handler, request: FakeRequest) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        body = request.body if isinstance(request.body, dict) else {}
        structured = isinstance(body.get("output_config"), dict) and \
            body["output_config"].get("format") is not None
        last_server_use: str | None = None
        for block in self.content:
            block = copy.deepcopy(dict(block))  # the script stays as written for a replay
            if block["type"] == "server_tool_use":
                block.setdefault("id", _random_id("srvtoolu_"))
                block.setdefault("input", {})
                last_server_use = block["id"]
            if block["type"] in ("web_search_tool_result", "web_fetch_tool_result"):
                if last_server_use is not None:
                    block.setdefault("tool_use_id", last_server_use)
                _issue_encrypted(block)
            if block["type"] == "text":
                for citation in block.get("citations") or []:
                    if citation.get("type") == "web_search_result_location":
                        citation.setdefault("encrypted_index", _random_id("Eo8B"))
            if block["type"] == "tool_use" and structured:
                # The same answer in the shape the request asked for: JSON in a text block.
                block = {"type": "text", "text": json.dumps(block.get("input", {}))}
            if block["type"] == "tool_use":
                block.setdefault("id", _random_id("toolu_"))
                block.setdefault("input", {})
            if block["type"] == "thinking":
                block.setdefault("signature", h.fake._sign(block["thinking"]))
            blocks.append(block)
        if structured and self.stop_reason == "tool_use":
            self.stop_reason = "end_turn"
        model = h.fake.model(self._model(request))
        if (h.fake.thinking and is_current(model)
                and not any(b["type"] in ("thinking", "redacted_thinking") for b in blocks)):
            blocks.insert(0, {"type": "thinking", "thinking": THINKING_TEXT,
                              "signature": h.fake._sign(THINKING_TEXT)})
        if self.stop_reason == "pause_turn":
            h.fake._paused(blocks)
        return blocks

    def _usage(self, h: _Handler, request: FakeRequest,
               blocks: list[dict[str, Any]]) -> dict[str, Any]:
        size = sum(len(b["text"]) if b["type"] == "text"
                   else len(b.get("thinking", "")) if b["type"] == "thinking"
                   else len(json.dumps(b.get("input"))) for b in blocks)
        written, read = h.fake._cache(request)
        usage: dict[str, Any] = {
            "input_tokens": DEFAULT_INPUT_TOKENS, "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read, "output_tokens": max(1, size // 4)}
        uses = [b.get("name") for b in blocks if b["type"] == "server_tool_use"]
        if uses:  # as the API: counted only when the reply used a server tool
            usage["server_tool_use"] = {"web_search_requests": uses.count("web_search"),
                                        "web_fetch_requests": uses.count("web_fetch")}
        usage.update(self.usage or {})
        return usage

    def _model(self, request: FakeRequest) -> str:
        if self.model:
            return self.model
        if isinstance(request.body, dict) and isinstance(request.body.get("model"), str):
            return request.body["model"]
        return DEFAULT_MODEL

    def send(self, h: _Handler, request: FakeRequest) -> None:
        blocks = self._blocks(h, request)
        usage = self._usage(h, request, blocks)
        model = self._model(request)
        if not request.stream:
            h.send_json(200, {
                "id": self.message_id, "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": self.stop_reason, "stop_sequence": None,
                "usage": usage,
            })
            return
        events = [event for index, block in enumerate(blocks)  # built first: fails before
                  for event in _block_events(index, block, self.chunk, ping=index == 0)]
        h.start_stream()
        h.send_event("message_start", message_start(self.message_id, model, usage))
        for event, data in events:
            h.pause(self.delay)
            h.send_event(event, data)
        h.pause(self.delay)
        final_usage: dict[str, Any] = {"output_tokens": usage["output_tokens"]}
        if "server_tool_use" in usage:  # where the API counts them: the message_delta
            final_usage["server_tool_use"] = usage["server_tool_use"]
        h.send_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": self.stop_reason, "stop_sequence": None},
            "usage": final_usage,
        })
        h.send_event("message_stop", {"type": "message_stop"})
        h.end_stream()


def message_start(message_id: str, model: str, usage: Mapping[str, Any]) -> dict[str, Any]:
    start_usage = {k: v for k, v in usage.items()
                   if k not in ("output_tokens", "server_tool_use")}
    start_usage["output_tokens"] = 1
    return {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "content": [],
        "model": model, "stop_reason": None, "stop_sequence": None, "usage": start_usage,
    }}


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i:i + size] for i in range(0, len(text), size)]


PING = ("ping", {"type": "ping"})


def _block_events(index: int, block: dict[str, Any], chunk: int,
                  ping: bool) -> Iterable[tuple[str, dict[str, Any]]]:
    kind = block["type"]
    start: dict[str, Any]
    if kind == "text" and block.get("citations"):
        # As in anthropic-stream-web-search.sse: the citations come before the cited text.
        start = {"type": "text", "text": "", "citations": []}
        deltas = [{"type": "citations_delta", "citation": c} for c in block["citations"]]
        deltas += [{"type": "text_delta", "text": p} for p in _pieces(block["text"], chunk)]
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], chunk)]
    elif kind == "server_tool_use":
        start = {"type": "server_tool_use", "id": block["id"], "name": block["name"],
                 "input": {}}
        encoded = json.dumps(block["input"])
        deltas = [{"type": "input_json_delta", "partial_json": p}
                  for p in _pieces(encoded, math.ceil(len(encoded) / 2))]
    elif kind in ("web_search_tool_result", "web_fetch_tool_result"):
        start, deltas = block, []  # results arrive whole in the block's start
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        encoded = json.dumps(block["input"])
        # Like the API: an empty first piece, then the JSON in a few partial pieces.
        pieces = [""] + _pieces(encoded, math.ceil(len(encoded) / 3))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    elif kind == "thinking":
        # As in anthropic-stream-thinking-*.sse: empty start, thinking deltas, the signature.
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p}
                  for p in _pieces(block["thinking"], chunk)]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "redacted_thinking":
        start = {"type": "redacted_thinking", "data": block["data"]}
        deltas = []
    else:
        raise ValueError(f"FakeAnthropic cannot stream a {kind!r} content block")
    yield "content_block_start", {"type": "content_block_start", "index": index,
                                  "content_block": start}
    if ping:
        yield PING
    for n, delta in enumerate(deltas):
        if n and n % 5 == 0:
            yield PING
        yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                      "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def _issue_encrypted(block: dict[str, Any]) -> None:
    """Search results the script left without encrypted content get one, as the API's have."""
    content = block.get("content")
    if block["type"] == "web_search_tool_result" and isinstance(content, list):
        for result in content:
            result.setdefault("encrypted_content", _random_id("EqgfCioIARgB"))
            result.setdefault("page_age", None)


# --- building server tool blocks (for reply_message) ---------------------------------------

def web_search_use(query: str, *, id: str | None = None) -> dict[str, Any]:
    """Claude asking the API to search: a `server_tool_use` block named `web_search`."""
    block: dict[str, Any] = {"type": "server_tool_use", "name": "web_search",
                             "input": {"query": query}}
    if id is not None:
        block["id"] = id
    return block


def web_search_result(url: str, title: str, *, page_age: str | None = None,
                      encrypted_content: str | None = None) -> dict[str, Any]:
    """One `web_search_result` (the fake issues its encrypted content when not given)."""
    result: dict[str, Any] = {"type": "web_search_result", "title": title, "url": url,
                              "page_age": page_age}
    if encrypted_content is not None:
        result["encrypted_content"] = encrypted_content
    return result


def web_search_results(*results: dict[str, Any],
                       tool_use_id: str | None = None) -> dict[str, Any]:
    """A `web_search_tool_result` block holding these results."""
    block: dict[str, Any] = {"type": "web_search_tool_result", "content": list(results)}
    if tool_use_id is not None:
        block["tool_use_id"] = tool_use_id
    return block


def web_search_error(error_code: str = "unavailable", *,
                     tool_use_id: str | None = None) -> dict[str, Any]:
    """A search that failed: `web_search_tool_result` with a `web_search_tool_result_error`
    (codes: invalid_tool_input, unavailable, max_uses_exceeded, too_many_requests,
    query_too_long, request_too_large)."""
    block: dict[str, Any] = {"type": "web_search_tool_result", "content": {
        "type": "web_search_tool_result_error", "error_code": error_code}}
    if tool_use_id is not None:
        block["tool_use_id"] = tool_use_id
    return block


def web_fetch_use(url: str, *, id: str | None = None) -> dict[str, Any]:
    """Claude asking the API to fetch a page: a `server_tool_use` block named `web_fetch`."""
    block: dict[str, Any] = {"type": "server_tool_use", "name": "web_fetch",
                             "input": {"url": url}}
    if id is not None:
        block["id"] = id
    return block


def web_fetch_result(url: str, text: str, *, title: str | None = None,
                     retrieved_at: str = "2026-12-01T09:30:00Z",
                     tool_use_id: str | None = None) -> dict[str, Any]:
    """A fetched page: `web_fetch_tool_result` holding a `web_fetch_result` whose content is
    a plain-text `document`."""
    document: dict[str, Any] = {"type": "document", "source": {
        "type": "text", "media_type": "text/plain", "data": text}}
    if title is not None:
        document["title"] = title
    block: dict[str, Any] = {"type": "web_fetch_tool_result", "content": {
        "type": "web_fetch_result", "url": url, "content": document,
        "retrieved_at": retrieved_at}}
    if tool_use_id is not None:
        block["tool_use_id"] = tool_use_id
    return block


def web_fetch_error(error_code: str = "url_not_accessible", *,
                    tool_use_id: str | None = None) -> dict[str, Any]:
    """A fetch that failed: `web_fetch_tool_result` with a `web_fetch_tool_result_error`."""
    block: dict[str, Any] = {"type": "web_fetch_tool_result", "content": {
        "type": "web_fetch_tool_result_error", "error_code": error_code}}
    if tool_use_id is not None:
        block["tool_use_id"] = tool_use_id
    return block


def cited_text(text: str, *sources: dict[str, Any], cited: str | None = None) -> dict[str, Any]:
    """A text block citing search results (each a `web_search_result`, or any dict with `url`
    and `title`): one `web_search_result_location` per source, quoting `cited` (default: the
    text itself)."""
    return {"type": "text", "text": text, "citations": [
        {"type": "web_search_result_location", "cited_text": cited or text,
         "url": source["url"], "title": source.get("title")} for source in sources]}


@dataclass
class _EventsReply(_Reply):
    """Arbitrary events, always streamed; optionally stalls at the end until the fake stops."""

    events: list[tuple[str, Any]]
    delay: float = 0.0
    stall: bool = False

    def send(self, h: _Handler, request: FakeRequest) -> None:
        if self.stall:
            h.fake.hung.set()  # before any byte goes out, so a client that saw data sees it set
        h.start_stream()
        for n, (event, data) in enumerate(self.events):
            if n:
                h.pause(self.delay)
            h.send_event(event, data)
        if self.stall:
            h.stall()
            return
        h.end_stream()


@dataclass
class _RawReply(_Reply):
    text: str

    def send(self, h: _Handler, request: FakeRequest) -> None:
        h.start_stream()
        h.send_chunk(self.text.encode())
        h.end_stream()


@dataclass
class _StatusReply(_Reply):
    status: int
    body: Any
    headers: Mapping[str, str] | None = None

    def send(self, h: _Handler, request: FakeRequest) -> None:
        h.send_json(self.status, self.body, self.headers)


# --- HTTP --------------------------------------------------------------------------------

class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeAnthropic


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    @property
    def fake(self) -> FakeAnthropic:
        return self.server.fake

    def setup(self) -> None:
        super().setup()
        # Each SSE event goes out at once, as a real server's would: no Nagle delay.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.fake._track(self.connection, True)

    def finish(self) -> None:
        self.fake._track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def handle_one_request(self) -> None:
        self.responded = False
        try:
            super().handle_one_request()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away mid-answer
        except Exception as error:  # a bad script: tell the test rather than drop the socket
            self.fake.errors.append(error)
            self.close_connection = True
            if not self.responded:
                try:
                    self.send_json(500, error_body(
                        "api_error", f"FakeAnthropic failed: {error!r}"),
                        {"x-should-retry": "false"})
                except OSError:
                    pass

    # request

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self) -> FakeRequest:
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        parts = urlsplit(self.path)
        request = FakeRequest(method=self.command, path=parts.path, query=parts.query,
                              headers={k.lower(): v for k, v in self.headers.items()},
                              raw=raw, body=body)
        self.fake._record(request)
        return request

    def _model_group(self) -> str:
        body = getattr(self, "_body", None)
        return str(body.get("model")) if isinstance(body, dict) else "None"

    def _refused_key(self, request: FakeRequest) -> bool:
        """LiteLLM without a database of keys: any key but its master key is 400."""
        master = self.fake.litellm_master_key
        if master is None or request.api_key == master:
            return False
        self.send_json(400, {"error": {"message": "No connected db.", "type": "no_db_connection",
                                       "param": None, "code": "400"}}, wrap=False)
        return True

    def do_POST(self) -> None:
        request = self._record()
        self._body = request.body
        if self._refused_key(request):
            return
        if request.path.rstrip("/") != "/v1/messages":
            self.send_json(404, error_body(
                "not_found_error", f"FakeAnthropic has no route POST {request.path}"))
            return
        refusal = self.fake._refusal(request)
        if refusal is not None:  # the API refuses before any model answers: nothing consumed
            status, error_type, message = refusal
            self.send_json(status, error_body(error_type, message), {"x-should-retry": "false"})
            return
        reply = self.fake._next_reply()
        if reply is None:
            self.send_json(500, error_body(
                "api_error",
                f"FakeAnthropic: the test scripted no reply for POST {request.path} "
                f"(request #{self.fake._message_count()}); queue one with fake.reply_*()"),
                {"x-should-retry": "false"})
            return
        reply.send(self, request)

    def do_GET(self) -> None:
        request = self._record()
        self._body = None
        path = request.path.rstrip("/")
        if self._refused_key(request):
            return
        if path == "/v1/models" and self.fake.litellm:
            listed = [{"type": "model", "id": m["id"], "display_name": m["id"],
                       "created_at": "2023-02-28T18:56:42Z",
                       "max_input_tokens": m.get("max_input_tokens") or 1_000_000,
                       "max_tokens": m.get("max_tokens") or 128_000}
                      for m in self.fake.models if m.get("lifecycle") != "retired"]
            self.send_json(200, {"data": listed, "has_more": False,
                                 "first_id": listed[0]["id"] if listed else None,
                                 "last_id": listed[-1]["id"] if listed else None})
            return
        if path == "/v1/models" or path.startswith("/v1/models/"):
            status = self.fake.models_status
            if status != 200:
                error_type = "api_error" if status >= 500 else "invalid_request_error"
                self.send_json(status, error_body(error_type, "FakeAnthropic: models_status"))
                return
            if path == "/v1/models":
                models = self.fake.models
                self.send_json(200, {
                    "data": models, "has_more": False,
                    "first_id": models[0]["id"] if models else None,
                    "last_id": models[-1]["id"] if models else None,
                })
                return
            wanted = path.removeprefix("/v1/models/")
            for model in self.fake.models:
                if model["id"] == wanted:
                    self.send_json(200, model)
                    return
            self.send_json(404, error_body("not_found_error", f"model: {wanted}"))
            return
        self.send_json(404, error_body(
            "not_found_error", f"FakeAnthropic has no route GET {request.path}"))

    # responses

    def _common_headers(self) -> None:
        self.responded = True
        self.send_header("request-id", _random_id("req_"))
        self.send_header("anthropic-organization-id", "00000000-0000-0000-0000-000000000000")

    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None, *,
                  wrap: bool = True) -> None:
        if status >= 400 and self.fake.litellm and wrap:
            body = _litellm_error(status, body, self._model_group())
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._common_headers()
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._common_headers()
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def send_event(self, event: str, data: Any) -> None:
        self.send_chunk(sse_frame(event, data))

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def pause(self, seconds: float) -> None:
        if seconds > 0:
            self.fake._stopping.wait(seconds)

    def stall(self) -> None:
        """Hold the open stream until the fake stops or the client hangs up."""
        self.close_connection = True
        while not self.fake._stopping.is_set():
            try:
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    self.fake.disconnected.set()
                    return
            except OSError:
                self.fake.disconnected.set()
                return


# --- the fake ----------------------------------------------------------------------------

class FakeAnthropic:
    """A scripted Anthropic API on http://127.0.0.1:<free port>, served from a daemon thread."""

    def __init__(self) -> None:
        self.requests: list[FakeRequest] = []
        self.models: list[dict[str, Any]] = json.loads(json.dumps(MODELS))
        self.models_status = 200
        self.thinking = True  # current models open every reply with a signed thinking block
        self.refuse_structured: set[str] = set()  # models that refuse output_config.format
        self.litellm = False  # behind LiteLLM's proxy: see as_litellm()
        self.litellm_master_key: str | None = None
        self._signed: dict[str, str] = {}  # signature -> the thinking text it was issued for
        self._cached: set[str] = set()  # prefixes written to the prompt cache
        # Each pause_turn reply's blocks, fingerprinted: a trailing assistant message ending
        # with one is that reply sent back to continue, not a prefill.
        self._pauses: list[list[tuple[str, str]]] = []
        self.hung = threading.Event()  # a request has reached a hang() reply
        self.disconnected = threading.Event()  # the client hung up on a hang() reply
        self.errors: list[Exception] = []  # exceptions raised while answering (bad scripts)
        self._replies: collections.deque[_Reply] = collections.deque()
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle

    def start(self) -> FakeAnthropic:
        if self._server is not None:
            raise RuntimeError("FakeAnthropic already started")
        self._stopping.clear()
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="FakeAnthropic", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:  # wake handlers waiting on idle keep-alive sockets
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # scripting

    def _queue(self, reply: _Reply) -> None:
        with self._lock:
            self._replies.append(reply)

    def reply_message(self, content: list[dict[str, Any]], *, stop_reason: str | None = "end_turn",
                      usage: Mapping[str, Any] | None = None, model: str | None = None,
                      chunk: int = 20, delay: float = 0.0) -> None:
        """Any assistant message: content blocks as in a final Message (`{"type": "text",
        "text": ...}`, `{"type": "tool_use", "name": ..., "input": {...}, "id"?: ...}`, the
        server tool blocks built by `web_search_use` and its kin)."""
        self._queue(_MessageReply(list(content), stop_reason, usage, model, chunk, delay))

    def reply_text(self, text: str, *, usage: Mapping[str, int] | None = None, chunk: int = 20,
                   delay: float = 0.0, stop_reason: str | None = "end_turn",
                   model: str | None = None) -> None:
        """Text in `text_delta`s of `chunk` characters, `delay` seconds between events.
        `model` defaults to the model the request named."""
        self.reply_message([{"type": "text", "text": text}], stop_reason=stop_reason,
                           usage=usage, model=model, chunk=chunk, delay=delay)

    def reply_tool_use(self, name: str, input: dict[str, Any], *, text_before: str = "",
                       usage: Mapping[str, int] | None = None, tool_id: str | None = None,
                       model: str | None = None, chunk: int = 20, delay: float = 0.0) -> None:
        """Optional text, then a tool_use block whose input arrives in `input_json_delta`s."""
        tool: dict[str, Any] = {"type": "tool_use", "name": name, "input": input}
        if tool_id is not None:
            tool["id"] = tool_id
        content = ([{"type": "text", "text": text_before}] if text_before else []) + [tool]
        self.reply_message(content, stop_reason="tool_use", usage=usage, model=model,
                           chunk=chunk, delay=delay)

    def reply_json(self, tool_name: str, input: dict[str, Any], *,
                   usage: Mapping[str, int] | None = None, tool_id: str | None = None,
                   model: str | None = None) -> None:
        """A complete message JSON holding one tool_use block (for non-streaming calls such as
        a forced tool_choice). Same as `reply_tool_use`: a streaming request gets it streamed."""
        self.reply_tool_use(tool_name, input, usage=usage, tool_id=tool_id, model=model)

    def reply_web_search(self, query: str, results: Iterable[dict[str, Any]] = (), *,
                         answer: Iterable[str | dict[str, Any]] = (),
                         error_code: str | None = None, stop_reason: str = "end_turn",
                         usage: Mapping[str, Any] | None = None, model: str | None = None,
                         chunk: int = 20, delay: float = 0.0) -> None:
        """One search, then its answer, as the API streams it: `server_tool_use` for *query*,
        a `web_search_tool_result` of *results* (`web_search_result(...)`; or the error form
        when *error_code* is given), then *answer*: text blocks, a str for plain text or a
        block such as `cited_text(...)`."""
        content: list[dict[str, Any]] = [web_search_use(query)]
        content.append(web_search_error(error_code) if error_code is not None
                       else web_search_results(*results))
        content += [{"type": "text", "text": part} if isinstance(part, str) else part
                    for part in answer]
        self.reply_message(content, stop_reason=stop_reason, usage=usage, model=model,
                           chunk=chunk, delay=delay)

    def reply_error_status(self, status: int, error_type: str, message: str, *,
                           headers: Mapping[str, str] | None = None) -> None:
        """HTTP `status` with `{"type": "error", "error": {"type": ..., "message": ...}}`."""
        self._queue(_StatusReply(status, error_body(error_type, message), headers))

    def reply_stream_error(self, text_before: str, error_type: str, message: str, *,
                           model: str = DEFAULT_MODEL, chunk: int = 20) -> None:
        """A 200 stream that sends some text, then `event: error` (no block or message stop)."""
        usage = {"input_tokens": DEFAULT_INPUT_TOKENS, "output_tokens": 1}
        events: list[tuple[str, Any]] = [
            ("message_start", message_start(_random_id("msg_"), model, usage)),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            PING,
        ]
        events += [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                            "delta": {"type": "text_delta", "text": p}})
                   for p in _pieces(text_before, chunk)]
        events.append(("error", error_body(error_type, message)))
        self.reply_events(events)

    def reply_events(self, events: Iterable[tuple[str, Any]], *, delay: float = 0.0) -> None:
        """Stream these `(event name, data)` pairs as given; a str data is sent verbatim."""
        self._queue(_EventsReply(list(events), delay))

    def reply_raw_sse(self, text: str) -> None:
        """Stream this SSE text verbatim (e.g. a fixture file's contents)."""
        self._queue(_RawReply(text))

    def hang(self, *, text_before: str = "", model: str = DEFAULT_MODEL) -> None:
        """Send the stream head (headers, message_start, optional text), then stall until the
        fake stops. `fake.hung` is set when a request reaches this reply; `fake.disconnected`
        is set if the client hangs up meanwhile (e.g. the task reading the stream was
        cancelled)."""
        usage = {"input_tokens": DEFAULT_INPUT_TOKENS, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "output_tokens": 1}
        events: list[tuple[str, Any]] = [
            ("message_start", message_start(_random_id("msg_"), model, usage)), PING]
        if text_before:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0,
                                         "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": text_before}}),
            ]
        self._queue(_EventsReply(events, stall=True))

    def as_litellm(self, *, master_key: str | None = None) -> FakeAnthropic:
        """Answer as LiteLLM's proxy in front of these models: a models list without
        capability data, every error wrapped as the proxy wraps it, and (with *master_key*)
        any other key refused with the proxy's 400 "No connected db."."""
        self.litellm = True
        self.litellm_master_key = master_key
        return self

    def model(self, model_id: str) -> dict[str, Any] | None:
        """The models-list entry for *model_id*, or None."""
        return next((m for m in self.models if m.get("id") == model_id), None)

    def add_legacy_model(self, model_id: str, **fields: Any) -> None:
        """A model with last year's behaviour and no capability data (an older proxy's)."""
        self.models.append({"type": "model", "id": model_id, "display_name": model_id,
                            "created_at": "2025-01-01T00:00:00Z", **fields})

    # inspection

    @property
    def pending(self) -> int:
        """Replies scripted but not yet consumed."""
        with self._lock:
            return len(self._replies)

    @property
    def message_requests(self) -> list[FakeRequest]:
        """The POST /v1/messages requests only."""
        with self._lock:
            return [r for r in self.requests
                    if r.method == "POST" and r.path.rstrip("/") == "/v1/messages"]

    # used by the handler

    def _record(self, request: FakeRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _sign(self, thinking: str) -> str:
        signature = "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:16] + \
            secrets.token_hex(4)
        with self._lock:
            self._signed[signature] = thinking
        return signature

    def _paused(self, blocks: list[dict[str, Any]]) -> None:
        with self._lock:
            self._pauses.append([_fingerprint(b) for b in blocks])

    def _continues_a_pause(self, content: Any) -> bool:
        """Whether this trailing assistant content is a paused reply sent back as it was."""
        if not isinstance(content, list) or not content:
            return False
        sent = [_fingerprint(b) if isinstance(b, dict) else ("", "") for b in content]
        with self._lock:
            pauses = list(self._pauses)
        return any(pause and sent[-len(pause):] == pause for pause in pauses)

    def _cache(self, request: FakeRequest) -> tuple[int, int]:
        """(tokens written, tokens read) for the request's cache breakpoints."""
        body = request.body if isinstance(request.body, dict) else {}
        minimum = CACHE_MINIMUM.get(str(body.get("model")), 1024)
        parts: list[Any] = list(body.get("tools") or [])
        system = body.get("system")
        parts += system if isinstance(system, list) else ([system] if system else [])
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            parts += content if isinstance(content, list) else [content]
        prefix: list[Any] = []
        breakpoints: list[tuple[int, str]] = []
        for part in parts:
            prefix.append(part)
            if isinstance(part, dict) and part.get("cache_control"):
                tokens = estimate_tokens(prefix)
                if tokens >= minimum:
                    key = hashlib.sha256(json.dumps(prefix, sort_keys=True).encode()).hexdigest()
                    breakpoints.append((tokens, key))
        if not breakpoints:
            return 0, 0
        with self._lock:
            read = max((t for t, key in breakpoints if key in self._cached), default=0)
            self._cached.update(key for _, key in breakpoints)
        return breakpoints[-1][0] - read, read

    def _refusal(self, request: FakeRequest) -> tuple[int, str, str] | None:
        """What the API would refuse in this request, as (status, error type, message)."""
        body = request.body if isinstance(request.body, dict) else {}
        model_id = str(body.get("model"))
        model = self.model(model_id)
        if self.models_status == 200 and (model is None or model.get("lifecycle") == "retired"):
            return 404, "not_found_error", f"model: {model_id}"
        bad = "invalid_request_error"
        thinking = body.get("thinking")
        if isinstance(thinking, dict) and model is not None and model.get("capabilities"):
            kind = thinking.get("type")
            if kind in ("adaptive", "enabled") and not _supported(model, "thinking", "types", kind):
                return 400, bad, f"thinking.type: '{kind}' is not supported for this model"
        config = body.get("output_config")
        if isinstance(config, dict):
            if config.get("format") is not None:
                if ((model is not None and not _supported(model, "structured_outputs"))
                        or model_id in self.refuse_structured):
                    return 400, bad, "output_config.format: structured outputs are not " \
                        "supported for this model"
                problem = _schema_problem((config["format"] or {}).get("schema"))
                if problem:
                    return 400, bad, f"output_config.format.schema: {problem}"
            if config.get("effort") is not None and (model is None
                                                     or not _supported(model, "effort")):
                return 400, bad, "output_config.effort: effort is not supported for this model"
        refusal = _web_tool_refusal(body.get("tools"), model) or \
            _replayed_web_refusal(body.get("messages"))
        if refusal is not None:
            return 400, bad, refusal
        if not is_current(model):
            return None  # last year's model: takes what last year's requests send
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") in ("tool", "any"):
            return 400, bad, 'tool_choice: type "tool" and "any" are not supported for this model'
        for name in ("temperature", "top_p", "top_k"):
            if name in body:
                return 400, bad, f"{name}: sampling parameters are not supported for this model"
        messages = body.get("messages") or []
        if (messages and isinstance(messages[-1], dict)
                and messages[-1].get("role") == "assistant"
                and not self._continues_a_pause(messages[-1].get("content"))):
            return 400, bad, ("This model does not support assistant message prefill. The "
                              "conversation must end with a user message.")
        return self._thinking_refusal(messages)

    def _thinking_refusal(self, messages: list[Any]) -> tuple[int, str, str] | None:
        """In a tool round, the last assistant turn must start with its thinking, unchanged."""
        last = messages[-1] if messages else None
        content = last.get("content") if isinstance(last, dict) else None
        if not (isinstance(content, list) and content
                and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)):
            return None  # not a tool round
        index = max(i for i, m in enumerate(messages) if m.get("role") == "assistant")
        first = (messages[index].get("content") or [{}])[0]
        kind = first.get("type") if isinstance(first, dict) else None
        if kind not in ("thinking", "redacted_thinking"):
            return 400, "invalid_request_error", (
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, "
                f"but found `{kind}`. When `thinking` is enabled, a final `assistant` message "
                "must start with a thinking block.")
        if kind == "thinking":
            with self._lock:
                issued = self._signed.get(first.get("signature", ""))
            if issued is None or issued != first.get("thinking"):
                return 400, "invalid_request_error", (
                    f"messages.{index}.content.0: Invalid `signature` in `thinking` block")
        return None

    def _message_count(self) -> int:
        return len(self.message_requests)

    def _next_reply(self) -> _Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def _track(self, connection: socket.socket, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(connection)


def _fingerprint(block: Mapping[str, Any]) -> tuple[str, str]:
    """What identifies a content block when it is sent back: its type and its id, text or
    signature (optional fields the client may drop, such as a null page_age, do not count)."""
    kind = str(block.get("type"))
    for key in ("id", "tool_use_id", "signature", "data", "text"):
        if key in block:
            return kind, str(block[key])
    return kind, ""


def _web_tool_refusal(tools: Any, model: Mapping[str, Any] | None) -> str | None:
    """Why the API would refuse these tool definitions' web tools, or None."""
    for n, tool in enumerate(tools if isinstance(tools, list) else []):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            continue
        kind = tool["type"]
        family = next((name for name in WEB_TOOL_VERSIONS if kind.startswith(name + "_")), None)
        if family is None:
            continue
        if kind not in WEB_TOOL_VERSIONS[family]:
            expected = ", ".join(f"'{v}'" for versions in WEB_TOOL_VERSIONS.values()
                                 for v in versions)
            return (f"tools.{n}: Input tag '{kind}' found using 'type' does not match any of "
                    f"the expected tags: {expected}")
        if tool.get("name") != family:
            return f"tools.{n}.name: Input should be '{family}'"
        if tool.get("allowed_domains") and tool.get("blocked_domains"):
            return (f"tools.{n}: allowed_domains and blocked_domains cannot both be "
                    "specified")
        max_uses = tool.get("max_uses")
        if max_uses is not None and (not isinstance(max_uses, int) or max_uses < 1):
            return f"tools.{n}.max_uses: Input should be greater than or equal to 1"
        if (model is not None and model.get("capabilities")
                and not _supported(model, "server_tools", "web_search")):
            return f"tools.{n}: '{kind}' is not supported for this model"
    return None


def _replayed_web_refusal(messages: Any) -> str | None:
    """A web result sent back must carry what the API encrypted for it: the search result's
    `encrypted_content`, a web citation's `encrypted_index`."""
    for m, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        for b, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, dict):
                continue
            where = f"messages.{m}.content.{b}"
            results = block.get("content")
            if block.get("type") == "web_search_tool_result" and isinstance(results, list):
                for r, result in enumerate(results):
                    value = result.get("encrypted_content") if isinstance(result, dict) else None
                    if not isinstance(value, str) or not value:
                        return f"{where}.content.{r}.encrypted_content: Field required"
            if block.get("type") == "text":
                for c, citation in enumerate(block.get("citations") or []):
                    if not (isinstance(citation, dict)
                            and citation.get("type") == "web_search_result_location"):
                        continue
                    value = citation.get("encrypted_index")
                    if not isinstance(value, str) or not value:
                        return f"{where}.citations.{c}.encrypted_index: Field required"
    return None


def _schema_problem(schema: Any, where: str = "") -> str | None:
    """Why structured outputs would refuse this JSON schema, or None."""
    if not isinstance(schema, dict):
        return "a schema must be an object" if not where else None
    for key in _REFUSED_SCHEMA_KEYS:
        if key in schema:
            return f"For '{schema.get('type', 'any')}' type, property '{key}' is not supported"
    if schema.get("type") == "object":
        if "properties" not in schema:
            return f"object{where} must declare 'properties'"
        if schema.get("additionalProperties") is not False:
            return f"object{where} must set 'additionalProperties' to false"
    children: list[Any] = list((schema.get("properties") or {}).values())
    children += [schema.get("items")] if isinstance(schema.get("items"), dict) else []
    for key in ("anyOf", "allOf", "oneOf"):
        children += list(schema.get(key) or [])
    children += list((schema.get("$defs") or {}).values())
    for child in children:
        problem = _schema_problem(child, where + ".")
        if problem:
            return problem
    return None


__all__ = ["FakeAnthropic", "FakeRequest", "MODELS", "WEB_TOOL_VERSIONS", "cited_text",
           "error_body", "sse_frame", "web_fetch_error", "web_fetch_result", "web_fetch_use",
           "web_search_error", "web_search_result", "web_search_results", "web_search_use"]
