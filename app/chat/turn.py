"""A turn as a handle: a reply being written in one chat, its events, its Stop, its result.

``ChatEngine.start_turn`` (and ``retry``, ``edit_and_resend``) refuses with one sentence or
stores the person's message, then returns a :class:`Turn` whose task has not run yet:
subscribe before your next ``await`` and no event is missed (``ChatEngine.subscribe`` hears
every turn).  Events are frozen dataclasses, delivered on the event-loop thread, in order:

    KnowledgePulling                          a chat in a workspace: from Send to the first token
    ThinkingDelta… TextDelta…                 a round streams
    RoundStored                               the round is stored: its message id, usage, cost
    WebActivity                               a web search or page read, as the API runs it
    ToolCall, ToolResult  (per call)          then the next round streams, and so on
    TurnFinished | TurnStopped | TurnFailed   exactly one, last

Stale events are dropped by generation, as calibre's LLM panel drops by call number: a chat's
generation moves on when a turn starts and when one is stopped, every event carries its
turn's generation, and an event whose generation is no longer the chat's is never delivered.
So after ``cancel()`` no delta of that turn reaches anyone, even one already on its way when a
subscriber or another thread pressed Stop.  The turn's last event (a :class:`TurnEnded`) is
always delivered, once.  A consumer that queues events (the window's bridge) asks
``turn.is_current(event)`` again when it takes one off its queue.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from app.base.ids import new_id
from app.base.live import Stopped, Stopper, Work
from app.chat.web import web_line
from app.llm.prices import cost as _cost
from app.llm.prices import estimate_output
from app.llm.prices import total as total_cost
from app.llm.requests import Round, stream_round
from app.store.messages import COMPLETE, FAILED, STOPPED, Message, Usage

if TYPE_CHECKING:
    from app.base.live import NetworkThread, StorageThread
    from app.llm.catalog import Catalog
    from app.llm.client import Client
    from app.records import Chat
    from app.store.messages import ChatStore
    from app.tools import Approver, Offered, Toolbox, ToolChat

log = logging.getLogger(__name__)

MAX_TOKENS = 16_000
MAX_TOOL_ROUNDS = 8  # a reply may read files this many times before it must answer
# Every turn is bounded (DESIGN §11): past a bound it ends with what it has, and says which.
MAX_CALLS_PER_ROUND = 10
MAX_CALLS_PER_TURN = 25
MAX_RESULT_BYTES_PER_TURN = 4_000_000
BOUND_REACHED = {
    "round": f"Claude asked for more than {MAX_CALLS_PER_ROUND} tool calls at once, so Cairn "
             f"ran the first {MAX_CALLS_PER_ROUND} and ended the reply here; ask again in "
             "smaller steps.",
    "turn": f"Claude reached the limit of {MAX_CALLS_PER_TURN} tool calls in one reply, so "
            "Cairn ended the reply here; ask again in smaller steps.",
    "rounds": f"Claude was still asking for tools after {MAX_TOOL_ROUNDS} rounds, so Cairn "
              "ended the reply here; ask again in smaller steps.",
    "bytes": f"Claude's tool results reached Cairn's limit of "
             f"{MAX_RESULT_BYTES_PER_TURN // 1_000_000} MB for one reply, so Cairn ended the "
             "reply here; ask about a smaller part.",
}

_STOPPED_BY_MODEL = {
    "refusal": "Claude declined to answer this message. Your message is kept; you can "
               "rephrase it and send it again.",
    "model_context_window_exceeded": "The reply stopped early because this conversation now "
               "fills the model's context window; what arrived is kept. Start a new chat (the "
               "workspace knowledge carries over).",
}


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
    message_ids: tuple[int, ...] = ()  # what the turn stored, oldest first
    knowledge_waiting: bool = False  # a qualifying exchange waits for the rebuild
    # Each tool call: its name, outcome (allowed, declined, failed, error; "" for Cairn's
    # own tools), and for an MCP tool its server and tool.
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_notices: tuple[str, ...] = ()  # what could not be readied (an MCP server's start)


# ================================================================= events


@dataclass(frozen=True, slots=True)
class TurnEvent:
    """What every turn event is; ``generation`` is its turn's (see the module's docstring)."""

    turn_id: str
    _: KW_ONLY
    generation: int


@dataclass(frozen=True, slots=True)
class KnowledgePulling(TurnEvent):
    """The turn reads the project's knowledge; shown as "Pulling <project> knowledge…" until
    the first token.  Only for a chat in a workspace: an Ungrouped chat has no project."""

    chat_id: str
    project_title: str


@dataclass(frozen=True, slots=True)
class TextDelta(TurnEvent):
    text: str


@dataclass(frozen=True, slots=True)
class ThinkingDelta(TurnEvent):
    text: str


@dataclass(frozen=True, slots=True)
class RetryWaiting(TurnEvent):
    """The request waits before it is sent again (a 429 or 529, a dropped connection):
    *seconds* from now, because of *why* (``rate-limited``, ``overloaded``, ``server``,
    ``network``).  Shown as a countdown; Stop ends the wait with the turn."""

    seconds: float
    why: str
    server: str = "Anthropic"  # who asked for the wait: "Anthropic", or "the server at HOST"

    def sentence(self, left: float | None = None) -> str:
        """"Anthropic is rate-limiting this key; trying again in 20 seconds." — *left*
        seconds from now (a countdown), else the whole wait."""
        from app.llm.client import seconds

        wait = max(0, round(self.seconds if left is None else left))
        what = _WAITING_FOR.get(self.why, _WAITING_FOR["network"]).format(self.server)
        return f"{what[:1].upper()}{what[1:]}; trying again in {seconds(wait)}."


_WAITING_FOR = {"rate-limited": "{} is rate-limiting this key",
                "overloaded": "{} is overloaded",
                "server": "{} had a problem answering",
                "network": "{} could not be reached"}


@dataclass(frozen=True, slots=True)
class ToolCall(TurnEvent):
    """The model asked for a tool; it runs now (after its round was stored)."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult(TurnEvent):
    """What the tool answered, in one line (``notes.md — page 1 of 3``, or the error)."""

    name: str
    summary: str
    is_error: bool
    outcome: str = ""  # allowed, declined, failed, error (a call that was asked for)
    content: tuple[dict[str, Any], ...] = ()  # the result as stored (an MCP call's unfolds)


