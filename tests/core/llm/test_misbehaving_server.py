"""A misbehaving server: every way an answer can go wrong ends in a bounded time, in one
sentence that says what happened, with the person's message kept.

Each case goes through the real SDK to a raw server on 127.0.0.1 that writes what a broken
network, a captive portal or a careless proxy would: nothing at all, headers and then
nothing, half a stream, a stream without its ``message_stop``, a web page, broken JSON, an
event for a block never started, a 10 MB event, a 429 asking for a long wait, or one plain
JSON message in answer to a streaming request (a compatible proxy's mock reply).  Both the
core turn (``engine.send``) and ``cairn ask`` are exercised.

Nothing here measures time: Cairn's timeouts are made short (``short_waits``), so a case that
waits ends in a second or two; the server itself never holds a connection longer than
``HOLD``, so that even a Cairn without timeouts ends (and fails the test) in bounded time.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run, run_json
from tests.memory_keyring import TEST_KEY

MESSAGE = "Please draft the launch email for our April release."
HOLD = 10.0  # seconds: the longest the server keeps a connection it does not answer
# A reply long enough for the rebuild to learn from, were it taken as complete.
HALF = "Here is the launch email you asked for, in our usual voice, for the April release: "

# What an exception's name looks like inside a sentence: "(AttributeError)", "ReadTimeout".
EXCEPTION_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Timeout|Interrupt|Exit)\b")


# ================================================================= the server


Answer = Callable[["Misbehaving", socket.socket], None]


class Misbehaving:
    """An HTTP server on 127.0.0.1 that answers each request with raw bytes: ``post`` for
    ``POST /v1/messages``, ``get`` for everything else (404 JSON when not given).  Every
    answer ends with the connection closed."""

    def __init__(self, post: Answer, get: Answer | None = None) -> None:
        self._post = post
        self._get = get or not_found
        self.posts = 0
        self.stopping = threading.Event()
        self._connections: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        threading.Thread(target=self._accept, daemon=True, name="Misbehaving").start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def hold(self) -> None:
        """Keep the connection open, sending nothing, until the test ends (or ``HOLD``)."""
        self.stopping.wait(HOLD)

    def close(self) -> None:
        self.stopping.set()
        self._listener.close()
        for connection in self._connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self._connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            reader = connection.makefile("rb")
            first = reader.readline().decode("latin-1").split()
            headers: dict[str, str] = {}
            while (line := reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length") or 0)
            if length:
                reader.read(length)
            if len(first) < 2:
                return
            if first[0] == "POST" and first[1].split("?")[0].rstrip("/") == "/v1/messages":
                self.posts += 1
                self._post(self, connection)
            else:
                self._get(self, connection)
        except OSError:
            pass
        finally:
            try:
                connection.close()
            except OSError:
                pass


def respond(connection: socket.socket, status: str, content_type: str, body: bytes,
            headers: str = "") -> None:
    connection.sendall(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                       f"Content-Length: {len(body)}\r\nConnection: close\r\n{headers}\r\n"
                       .encode() + body)


def stream_head(connection: socket.socket, *, chunked: bool) -> None:
    """A 200 event stream's head: chunked, or (not chunked) a body that ends when the
    connection closes."""
    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                       b"Cache-Control: no-cache\r\nConnection: close\r\n"
                       + (b"Transfer-Encoding: chunked\r\n" if chunked else b"") + b"\r\n")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode()


def delta(text: str, index: int = 0) -> bytes:
    return sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                       "delta": {"type": "text_delta", "text": text}})


def opening(text: str = HALF) -> bytes:
    """message_start, a text block and its first words."""
    message = {"id": "msg_01", "type": "message", "role": "assistant",
               "model": "claude-sonnet-5-5", "content": [], "stop_reason": None,
               "stop_sequence": None, "usage": {"input_tokens": 25, "output_tokens": 1}}
    return (sse("message_start", {"type": "message_start", "message": message})
            + sse("content_block_start", {"type": "content_block_start", "index": 0,
                                          "content_block": {"type": "text", "text": ""}})
            + sse("ping", {"type": "ping"}) + delta(text))


def closing(*, stop: bool = True) -> bytes:
    """The block's and the message's end (``message_stop`` only when *stop*)."""
    end = (sse("content_block_stop", {"type": "content_block_stop", "index": 0})
           + sse("message_delta", {"type": "message_delta",
                                   "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                   "usage": {"output_tokens": 30}}))
    return end + (sse("message_stop", {"type": "message_stop"}) if stop else b"")


def error_json(error_type: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": error_type,
                                                  "message": message}}).encode()


WEB_PAGE = (b"<!DOCTYPE html><html><head><title>Guest Wi-Fi</title></head><body>"
            b"<form action=/login>Accept the terms to browse</form></body></html>")
WHOLE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-5-5",
         "content": [{"type": "text", "text": "The whole reply, in one message."}],
         "stop_reason": "end_turn", "stop_sequence": None,
         "usage": {"input_tokens": 25, "output_tokens": 9}}


# --- answers


def not_found(server: Misbehaving, connection: socket.socket) -> None:
    respond(connection, "404 Not Found", "application/json",
            error_json("not_found_error", "no such route"))


def never_answering(server: Misbehaving, connection: socket.socket) -> None:
    server.hold()


def stalling_after_headers(server: Misbehaving, connection: socket.socket) -> None:
    stream_head(connection, chunked=True)
    server.hold()


def closing_mid_stream(server: Misbehaving, connection: socket.socket) -> None:
    """Half a reply, then the connection closed cleanly (the body ran until the close)."""
    stream_head(connection, chunked=False)
    connection.sendall(opening())


def breaking_mid_stream(server: Misbehaving, connection: socket.socket) -> None:
    """Half a reply, then the connection dropped inside the chunked body."""
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening()))


def without_message_stop(server: Misbehaving, connection: socket.socket) -> None:
    """A stream that ends properly, but without its ``message_stop``."""
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening()) + chunk(delta("more words")) + chunk(closing(stop=False))
                       + b"0\r\n\r\n")


def web_page(server: Misbehaving, connection: socket.socket) -> None:
    respond(connection, "200 OK", "text/html; charset=utf-8", WEB_PAGE)


def invalid_json(server: Misbehaving, connection: socket.socket) -> None:
    respond(connection, "200 OK", "application/json", b'{"type": "message", "content": [')


def invalid_event_data(server: Misbehaving, connection: socket.socket) -> None:
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening()) + chunk(b'event: content_block_delta\ndata: {"type": '
                                                b'"content_block_delta", "index": 0, "delt\n\n')
                       + b"0\r\n\r\n")


def event_for_a_missing_block(server: Misbehaving, connection: socket.socket) -> None:
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening()) + chunk(delta("a block never started", index=4))
                       + chunk(closing()) + b"0\r\n\r\n")


def ten_megabyte_event(server: Misbehaving, connection: socket.socket) -> None:
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening()) + chunk(delta("x" * 10_000_000)) + chunk(closing())
                       + b"0\r\n\r\n")


def rate_limited(server: Misbehaving, connection: socket.socket) -> None:
    respond(connection, "429 Too Many Requests", "application/json",
            error_json("rate_limit_error", "Number of requests has exceeded your rate limit"),
            "retry-after: 20\r\n")


def trickling(server: Misbehaving, connection: socket.socket) -> None:
    """A stream that never ends: a ping every tenth of a second, never a word."""
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening("")))
    while not server.stopping.wait(0.1):
        connection.sendall(chunk(sse("ping", {"type": "ping"})))


def one_plain_message(server: Misbehaving, connection: socket.socket) -> None:
    respond(connection, "200 OK", "application/json", json.dumps(WHOLE).encode())


# ================================================================= running a turn


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cairn's waits, made short: a connection within half a second, half a second between
    events, twenty seconds for a whole answer, at most a second's wait a 429 asks for."""
    from app.llm import catalog, client

    monkeypatch.setattr(client, "CONNECT_TIMEOUT", 0.5, raising=False)
    monkeypatch.setattr(client, "READ_TIMEOUT", 0.5, raising=False)
    monkeypatch.setattr(client, "DEADLINE", 20.0, raising=False)
    monkeypatch.setattr(client, "LONGEST_RETRY_WAIT", 1.0, raising=False)
    monkeypatch.setattr(catalog, "REFRESH_TIMEOUT", 0.5)


