"""The chat engine: what a turn sends (the context, the shown path) and the operations
that start one — send, retry, edit — with those that choose the branch a chat shows: switch
between versions, fork from a message (DESIGN §13).

The person's message is stored before anything is sent; the reply is stored when it ends —
complete, stopped (the partial text is kept) or failed (one sentence says why).  A turn is a
handle (:class:`app.chat.turn.Turn`) with typed events; one turn per chat at a time.  While it
streams the chat carries a ``turn`` in the registry's live work, so it cannot be archived, and
stop-and-archive stops it.  Every write of a turn runs on the storage thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base.live import TURN, NetworkThread, StorageThread, Work, settle_interpreter
from app.base.logs import without_credentials
from app.chat.context import Layer, system_blocks
from app.chat.turn import (
    MAX_TOKENS,
    MAX_TOOL_ROUNDS,
    EngineListener,
    Generations,
    RetryWaiting,
    Subscription,
    TextDelta,
    ThinkingDelta,
    Turn,
    TurnContext,
    TurnEvent,
    TurnResult,
    TurnRun,
)
from app.chat.web import web_settings, web_tools
from app.errors import CairnError, Refused
from app.llm.catalog import Catalog, ModelInfo, estimate_tokens
from app.records import Chat
from app.store.blocks import Replay, kind_of_block, paired_ids
from app.store.documents import PERSONAL, KnowledgeStore
from app.store.files import FileStore
from app.store.messages import COMPLETE, FAILED, STOPPED, ChatStore, Message
from app.store.registry.registry import DEFAULT_CHAT_TITLE, Registry
from app.store.settings import Settings
from app.store.web import WebStore
from app.tools import Approver, Toolbox, ToolChat

if TYPE_CHECKING:
    from app.llm.client import Client

log = logging.getLogger(__name__)

TITLE_LENGTH = 60

__all__ = ["ChatEngine", "MAX_TOOL_ROUNDS", "TurnResult", "history", "place_breakpoints"]


class ChatEngine:
    def __init__(self, *, registry: Registry, chats: ChatStore, knowledge: KnowledgeStore,
                 files: FileStore, settings: Settings, catalog: Catalog | None = None,
                 client_factory: Callable[[Settings], Client] | None = None,
                 storage: StorageThread | None = None,
                 network: NetworkThread | None = None,
                 toolbox: Toolbox | None = None, web: WebStore | None = None) -> None:
        self.registry = registry
        self.catalog = catalog or Catalog(registry.db.path.parent)
        self.chats = chats
        self.knowledge = knowledge
        self.files = files
        self.settings = settings
        self.storage = storage or StorageThread()
        # Every use of the client runs here: its connections belong to this thread's loop.
        self.network = network or NetworkThread()
        self._client_factory = client_factory
        self._client: tuple[tuple[str | None, str | None, str], Client] | None = None
        self._client_lock = threading.Lock()  # made on a worker thread, asked for on others
        self._refreshing: asyncio.Future[None] | None = None  # a background models refresh
        self._turns: dict[str, Turn] = {}  # the running turn of each busy chat
        self._generations = Generations()
        self._listeners: list[EngineListener] = []
        self.turn_listeners: list[Callable[[TurnResult], None]] = []  # e.g. the rebuild's timer
        self.start_listeners: list[Callable[[str], None]] = []  # a chat is busy again
        # Asked on the storage thread as a turn ends: does the chat wait for a rebuild?
        self.knowledge_waiting: Callable[[str], bool] | None = None
        # What Claude can use: the client tools (given by the composition root; none
        # without one) and web search per workspace (None: never offered).
        self.toolbox = toolbox or Toolbox(())
        self.web = web

    def client(self) -> Client:
        """One client per key and base URL: its connection pool is reused across turns.

        Use it only through :attr:`network` (``network.run``): its connections belong to the
        network thread's loop."""
        from app.llm.client import make_client

        with self._client_lock:
            wanted = (self.settings.api_key(), self.settings.base_url(),
                      str(self.settings.get("api.plain_http")))  # (a consent withdrawn)
            if self._client is None or self._client[0] != wanted:
                self._client = (wanted, (self._client_factory or make_client)(self.settings))
                settle_interpreter()  # start-up is over: the SDK is loaded (see app.base.live)
            return self._client[1]

    async def close_client(self) -> None:
        """Close the client's connections (on the network thread, whose loop owns them)."""
        with self._client_lock:
            made, self._client = self._client, None
        if made is not None:
            await made[1].close()

    async def client_async(self) -> Client:
        """:meth:`client` on a worker thread: the first one imports the SDK (seconds) and asks
        the keychain (which can prompt), neither of which may hold up the event loop."""
        return await asyncio.to_thread(self.client)

    def _refreshed(self, task: asyncio.Future[None]) -> None:
        self._refreshing = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("the models list could not be refreshed: %r", task.exception())

    def server(self) -> str:
        """Which server the models list belongs to (a cache per server)."""
        # (without a proxy's credentials: it names the models cache and appears in sentences)
        return without_credentials(self.settings.base_url() or "https://api.anthropic.com")

    async def models_ready(self, model: str, purpose: str) -> str | None:
        """Refresh the models list when it is a day old, refuse a retired *model* with a
        sentence naming its successor, and return a once-only deprecation notice."""
        try:
            client = await self.client_async()
        except CairnError:  # (not ModelError: importing app.llm.client here would load the SDK)
            return None  # no key yet: the turn itself says so
        server = self.server()
        if not self.catalog.has_list(server):  # the first time: needed to decide
            await self.network.run(lambda: self.catalog.ensure_fresh(client, server))
        elif self.catalog.stale(server) and self._refreshing is None:
            # A day-old list still decides this turn; the fresh one arrives in the background.
            self._refreshing = asyncio.ensure_future(
                self.network.run(lambda: self.catalog.ensure_fresh(client, server)))
            self._refreshing.add_done_callback(self._refreshed)
        self.catalog.check_usable(model, purpose)
        # (Announcing a deprecation writes the models file: not on the caller's loop.)
        return await asyncio.to_thread(self.catalog.deprecation_notice, model, purpose)

    # ----------------------------------------------------------------- the context

    def chain(self, chat: Chat) -> list[Layer]:
        """The chat's workspaces from the project down to its own, with their knowledge."""
        return [Layer(ws, self.knowledge.get(ws.id).text)
                for ws in self.registry.lineage(chat.workspace_id)]

    def system(self, chat: Chat, message: str, *, chain: list[Layer] | None = None,
               files: list[Any] | None = None) -> list[dict[str, Any]]:
        """The system prompt the next turn in *chat* sends (chain and files if already read)."""
        chain = self.chain(chat) if chain is None else chain
        memory = (self.knowledge.get(PERSONAL).text
                  if self.settings.get("memory.enabled") else None)
        if files is None:
            files = self.files.of_workspaces([layer.workspace.id for layer in chain])
        return system_blocks(chain=chain, files=files, personal_memory=memory, message=message)

    def context_for(self, chat: Chat, message: str, model: str, *, web: bool | None = None
                    ) -> TurnContext:
        """What every round of a turn sends besides the conversation (storage thread)."""
        from app.llm.client import request_options

        info = self.catalog.info(model)
        chain = self.chain(chat)
        chain_ids = [layer.workspace.id for layer in chain]
        files = self.files.of_workspaces(chain_ids)
        tool_chat = self.tool_chat(chat)
        offered = self.toolbox.offered(tool_chat)  # each tool says whether it is offered here
        tools = list(offered.definitions)
        if self.web is not None:  # web search and fetch: the API runs them
            settings = web_settings(self.registry, self.web, chat.workspace_id)
            tools += web_tools(settings, web, info)
        system = place_breakpoints(self.system(chat, message, chain=chain, files=files),
                                   tools=tools, info=info)
        options = request_options(info, effort=self.settings.get("model.chat_effort"),
                                  max_tokens=MAX_TOKENS)
        return TurnContext(model, system, tools, options, chain_ids, offered, tool_chat)

    def tool_chat(self, chat: Chat) -> ToolChat:
        """What a tool knows of *chat* (from memory: the registry's lineage)."""
        return ToolChat(chat.id, chat.workspace_id,
                        tuple(ws.id for ws in self.registry.lineage(chat.workspace_id)))

    def conversation(self, chat_id: str, leaf: int | None = None) -> list[dict[str, Any]]:
        """The shown path (the path ending at *leaf* when given: a running turn's own) as the
        next request sends it; no other branch is ever sent (storage thread: files are
        read)."""
        return history(self.chats.messages(chat_id, leaf=leaf), self.files.expand)

    def project_title(self, chat: Chat) -> str | None:
        """The title of the project the chat belongs to (from memory), None when Ungrouped."""
        lineage = self.registry.lineage(chat.workspace_id)
        return lineage[0].title if lineage else None

    # ----------------------------------------------------------------- turns

    async def start_turn(self, chat_id: str, text: str, *,
                         attachments: Sequence[Path] = (), web: bool | None = None,
                         approver: Approver | None = None) -> Turn:
        """Send *text* (and *attachments*) in a chat: the reply streams in a task of its own.

        Refused with one sentence, nothing stored, when the chat is unknown or archived, the
        message empty, an attachment unreadable, the model retired, or a reply is still
        streaming in this chat.  Otherwise returns once the message is stored, with the turn
        not yet running: subscribe before your next ``await`` and no event is missed.  A model
        failure never raises: the turn ends with ``TurnFailed`` and the sentence.  *web* turns
        web search and fetch on (True) or off (False) for this message; None follows the
        workspace (``app.chat.web``).  *approver* is asked before a tool call its policy does
        not allow (an MCP tool's); without one such calls are declined.
        """
        chat = self._sendable(chat_id, "send to")
        if not text.strip() and not attachments:
            raise Refused("cannot send an empty message")

        async def store(turn: Turn) -> tuple[str, list[int], int]:
            refs = [await self.storage.run(self.files.attach, Path(p)) for p in attachments]
            content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
            self._still_wanted(turn, "send to")
            message = await self.storage.run(self._store_message, chat, text, content + refs)
            return text, [message.id], message.id

        return await self._start(chat, "send to", store, web=web, approver=approver)

    async def retry(self, chat_id: str, message_id: int | None = None, *,
                    web: bool | None = None, approver: Approver | None = None) -> Turn:
        """A new version of a reply: the person's message it answers is answered again, and
        the new reply streams beside the old one (its sibling, shown at once; the old one
        stays one switch away).  *message_id*: a message of the reply (any of its rounds) or
        the person's message; None: the shown path's last reply.  Refused in one sentence,
        nothing changed, when there is nothing of the person's to answer."""
        chat = self._sendable(chat_id, "retry in")

        async def store(turn: Turn) -> tuple[str, list[int], int]:
            self._still_wanted(turn, "retry in")
            person = await self.storage.run(self.chats.retry, chat_id, message_id)
            return person.text, [], person.id

        return await self._start(chat, "retry in", store, web=web, approver=approver)

    async def edit_and_resend(self, chat_id: str, message_id: int, text: str, *,
                              web: bool | None = None,
                              approver: Approver | None = None) -> Turn:
        """A new version of the person's message *message_id* with *text* (its files kept),
        and its reply streamed under it.

        The new version is the original's sibling (same parent) and its branch is shown; the
        original and everything below it stay, one switch away.  The model is sent the new
        branch only.  Refused in one sentence for a reply or a message the chat does not hold.
        """
        chat = self._sendable(chat_id, "edit a message in")

        async def store(turn: Turn) -> tuple[str, list[int], int]:
            self._still_wanted(turn, "edit a message in")
            message = await self.storage.run(self.chats.resend, chat_id, message_id, text)
            return text, [message.id], message.id

        return await self._start(chat, "edit a message in", store, web=web, approver=approver)

    edit = edit_and_resend

    # ----------------------------------------------------------------- branches

    def switch(self, chat_id: str, message_id: int) -> int:
        """Show the branch of version *message_id*: the newest message below it becomes the
        chat's current leaf, kept (``BranchShown``).  Returns that leaf.  Refused while a reply
        streams in the chat (its branch is being written), for an unknown chat or a message it
        does not hold; nothing changes then (storage thread)."""
        self.registry.get_chat(chat_id, verb="switch versions in")
        if chat_id in self._turns:
            raise Refused(f"cannot switch versions in session '{chat_id}': a reply is still "
                          "streaming; stop it first")
        return self.chats.switch(chat_id, message_id)

    def fork(self, chat_id: str, message_id: int) -> Chat:
        """A new chat in the same workspace holding the path from the first message down to
        *message_id* (copied, in one transaction with the chat's record), titled
        "<title> (fork)".  The copies count as learned (the fork's watermark is at its last
        message) and carry no tokens or cost of their own: learned and paid once, in the chat
        they came from (storage thread)."""
        from app.store.registry.fork import fork_chat

        return fork_chat(self.registry, chat_id, message_id)

    async def send(self, chat_id: str, text: str, *, attachments: Sequence[Path] = (),
                   web: bool | None = None, approver: Approver | None = None,
                   on_text: Callable[[str], None] | None = None,
                   on_thinking: Callable[[str], None] | None = None,
                   on_wait: Callable[[RetryWaiting], None] | None = None) -> TurnResult:
        """:meth:`start_turn`, then wait for the result (the command line, tests); *on_wait*
        hears each wait before the request is sent again.

        Never raises for a model failure.  Cancelling the caller stops the turn like Stop,
        waits until what arrived is stored, and goes on cancelling.
        """
        turn = await self.start_turn(chat_id, text, attachments=attachments, web=web,
                                     approver=approver)
        return await self.follow(turn, on_text=on_text, on_thinking=on_thinking,
                                 on_wait=on_wait)

    async def follow(self, turn: Turn, *, on_text: Callable[[str], None] | None = None,
                     on_thinking: Callable[[str], None] | None = None,
                     on_wait: Callable[[RetryWaiting], None] | None = None) -> TurnResult:
        """Wait for a started *turn*'s result, hearing its text, thinking and waits (the
        command line's send, retry and edit).  Cancelling the caller stops the turn like
        Stop, waits until what arrived is stored, and goes on cancelling."""
        if on_text is not None or on_thinking is not None or on_wait is not None:
            def relay(event: TurnEvent) -> None:
                if isinstance(event, TextDelta) and on_text is not None:
                    on_text(event.text)
                elif isinstance(event, ThinkingDelta) and on_thinking is not None:
                    on_thinking(event.text)
                elif isinstance(event, RetryWaiting) and on_wait is not None:
                    on_wait(event)

            turn.subscribe(relay)
        try:
            return await turn.result()
        except asyncio.CancelledError:
            turn.cancel()
            if not turn.done:
                await asyncio.wait({asyncio.ensure_future(turn.result())})
            raise

    def running(self, chat_id: str) -> Turn | None:
        """The turn streaming in the chat, if any."""
        return self._turns.get(chat_id)

    def running_turns(self) -> list[Turn]:
        """Every turn streaming now."""
        return list(self._turns.values())

    def generation(self, chat_id: str) -> int:
        """The chat's current generation: events of any other are stale."""
        return self._generations.current(chat_id)

    def subscribe(self, callback: EngineListener) -> Subscription:
        """Hear every turn's events as ``callback(turn, event)``, with the same drop rules as
        ``turn.subscribe``; the window's bridge subscribes once here."""
        return Subscription(self._listeners, callback)

    # ----------------------------------------------------------------- for TurnRun

    def turn_over(self, turn: Turn, work: Work) -> None:
        """The chat is free again (idempotent)."""
        self.registry.end_work(work)
        if self._turns.get(turn.chat_id) is turn:
            del self._turns[turn.chat_id]

    def turn_ended(self, result: TurnResult) -> None:
        for listener in list(self.turn_listeners):
            try:
                listener(result)
            except Exception:  # the turn is stored and done; a listener must not undo that
                log.exception("a turn listener failed")

    # ----------------------------------------------------------------- private

    def _sendable(self, chat_id: str, verb: str) -> Chat:
        chat = self.registry.get_chat(chat_id, verb=verb)
        if chat.archived:
            raise Refused(f"cannot {verb} session '{chat_id}': the session is archived")
        return chat

    def _reserve(self, chat_id: str, verb: str) -> tuple[Turn, Work]:
        """One turn per chat: taken before the first ``await``, so two Sends cannot both pass."""
        if chat_id in self._turns:
            raise Refused(f"cannot {verb} session '{chat_id}': a reply is still streaming; "
                          "stop it first")
        turn = Turn(chat_id=chat_id, generations=self._generations,
                    engine_listeners=self._listeners)
        work = self.registry.begin_work(chat_id, TURN, stop=turn.cancel)
        self._turns[chat_id] = turn
        return turn, work

    @staticmethod
    def _still_wanted(turn: Turn, verb: str) -> None:
        if turn.stopper.stopped:  # stopped (and archived) before anything was stored
            raise Refused(f"cannot {verb} session '{turn.chat_id}': it was stopped before "
                          "the message was sent")

    def _store_message(self, chat: Chat, text: str, content: list[dict[str, Any]]) -> Message:
        """The person's message, and the chat's title from it (storage thread)."""
        message = self.chats.append(chat.id, "user", content)
        if chat.title == DEFAULT_CHAT_TITLE and text.strip():
            self.registry.rename_chat(chat.id, _title_from(text))
        return message

    async def _start(self, chat: Chat, verb: str,
                     store: Callable[[Turn], Awaitable[tuple[str, list[int], int]]], *,
                     web: bool | None = None, approver: Approver | None = None) -> Turn:
        """What every way of starting a turn shares: the chat taken, the model checked, then
        *store* stores the person's side and says (the message, the ids it stored, the
        message the reply goes under); any
        refusal on the way lets go of the chat with nothing stored."""
        turn, work = self._reserve(chat.id, verb)
        try:
            model = self.settings.get("model.chat")
            notice = await self.models_ready(model, "chat")  # a retired model: nothing stored
            message, stored, tip = await store(turn)
        except BaseException:
            self.turn_over(turn, work)
            raise
        for started in list(self.start_listeners):
            try:
                started(chat.id)
            except Exception:
                log.exception("a turn-start listener failed")
        run = TurnRun(self, turn, work, chat=chat, message=message, model=model, notice=notice,
                      stored=stored, tip=tip, web=web, approver=approver)
        turn.start(asyncio.get_running_loop().create_task(run.run()))
        return turn


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


