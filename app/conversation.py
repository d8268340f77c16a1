"""A turn: the person's message, Claude's streamed reply, and the tool loop in between.

The message is stored before anything is sent; the reply is stored when it ends — complete,
stopped (cancelled: the partial text is kept) or failed (one sentence says why).  While it
streams the chat carries a ``turn`` in the registry's live work, so it cannot be archived.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.chats import COMPLETE, FAILED, STOPPED, ChatStore, Message, Usage
from app.context import Layer, system_blocks
from app.errors import Refused
from app.files import READ_TOOL, FileStore
from app.knowledge.store import PERSONAL, KnowledgeStore
from app.live import TURN
from app.records import Chat
from app.registry import DEFAULT_CHAT_TITLE, Registry
from app.settings import Settings

log = logging.getLogger(__name__)

MAX_TOKENS = 16_000
MAX_TOOL_ROUNDS = 8  # a reply may read files this many times before it must answer
TITLE_LENGTH = 60


@dataclass(frozen=True, slots=True)
class TurnResult:
    chat_id: str
    text: str  # the reply's text, all rounds joined
    status: str  # complete | stopped | failed
    error: str | None
    model: str
    usage: Usage
    cost_usd: float | None


class ChatEngine:
    def __init__(self, *, registry: Registry, chats: ChatStore, knowledge: KnowledgeStore,
                 files: FileStore, settings: Settings,
                 client_factory: Callable[[Settings], Any] | None = None) -> None:
        self.registry = registry
        self.chats = chats
        self.knowledge = knowledge
        self.files = files
        self.settings = settings
        self._client_factory = client_factory
        self._client: tuple[tuple[str | None, str | None], Any] | None = None
        self.turn_listeners: list[Callable[[TurnResult], None]] = []  # e.g. the rebuild's timer
        self.start_listeners: list[Callable[[str], None]] = []  # a chat is busy again

    def client(self) -> Any:
        """One client per key and base URL: its connection pool is reused across turns."""
        from app.model import make_client

        wanted = (self.settings.api_key(), self.settings.base_url())
        if self._client is None or self._client[0] != wanted:
            self._client = (wanted, (self._client_factory or make_client)(self.settings))
        return self._client[1]

    # ----------------------------------------------------------------- the context

    def chain(self, chat: Chat) -> list[Layer]:
        """The chat's workspaces from the project down to its own, with their knowledge."""
        layers: list[Layer] = []
        ws_id = chat.workspace_id
        while ws_id is not None:
            ws = self.registry.workspace(ws_id)
            if ws is None:
                break
            layers.append(Layer(ws, self.knowledge.get(ws.id).text))
            ws_id = self.registry.parent_of(ws.id)
        layers.reverse()
        return layers

    def system(self, chat: Chat, message: str, *, chain: list[Layer] | None = None,
               files: list[Any] | None = None) -> list[dict[str, Any]]:
        """The system prompt the next turn in *chat* sends (chain and files if already read)."""
        chain = self.chain(chat) if chain is None else chain
        memory = (self.knowledge.get(PERSONAL).text
                  if self.settings.get("memory.enabled") else None)
        if files is None:
            files = self.files.of_workspaces([layer.workspace.id for layer in chain])
        return system_blocks(chain=chain, files=files, personal_memory=memory, message=message)

    # ----------------------------------------------------------------- a turn

    async def send(self, chat_id: str, text: str, *, attachments: Sequence[Path] = (),
                   on_text: Callable[[str], None] | None = None) -> TurnResult:
        """Send *text* in a chat and stream the reply; never raises for a model failure."""
        chat = self.registry.get_chat(chat_id, verb="send to")
        if chat.archived:
            raise Refused(f"cannot send to session '{chat_id}': the session is archived")
        if not text.strip() and not attachments:
            raise Refused("cannot send an empty message")
        refs = [self.files.attach(Path(p)) for p in attachments]  # refused before storing
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
        self.chats.append(chat_id, "user", content + refs)
        if chat.title == DEFAULT_CHAT_TITLE and text.strip():
            self.registry.rename_chat(chat_id, _title_from(text))

        for started in list(self.start_listeners):
            try:
                started(chat_id)
            except Exception:
                log.exception("a turn-start listener failed")

        model = self.settings.get("model.chat")
        task = asyncio.current_task()
        state = _Progress()

        def stop() -> None:  # the Stop button, stop-and-archive: once, however often pressed
            if task is not None and not state.stop_requested:
                state.stop_requested = True
                task.cancel()

        work = self.registry.begin_work(chat_id, TURN, stop=stop)
        try:
            await self._run(chat, text, model, state, on_text)
            status, error = COMPLETE, None
        except asyncio.CancelledError:
            # Our own stop is handled here and the caller gets a result; a cancel from
            # outside as well (a timeout, shutdown) goes on to whoever asked for it.
            outside = not state.stop_requested or (task is not None and task.uncancel() > 0)
            if outside:
                self.registry.end_work(work)
                self._keep_partial(chat_id, model, state, STOPPED, None)
                raise
            status, error = STOPPED, None
        except Exception as failure:
            from app.model import explain

            error = str(explain(failure, model=model))
            log.warning("turn in %s failed: %s", chat_id, type(failure).__name__)
            status = FAILED
        finally:
            self.registry.end_work(work)
        if status != COMPLETE:
            self._keep_partial(chat_id, model, state, status, error)
        total = state.usage + state.round_usage
        result = TurnResult(chat_id, state.text + state.partial, status, error, model, total,
                            _cost(model, total))
        for listener in list(self.turn_listeners):
            try:
                listener(result)
            except Exception:  # the turn is stored and done; a listener must not undo that
                log.exception("a turn listener failed")
        return result

    def _keep_partial(self, chat_id: str, model: str, state: _Progress, status: str,
                      error: str | None) -> None:
        """What streamed before a stop or a failure is kept, marked as such."""
        blocks = [{"type": "text", "text": state.partial}] if state.partial else []
        self.chats.append(chat_id, "assistant", blocks, status=status, error=error, model=model,
                          usage=state.round_usage, cost_usd=_cost(model, state.round_usage))

    async def _run(self, chat: Chat, message: str, model: str, state: _Progress,
                   on_text: Callable[[str], None] | None) -> None:
        from app.model import usage_of

        client = self.client()
        chain = self.chain(chat)
        chain_ids = [layer.workspace.id for layer in chain]
        files = self.files.of_workspaces(chain_ids)
        system = self.system(chat, message, chain=chain, files=files)
        tools = [READ_TOOL] if files else []  # nothing to read: no tool to offer
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            request: dict[str, Any] = {
                "model": model, "max_tokens": MAX_TOKENS, "system": system,
                "messages": history(self.chats.messages(chat.id), self.files.expand),
            }
            if tools:
                request["tools"] = tools
                if round_number == MAX_TOOL_ROUNDS:  # the last round must answer in words
                    request["tool_choice"] = {"type": "none"}
            async with client.messages.stream(**request) as stream:
                async for event in stream:
                    if event.type == "message_start":
                        state.round_usage = usage_of(event.message.usage)
                    elif event.type == "text":
                        state.partial += event.text
                        if on_text is not None:
                            on_text(event.text)
                final = await stream.get_final_message()
            round_usage = usage_of(final.usage)
            blocks = [block.model_dump(exclude_none=True) for block in final.content]
            self.chats.append(chat.id, "assistant", blocks, model=model, usage=round_usage,
                              cost_usd=_cost(model, round_usage))
            state.finish_round(round_usage)
            calls = [b for b in blocks if b.get("type") == "tool_use"]
            if final.stop_reason != "tool_use" or not calls or round_number == MAX_TOOL_ROUNDS:
                return  # (a server that ignored tool_choice none gets no more tool rounds)
            results = []
            for call in calls:
                if call.get("name") == READ_TOOL["name"]:
                    output, is_error = self.files.read_for_model(chain_ids, call.get("input") or {})
                else:
                    output, is_error = [{"type": "text", "text": f"No tool named {call.get('name')}."}], True
                results.append({"type": "tool_result", "tool_use_id": call["id"],
                                "content": output, **({"is_error": True} if is_error else {})})
            self.chats.append(chat.id, "user", results)


