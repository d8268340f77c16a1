"""A turn: the person's message, Claude's streamed reply, and the tool loop in between.

The message is stored before anything is sent; the reply is stored when it ends — complete,
stopped (cancelled: the partial text is kept) or failed (one sentence says why).  While it
streams the chat carries a ``turn`` in the registry's live work, so it cannot be archived.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.catalog import Catalog, ModelInfo, estimate_tokens
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
    notice: str | None = None  # said once: the model is deprecated, and what succeeds it
    thinking: str = ""  # what the model thought on the way (shown folded, never the reply)


class ChatEngine:
    def __init__(self, *, registry: Registry, chats: ChatStore, knowledge: KnowledgeStore,
                 files: FileStore, settings: Settings, catalog: Catalog | None = None,
                 client_factory: Callable[[Settings], Any] | None = None) -> None:
        self.registry = registry
        self.catalog = catalog or Catalog(registry.db.path.parent)
        self.chats = chats
        self.knowledge = knowledge
        self.files = files
        self.settings = settings
        self._client_factory = client_factory
        self._client: tuple[tuple[str | None, str | None], Any] | None = None
        self._refreshing: asyncio.Future[None] | None = None  # a background models refresh
        self.turn_listeners: list[Callable[[TurnResult], None]] = []  # e.g. the rebuild's timer
        self.start_listeners: list[Callable[[str], None]] = []  # a chat is busy again

    def client(self) -> Any:
        """One client per key and base URL: its connection pool is reused across turns."""
        from app.model import make_client

        wanted = (self.settings.api_key(), self.settings.base_url())
        if self._client is None or self._client[0] != wanted:
            self._client = (wanted, (self._client_factory or make_client)(self.settings))
        return self._client[1]

    def _refreshed(self, task: asyncio.Future[None]) -> None:
        self._refreshing = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("the models list could not be refreshed: %r", task.exception())

    def server(self) -> str:
        """Which server the models list belongs to (a cache per server)."""
        return self.settings.base_url() or "https://api.anthropic.com"

    async def models_ready(self, model: str, purpose: str) -> str | None:
        """Refresh the models list when it is a day old, refuse a retired *model* with a
        sentence naming its successor, and return a once-only deprecation notice."""
        from app.model import ModelError

        try:
            client = self.client()
        except ModelError:
            return None  # no key yet: the turn itself says so
        server = self.server()
        if not self.catalog.has_list(server):
            await self.catalog.ensure_fresh(client, server)  # the first time: needed to decide
        elif self.catalog.stale(server) and self._refreshing is None:
            # A day-old list still decides this turn; the fresh one arrives in the background.
            self._refreshing = asyncio.ensure_future(self.catalog.ensure_fresh(client, server))
            self._refreshing.add_done_callback(self._refreshed)
        self.catalog.check_usable(model, purpose)
        return self.catalog.deprecation_notice(model, purpose)

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
                   on_text: Callable[[str], None] | None = None,
                   on_thinking: Callable[[str], None] | None = None) -> TurnResult:
        """Send *text* in a chat and stream the reply; never raises for a model failure."""
        chat = self.registry.get_chat(chat_id, verb="send to")
        if chat.archived:
            raise Refused(f"cannot send to session '{chat_id}': the session is archived")
        if not text.strip() and not attachments:
            raise Refused("cannot send an empty message")
        model = self.settings.get("model.chat")
        notice = await self.models_ready(model, "chat")  # a retired model: nothing stored
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

        task = asyncio.current_task()
        state = _Progress()

        def stop() -> None:  # the Stop button, stop-and-archive: once, however often pressed
            if task is not None and not state.stop_requested:
                state.stop_requested = True
                task.cancel()

        work = self.registry.begin_work(chat_id, TURN, stop=stop)
        try:
            await self._run(chat, text, model, state, on_text, on_thinking)
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
            import anthropic

            from app.model import explain

            if isinstance(failure, anthropic.NotFoundError):
                # The model may have retired since the list was fetched: ask again, then say
                # which model succeeds it.
                try:
                    await self.catalog.ensure_fresh(self.client(), self.server(), force=True)
                except Exception:
                    log.info("the models list could not be refreshed after a 404")
            error = str(explain(failure, model=model, catalog=self.catalog))
            log.warning("turn in %s failed: %s", chat_id, type(failure).__name__)
            status = FAILED
        finally:
            self.registry.end_work(work)
        if status != COMPLETE:
            self._keep_partial(chat_id, model, state, status, error)
        from app.prices import total as total_cost

        total = state.usage + state.round_usage
        costs = state.costs + ([_cost(model, state.round_usage)] if state.round_usage != Usage()
                               else [])
        result = TurnResult(chat_id, state.text + state.partial, status, error, model, total,
                            total_cost(costs), notice, state.thinking + state.partial_thinking)
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
        if state.partial_thinking:  # unsigned: kept to show, never sent back
            blocks.insert(0, {"type": "thinking", "thinking": state.partial_thinking,
                              "signature": ""})
        self.chats.append(chat_id, "assistant", blocks, status=status, error=error, model=model,
                          usage=state.round_usage, cost_usd=_cost(model, state.round_usage))

    async def _run(self, chat: Chat, message: str, model: str, state: _Progress,
                   on_text: Callable[[str], None] | None,
                   on_thinking: Callable[[str], None] | None = None) -> None:
        from app.model import ModelError, request_options, usage_of

        client = self.client()
        info = self.catalog.info(model)
        chain = self.chain(chat)
        chain_ids = [layer.workspace.id for layer in chain]
        files = self.files.of_workspaces(chain_ids)
        tools = [READ_TOOL] if files else []  # nothing to read: no tool to offer
        system = place_breakpoints(self.system(chat, message, chain=chain, files=files),
                                   tools=tools, info=info)
        options = request_options(info, effort=self.settings.get("model.chat_effort"),
                                  max_tokens=MAX_TOKENS)
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            request: dict[str, Any] = {
                "model": model, "system": system, **options,
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
                    elif event.type == "thinking":
                        state.partial_thinking += event.thinking
                        if on_thinking is not None:
                            on_thinking(event.thinking)
                final = await stream.get_final_message()
            round_usage = usage_of(final.usage)
            # Stored exactly as received: thinking blocks keep their text and signature.
            blocks = [block.model_dump(exclude_none=True) for block in final.content]
            stop_reason = final.stop_reason
            if stop_reason in ("refusal", "model_context_window_exceeded"):
                state.round_usage = round_usage
                raise ModelError(_STOPPED_BY_MODEL[stop_reason], kind=stop_reason)
            self.chats.append(chat.id, "assistant", blocks, model=model, usage=round_usage,
                              cost_usd=_cost(model, round_usage))
            state.finish_round(round_usage, _cost(model, round_usage))
            if stop_reason == "pause_turn" and round_number < MAX_TOOL_ROUNDS:
                continue  # the server paused a long turn: sending it back lets it go on
            calls = [b for b in blocks if b.get("type") == "tool_use"]
            if stop_reason != "tool_use" or not calls or round_number == MAX_TOOL_ROUNDS:
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


_STOPPED_BY_MODEL = {
    "refusal": "Claude declined to answer this message. Your message is kept; you can "
               "rephrase it and send it again.",
    "model_context_window_exceeded": "The reply stopped early because this conversation now "
               "fills the model's context window; what arrived is kept. Start a new chat (the "
               "workspace knowledge carries over).",
}


def place_breakpoints(system: list[dict[str, Any]], *, tools: list[dict[str, Any]],
                      info: ModelInfo | None) -> list[dict[str, Any]]:
    """Keep the system prompt's cache breakpoint only where the prefix can be cached.

    The prefix up to the last system block (tools, then system) is cached when it reaches the
    model's minimum (1,024 tokens on Sonnet, 512 on Haiku 5.5, 4,096 on Haiku 4.5); below it a
    breakpoint is wasted, so the conversation's own breakpoint is the only one.  A model
    without data (a local server) keeps it: it costs nothing there.
    """
    if info is None or not system:
        return system
    if estimate_tokens([*tools, *system]) >= info.cache_minimum:
        return system
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in system]


@dataclass(slots=True)
class _Progress:
    """What a turn has produced so far, across tool rounds."""

    text: str = ""  # text of finished rounds
    partial: str = ""  # text of the round in progress
    thinking: str = ""  # thinking of finished rounds
    partial_thinking: str = ""  # thinking of the round in progress
    usage: Usage = Usage()  # usage of finished rounds
    round_usage: Usage = Usage()  # usage of the round in progress, as last reported
    costs: list[float | None] = field(default_factory=list)  # per finished round
    stop_requested: bool = False  # the person pressed Stop (not a cancel from elsewhere)

    def finish_round(self, usage: Usage, cost: float | None) -> None:
        self.text += self.partial
        self.partial = ""
        self.thinking += self.partial_thinking
        self.partial_thinking = ""
        self.usage = self.usage + usage
        self.costs.append(cost)
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

    Thinking blocks go back exactly as received (text and signature) in the tool loop that is
    still running, where the API requires them; earlier turns' thinking is left out (the API
    ignores it, and it is bound to the model that wrote it), and so is any thinking cut off
    before its signature arrived.
    """
    loop_start = 0  # where the running exchange began: the person's last message
    for position, message in enumerate(messages):
        if message.role == "user" and any(b.get("type") != "tool_result" for b in message.content):
            loop_start = position
    turns: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        blocks: list[dict[str, Any]] = []
        for block in message.content:
            kind = block.get("type")
            if kind == "text" and not block.get("text", "").strip():
                continue
            if kind in ("thinking", "redacted_thinking"):
                signed = kind == "redacted_thinking" or bool(block.get("signature"))
                if position > loop_start and message.status == COMPLETE and signed:
                    keys = ("type", "thinking", "signature") if kind == "thinking" else ("type", "data")
                    blocks.append({k: block[k] for k in keys if k in block})
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
