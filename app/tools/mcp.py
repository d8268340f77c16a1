"""MCP servers' tools behind the Tool protocol: each server's tools offered as
``server__tool`` (names made valid for the API, mapped back), asked for before they run, and
their results made tool_result content within the turn's bounds.

Which servers a chat uses is read as its turn starts (:meth:`McpTools.prepare`): those turned
on in the chat's workspace or its project; their tools, minus those whose policy is off.
Before a call runs, unless its policy is allow or the person allowed it in this chat, the
turn's approver is asked (:data:`app.tools.Approver`); with none, the call is declined.
Annotations (``readOnlyHint``…) are passed on for the question, never trusted to skip it.

Results: text as text, images as images (stored as attachments, sent as images), embedded
resources as text, structured content as JSON text, errors as ``is_error``.  A result is the
server's words, never the person's (the rebuild's transcript leaves tool results out).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.store.files import IMAGE_TYPES, MAX_IMAGE_BYTES, image_type
from app.store.mcp import ALLOW, OFF, McpStore, ServerConfig
from app.tools import (
    ALLOW_CHAT,
    ALLOW_ONCE,
    ALWAYS_ALLOW,
    MAX_RESULT_BYTES,
    NETWORK,
    ApprovalRequest,
    Approver,
    ToolChat,
    ToolOutput,
)

if TYPE_CHECKING:
    from app.base.live import StorageThread
    from app.store.blobs import BlobStore
    from app.store.registry.registry import Registry
    from app.tools.mcp_client import McpServers, ServerTool

log = logging.getLogger(__name__)

_API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DESCRIPTION = 4_000  # characters of a tool's description sent to the model
DECLINED = "declined"
ALLOWED = "allowed"
FAILED = "failed"
ERROR = "error"


def api_name(server: str, tool: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """``server__tool`` as the API takes a tool's name (``^[a-zA-Z0-9_-]{1,64}$``): other
    characters become ``_``; a long one is cut and ends in a hash of the whole, as does one
    already *taken* (two names that differ only where they were made safe)."""
    def safe(text: str) -> str:
        return re.sub(r"[^a-zA-Z0-9_-]", "_", text) or "_"

    name = f"{safe(server)}__{safe(tool)}"
    if len(name) <= 64 and name not in taken:
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()
    for n in range(8, 41):
        tail = "_" + digest[:n]
        candidate = name[: 64 - len(tail)] + tail
        if candidate not in taken:
            return candidate
    raise ValueError("no free name")  # (40 hex digits never collide in one chat)


@dataclass(slots=True)
class _ChatTools:
    """What a chat's turn was prepared with: its servers and their tools, the policies."""

    servers: dict[str, ServerConfig] = field(default_factory=dict)
    tools: list[McpTool] = field(default_factory=list)
    policies: dict[tuple[str, str], str] = field(default_factory=dict)


