"""What the conversation shows, built from stored messages: one entry per message of the
person, one per reply (all the rounds of a turn: its thinking, text, file reads, tokens).

Plain Python (no Qt), so the rules are tested on their own:

- a message of the person is an entry with its text and attached files;
- everything after it up to the next one is its reply: the assistant rounds and the tool
  results between them.  Text parts keep their order; a tool round is one quiet line, and
  reads of the same file in a row are one line ("Read notes.md, pages 1–2");
- a reply's status is its last round's (complete, stopped, failed) and its error sentence;
  usage and cost are the sum of its rounds (unknown when any round's is);
- a message with versions (an edit, a retry: issue 38) says which it is of how many: the
  person's message its own, a reply its first round's;
- web search and fetch (``ui.chat.web``): a quiet line per search and per page read (a
  failed one is one sentence), the sources listed under the reply, numbered marks on the
  text that cites them.  The text blocks of one round are one text: the API cuts a cited
  sentence into blocks of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.store.blocks import SHOWN_TEXT, SHOWN_THINKING, SHOWN_TOOL, SHOWN_WEB, shown_as
from app.store.files import human_size
from app.store.messages import COMPLETE, Message, Usage
from ui.chat import web

PERSON, REPLY = "person", "reply"
CALL = "cairn:call/"  # an MCP call's line: ``cairn:call/N`` unfolds the entry's part N

_PAGE = re.compile(r"^(?P<name>.+?) — page (?P<page>\d+) of (?P<pages>\d+)$")


@dataclass(slots=True)
class Part:
    kind: str  # "text" (markdown) | "tool" (a quiet line)
    text: str
    detail: str = ""  # an MCP call's full arguments and result: the line unfolds to it
    open: bool = False  # the person unfolded it


@dataclass(slots=True, eq=False)  # rows are compared by identity, never by content
class Entry:
    """One row of the conversation."""

    key: str  # stable while the chat is open: "m<first message id>", or "live"
    kind: str  # PERSON | REPLY
    message_ids: list[int] = field(default_factory=list)
    parts: list[Part] = field(default_factory=list)
    thinking: str = ""
    attachments: list[tuple[str, int]] = field(default_factory=list)  # (name, size)
    status: str = COMPLETE  # complete | stopped | failed | streaming
    error: str | None = None
    model: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    cost_known: bool = True
    thinking_open: bool = False  # the person unfolded the thinking
    copied: str | None = None  # a code block's text just copied: its Copy says "Copied"
    images: list[tuple[str, str]] = field(default_factory=list)  # sent images: (name, sha256)
    thumbs: dict[str, Any] = field(default_factory=dict)  # sha256 -> its thumbnail (QImage)
    actions: tuple[str, ...] = ()  # "retry", "edit": what the person may do with it
    last: bool = False  # in the last exchange: its links show without hovering
    nth: int = 1  # which of its versions the chat shows (issue 38): ‹ nth/of ›
    of: int = 1  # how many versions it has (1: no switch)
    web_state: web.WebState | None = None  # a reply that searched or read the web
    version: int = 0  # bumped on every change: the render cache's key

    @property
    def sources(self) -> list[web.Source]:
        """The pages listed under the reply; a citation's mark [n] is the n-th."""
        return self.web_state.sources if self.web_state is not None else []

    @property
    def text(self) -> str:
        """The entry's whole text as markdown: what Copy and assistive technology get."""
        out = []
        for part in self.parts:
            out.append(web.marks_as_text(part.text) if part.kind == "text"
                       else f"_{part.text}_")
            if part.detail and part.open:
                out.append(f"```\n{part.detail}\n```")
        if self.sources:
            out.append(web.sources_text(self.sources))
        text = "\n\n".join(p for p in out if p)
        if self.attachments:
            files = "\n".join(f"[attached {name}, {human_size(size)}]"
                              for name, size in self.attachments)
            text = f"{text}\n\n{files}" if text else files
        return text

    def add_text(self, text: str) -> None:
        if self.parts and self.parts[-1].kind == "text":
            self.parts[-1].text += text
        elif text.lstrip("\n"):  # after a tool line, a new part: no blank line of its own
            self.parts.append(Part("text", text.lstrip("\n")))

    def add_tool_line(self, summary: str, *, is_error: bool = False) -> None:
        """A file read, as one quiet line; consecutive pages of one file are one line."""
        line = tool_line(summary, is_error=is_error)
        if self.parts and self.parts[-1].kind == "tool":
            merged = _merge_reads(self.parts[-1].text, line)
            if merged is not None:
                self.parts[-1].text = merged
                return
        self.parts.append(Part("tool", line))

    def add_call_line(self, line: str, detail: str = "") -> None:
        """An MCP call's quiet line (server · tool · arguments · time), which unfolds to
        *detail* when there is one."""
        self.parts.append(Part("tool", line, detail))

    def calls(self) -> list[int]:
        """The parts that unfold (an MCP call's line), by their index."""
        return [i for i, p in enumerate(self.parts) if p.kind == "tool" and p.detail]