@dataclass(frozen=True, slots=True)
class ToolNotice(TurnEvent):
    """A tool could not be readied for this turn (an MCP server did not start): one
    sentence; the turn goes on without it."""

    sentence: str


@dataclass(frozen=True, slots=True)
class WebActivity(TurnEvent):
    """Claude searched the web or read a page, or one failed (the API ran it, mid-stream):
    *line* is what the chat shows ("Searched the web: …"), *block* the block as received."""

    line: str
    block: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RoundStored(TurnEvent):
    """A reply message is stored: a finished round, or what arrived before a failure."""

    message_id: int
    usage: Usage
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class TurnEnded(TurnEvent):
    """The turn's last event; never stale."""

    result: TurnResult


@dataclass(frozen=True, slots=True)
class TurnFinished(TurnEnded):
    pass


@dataclass(frozen=True, slots=True)
class TurnStopped(TurnEnded):
    """Stop was pressed (or the chat was stopped and archived): the partial reply is kept,
    marked stopped."""


@dataclass(frozen=True, slots=True)
class TurnFailed(TurnEnded):
    sentence: str  # what went wrong, in a sentence a person understands


TurnListener = Callable[[TurnEvent], None]
EngineListener = Callable[["Turn", TurnEvent], None]


# ================================================================= the handle


class Subscription:
    """What ``subscribe`` returns; ``close()`` stops delivery (also during one)."""

    def __init__(self, listeners: list[Callable[..., None]], callback: Callable[..., None]) -> None:
        self._listeners = listeners
        self._callback = callback
        listeners.append(callback)

    def close(self) -> None:
        if self._callback in self._listeners:
            self._listeners.remove(self._callback)