@pytest.fixture
def serve() -> Iterator[Callable[..., Misbehaving]]:
    started: list[Misbehaving] = []

    def start(post: Answer, get: Answer | None = None) -> Misbehaving:
        server = Misbehaving(post, get)
        started.append(server)
        return server

    yield start
    for server in started:
        server.close()


@dataclass
class Outcome:
    chat: str
    status: str
    error: str | None
    text: str
    stored: list[dict[str, Any]]  # the chat's messages as `chat show --json` gives them


def _prepare(isolated: Path, folders: Callable[..., list[str]], url: str) -> str:
    """Cairn's data folder set to talk to *url*, with a workspace; its folder."""
    from app.cairn import Cairn

    (root,) = folders("Acme Inc")
    cairn = Cairn.open(isolated)
    try:
        cairn.settings.set("api.base_url", url)
        cairn.settings.set_api_key(TEST_KEY)
        cairn.registry.add_workspace(root)
    finally:
        cairn.close()
    return root


def through_the_turn(isolated: Path, root: str) -> Outcome:
    import asyncio

    from app.cairn import Cairn

    cairn = Cairn.open(isolated, background_rebuilds=False)
    try:
        chat = cairn.registry.new_chat(folder=root)
        result = asyncio.run(cairn.engine.send(chat.id, MESSAGE))
        stored = [m.to_json() for m in cairn.chats.messages(chat.id)]
    finally:
        cairn.close()
    return Outcome(chat.id, result.status, result.error, result.text, stored)


