"""What Claude can use in a turn: one :class:`Tool` protocol, and the :class:`Toolbox` the
composition root (``app/cairn.py``) hands to the chat engine.

A tool says its definition for a chat (or None when it is not offered there), where it runs
(a worker thread: never the single writer thread, so reading a 20 MB file never holds up a
save), how large its result may be, and the one line the chat view shows for a call.  The
turn never looks a tool up by its name or by attribute: it asks the toolbox for what a chat
is offered, and hands each call back to it.

Today's client tools: ``readWorkspaceFile`` (:mod:`app.tools.workspace_files`), ``listFolder``
and ``readFolderFile`` (:mod:`app.tools.folder_reading`).  Web search and fetch are server tools (the
API runs them; ``app.chat.web``).
"""

from __future__ import annotations

import asyncio
import codecs
import logging
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Protocol

from app.store.files import PAGE_CHARS  # one page of a text file (about 5,000 tokens)

log = logging.getLogger(__name__)

WORKER = "worker"  # a thread of the toolbox's own pool
NETWORK = "network"  # awaited: the tool calls out (an MCP server, on a thread of its own)
MAX_RESULT_BYTES = 4_000_000  # what one call may answer, at most (and a turn, in all)
_CHUNK = 1 << 20  # a text file is read a megabyte at a time


@dataclass(frozen=True, slots=True)
class ToolChat:
    """What a tool knows of the chat it runs for."""

    chat_id: str
    workspace_id: str | None
    chain_ids: tuple[str, ...]  # the project down to the chat's own workspace


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A call's answer: the tool_result's content (text and attachment references)."""

    content: list[dict[str, Any]]
    is_error: bool = False
    cut: bool = False  # cut (or refused) at the bytes the call could still answer
    outcome: str = ""  # for a call that needs approval: allowed, declined, failed, error
    called: tuple[str, str] | None = None  # (server, tool) of an MCP tool

    @property
    def size(self) -> int:
        """What it weighs against a turn's bound: its text's bytes and its files' sizes."""
        return sum(len(str(b.get("text", "")).encode("utf-8")) if b.get("type") == "text"
                   else int(b.get("size", 0) or 0) for b in self.content)


def error(text: str) -> ToolOutput:
    return ToolOutput([{"type": "text", "text": text}], True)


class Tool(Protocol):
    """One tool.  ``run`` is called on a worker thread (``runs_on``), with the bytes its
    result may hold (*limit*: its own cap or what is left of the turn's, whichever is
    smaller); it reads no more than that and answers an error result, never raises, for
    anything the model asked wrongly."""

    name: str
    runs_on: str  # WORKER
    max_result_bytes: int

    def definition(self, chat: ToolChat) -> dict[str, Any] | None: ...
    def run(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int) -> ToolOutput: ...
    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str: ...