class Generations:
    """Each chat's current generation; one counter for all, so a generation is never reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = itertools.count(1)
        self._current: dict[str, int] = {}

    def advance(self, chat_id: str) -> int:
        with self._lock:
            generation = self._current[chat_id] = next(self._count)
            return generation

    def current(self, chat_id: str) -> int:
        return self._current.get(chat_id, 0)


class Turn:
    """A reply being written in one chat.  Made by the chat engine; see the module's docstring.

    ``id`` is unique, ``generation`` is the chat's generation when the turn started.
    """

    def __init__(self, *, chat_id: str, generations: Generations,
                 engine_listeners: list[EngineListener]) -> None:
        self.id = new_id("tu")
        self.chat_id = chat_id
        self._generations = generations
        self.generation = generations.advance(chat_id)
        self.stopper = Stopper(asyncio.get_running_loop())
        self._listeners: list[TurnListener] = []
        self._engine_listeners = engine_listeners
        self._task: asyncio.Task[TurnResult] | None = None
        self._ended = threading.Event()

    # ----------------------------------------------------------------- public

    def subscribe(self, callback: TurnListener) -> Subscription:
        """Hear this turn's events; call before your next ``await`` to miss none."""
        return Subscription(self._listeners, callback)

    def cancel(self) -> None:
        """The Stop button: the stream stops, what arrived is kept as a stopped reply, and no
        event of this turn but its ``TurnStopped`` is delivered from now on.  Safe from any
        thread, any number of times; nothing happens once the turn has ended."""
        if self._ended.is_set() or self.stopper.stopped:
            return
        self._generations.advance(self.chat_id)  # first: whatever is on its way is stale now
        self.stopper.stop()

    async def result(self) -> TurnResult:
        """Wait for the end; cancelling the waiter does not stop the turn (``cancel`` does)."""
        assert self._task is not None, "the turn has not started"
        return await asyncio.shield(self._task)

    @property
    def done(self) -> bool:
        return self._ended.is_set()

    def is_current(self, event: TurnEvent) -> bool:
        """False for a stale event: its generation is no longer the chat's."""
        return (isinstance(event, TurnEnded)
                or event.generation == self._generations.current(self.chat_id))

    # ----------------------------------------------------------------- for the engine

    def start(self, task: asyncio.Task[TurnResult]) -> None:
        self._task = task

    def publish(self, event: TurnEvent) -> None:
        """Deliver *event* to this turn's subscribers, then the engine's; a listener that
        raises is logged and never breaks the turn."""
        for callback in list(self._listeners):
            if not self.is_current(event):  # Stop pressed meanwhile, even by a subscriber
                return
            if callback not in self._listeners:  # closed meanwhile
                continue
            try:
                callback(event)
            except Exception:
                log.exception("a turn subscriber failed")
        for listener in list(self._engine_listeners):
            if not self.is_current(event):
                return
            if listener not in self._engine_listeners:
                continue
            try:
                listener(self, event)
            except Exception:
                log.exception("a turn listener failed")

    def end(self, result: TurnResult) -> None:
        """Mark the turn ended and deliver its last event."""
        self._ended.set()
        if result.status == COMPLETE:
            last: TurnEnded = TurnFinished(self.id, result, generation=self.generation)
        elif result.status == STOPPED:
            last = TurnStopped(self.id, result, generation=self.generation)
        else:
            last = TurnFailed(self.id, result, result.error or "", generation=self.generation)
        self.publish(last)


# ================================================================= running a turn


@dataclass(frozen=True, slots=True)
class TurnContext:
    """What every round of a turn sends besides the conversation: read once per turn."""

    model: str
    system: list[dict[str, Any]]
    tools: list[dict[str, Any]]  # every definition sent: client tools, then server tools
    options: dict[str, Any]
    chain_ids: list[str]  # the workspaces whose files the model may read
    offered: Offered  # the client tools the toolbox runs for this chat
    chat: ToolChat

    def request(self, messages: list[dict[str, Any]], *, last_round: bool) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "system": self.system, **self.options,
                                   "messages": messages}
        if self.tools:
            request["tools"] = self.tools
            if last_round:  # the last round must answer in words
                request["tool_choice"] = {"type": "none"}
        return request