@dataclass(slots=True)
class _Progress:
    """What a turn has produced so far, across tool rounds."""

    text: str = ""  # text of finished rounds
    partial: str = ""  # text of the round in progress
    usage: Usage = Usage()  # usage of finished rounds
    round_usage: Usage = Usage()  # usage of the round in progress, as last reported
    stop_requested: bool = False  # the person pressed Stop (not a cancel from elsewhere)

    def finish_round(self, usage: Usage) -> None:
        self.text += self.partial
        self.partial = ""
        self.usage = self.usage + usage
        self.round_usage = Usage()


def _cost(model: str, usage: Usage) -> float | None:
    from app.model import cost

    return cost(model, usage)


def _title_from(text: str) -> str:
    line = " ".join(text.strip().split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


def _expanded(reference: dict[str, Any], expand: Callable[[dict[str, Any]], dict[str, Any]]
              ) -> dict[str, Any]:
    """A stored file as the API takes it; one that is gone from storage becomes a note."""
    try:
        return expand(reference)
    except OSError:
        log.warning("attachment %s is missing from storage", reference.get("sha256"))
        return {"type": "text",
                "text": f"[The file '{reference.get('name', 'attachment')}' is no longer available.]"}


def history(messages: Sequence[Message], expand: Callable[[dict[str, Any]], dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """The stored conversation as the API takes it, with a cache breakpoint at its end.

    Failed turns without text are left out, empty text blocks dropped, attachments expanded,
    a tool call whose result never arrived (a stop mid-loop) removed, and consecutive turns of
    one role merged, so every request is well formed.
    """
    turns: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        blocks: list[dict[str, Any]] = []
        for block in message.content:
            kind = block.get("type")
            if kind == "text" and not block.get("text", "").strip():
                continue
            if kind == "attachment":
                blocks.append(_expanded(block, expand))
            elif kind == "tool_use":
                following = messages[position + 1] if position + 1 < len(messages) else None
                answered = following is not None and any(
                    b.get("type") == "tool_result" and b.get("tool_use_id") == block.get("id")
                    for b in following.content)
                if answered:
                    blocks.append({k: block[k] for k in ("type", "id", "name", "input")})
            elif kind == "tool_result":
                inner = [_expanded(b, expand) if b.get("type") == "attachment" else b
                         for b in block.get("content", [])]
                blocks.append({**block, "content": inner})
            elif kind in ("text", "image", "document"):
                blocks.append({k: v for k, v in block.items() if k != "citations" or v})
        if not blocks:
            continue
        if turns and turns[-1]["role"] == message.role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": message.role, "content": blocks})
    if turns:
        last = dict(turns[-1]["content"][-1])
        last["cache_control"] = {"type": "ephemeral"}
        turns[-1]["content"][-1] = last
    return turns