def through_ask(capsys: pytest.CaptureFixture[str], root: str) -> Outcome:
    code, out, err = run(capsys, "ask", "--folder", root, "--json", MESSAGE)
    assert out.strip(), f"cairn ask printed no summary (exit {code}): {err}"
    summary = json.loads(out)
    assert code == (0 if summary["status"] == "complete" else 1), err
    if summary["error"]:
        assert err.strip().splitlines()[-1] == summary["error"]  # said last, on stderr
    shown = run_json(capsys, "chat", "show", summary["chat"])
    return Outcome(summary["chat"], summary["status"], summary["error"], summary["text"],
                   shown["messages"])


PATHS = ["turn", "ask"]


def outcome(path: str, isolated: Path, folders: Callable[..., list[str]], url: str,
            capsys: pytest.CaptureFixture[str]) -> Outcome:
    root = _prepare(isolated, folders, url)
    return through_the_turn(isolated, root) if path == "turn" else through_ask(capsys, root)


def assert_one_sentence_and_the_message_kept(got: Outcome, *words: str) -> str:
    """The turn failed with one sentence containing *words*; the message is stored."""
    assert got.status == "failed", got
    sentence = got.error or ""
    assert sentence and "\n" not in sentence and len(sentence) < 400, sentence
    assert not EXCEPTION_NAME.search(sentence), sentence
    for word in words:
        assert word in sentence, sentence
    first = got.stored[0]
    assert first["role"] == "user"
    assert [b.get("text") for b in first["content"] if b.get("type") == "text"] == [MESSAGE]
    last = got.stored[-1]
    assert last["role"] == "assistant" and last["status"] == "failed", got.stored
    assert last["error"] == sentence
    return sentence


def kept_text(got: Outcome) -> str:
    return "".join(b.get("text", "") for b in got.stored[-1]["content"]
                   if b.get("type") == "text")


# ================================================================= the cases


@pytest.mark.parametrize("path", PATHS)
def test_a_server_that_never_answers(path, isolated, folders, serve, capsys):
    server = serve(never_answering, never_answering)  # the models list waits in vain too
    got = outcome(path, isolated, folders, server.url, capsys)
    sentence = assert_one_sentence_and_the_message_kept(got, "did not answer")
    assert "second" in sentence  # says how long it waited


@pytest.mark.parametrize("path", PATHS)
def test_a_silent_server_is_told_at_the_answer_deadline_whatever_the_retries(
        path, isolated, folders, serve, capsys, monkeypatch):
    """A server that takes the connection and never answers: the SDK
    retries a read timeout twice, so three reads of READ_TIMEOUT would be three minutes;
    ANSWER_DEADLINE bounds them all.  Scaled down: a read timeout far longer than the
    deadline, so only the deadline can end the turn with this sentence."""
    from app.llm import client

    monkeypatch.setattr(client, "READ_TIMEOUT", 30.0, raising=False)
    monkeypatch.setattr(client, "ANSWER_DEADLINE", 1.0, raising=False)
    server = serve(never_answering, never_answering)
    got = outcome(path, isolated, folders, server.url, capsys)
    sentence = assert_one_sentence_and_the_message_kept(got, "did not answer within 1 second")
    assert "no reply began" in sentence
    assert server.posts == 1  # ended before the SDK's first retry could even begin


@pytest.mark.parametrize("path", PATHS)
def test_a_server_that_stalls_after_the_headers(path, isolated, folders, serve, capsys):
    server = serve(stalling_after_headers)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "stopped sending")
    assert server.posts == 1  # a stalled stream is not sent again behind the person's back


@pytest.mark.parametrize("path", PATHS)
def test_a_stream_that_never_ends_meets_the_deadline(path, isolated, folders, serve, capsys,
                                                      monkeypatch):
    from app.llm import client

    monkeypatch.setattr(client, "DEADLINE", 1.5, raising=False)
    server = serve(trickling)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "took longer than")