def paragraph_break(before: str) -> str:
    """What goes between earlier text and a new round's: a blank line, so that "Let me read
    your notes." and "Your notes say…" never read as one sentence (issue 39)."""
    if not before or before.endswith("\n\n"):
        return ""
    return "\n" if before.endswith("\n") else "\n\n"


def paragraphs(before: str, after: str) -> str:
    return before + paragraph_break(before) + after if after else before


@dataclass(slots=True)
class _Progress:
    """What a turn has produced so far, across tool rounds."""

    text: str = ""  # text of finished rounds
    partial: str = ""  # text of the round in progress
    thinking: str = ""  # thinking of finished rounds
    partial_thinking: str = ""  # thinking of the round in progress
    # The round in progress's server tool blocks (a search, its results), whole and verbatim,
    # each with where the round's text stood when it arrived: a stop keeps them in place.
    partial_blocks: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    calls: int = 0  # tool calls run in this turn
    result_bytes: int = 0  # what their results weigh
    usage: Usage = Usage()  # usage of finished rounds
    round_usage: Usage = Usage()  # usage of the round in progress, as last reported
    counted: bool = False  # the server counted the round's output (a message_delta came)
    costs: list[float | None] = field(default_factory=list)  # per finished round
    stored: list[int] = field(default_factory=list)  # ids of the messages the turn stored
    # The end of the turn's own path (the person's message, then each message stored): what
    # a round sends and what the next message is stored under, whatever branch the chat
    # shows meanwhile.
    tip: int | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_notices: list[str] = field(default_factory=list)
    ended: bool = False  # the stopped or failed reply is stored

    paused: bool = False  # the last round paused (pause_turn): the next one goes on with it

    def round_break(self) -> str:
        """What goes before this round's text: nothing after a paused round (the same
        answer, going on), else a paragraph break after earlier text."""
        return "" if self.paused else paragraph_break(self.text)

    @property
    def whole_text(self) -> str:
        """The reply's text so far: each round's text its own paragraph."""
        return self.text + self.round_break() + self.partial if self.partial else self.text

    def finish_round(self, usage: Usage, cost: float | None) -> None:
        self.text = self.whole_text
        self.partial = ""
        self.thinking += self.partial_thinking
        self.partial_thinking = ""
        self.partial_blocks = []
        self.usage = self.usage + usage
        self.costs.append(cost)
        self.round_usage = Usage()
        self.counted = False

    def partial_usage(self) -> Usage:
        """The round in progress's usage as it is kept: the server's count when it gave one,
        else the output estimated from what streamed (the stream opens with a placeholder
        of 1 output token), marked as an estimate."""
        usage = self.round_usage
        if self.counted or usage == Usage():
            return usage
        return replace(usage, output=estimate_output(self.partial_thinking + self.partial),
                       estimated=True)



class TurnHost(Protocol):
    """What a running turn needs of the chat engine that started it (``ChatEngine`` is one):
    its threads, stores and catalog, and the calls that read a turn's inputs or say it ended."""

    storage: StorageThread
    network: NetworkThread
    catalog: Catalog
    chats: ChatStore
    toolbox: Toolbox
    knowledge_waiting: Callable[[str], bool] | None

    async def client_async(self) -> Client: ...
    def server(self) -> str: ...
    def tool_chat(self, chat: Chat) -> ToolChat: ...
    def context_for(self, chat: Chat, message: str, model: str, *, web: bool | None = None
                    ) -> TurnContext: ...
    def conversation(self, chat_id: str, leaf: int | None = None) -> list[dict[str, Any]]: ...
    def project_title(self, chat: Chat) -> str | None: ...
    def turn_over(self, turn: Turn, work: Work) -> None: ...
    def turn_ended(self, result: TurnResult) -> None: ...


