"""The intermediate model both exports are read into: chats as trees of messages in the
content blocks Cairn writes, projects, memories.  Nothing here knows a file format or SQL.

Blocks are built only by the functions below, each in the strict shape
:mod:`app.store.block_schemas` declares (tests/core/test_history_import.py checks every
block an import stores with ``checked_content``):

- ``text``: the message's words (markdown, as the chat view shows any reply);
- ``thinking`` with an empty signature: shown folded, never sent back (replay sends only
  signed thinking);
- ``tool_use`` with an ``imported_`` id and no result: a quiet line, never sent back (replay
  sends only calls paired with their result);
- ``attachment``: a file from the export (an image, an attachment's extracted text), its bytes
  stored as a blob by the import.
"""

from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from app.base.titles import MAX_NAME, one_line

CLAUDE, CHATGPT = "claude", "chatgpt"
SOURCE_NAMES = {CLAUDE: "Claude.ai", CHATGPT: "ChatGPT"}

MAX_TOOL_INPUT = 2_000  # characters of a tool call's input kept for its quiet line


@dataclass(slots=True)
class File:
    """A file a message carries: *data* when the export holds its content (an image from the
    zip, an attachment's extracted text), else None (listed by name)."""

    name: str
    media_type: str
    data: bytes | None


@dataclass(slots=True)
class Message:
    source_id: str
    parent: str | None  # the source id of the message it follows; None: a first message
    role: str  # user | assistant
    blocks: list[dict[str, Any]]
    created_at: str
    model: str | None = None
    files: list[File] = field(default_factory=list)


@dataclass(slots=True)
class Chat:
    source: str  # CLAUDE | CHATGPT
    source_id: str
    title: str
    created_at: str
    updated_at: str
    project: str | None  # the source id of its project, when the export names one
    messages: list[Message]  # parents before children
    leaf: str | None  # the source id of the message the chat shows last
    skipped: list[str] = field(default_factory=list)  # why parts were left out, one line each


@dataclass(slots=True)
class Doc:
    name: str
    text: str


@dataclass(slots=True)
class Project:
    source: str
    source_id: str
    name: str
    description: str
    instructions: str
    docs: list[Doc]
    created_at: str


@dataclass(frozen=True, slots=True)
class Memory:
    """Something the export says about the person (Claude's memories, ChatGPT's custom
    instructions), offered as a suggestion for personal memory or a project's knowledge
    (*project*: the project's source id)."""

    source: str
    source_id: str
    text: str
    project: str | None = None


# ----------------------------------------------------------------- values, made plain


def text_of(value: Any) -> str:
    """A string from the export as text: None and non-strings give '', NUL and lone
    surrogates go (SQLite and JSON would refuse them later)."""
    if not isinstance(value, str):
        return ""
    if "\x00" in value:
        value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def name_of(value: Any, default: str) -> str:
    """A title or a file name: one line, no control or bidi character, capped."""
    clean = one_line(text_of(value), limit=MAX_NAME)
    return clean if clean.strip() else default


def when(value: Any, fallback: str) -> str:
    """A time as Cairn stores it (UTC ISO 8601 with milliseconds) from an ISO string or epoch
    seconds; *fallback* when it is neither."""
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if not math.isfinite(value) or not 0 < value < 32_503_680_000:
                return fallback
            moment = datetime.fromtimestamp(float(value), timezone.utc)
        elif isinstance(value, str) and value:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            moment = moment.astimezone(timezone.utc)
        else:
            return fallback
    except (ValueError, OverflowError, OSError):
        return fallback
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# ----------------------------------------------------------------- blocks, as Cairn writes them


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": ""}


def tool_block(number: int, name: str, tool_input: Any) -> dict[str, Any]:
    """A tool the other service ran, as a quiet line: its name and a short, flat input."""
    tool = "".join(c for c in name_of(name, "tool") if c.isalnum() or c in "_-")[:64] or "tool"
    return {"type": "tool_use", "id": f"imported_{number}", "name": tool,
            "input": _flat_input(tool_input)}


def _flat_input(value: Any) -> dict[str, Any]:
    """A tool input kept only as a few short scalar fields (the export's may nest anything)."""
    if not isinstance(value, dict):
        return {}
    kept: dict[str, Any] = {}
    budget = MAX_TOOL_INPUT
    for key, item in list(value.items())[:20]:
        if isinstance(item, bool) or item is None:
            pass
        elif isinstance(item, (int, float)):
            if not math.isfinite(item):
                continue
        elif isinstance(item, str):
            item = text_of(item)[:budget]
        else:
            continue
        budget -= len(str(item)) + len(str(key))
        if budget < 0:
            break
        kept[text_of(str(key))[:64]] = item
    return kept


def attachment_block(name: str, media_type: str, size: int, sha256: str) -> dict[str, Any]:
    return {"type": "attachment", "name": name_of(name, "file"), "media_type": media_type,
            "size": size, "sha256": sha256}


def files_note(names: list[str]) -> str:
    """The line that lists files the export does not hold."""
    shown = ", ".join(name_of(n, "file") for n in names)
    return f"(Attached in the original chat, not in the export: {shown})"


def code_fence(text: str, language: str = "") -> str:
    """*text* as a fenced code block whose fence no line of it can close."""
    longest = 0
    run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    lang = "".join(c for c in language if c.isalnum() or c in "+-_.#")[:32]
    return f"{fence}{lang}\n{text}\n{fence}"


def normal(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:MAX_TOOL_INPUT]
