"""What a turn contains, declared once per kind of content block (DESIGN §11).

Each :class:`Kind` says everything Cairn does with its blocks: its strict schema (a model in
:mod:`app.store.block_schemas`), which roles carry it, how it is stored, how it is sent back to
the API on the next round and the next turn, whether a bundle may carry it, how the chat view
shows it and what search indexes of it.  Storage (``messages.checked_content``, the search
text), replay (``app.chat.engine.history``), bundle import (the manifest's content check) and
the chat view (``ui/chat/entries.py``) all read :data:`KINDS`; tests/core/test_block_kinds.py
runs every kind through all of them, so a kind added halfway fails there at once.

A new kind: its model in ``block_schemas``, its ``Kind`` here, a sample in the contract test.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

USER, ASSISTANT = "user", "assistant"

# How a kind is stored.
VERBATIM = "verbatim"  # exactly as the API sent it (signatures, encrypted content included)
WRITTEN = "written"  # in the shape Cairn writes (the person's text, a tool's answer)
REFERENCE = "reference"  # a reference to a stored blob (an attachment's bytes live in files/)

# How the chat view shows a kind (``ui/chat/entries.py`` switches on these).
SHOWN_TEXT = "text"  # markdown, part of the message
SHOWN_THINKING = "thinking"  # folded under the reply
SHOWN_TOOL = "tool"  # a quiet line: what a tool did
SHOWN_WEB = "web"  # a quiet line per search or fetch, and the sources under the reply
SHOWN_FILE = "file"  # an attached file (a chip, or a thumbnail for an image)
SHOWN_NOTHING = "nothing"  # its line is the call's (a tool result), or the web line's

Expand = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Replay:
    """What replaying one message's block needs to know about where it stands."""

    expand: Expand  # a stored attachment as the API takes it (reads the blob)
    in_loop: bool  # the block belongs to the tool loop still running, in a complete message
    paired: Callable[[str], bool]  # a tool call's id has its result (and a result its call)


@dataclass(frozen=True, slots=True)
class Kind:
    """One kind of content block, declared once.  Every field is required: a kind cannot be
    declared without saying what each part of Cairn does with it."""

    name: str  # the block's ``type``
    schema: str  # its pydantic model's name in app.store.block_schemas
    roles: frozenset[str]  # which messages carry it
    in_tool_result: bool  # may stand inside a tool_result's content
    stored: str  # VERBATIM | WRITTEN | REFERENCE
    replay: Callable[[dict[str, Any], Replay], list[dict[str, Any]]]  # [] leaves it out
    leads: bool  # sent before the message's other blocks (files before the question)
    bundle: bool  # a bundle may carry it (an import refuses it otherwise)
    shown: str  # SHOWN_*: how the chat view shows it
    search: Callable[[dict[str, Any]], str | None]  # its text for search (None: nothing)


# ----------------------------------------------------------------- replay, per kind