class TurnRun:
    """The task behind a :class:`Turn`: rounds of streaming, storing and tool calls.

    Storage work (the context, the conversation, every message, file reads for the tool) runs
    on the engine's storage thread, the model call (building and encoding the request,
    streaming, parsing) on its network thread; the event loop only takes what arrives and
    publishes it, so a long chat never stalls it.  What belongs to a write
    (``_Progress`` after a stored round) changes inside the same call on that thread, so a
    cancel arriving mid-write never leaves the two apart.
    """

    def __init__(self, engine: TurnHost, turn: Turn, work: Work, *, chat: Chat, message: str,
                 model: str, notice: str | None, stored: list[int], tip: int | None = None,
                 web: bool | None = None, approver: Approver | None = None) -> None:
        self.engine = engine
        self.approver = approver  # asked before a call its policy does not allow
        self.turn = turn
        self.work = work
        self.chat = chat
        self.message = message
        self.model = model
        self.notice = notice
        self.state = _Progress(stored=list(stored), tip=tip)
        self.web = web  # web search for this message: on, off, or as the workspace says

    async def run(self) -> TurnResult:
        status, error, waiting = STOPPED, None, False  # (what a cancel mid-stream ends with)
        try:
            status, error = await self._outcome()
            if status != COMPLETE:
                error = await self._keep_partial(status, error)
            waiting = await self._knowledge_waiting()
        except asyncio.CancelledError:
            # Not Stop: the task itself was cancelled (the app is closing).  What arrived is
            # kept, the turn ends, and the cancel goes on.
            try:
                if status != COMPLETE:
                    await asyncio.shield(self._keep_partial(status, error))
            finally:
                self._end(status, error)
            raise
        except BaseException:
            self.engine.turn_over(self.turn, self.work)
            raise
        return self._end(status, error, waiting)

    async def _outcome(self) -> tuple[str, str | None]:
        try:
            project = self.engine.project_title(self.chat)
            if project is not None:
                self.turn.publish(KnowledgePulling(self.turn.id, self.chat.id, project,
                                                   generation=self.turn.generation))
            await self._rounds()
            return COMPLETE, None
        except Stopped:
            return STOPPED, None
        except _Bounded as bound:
            return STOPPED, bound.sentence
        except Exception as failure:
            return FAILED, await self._explain(failure)

    async def _rounds(self) -> None:
        from app.llm.client import ModelError

        engine, turn, state, stopper = self.engine, self.turn, self.state, self.turn.stopper
        storage = engine.storage
        client = await engine.client_async()
        # Tools that come and go (MCP servers) are readied first: a server starts here, at
        # its first use in a chat; one that cannot is said once and the turn goes on.
        for sentence in await stopper.step(engine.toolbox.prepare(engine.tool_chat(self.chat))):
            state.tool_notices.append(sentence)
            self._publish(ToolNotice(turn.id, sentence, generation=turn.generation))
        context = await storage.run(lambda: engine.context_for(self.chat, self.message,
                                                               self.model, web=self.web))
        for round_number in range(MAX_TOOL_ROUNDS + 1):
            stopper.check()
            messages = await storage.run(engine.conversation, self.chat.id, state.tip)
            spent = (state.calls >= MAX_CALLS_PER_TURN
                     or state.result_bytes >= MAX_RESULT_BYTES_PER_TURN)
            request = context.request(messages,
                                      last_round=round_number == MAX_TOOL_ROUNDS or spent)
            final = await self._stream_again_if_overloaded(client, request)
            blocks, stop_reason, round_usage = final.blocks, final.stop_reason, final.usage
            if stop_reason in _STOPPED_BY_MODEL:
                state.round_usage, state.counted = round_usage, True
                raise ModelError(_STOPPED_BY_MODEL[stop_reason], kind=stop_reason)
            stored = await storage.run(self._store_round, blocks, round_usage)
            state.paused = stop_reason == "pause_turn"
            self._publish(RoundStored(turn.id, stored.id, round_usage, stored.cost_usd,
                                      generation=turn.generation))
            if stop_reason == "pause_turn":
                if round_number < MAX_TOOL_ROUNDS:
                    continue  # the server paused a long turn: sending it back lets it go on
                # Paused in the last round: the answer is not all there, and saying so is
                # the bound's sentence, not a reply that looks complete.
                raise _Bounded(BOUND_REACHED["rounds"])
            calls = [b for b in blocks if b.get("type") == "tool_use"]
            if stop_reason != "tool_use" or not calls:
                return
            if round_number == MAX_TOOL_ROUNDS or spent:
                # A server that ignored tool_choice none gets no more tool rounds.
                raise _Bounded(BOUND_REACHED["rounds" if round_number == MAX_TOOL_ROUNDS
                                             else "turn"])
            await self._run_tools(context, calls)

    async def _run_tools(self, context: TurnContext, calls: list[dict[str, Any]]) -> None:
        """One round's tool calls, each on the toolbox's workers, within the turn's bounds;
        their results are stored together.  Past a bound the calls not run are left out (the
        conversation drops a call without its result) and the turn ends, saying which."""
        engine, turn, state, stopper = self.engine, self.turn, self.state, self.turn.stopper
        bound = None
        if len(calls) > MAX_CALLS_PER_ROUND:
            calls, bound = calls[:MAX_CALLS_PER_ROUND], "round"
        if state.calls + len(calls) > MAX_CALLS_PER_TURN:
            calls, bound = calls[:max(0, MAX_CALLS_PER_TURN - state.calls)], "turn"
        results = []
        try:
            for call in calls:
                stopper.check()
                left = MAX_RESULT_BYTES_PER_TURN - state.result_bytes
                if left <= 0:
                    bound = "bytes"
                    break
                name, tool_input = str(call.get("name")), call.get("input")
                shown = tool_input if isinstance(tool_input, dict) else {}
                self._publish(ToolCall(turn.id, name, shown, generation=turn.generation))
                output, summary, bounded = await stopper.step(
                    engine.toolbox.call(context.offered, context.chat, call, limit=left,
                                        approver=self.approver))
                state.calls += 1
                state.result_bytes += output.size
                if bounded:  # what is left of the turn's bytes cut it: the turn ends here
                    bound = "bytes"
                state.tool_calls.append({
                    "name": name, "outcome": output.outcome,
                    **({"server": output.called[0], "tool": output.called[1]}
                       if output.called else {})})
                self._publish(ToolResult(turn.id, name, summary, output.is_error,
                                         output.outcome, tuple(output.content),
                                         generation=turn.generation))
                results.append({"type": "tool_result", "tool_use_id": call["id"],
                                "content": output.content,
                                **({"is_error": True} if output.is_error else {})})
                if bound == "bytes":
                    break
        finally:
            if results:  # what ran is kept, even when Stop came between two calls
                await asyncio.shield(self.engine.storage.run(self._store, "user", results))
        if bound is not None:
            raise _Bounded(BOUND_REACHED[bound])

    async def _stream(self, client: Client, request: dict[str, Any]) -> Round:
        """One round, streamed on the network thread (the SDK builds and encodes a long chat's
        request there, and parses every event); what arrives comes back here, in order."""
        relay = _Relay(self._take, self.turn.stopper)
        try:
            return await self.engine.network.run(lambda: stream_round(client, request, relay.post))
        finally:
            relay.close()  # stopped or failed: nothing that is still on its way is taken

    async def _stream_again_if_overloaded(self, client: Client, request: dict[str, Any]
                                          ) -> Round:
        """One round; a stream that says ``overloaded_error`` before any of the reply arrived
        is sent again after a wait, as the SDK does for a 529 (the wait is said, and Stop ends
        it).  Once something was shown, what arrived is kept and the turn fails instead."""
        from app.llm import client as limits

        turn, state, stopper = self.turn, self.state, self.turn.stopper
        waits = iter(limits.OVERLOADED_STREAM_WAITS)
        while True:
            try:
                return await stopper.step(self._stream(client, request))
            except Exception as failure:
                if not limits.overloaded_in_stream(failure) or state.partial \
                        or state.partial_thinking:
                    raise
                wait = next(waits, None)
                if wait is None:
                    raise limits.ModelError(limits.overloaded_after_retrying(self._server()),
                                            kind="overloaded") from failure
            state.round_usage, state.counted = Usage(), False  # the next attempt counts anew
            state.partial_blocks = []
            self._publish(RetryWaiting(turn.id, wait, "overloaded", self._server(),
                                      generation=turn.generation))
            await stopper.step(asyncio.sleep(wait))

    def _take(self, kind: str, value: Any) -> None:
        """What a round's stream brought (on the event loop): kept, then published."""
        state, turn = self.state, self.turn
        if kind in ("usage", "usage counted"):
            state.round_usage, state.counted = value, kind == "usage counted"
        elif kind == "text":
            # A round's first text after an earlier round's starts a paragraph: said so in
            # the delta itself, so every reader (the command line, the window) shows it.
            shown = state.round_break() + value if value and not state.partial else value
            state.partial += value
            self._publish(TextDelta(turn.id, shown, generation=turn.generation))
        elif kind == "thinking":
            state.partial_thinking += value
            self._publish(ThinkingDelta(turn.id, value, generation=turn.generation))
        elif kind == "server tool":
            state.partial_blocks.append((len(state.partial), value))
            line = web_line(value)
            if line is not None:
                self._publish(WebActivity(turn.id, line, value, generation=turn.generation))
        elif kind == "waiting":
            wait, why = value
            self._publish(RetryWaiting(turn.id, wait, why, self._server(),
                                       generation=turn.generation))

    def _server(self) -> str:
        """Who the turn talks to, in a sentence ("Anthropic", "the server at HOST")."""
        from app.llm.client import server_named

        return server_named(self.engine.server())

    def _publish(self, event: TurnEvent) -> None:
        self.turn.publish(event)

    async def _explain(self, failure: Exception) -> str:
        from app.llm.client import explain
        from app.llm.requests import is_not_found

        engine = self.engine
        if is_not_found(failure):
            # The model may have retired since the list was fetched: ask again, then say
            # which model succeeds it.
            try:
                client, server = await engine.client_async(), engine.server()
                await engine.network.run(
                    lambda: engine.catalog.ensure_fresh(client, server, force=True))
            except Exception:
                log.info("the models list could not be refreshed after a 404")
        log.warning("turn in %s failed: %s", self.chat.id, type(failure).__name__)
        return str(explain(failure, model=self.model, catalog=engine.catalog))

    async def _keep_partial(self, status: str, error: str | None) -> str | None:
        """What streamed before a stop or a failure is kept, marked as such; returns the
        sentence to show (a storage failure's, if even that could not be stored)."""
        try:
            stored = await self.engine.storage.run(self._store_partial, status, error)
        except Exception as failure:  # a full disk: the turn still ends, and says why
            log.exception("the end of a turn in %s could not be stored", self.chat.id)
            return error or str(failure)
        if stored is not None:
            self._publish(RoundStored(self.turn.id, stored.id, stored.usage or Usage(),
                                      stored.cost_usd, generation=self.turn.generation))
        return error

    async def _knowledge_waiting(self) -> bool:
        ask = self.engine.knowledge_waiting
        if ask is None:
            return False
        try:
            return await self.engine.storage.run(ask, self.chat.id)
        except Exception:  # the rebuild is never worth failing a turn for
            log.exception("could not tell whether %s waits for a rebuild", self.chat.id)
            return False

    def _end(self, status: str, error: str | None, waiting: bool = False) -> TurnResult:

        state, model = self.state, self.model
        total = state.usage + state.round_usage
        costs = state.costs + ([_cost(model, state.round_usage)] if state.round_usage != Usage()
                               else [])
        result = TurnResult(self.chat.id, state.whole_text, status, error, model,
                            total, total_cost(costs), self.notice,
                            state.thinking + state.partial_thinking, tuple(state.stored),
                            waiting, tuple(state.tool_calls), tuple(state.tool_notices))
        self.engine.turn_over(self.turn, self.work)  # the chat is free before anyone hears
        self.turn.end(result)
        self.engine.turn_ended(result)
        return result

    # ----------------------------------------------------------------- on the storage thread

    def _store(self, role: str, content: list[dict[str, Any]], **kwargs: Any) -> Message:
        stored = self.engine.chats.append(self.chat.id, role, content, parent=self.state.tip,
                                          **kwargs)
        self.state.stored.append(stored.id)
        self.state.tip = stored.id
        return stored

    def _store_round(self, blocks: list[dict[str, Any]], usage: Usage) -> Message:
        cost = _cost(self.model, usage)
        stored = self._store("assistant", blocks, model=self.model, usage=usage, cost_usd=cost)
        self.state.finish_round(usage, cost)
        return stored

    def _store_partial(self, status: str, error: str | None) -> Message | None:
        """None when it is stored already (a cancel came while it was being stored)."""
        state = self.state
        if state.ended:
            return None
        state.ended = True
        # A search whose blocks arrived ran, and is billed, though the server's count came
        # with a message_delta that a stop cut off (the stored message reads it so too).
        searched = sum(1 for _at, b in state.partial_blocks
                       if b.get("type") == "server_tool_use" and b.get("name") == "web_search")
        usage = state.partial_usage()
        state.round_usage = replace(usage, web_searches=max(usage.web_searches, searched)) \
            if searched else usage  # (the turn's result says the same)
        state.counted = True
        # The text that streamed, with the round's whole server tool blocks where they came
        # (verbatim: a stopped reply keeps its searches, its sources and their encrypted
        # content for the next turn, which sends back each call that has its result).
        blocks: list[dict[str, Any]] = []
        start = 0
        for at, block in state.partial_blocks:
            if state.partial[start:at]:
                blocks.append({"type": "text", "text": state.partial[start:at]})
            blocks.append(block)
            start = at
        if state.partial[start:]:
            blocks.append({"type": "text", "text": state.partial[start:]})
        if state.partial_thinking:  # unsigned: kept to show, never sent back
            blocks.insert(0, {"type": "thinking", "thinking": state.partial_thinking,
                              "signature": ""})
        return self._store("assistant", blocks, status=status, error=error, model=self.model,
                           usage=state.round_usage, cost_usd=_cost(self.model, state.round_usage))