class McpTools:
    """The tool source for MCP servers (given to the toolbox by the composition root)."""

    def __init__(self, *, store: McpStore, servers: McpServers, registry: Registry,
                 storage: StorageThread, blobs: BlobStore) -> None:
        self.store = store
        self.servers = servers
        self._registry = registry
        self._storage = storage
        self._blobs = blobs
        self._lock = threading.Lock()
        self._chats: dict[str, _ChatTools] = {}
        self._allowed_in_chat: set[tuple[str, str, str]] = set()  # (chat, server, tool)

    async def prepare(self, chat: ToolChat) -> list[str]:
        """Start the servers on in the chat's workspaces and list their tools (a server
        that cannot start is one sentence, and offers nothing this turn)."""
        ids = list(chat.chain_ids)
        names, policies = await self._storage.run(
            lambda: (self.store.on_in(ids), self.store.policies(ids)))
        prepared = _ChatTools(policies=policies)
        said: list[str] = []
        if names:
            from app.tools.mcp_client import ServerProblem

            configs = await self._storage.run(lambda: [self.store.get(n) for n in names])
            # The keychain may be slow or ask the person: never on the caller's loop.
            configs = await asyncio.to_thread(lambda: [self.store.with_secrets(c)
                                                       for c in configs])
            taken: set[str] = set()
            # Together: three servers that hang at start cost one start timeout, not three.
            answers = await asyncio.gather(*(self.servers.tools(c) for c in configs),
                                           return_exceptions=True)
            for config, listed in zip(configs, answers):
                if isinstance(listed, ServerProblem):
                    said.append(str(listed))
                    continue
                if isinstance(listed, BaseException):
                    raise listed
                prepared.servers[config.name] = config
                for tool in listed:
                    if policies.get((config.name, tool.name)) == OFF:
                        continue
                    name = api_name(config.name, tool.name, taken)
                    taken.add(name)
                    prepared.tools.append(McpTool(self, name, config.name, tool))
        with self._lock:
            self._chats[chat.chat_id] = prepared
        return said

    def tools(self, chat: ToolChat) -> Sequence[McpTool]:
        with self._lock:
            prepared = self._chats.get(chat.chat_id)
        return list(prepared.tools) if prepared else []

    def names(self, chat_id: str) -> dict[str, tuple[str, str]]:
        """API name → (server, tool) for what the chat was last offered (the command line's
        report of its calls)."""
        with self._lock:
            prepared = self._chats.get(chat_id)
        return {t.name: (t.server, t.tool.name) for t in prepared.tools} if prepared else {}

    # ----------------------------------------------------------------- a call

    async def run(self, tool: McpTool, chat: ToolChat, arguments: dict[str, Any], *,
                  limit: int, approver: Approver | None) -> ToolOutput:
        from app.tools.mcp_client import ServerProblem

        server, name = tool.server, tool.tool.name
        with self._lock:
            prepared = self._chats.get(chat.chat_id) or _ChatTools()
        policy = prepared.policies.get((server, name))
        key = (chat.chat_id, server, name)
        if policy != ALLOW and key not in self._allowed_in_chat:
            if approver is None:
                return _declined(server, name, "no one could be asked, and its policy is ask")
            answer = await approver(ApprovalRequest(server, name, dict(arguments), chat.chat_id,
                                                    chat.workspace_id,
                                                    dict(tool.tool.annotations)))
            if answer == ALLOW_CHAT:
                self._allowed_in_chat.add(key)
            elif answer == ALWAYS_ALLOW and chat.workspace_id is not None:
                ws_id = chat.workspace_id
                await self._storage.run(lambda: self.store.set_policy(server, name, ws_id,
                                                                      ALLOW))
                prepared.policies[(server, name)] = ALLOW
            elif answer != ALLOW_ONCE:  # deny, or anything that is not an allow
                return _declined(server, name, "you declined it")
        config = prepared.servers.get(server)
        if config is None:
            return ToolOutput([{"type": "text", "text": f"The MCP server {server} is not "
                                "available in this chat any more."}], True, outcome=FAILED,
                              called=(server, name))
        try:
            result = await self.servers.call(config, name, arguments)
        except ServerProblem as problem:
            return ToolOutput([{"type": "text", "text": str(problem)}], True, outcome=FAILED,
                              called=(server, name))
        # Decoding images and cutting a long answer: off the caller's loop.
        return await asyncio.to_thread(self._output, server, name, result, limit)

    def _output(self, server: str, tool: str, result: Any, limit: int) -> ToolOutput:
        parts, cut = result_content(result, limit=limit, put_blob=self._blobs.put)
        is_error = bool(getattr(result, "is_error", False))
        return ToolOutput(parts, is_error, cut, outcome=ERROR if is_error else ALLOWED,
                          called=(server, tool))