def _title_from(text: str) -> str:
    line = " ".join(text.strip().split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


# Sent after the text of a reply that was stopped or broke off, in the history only.
CUT_OFF = "[This reply was cut off here and did not finish.]"


def history(messages: Sequence[Message], expand: Callable[[dict[str, Any]], dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """The stored conversation as the API takes it, with a cache breakpoint at its end.

    Each block goes back as its kind's declaration says (``app.store.blocks``): empty text
    dropped, attachments expanded, a tool call whose result never arrived (a stop mid-loop)
    removed, thinking only inside the tool loop still running, a server tool's blocks (web
    search, fetch) verbatim with their encrypted content.  Failed turns without text are left
    out and consecutive turns of one role merged, so every request is well formed.
    """
    loop_start = 0  # where the running exchange began: the person's last message
    for position, message in enumerate(messages):
        if message.from_person:
            loop_start = position
    # A server tool's call and its result go back together, within one reply's run of
    # assistant messages (a turn paused by the server continues in the next message).
    servers: list[set[str]] = [set()] * len(messages)
    start = 0
    for position in range(1, len(messages) + 1):
        if position == len(messages) or messages[position].role != messages[start].role:
            found = paired_ids(b for m in messages[start:position] for b in m.content)
            servers[start:position] = [found] * (position - start)
            start = position
    turns: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        following = messages[position + 1] if position + 1 < len(messages) else None
        answered = {str(b.get("tool_use_id")) for b in following.content
                    if b.get("type") == "tool_result"} if following is not None else set()
        answered |= servers[position]
        at = Replay(expand=expand, in_loop=position > loop_start and message.status == COMPLETE,
                    paired=answered.__contains__)
        blocks: list[dict[str, Any]] = []
        files: list[dict[str, Any]] = []  # a message's attachments, sent before its text
        for block in message.content:
            kind = kind_of_block(block)
            if kind is None or message.role not in kind.roles:
                continue  # not a kind Cairn stores: never passed on
            (files if kind.leads else blocks).extend(kind.replay(block, at))
        # The files (documents, images, a text file's contents) before the question, as
        # Anthropic's guidance has it.
        blocks = files + blocks
        if not blocks:
            continue
        if message.role == "assistant" and message.status in (STOPPED, FAILED) and any(
                b["type"] == "text" for b in blocks):
            # A reply that did not end is said to be cut off, so the model does not take it
            # for what it meant to say in full.
            blocks.append({"type": "text", "text": CUT_OFF})
        if turns and turns[-1]["role"] == message.role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": message.role, "content": blocks})
    if turns:
        last = dict(turns[-1]["content"][-1])
        last["cache_control"] = {"type": "ephemeral"}
        turns[-1]["content"][-1] = last
    return turns