# What the person answered when a call was asked for (DESIGN §12).
ALLOW_ONCE, ALLOW_CHAT, ALWAYS_ALLOW, DENY = "once", "chat", "always", "deny"
ANSWERS = (ALLOW_ONCE, ALLOW_CHAT, ALWAYS_ALLOW, DENY)


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the person sees before a call runs: the server, the tool and its arguments (the
    tool's annotations shown as the server claims them, never trusted to skip this)."""

    server: str
    tool: str
    arguments: dict[str, Any]
    chat_id: str
    workspace_id: str | None
    annotations: dict[str, Any] = field(default_factory=dict)


# Given by whoever starts a turn (the window's chat, the command line): asked before a call
# that its policy does not allow, it answers one of ANSWERS.  Without one, such calls are
# declined.
Approver = Callable[[ApprovalRequest], Awaitable[str]]


class NetworkTool(Protocol):
    """A tool that calls out (``runs_on`` NETWORK): awaited, asking *approver* first when
    its policy says so; answers an error result, never raises, for a refused or failed call."""

    name: str
    runs_on: str
    max_result_bytes: int

    def definition(self, chat: ToolChat) -> dict[str, Any] | None: ...
    async def arun(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int,
                   approver: Approver | None) -> ToolOutput: ...
    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str: ...


class ToolSource(Protocol):
    """Tools that come and go (an MCP server's): ``prepare`` readies what a chat uses before
    its turn (starting a server; sentences for what could not be), ``tools`` lists them."""

    async def prepare(self, chat: ToolChat) -> list[str]: ...
    def tools(self, chat: ToolChat) -> Sequence[Tool | NetworkTool]: ...


@dataclass(frozen=True, slots=True)
class Offered:
    """The tools a turn offers: their definitions (sent with every round) and the tools."""

    definitions: list[dict[str, Any]] = field(default_factory=list)
    tools: dict[str, Tool | NetworkTool] = field(default_factory=dict)


class Toolbox:
    """The tools Cairn has, and the worker threads they run on."""

    def __init__(self, tools: Sequence[Tool], *, sources: Sequence[ToolSource] = (),
                 workers: int = 4) -> None:
        self._tools = list(tools)
        self._sources = list(sources)
        self._workers: Executor = ThreadPoolExecutor(max_workers=workers,
                                                     thread_name_prefix="cairn-tool")

    async def prepare(self, chat: ToolChat) -> list[str]:
        """Before a turn: each source readies what *chat* uses; what could not be, said."""
        said: list[str] = []
        for source in self._sources:
            try:
                said += await source.prepare(chat)
            except Exception:
                log.exception("a tool source could not be prepared")
        return said

    def offered(self, chat: ToolChat) -> Offered:
        """What a turn in *chat* offers (on the storage thread: a definition may read)."""
        offered = Offered()
        tools: list[Tool | NetworkTool] = [*self._tools]
        for source in self._sources:
            tools += source.tools(chat)
        for tool in tools:
            definition = tool.definition(chat)
            if definition is not None:
                offered.definitions.append(definition)
                offered.tools[str(definition["name"])] = tool
        return offered

    async def call(self, offered: Offered, chat: ToolChat, call: dict[str, Any], *,
                   limit: int, approver: Approver | None = None) -> tuple[ToolOutput, str, bool]:
        """Run one call of the model's on a worker thread: its output, its summary line, and
        whether *limit* (what is left of the turn's bound, when it is below the tool's own
        cap) cut it.  A tool not offered, or an input that is not an object, is an error
        result."""
        name = str(call.get("name"))
        tool = offered.tools.get(name)
        tool_input = call.get("input")
        if tool is None:
            output = error(f"No tool named {name}.")
            return output, _first_line(output), False
        if not isinstance(tool_input, dict):  # a list, a string, a number: the model is told
            output = error(f"The input of {name} must be an object.")
            return output, _first_line(output), False
        if tool.runs_on not in (WORKER, NETWORK):
            raise ValueError(f"a tool runs on a worker or the network, not {tool.runs_on!r}")
        cap = min(limit, tool.max_result_bytes)
        loop = asyncio.get_running_loop()
        try:
            if tool.runs_on == NETWORK:  # (its own thread: an MCP server's)
                output = await tool.arun(chat, tool_input, limit=cap,  # type: ignore[union-attr]
                                         approver=approver)
            else:
                run = tool.run  # type: ignore[union-attr]
                output = await loop.run_in_executor(
                    self._workers, lambda: run(chat, tool_input, limit=cap))
        except Exception:
            log.exception("the tool %s failed", name)
            output = error(f"{name} failed inside Cairn; try another way.")
        return output, tool.summary(tool_input, output), output.cut and limit < tool.max_result_bytes

    def close(self) -> None:
        """Let the worker threads go (a call still running finishes on its own)."""
        self._workers.shutdown(wait=False, cancel_futures=True)


def summary_line(output: ToolOutput) -> str:
    """One line for a tool's answer: a page's heading, a file's name, or the error."""
    return _first_line(output)


def _first_line(output: ToolOutput) -> str:
    if not output.content:
        return ""
    first = output.content[0]
    if first.get("type") == "attachment":
        return str(first.get("name", "a file"))
    line = str(first.get("text", "")).split("\n", 1)[0]
    if line.startswith("[") and line.endswith("]"):
        line = line[1:-1].split(";", 1)[0]  # "[notes.md — page 1 of 3; read page 2 next]"
    return line


def text_page(name: str, handle: BinaryIO, page: int, *, limit: int,
              size: int | None = None) -> ToolOutput | None:
    """Page *page* (from 1) of the text read from *handle*, headed with where it is and what
    to read next; None when it is not text.  Read a megabyte at a time and only the page is
    kept, so a 20 MB file costs a megabyte or two, however often it is read.  *size*: the
    bytes the file had when it was checked; a file that another program grows past it is
    read no further (a log appended to forever would keep the read going forever)."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    start, end = (page - 1) * PAGE_CHARS, page * PAGE_CHARS
    kept: list[str] = []
    total = 0
    taken = 0  # bytes read
    first = True
    while True:
        chunk = handle.read(_CHUNK if size is None else min(_CHUNK, size + 1 - taken))
        taken += len(chunk)
        if size is not None and taken > size:
            return error(f"Cannot read '{name}': it changed while it was being read; "
                         "ask again.")
        if first and b"\0" in chunk[:8192]:
            return None
        first = False
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            return None
        low, high = max(start, total), min(end, total + len(text))
        if low < high:
            kept.append(text[low - total:high - total])
        total += len(text)
        if not chunk:
            break
    pages = max(1, -(-total // PAGE_CHARS))
    if page > pages:
        return error(f"'{name}' has {pages} page{'s' if pages > 1 else ''}.")
    head = f"[{name} — page {page} of {pages}"
    head += f"; read page {page + 1} next]" if page < pages else "]"
    body = "".join(kept)
    heading = len(head.encode("utf-8")) + 1  # bytes, not characters: a name may be any script
    if len(body.encode("utf-8")) + heading > limit:  # what is left of the turn's bound
        note = ("\n[Cut here: this reply's tool results reached Cairn's limit of "
                f"{MAX_RESULT_BYTES // 1_000_000} MB.]")
        room = max(0, limit - heading - len(note.encode("utf-8")))
        body = body.encode("utf-8")[:room].decode("utf-8", "ignore") + note
    return ToolOutput([{"type": "text", "text": f"{head}\n{body}"}], cut=len(body) != len("".join(kept)))


def too_large(name: str, size: int, limit: int) -> ToolOutput:
    """The note for a file larger than what a call may still answer."""
    from app.store.files import human_size

    return ToolOutput([{"type": "text", "text":
                        f"'{name}' is {human_size(size)}, more than this reply may still read "
                        f"({human_size(limit)} of tool results left of "
                        f"{human_size(MAX_RESULT_BYTES)}); ask about a smaller part, or "
                        "attach it to a message."}], is_error=True, cut=True)