class McpTool:
    """One server's tool, as offered in one chat."""

    runs_on = NETWORK
    max_result_bytes = MAX_RESULT_BYTES

    def __init__(self, source: McpTools, name: str, server: str, tool: ServerTool) -> None:
        self._source = source
        self.name = name
        self.server = server
        self.tool = tool

    def definition(self, chat: ToolChat) -> dict[str, Any] | None:
        schema = self.tool.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            schema = {"type": "object", "properties": {}}
        description = f"[MCP server {self.server}] {self.tool.description}".strip()
        return {"name": self.name, "description": description[:MAX_DESCRIPTION],
                "input_schema": schema}

    async def arun(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int,
                   approver: Approver | None) -> ToolOutput:
        return await self._source.run(self, chat, tool_input, limit=limit, approver=approver)

    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str:
        head = call_line(self.server, self.tool.name, tool_input)
        if output.outcome == DECLINED:
            return f"{head} · declined"
        if output.is_error:
            first = next((b.get("text", "") for b in output.content if b.get("type") == "text"),
                         "")
            return f"{head} · {_short(first, 120)}"
        return head


def call_line(server: str, tool: str, arguments: Any) -> str:
    """A call as its quiet line shows it: server · tool · its first arguments, short."""
    items = list(arguments.items())[:4] if isinstance(arguments, dict) else []
    shown = ", ".join(f"{k}={_short(v)}" for k, v in items)
    return f"{server} · {tool}" + (f" · {shown}" if shown else "")


def stored_line(name: str, arguments: Any, content: Any, is_error: bool) -> str | None:
    """The quiet line of a stored MCP call (as :meth:`McpTool.summary` said it live), from
    its tool_use's name and input and its tool_result; None for Cairn's own tools."""
    split = split_api_name(name)
    if split is None:
        return None
    head = call_line(*split, arguments)
    first = ""
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = str(content[0].get("text", ""))
    if is_error and first.startswith("The person declined"):
        return f"{head} · declined"
    if is_error:
        return f"{head} · {_short(first, 120)}"
    return head


def split_api_name(name: str) -> tuple[str, str] | None:
    """(server, tool) as an MCP call's stored name ``server__tool`` reads (what was made
    valid for the API stays so: the chat shows it as sent); None for Cairn's own tools."""
    server, sep, tool = name.partition("__")
    return (server, tool) if sep and server and tool else None


def call_details(arguments: Any, content: Any, *, is_error: bool, limit: int = 20_000) -> str:
    """A call's full arguments and result as plain text, for its expanded line: at most
    *limit* characters of the result shown (a result can be megabytes), the rest said."""
    try:
        args = json.dumps(arguments, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        args = str(arguments)
    if len(args) > limit:
        args = args[:limit] + f"\n… (the first {limit:,} of {len(args):,} characters shown)"
    pieces: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text":
            pieces.append(str(part.get("text", "")))
        elif part.get("type") == "attachment":
            pieces.append(f"[{part.get('media_type', 'image')} {part.get('name', 'image')}, "
                          f"{part.get('size', 0):,} bytes, sent to Claude as an image]")
    result = "\n".join(pieces) or "(no content)"
    total = len(result)
    if total > limit:
        result = result[:limit] + f"\n… (the first {limit:,} of {total:,} characters shown)"
    return (f"Arguments:\n{args}\n\n" + ("Error:" if is_error else "Result:") + f"\n{result}")


def _declined(server: str, tool: str, why: str) -> ToolOutput:
    return ToolOutput([{"type": "text", "text": f"The person declined this call of {tool} on "
                        f"the MCP server {server} ({why}); do not call it again for this, "
                        "and go on without it."}], True, outcome=DECLINED, called=(server, tool))


def arguments_text(arguments: dict[str, Any], *, fold_at: int = 300) -> str:
    """A call's arguments as the person reads them before allowing it: one per line, a long
    value folded (its length said), the same in the window and on a terminal."""
    lines = []
    for key, value in arguments.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) > fold_at:
            text = text[:fold_at] + f"… ({len(text):,} characters)"
        lines.append(f"  {key}: {text}")
    return "\n".join(lines) or "  (no arguments)"


def hints_text(annotations: dict[str, Any]) -> str:
    """What the server says of a tool (read-only, destructive…): shown, never trusted."""
    return ", ".join(_HINTS.get(k, k) for k, v in annotations.items() if v is True)