def finite(value: Any) -> Any:
    """*value* with NaN and infinities as null: JSON (and so the API) has no such numbers, and
    one in a stored tool input would stop every later request of the chat from encoding."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def _replay_text(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    text = block.get("text", "")
    if not isinstance(text, str) or not text.strip():
        return []  # the API refuses an empty text block
    sent: dict[str, Any] = {"type": "text", "text": text}
    citations = block.get("citations")
    if isinstance(citations, list) and citations:  # web citations keep their encrypted index
        sent["citations"] = citations
    return [sent]


def _replay_thinking(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    # Back exactly as received inside the running tool loop, where the API requires it;
    # earlier turns' thinking is left out (the API ignores it), and so is thinking cut off
    # before its signature arrived.
    if not at.in_loop or not block.get("signature"):
        return []
    return [{k: block[k] for k in ("type", "thinking", "signature") if k in block}]


def _replay_redacted(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    return [{"type": "redacted_thinking", "data": block.get("data")}] if at.in_loop else []


def _replay_tool_use(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    if not at.paired(str(block.get("id"))):  # its result never arrived (a stop mid-loop)
        return []
    tool_input = block.get("input")  # a wrong shape goes back as the object the API takes
    return [{"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
             "input": finite(tool_input) if isinstance(tool_input, dict) else {}}]


def _expanded(reference: dict[str, Any], expand: Expand) -> dict[str, Any]:
    """A stored file as the API takes it; one that is gone from storage becomes a note."""
    try:
        return expand(reference)
    except OSError:
        log.warning("attachment %s is missing from storage", reference.get("sha256"))
        return {"type": "text",
                "text": f"[The file '{reference.get('name', 'attachment')}' is no longer available.]"}


def _replay_tool_result(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    inner: list[dict[str, Any]] = []
    for item in block.get("content") or ():
        kind = kind_of_block(item)
        if kind is not None and kind.in_tool_result:
            inner.extend(kind.replay(item, at))
    result = {"type": "tool_result", "tool_use_id": block.get("tool_use_id"), "content": inner}
    return [{**result, "is_error": True} if block.get("is_error") is True else result]


def _replay_verbatim_pair(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    """A server tool's call or result: back exactly as received (encrypted content included,
    so later turns keep their citations), when its other half is in the same message."""
    ident = block.get("id") if block.get("type") == "server_tool_use" else block.get("tool_use_id")
    return [dict(block)] if at.paired(str(ident)) else []


def _replay_attachment(block: dict[str, Any], at: Replay) -> list[dict[str, Any]]:
    return [_expanded(block, at.expand)]


# ----------------------------------------------------------------- search text, per kind


def _text_of(block: dict[str, Any]) -> str | None:
    text = block.get("text")
    return text if isinstance(text, str) else ""


def _search_titles(block: dict[str, Any]) -> str | None:
    content = block.get("content")
    if not isinstance(content, list):
        return None  # an error: nothing to find
    titles = [str(r.get("title")) for r in content if isinstance(r, dict) and r.get("title")]
    return "\n".join(titles) or None


def _fetch_title(block: dict[str, Any]) -> str | None:
    content = block.get("content")
    if not isinstance(content, dict) or content.get("type") != "web_fetch_result":
        return None
    document = content.get("content")
    title = document.get("title") if isinstance(document, dict) else None
    return str(title) if title else None


def _nothing(block: dict[str, Any]) -> str | None:
    return None


# ----------------------------------------------------------------- the declarations

_BOTH, _PERSON, _REPLY = frozenset({USER, ASSISTANT}), frozenset({USER}), frozenset({ASSISTANT})

KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("text", "TextBlock", _BOTH, True, WRITTEN, _replay_text, False, True,
         SHOWN_TEXT, _text_of),
    Kind("thinking", "ThinkingBlock", _REPLY, False, VERBATIM, _replay_thinking, False, True,
         SHOWN_THINKING, _nothing),
    Kind("redacted_thinking", "RedactedThinkingBlock", _REPLY, False, VERBATIM,
         _replay_redacted, False, True, SHOWN_NOTHING, _nothing),
    Kind("tool_use", "ToolUseBlock", _REPLY, False, VERBATIM, _replay_tool_use, False, True,
         SHOWN_TOOL, _nothing),
    Kind("tool_result", "ToolResultBlock", _PERSON, False, WRITTEN, _replay_tool_result,
         False, True, SHOWN_NOTHING, _nothing),
    Kind("server_tool_use", "ServerToolUseBlock", _REPLY, False, VERBATIM,
         _replay_verbatim_pair, False, True, SHOWN_WEB, _nothing),
    Kind("web_search_tool_result", "WebSearchToolResultBlock", _REPLY, False, VERBATIM,
         _replay_verbatim_pair, False, True, SHOWN_WEB, _search_titles),
    Kind("web_fetch_tool_result", "WebFetchToolResultBlock", _REPLY, False, VERBATIM,
         _replay_verbatim_pair, False, True, SHOWN_WEB, _fetch_title),
    # Attachments: a PDF goes to the API as a ``document`` block, an image as ``image``, a
    # text file as text; stored once as a reference to its blob, whatever it becomes.
    Kind("attachment", "AttachmentBlock", _PERSON, True, REFERENCE, _replay_attachment, True,
         True, SHOWN_FILE, _nothing),
)}


_JSON_KINDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false",
               list: "a list", dict: "an object", type(None): "null"}


def kind_of(value: Any) -> str:
    """A JSON value's kind, as a sentence names it ("text", "a whole number", …)."""
    return _JSON_KINDS.get(type(value), type(value).__name__)


def kind_of_block(block: Any) -> Kind | None:
    """The declaration of a stored block; None for anything Cairn does not store."""
    return KINDS.get(str(block.get("type"))) if isinstance(block, dict) else None


def shown_as(block: Any) -> str:
    """How the chat view shows *block* (SHOWN_NOTHING for a kind it does not know)."""
    kind = kind_of_block(block)
    return kind.shown if kind is not None else SHOWN_NOTHING


def search_text(content: Iterable[Any]) -> str:
    """What search indexes of a message: each block's text, by its declaration, one per
    line; the characters search uses to mark a match are made spaces."""
    parts = []
    for block in content:
        kind = kind_of_block(block)
        found = kind.search(block) if kind is not None else None
        if found is not None:
            parts.append(found)
    return "\n".join(parts).replace("\ue000", " ").replace("\ue001", " ")


def paired_ids(content: Iterable[Any]) -> set[str]:
    """The ids of server tool calls whose call and result both stand in *content*."""
    calls, results = set(), set()
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "server_tool_use":
            calls.add(str(block.get("id")))
        elif block.get("type") in ("web_search_tool_result", "web_fetch_tool_result"):
            results.add(str(block.get("tool_use_id")))
    return calls & results