class _Bounded(Exception):
    """A turn went past one of its bounds: it ends with what it has, and says which."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


class _Relay:
    """Carries a round's stream from the network thread to the turn on its event loop.

    What arrives is queued; one callback on the loop takes everything queued so far, in
    order, so a burst of deltas costs the loop one wake-up.  Once Stop was asked for, or the
    round ended, nothing more is taken: the reply is what the loop had taken by then.
    """

    def __init__(self, take: Callable[[str, Any], None], stopper: Stopper) -> None:
        self._loop = asyncio.get_running_loop()
        self._take = take
        self._stopper = stopper
        self._lock = threading.Lock()
        self._queued: list[tuple[str, Any]] = []
        self._open = True

    def post(self, kind: str, value: Any) -> None:
        """From the network thread."""
        with self._lock:
            self._queued.append((kind, value))
            if len(self._queued) > 1:
                return  # a callback is on its way, and takes this one too
        try:
            self._loop.call_soon_threadsafe(self._flush)
        except RuntimeError:  # the loop is closed: nobody is listening any more
            pass

    def close(self) -> None:
        self._open = False

    def _flush(self) -> None:
        with self._lock:
            taken, self._queued = self._queued, []
        for kind, value in taken:
            if not self._open or self._stopper.stopped:
                return
            self._take(kind, value)