_HINTS = {"read_only_hint": "read-only", "destructive_hint": "destructive",
          "idempotent_hint": "idempotent", "open_world_hint": "reaches outside"}


def _short(value: Any, at: int = 40) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= at else text[: at - 1] + "…"


def result_content(result: Any, *, limit: int, put_blob: Any
                   ) -> tuple[list[dict[str, Any]], bool]:
    """The SDK's ``CallToolResult`` as tool_result content, at most *limit* bytes (text cut,
    an image past what is left a note); (content, cut)."""
    parts: list[dict[str, Any]] = []
    left = limit
    cut = False

    def text(value: str) -> None:
        nonlocal left, cut
        data = value.encode("utf-8")
        if len(data) > left:
            keep = max(0, left - 200)
            value = data[:keep].decode("utf-8", "ignore") + (
                f"\n[Cut here: this reply's tool results reached Cairn's limit of "
                f"{MAX_RESULT_BYTES // 1_000_000} MB.]")
            cut = True
        left -= len(value.encode("utf-8"))
        parts.append({"type": "text", "text": value})

    def image(data64: str, media_type: str, label: str) -> None:
        nonlocal left, cut
        try:
            data = base64.b64decode(data64, validate=True)
        except (binascii.Error, ValueError):
            text(f"[{label}: not valid base64, left out]")
            return
        found = image_type(data[:32])
        if found is None or found not in IMAGE_TYPES:
            text(f"[{label} ({media_type}): not a PNG, JPEG, GIF or WebP image, left out]")
        elif len(data) > MAX_IMAGE_BYTES:
            text(f"[{label}: {len(data):,} bytes, more than the 5 MB an image may be]")
        elif len(data) > left:
            cut = True
            text(f"[{label}: more than this reply's tool results may still hold]")
        else:
            left -= len(data)
            parts.append({"type": "attachment", "name": label, "media_type": found,
                          "size": len(data), "sha256": put_blob(data)})

    for block in getattr(result, "content", None) or []:
        if left <= 0:
            cut = True
            break
        kind = getattr(block, "type", None)
        if kind == "text":
            text(str(block.text))
        elif kind == "image":
            image(str(block.data), str(block.mime_type), "image")
        elif kind == "resource":
            resource = block.resource
            uri = str(getattr(resource, "uri", ""))
            if getattr(resource, "text", None) is not None:
                text(f"<resource uri=\"{uri}\">\n{resource.text}\n</resource>")
            elif str(getattr(resource, "mime_type", "") or "").startswith("image/"):
                image(str(resource.blob), str(resource.mime_type), uri or "image")
            else:
                text(f"[resource {uri} ({getattr(resource, 'mime_type', None) or 'binary'}): "
                     "not text, left out]")
        elif kind == "resource_link":
            text(f"[resource link: {getattr(block, 'uri', '')}"
                 f"{' — ' + str(block.name) if getattr(block, 'name', None) else ''}]")
        elif kind == "audio":
            text("[audio: Cairn does not send audio to Claude, left out]")
        else:
            text(f"[content of kind {str(kind)[:40]}: left out]")
    structured = getattr(result, "structured_content", None)
    if structured is not None and left > 0:
        encoded = json.dumps(structured, ensure_ascii=False, indent=2)
        said = {p.get("text") for p in parts if p.get("type") == "text"}
        # A server that follows the spec sends the same JSON as text: said once.
        if not any(_same_json(s, structured) for s in said):
            text(encoded)
    if not parts:
        parts.append({"type": "text", "text": "(no content)"})
    return parts, cut


def _same_json(text: Any, value: Any) -> bool:
    if not isinstance(text, str):
        return False
    if isinstance(value, dict) and list(value) == ["result"] and text == str(value["result"]):
        return True  # a plain value the server wrapped as {"result": …} (the SDK's servers)
    try:
        return bool(json.loads(text) == value)
    except (ValueError, RecursionError):
        return False