def test_a_server_that_takes_no_connection(isolated, folders, capsys):
    """The connect timeout: a listener whose queue is full never completes a connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    try:
        for _ in range(3):  # fill the accept queue; the kernel then drops new connections
            filler = socket.socket()
            filler.settimeout(0.3)
            try:
                filler.connect(listener.getsockname())
            except OSError:
                filler.close()
                break
            fillers.append(filler)
        else:
            pytest.skip(f"this system ({sys.platform}) completes every loopback connection")
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        got = outcome("ask", isolated, folders, url, capsys)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    assert_one_sentence_and_the_message_kept(got, "could not connect")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("answer", [closing_mid_stream, without_message_stop],
                         ids=["connection-closed-cleanly", "no-message-stop"])
def test_a_stream_cut_off_is_kept_as_cut_off_and_not_learnt_from(
        path, answer, isolated, folders, serve, capsys):
    server = serve(answer)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "cut off")
    assert kept_text(got).startswith(HALF)  # what arrived is kept, marked as not complete
    if path == "ask":
        assert server.posts == 1  # the rebuild that followed learnt nothing from it
    code, out, _ = run(capsys, "chat", "show", got.chat)
    assert code == 0 and "[failed: The reply was cut off" in out  # shown so


@pytest.mark.parametrize("path", PATHS)
def test_a_connection_dropped_mid_stream(path, isolated, folders, serve, capsys):
    server = serve(breaking_mid_stream)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "broke off")
    assert kept_text(got) == HALF


@pytest.mark.parametrize("path", PATHS)
def test_a_captive_portals_web_page(path, isolated, folders, serve, capsys):
    server = serve(web_page, web_page)  # a Wi-Fi login answers every path
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "web page", "Wi-Fi")


@pytest.mark.parametrize("path", PATHS)
def test_invalid_json(path, isolated, folders, serve, capsys):
    server = serve(invalid_json, invalid_json)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "not valid JSON")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("answer, said", [
    (invalid_event_data, "not valid JSON"),
    (event_for_a_missing_block, "never started"),
    (ten_megabyte_event, "larger than"),
], ids=["invalid-event-data", "a-block-never-started", "a-ten-megabyte-event"])
def test_a_garbled_stream_says_what_came_and_keeps_what_arrived(path, answer, said, isolated,
                                                                  folders, serve, capsys):
    server = serve(answer)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, said)
    assert kept_text(got) == HALF


@pytest.mark.parametrize("path", PATHS)
def test_a_429_asking_for_a_long_wait(path, isolated, folders, serve, capsys):
    server = serve(rate_limited)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert_one_sentence_and_the_message_kept(got, "rate-limiting", "20 seconds")
    assert server.posts == 1  # not retried: the wait it asks for is longer than Cairn waits


@pytest.mark.parametrize("path", PATHS)
def test_one_plain_json_message_is_the_whole_reply(path, isolated, folders, serve, capsys):
    server = serve(one_plain_message)
    got = outcome(path, isolated, folders, server.url, capsys)
    assert (got.status, got.error) == ("complete", None)
    assert got.text == "The whole reply, in one message."
    assert got.stored[-1]["status"] == "complete"
    assert got.stored[-1]["content"] == [{"type": "text",
                                          "text": "The whole reply, in one message."}]
    assert got.stored[-1]["usage"]["output"] == 9


def overloaded_once_then_answering(server: Misbehaving, connection: socket.socket) -> None:
    """The first request: a 529 asking to wait a second; the next: the whole reply."""
    if server.posts == 1:
        respond(connection, "529 Overloaded", "application/json",
                error_json("overloaded_error", "Overloaded"), "retry-after: 1\r\n")
        return
    stream_head(connection, chunked=True)
    connection.sendall(chunk(opening("All here.")) + chunk(closing()) + b"0\r\n\r\n")


def test_a_wait_the_server_asks_for_is_not_silence(isolated, folders, serve, capsys,
                                                    monkeypatch):
    """ANSWER_DEADLINE counts the time nothing comes, not a wait a 529 asked for: here the
    asked second is longer than the whole deadline, and the retry still gets its reply."""
    from app.llm import client

    monkeypatch.setattr(client, "ANSWER_DEADLINE", 0.5, raising=False)
    server = serve(overloaded_once_then_answering)
    got = outcome("turn", isolated, folders, server.url, capsys)
    assert (got.status, got.error, got.text) == ("complete", None, "All here.")
    assert server.posts == 2