def local_time(stamp: str) -> str:
    """A stored UTC time as the person's local time of day (``14:05``)."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone().strftime("%H:%M")


def tool_line(summary: str, *, is_error: bool = False) -> str:
    if is_error:
        return f"Could not read a file: {summary}" if summary else "Could not read a file"
    if summary.startswith("Listed "):  # listFolder: "Listed notes/ — 3 entries"
        return summary
    found = _PAGE.match(summary)
    if found:
        if found.group("pages") == "1":
            return f"Read {found.group('name')}"
        return f"Read {found.group('name')}, page {found.group('page')}"
    return f"Read {summary}" if summary else "Read a workspace file"


_SHA = re.compile(r"[0-9a-f]{64}")
_READ = re.compile(r"^Read (?P<name>.+?), pages? (?P<first>\d+)(?:–(?P<last>\d+))?$")


def _merge_reads(previous: str, line: str) -> str | None:
    a, b = _READ.match(previous), _READ.match(line)
    if a is None or b is None or a.group("name") != b.group("name"):
        return None
    first = int(a.group("first"))
    last = int(b.group("last") or b.group("first"))
    return f"Read {a.group('name')}, pages {first}–{last}"


def build(messages: list[Message]) -> list[Entry]:
    """The entries of a run of messages (a page starts at a message of the person)."""
    entries: list[Entry] = []
    reply: Entry | None = None
    results: dict[str, tuple[str, bool]] = {}  # tool_use id -> (summary, is_error)
    calls: dict[str, tuple[Any, bool, str]] = {}  # tool_use id -> (content, is_error, when)
    for message in messages:
        if message.role == "user" and not message.from_person:
            for block in message.content:
                if block.get("type") == "tool_result":
                    ident = str(block.get("tool_use_id"))
                    results[ident] = (_result_summary(block.get("content")),
                                      bool(block.get("is_error")))
                    calls[ident] = (block.get("content"), block.get("is_error") is True,
                                    message.created_at)
    for message in messages:
        if message.from_person:
            reply = None
            entries.append(_person(message))
            continue
        if message.role == "user":
            continue  # tool results: their lines belong to the round that asked
        if reply is None:
            reply = Entry(key=f"m{message.id}", kind=REPLY, usage=Usage(),
                          nth=message.version, of=message.versions)
            entries.append(reply)
        _add_round(reply, message, results, calls)
    return entries


def _person(message: Message) -> Entry:
    entry = Entry(key=f"m{message.id}", kind=PERSON, message_ids=[message.id],
                  nth=message.version, of=message.versions)
    text = "".join(b.get("text", "") for b in message.content if b.get("type") == "text")
    if text:
        entry.parts.append(Part("text", text))
    entry.attachments = [(str(b.get("name", "file")), int(b.get("size", 0) or 0))
                         for b in message.content if b.get("type") == "attachment"]
    entry.images = [(str(b.get("name", "image")), b["sha256"]) for b in message.content
                    if b.get("type") == "attachment" and isinstance(b.get("sha256"), str)
                    and _SHA.fullmatch(b["sha256"])  # (it goes into a document's markup)
                    and str(b.get("media_type", "")).startswith("image/")]
    return entry


def _add_round(reply: Entry, message: Message, results: dict[str, tuple[str, bool]],
               calls: dict[str, tuple[Any, bool, str]] | None = None) -> None:
    reply.message_ids.append(message.id)
    joined = False  # a text block follows another of this round: one text
    for block in message.content:
        shown = shown_as(block)  # the kind's declaration says how it is shown
        if shown == SHOWN_THINKING and block.get("thinking"):
            reply.thinking += ("\n\n" if reply.thinking else "") + str(block["thinking"])
        elif shown == SHOWN_TEXT:
            if not block.get("text"):
                continue  # (an empty block joins nothing and parts nothing)
            text = web.without_marks(str(block["text"]))
            if block.get("citations"):
                text += web.cited(block, _web(reply))
            if reply.parts and reply.parts[-1].kind == "text":
                reply.parts[-1].text += ("" if joined else "\n\n") + text
            else:
                reply.parts.append(Part("text", text))
            joined = True
            continue
        elif shown == SHOWN_TOOL:
            summary, is_error = results.get(str(block.get("id")), ("", False))
            if "__" in str(block.get("name", "")) and _add_call(reply, block, calls or {}):
                joined = False
                continue
            reply.add_tool_line(summary or _file_of(block), is_error=is_error)
        elif shown == SHOWN_WEB:
            # A search's (or a read's) line, then — when it failed — its one sentence.
            if block.get("type") == "server_tool_use":
                line = web.use_line(block, _web(reply))
            else:
                line = web.result(block, _web(reply))
            if line is not None:
                reply.parts.append(Part("tool", line))
        joined = False
    reply.status = message.status
    reply.error = message.error
    reply.model = message.model or reply.model
    if message.usage is not None:
        reply.usage = (reply.usage or Usage()) + message.usage
    if message.cost_usd is None and message.usage is not None and message.usage != Usage():
        reply.cost_known = False
    reply.cost_usd = (reply.cost_usd or 0.0) + (message.cost_usd or 0.0)


def _add_call(reply: Entry, block: dict[str, Any], calls: dict[str, tuple[Any, bool, str]]
              ) -> bool:
    """An MCP call's line, unfolding to its arguments and result; False for another tool."""
    from app.tools.mcp import call_details, stored_line  # (plain Python; only for MCP calls)

    found = calls.get(str(block.get("id")))
    content, is_error, when = found if found is not None else (None, False, "")
    arguments = block.get("input") if isinstance(block.get("input"), dict) else {}
    line = stored_line(str(block.get("name")), arguments, content, is_error)
    if line is None:
        return False
    if found is None:  # no result stored (the turn stopped before it ran)
        reply.add_call_line(f"{line} · not run")
        return True
    clock = local_time(when)
    reply.add_call_line(f"{line} · {clock}" if clock else line,
                        call_details(arguments, content, is_error=is_error))
    return True


def _web(reply: Entry) -> web.WebState:
    if reply.web_state is None:
        reply.web_state = web.WebState()
    return reply.web_state


def _file_of(block: dict[str, Any]) -> str:
    tool_input = block.get("input") or {}
    return str(tool_input.get("file_id", "")) if isinstance(tool_input, dict) else ""


def _result_summary(content: Any) -> str:
    """The first line of a tool result, as the turn's ``ToolResult`` summary has it."""
    if not isinstance(content, list) or not content:
        return str(content or "")
    first = content[0]
    if not isinstance(first, dict):
        return ""
    if first.get("type") == "attachment":
        return str(first.get("name", "a file"))
    line = str(first.get("text", "")).split("\n", 1)[0]
    if line.startswith("[") and line.endswith("]"):
        line = line[1:-1].split(";", 1)[0]
    return line
