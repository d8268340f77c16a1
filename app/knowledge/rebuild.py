"""The rebuild: merge what new exchanges taught into the knowledge documents, by operations.

The knowledge model never re-types a document: it answers with ``update_knowledge`` ops that
code validates (``ops.apply_ops``) and applies, carrying every other entry forward.  The
result is saved in one transaction with compare-and-swap: if the person saved a document
meanwhile, the result is discarded and the rebuild runs again on top of their edit.  Any
failure, and a stop, leaves the documents and the chat's watermark as they were.

It learns only from the conversation: messages a retry or an edit replaced are left out.
What is pending is read from the watermark on, never the whole chat, and every read and
write runs on the storage thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base.live import BACKGROUND_JOB, NetworkThread, Stopped, Stopper, StorageThread
from app.events import (
    RebuildApplied,
    RebuildFailed,
    RebuildStarted,
    WorkEnded,
    WorkStarted,
)
from app.knowledge.corrections import (
    addressed,
    correction,
    refusals_of,
    resubmitted,
    unapplied,
)
from app.knowledge.meaning import CLAUDE, PERSON, Said, hear
from app.knowledge.prompt import (  # noqa: F401 - OPS_SCHEMA, length_guidance re-exported
    OPS_SCHEMA,
    Turn,
    length_guidance,
    ops_schema,
    system_prompt,
    update_tool,
)
from app.knowledge.prompt import (
    message as prompt_message,
)
from app.knowledge.suggestions import proposals, suggestible
from app.knowledge.validator import Layer, Outcome, Refusal, apply_ops
from app.llm.catalog import Catalog
from app.store import watermarks
from app.store.documents import PERSONAL, Change, KnowledgeStore
from app.store.messages import COMPLETE, ChatStore, Message
from app.store.registry.registry import Registry
from app.store.settings import Settings
from app.store.suggestions import Proposed

if TYPE_CHECKING:
    from app.llm.client import Client, Reply
    from app.records import Chat

log = logging.getLogger(__name__)

# Who hears that a knowledge call waits before trying again (a 429's or a 529's wait, in
# seconds, and why): set by a caller around a rebuild (``cairn ask`` says it on stderr).
retry_listener: contextvars.ContextVar[Callable[[float, str], None] | None] = \
    contextvars.ContextVar("rebuild_retry_listener", default=None)

QUALIFYING_REPLY = 80  # characters: shorter replies never cause a model call (docs/knowledge.md)
CHUNK_EXCHANGES = 6  # a backlog goes to the model in chunks of this many, oldest first
CHUNK_CHARS = 24_000
SUPERSEDED_RUNS = 2  # a hand edit landed meanwhile: once more on top of it, then queued
WALK_BACK = 16  # messages read per step when looking for where the pending exchange opened
MAX_OUTPUT_TOKENS = 8_192  # today's models think within this budget too (low effort keeps it short)
PROMPT = Path(__file__).resolve().parents[2] / "resources" / "prompts" / "knowledge.md"

@dataclass(frozen=True, slots=True)
class Exchange:
    """A person's message and the reply to it."""

    user: str
    reply: str
    last_message: int  # the id of the exchange's last message

    @property
    def qualifies(self) -> bool:
        return len(self.reply.strip()) >= QUALIFYING_REPLY


@dataclass(slots=True)
class Report:
    """What a rebuild did, for the command line and the window."""

    chat_id: str
    status: str = "nothing"  # nothing | applied | superseded | failed | stopped
    applied: list[dict[str, Any]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    error: str | None = None
    output_tokens: int = 0
    exchanges: int = 0
    notice: str | None = None  # the knowledge model is deprecated: said once
    unapplied: str | None = None  # "2 suggestions could not be applied: …" (still refused)
    suggested: int = 0  # of those, how many wait for the person as suggestions


def exchanges_of(messages: list[Message]) -> list[Exchange]:
    """Pair each message of the person with the reply text that followed it, along one path
    (the chat's shown path: other branches are not read, so never learned from here).
    """
    found: list[Exchange] = []
    user: list[str] = []
    reply: list[str] = []
    last = 0
    for message in messages:
        if message.role == "user":
            # Tool results are part of the reply's round trip; anything else the person sent
            # (text, attachments) starts an exchange.
            if _asks(message):
                if reply:
                    found.append(Exchange("\n".join(user), _joined_reply(reply), last))
                    user, reply = [], []
                user.append(_typed(message))
        elif message.status == COMPLETE:
            reply.append(message.text)
        last = message.id
    if user and reply:
        found.append(Exchange("\n".join(user), _joined_reply(reply), last))
    return found


def _joined_reply(parts: list[str]) -> str:
    """The reply's parts around tool calls, each on its own line: "brand kit v2" and
    "3 colours" must not read as "v23 colours"."""
    return "\n".join(part for part in parts if part)


def _typed(message: Message) -> str:
    """What the person wrote and attached, as the knowledge model reads it."""
    attached = [b.get("name", "a file") for b in message.content if b.get("type") == "attachment"]
    return message.text + "".join(f"\n[attached {name}]" for name in attached)


def _asks(message: Message) -> bool:
    """The person said something (text or files; not tool results, not an empty message):
    such a message opens an exchange, or joins the one waiting for a reply."""
    return message.role == "user" and bool(_typed(message).strip())


class Rebuilder:
    def __init__(self, *, registry: Registry, chats: ChatStore, knowledge: KnowledgeStore,
                 settings: Settings, client: Callable[[], Client],
                 chain: Callable[[Chat], list[Any]], today: Callable[[], date] = date.today,
                 catalog: Catalog | None = None,
                 models_ready: Callable[[str, str], Awaitable[str | None]] | None = None,
                 storage: StorageThread | None = None,
                 network: NetworkThread | None = None) -> None:
        self.registry = registry
        self._storage = storage or StorageThread()
        # The model call runs there; share the chat engine's when sharing its client.
        self._network = network or NetworkThread()
        self.catalog = catalog or Catalog(registry.db.path.parent)
        self._models_ready = models_ready
        self.chats = chats
        self.knowledge = knowledge
        self.settings = settings
        self._client = client
        self._chain = chain
        self._today = today

    @property
    def storage(self) -> StorageThread:
        """The thread its reads and writes run on (the scheduler reads what waits there)."""
        return self._storage

    def pending(self, chat_id: str) -> list[Exchange]:
        """Exchanges after the chat's watermark, oldest first.

        Read from the watermark on, never the whole chat: the conversation after the mark,
        and before it only the opening of the exchange its first message belongs to (a walk
        back that usually reads two messages).  The result equals
        ``[e for e in exchanges_of(<the whole conversation>) if e.last_message > mark]``.
        """
        mark = watermarks.watermark(self.registry.db, chat_id)
        after = self.chats.messages(chat_id, after=mark)
        if not after:
            return []
        opening = self._opening(chat_id, after[0])
        return [e for e in exchanges_of(opening + after) if e.last_message > mark]

    def _opening(self, chat_id: str, first: Message) -> list[Message]:
        """The messages before *first* that belong to its exchange, oldest first.

        An exchange opens at a message of the person that follows a complete reply (earlier
        messages of the person with no reply in between join it), or at the chat's start.
        """
        walked: list[Message] = []  # newest first
        opens = 0 if _asks(first) else None  # len(walked) at the person's last message
        before = first.id
        while True:
            page = self.chats.messages(chat_id, before=before, limit=WALK_BACK)
            for message in reversed(page):
                if opens is not None and message.role != "user" and message.status == COMPLETE:
                    return walked[:opens][::-1]  # a complete reply: the exchange opened after it
                walked.append(message)
                if _asks(message):
                    opens = len(walked)
            if len(page) < WALK_BACK:  # the chat's start
                return (walked if opens is None else walked[:opens])[::-1]
            before = page[0].id

    def waiting(self) -> list[str]:
        """Chats with qualifying exchanges that no rebuild has covered yet (resumed at start)."""
        # A cheap filter first, so start-up reads what is pending only where it may qualify.
        return [chat_id for chat_id in
                watermarks.chats_with_long_replies(self.registry.db, QUALIFYING_REPLY)
                if any(e.qualifies for e in self.pending(chat_id))]

    async def rebuild(self, chat_id: str) -> Report:
        """:meth:`rebuild_once`, run once more when a hand edit superseded it (the person's
        text wins and what the chat taught is learned on top of it), for the window and the
        command line alike; still ``superseded`` after that, the caller queues it again."""
        report = await self.rebuild_once(chat_id)
        for _again in range(SUPERSEDED_RUNS - 1):
            if report.status != "superseded":
                break
            report = await self.rebuild_once(chat_id)
        return report

    def places(self, chat_id: str, backlog: list[Exchange]) -> list[str | None]:
        """Where each exchange of *backlog* was said: the workspace whose documents learn it
        (None: Ungrouped), the chat's own unless it moved since (storage thread)."""
        said = watermarks.origins(self.registry.db, chat_id)
        chat = self.registry.chat(chat_id)
        here = chat.workspace_id if chat is not None else None
        found: list[str | None] = []
        for exchange in backlog:
            place = next((ws for upto, ws in said if exchange.last_message <= upto), here)
            found.append(place if place is None or self.registry.workspace(place) else None)
        return found

    async def rebuild_once(self, chat_id: str) -> Report:
        """Process the chat's pending exchanges in bounded chunks, oldest first.

        While it needs the model, the chat carries a ``background job`` in the live work, and
        stopping that (stop-and-archive) ends the rebuild where it is: a model call in flight is
        cancelled, nothing of it is saved, the watermark stays, and the report says
        ``stopped``.  (It registers with ``live.begin``, not ``begin_work``: an archived
        chat's exchanges are still learned, at the next trigger.)

        Says so through the registry's hub: ``RebuildStarted`` and ``WorkStarted`` when it
        needs the model, ``WorkEnded`` when it is over (here, on the loop's thread);
        ``RebuildApplied`` after each saved result and ``RebuildFailed`` after a failure is
        recorded (on the storage thread, after their commits).
        """
        report = Report(chat_id)
        if self.registry.chat(chat_id) is None:
            return report  # deleted meanwhile (removed_chats): nothing more is learned from it
        storage = self._storage
        backlog = await storage.run(self.pending, chat_id)
        where = await storage.run(self.places, chat_id, backlog)
        if not any(e.qualifies for e in backlog):
            if backlog:  # nothing to learn from: no model call, the watermark moves on
                await storage.run(self._set_watermark, chat_id, backlog[-1].last_message)
            return report
        stopper = Stopper(asyncio.get_running_loop())
        work = self.registry.live.begin(chat_id, BACKGROUND_JOB, stop=stopper.stop)
        hub = self.registry.hub
        hub.emit(RebuildStarted(chat_id), WorkStarted(chat_id, BACKGROUND_JOB))
        try:
            while backlog:
                if stopper.stopped:
                    report.status = "stopped"
                    break
                chunk = _chunk(backlog, where)
                backlog, place, where = backlog[len(chunk):], where[0], where[len(chunk):]
                if not any(e.qualifies for e in chunk):
                    await storage.run(self._set_watermark, chat_id, chunk[-1].last_message)
                    continue
                step = await self._rebuild_chunk(chat_id, chunk, stopper, place)
                report.applied += step.applied
                report.refused += step.refused
                report.output_tokens += step.output_tokens
                report.exchanges += step.exchanges
                report.notice = report.notice or step.notice
                report.unapplied = _joined(report.unapplied, step.unapplied)
                report.suggested += step.suggested
                if step.status in ("failed", "superseded", "stopped"):
                    report.status, report.error = step.status, step.error
                    break  # the watermark stays: the next trigger starts from here
                if step.status == "applied":
                    report.status = "applied"
        finally:
            self.registry.live.end(work)
            hub.emit(WorkEnded(chat_id, BACKGROUND_JOB))
        return report

    async def _rebuild_chunk(self, chat_id: str, chunk: list[Exchange], stopper: Stopper,
                             place: str | None) -> Report:
        report = Report(chat_id, exchanges=sum(e.qualifies for e in chunk))
        storage = self._storage
        # Learned where it was said: the chat as it was there (it may have moved since).
        chat = self.registry.get_chat(chat_id)._replace(workspace_id=place)
        chain, (layers, owners, chain_texts, versions), template = await storage.run(
            self._read_documents, chat)
        if not layers:  # an Ungrouped chat with Memory off: there is nothing it could change
            await storage.run(self._set_watermark, chat_id, chunk[-1].last_message)
            report.exchanges = 0
            return report
        text = [Turn(e.user, e.reply, e.qualifies) for e in chunk]
        # Where evidence must be: each message on its own, with who said it (a quote comes
        # from one message; only the person's words replace what an entry says).
        said = [part for e in chunk for part in (Said(PERSON, e.user), Said(CLAUDE, e.reply))]
        model = self.settings.get("model.knowledge")
        try:
            report.notice, tool_input, report.output_tokens = await stopper.step(
                self._consult(model, layers, chain, text, template))
        except Stopped:  # stop-and-archive: not a failure, nothing to record
            report.status = "stopped"
            return report
        except Exception as failure:  # every fault leaves the documents as they were
            from app.llm.client import explain

            report.status = "failed"
            report.error = (str(explain(failure, model=model, catalog=self.catalog,
                                        purpose="knowledge"))
                            if not isinstance(failure, _NoToolCall) else str(failure))
            log.warning("rebuild for %s failed: %s", chat_id, report.error)
            await storage.run(self._record_error, list(owners.values()), report.error,
                              chat_id=chat_id)
            return report
        def validate(answer: object) -> Awaitable[Outcome]:
            # Validating against 30,000-character documents takes a while: never on the loop.
            return asyncio.to_thread(
                apply_ops, answer, layers=layers, exchanges=said,
                today=self._today().isoformat(), qualifying_exchanges=report.exchanges,
                chain_texts=chain_texts)

        outcome = await validate(tool_input)
        sent_back = [r for r in outcome.refused if not r.moot]
        if sent_back and not stopper.stopped:  # one corrective round, never a loop
            try:
                again, tokens = await stopper.step(self._ask_model(
                    layers, chain, text, template, correction=correction(tool_input, sent_back)))
            except Stopped:
                report.status = "stopped"
                return report
            except Exception as failure:  # the first answer stands, its refusals recorded
                log.info("the corrective round for %s failed: %s", chat_id, failure)
            else:
                report.output_tokens += tokens
                first = outcome
                outcome = await validate(resubmitted(tool_input, first, again))
                # A first refusal stands unless the second answer really answered it: an op
                # for the same thing that applied, or was refused for a reason of its own.
                # One that only says the unchanged entry again (moot) hides nothing.
                moot_again = [r.op for r in outcome.refused if r.moot]
                outcome = Outcome(outcome.texts, outcome.applied, [
                    *[r for r in first.refused if r.moot],
                    *[r for r in sent_back
                      if not addressed(r, again, moot=moot_again, layers=layers)],
                    *outcome.refused])
        if stopper.stopped:  # stopped while validating: nothing of it is saved
            report.status = "stopped"
            return report
        report.applied, report.refused = list(outcome.applied), list(outcome.refused)
        # Said as suggestions only what is kept as one (an op naming nothing shown is only
        # listed among the refusals: no suggestion waits for it).
        waiting = await asyncio.to_thread(suggestible, report.refused, layers=layers)
        report.unapplied = unapplied(waiting)
        changes = [Change(owners[key], new_text, versions[key])
                   for key, new_text in outcome.texts.items()]
        notes = {owner: unapplied(refusals_of(waiting, key, layers))
                 for key, owner in owners.items()}
        # What was not applied and not moot waits for the person, with whose words it quotes.
        # (off the loop: hearing long exchanges word by word takes a while)
        kept = await asyncio.to_thread(lambda: proposals(report.refused, layers=layers,
                                                         owners=owners, heard=hear(said)))
        report.suggested = len(kept)
        saved = await storage.run(self._save_result, chat_id, changes, notes,
                                  chunk[-1].last_message, kept)
        if not saved:
            report.status = "superseded"  # a hand edit landed meanwhile: it wins, run again
            report.applied = []
            return report
        report.status = "applied" if changes else "nothing"
        return report

    def _read_documents(self, chat: Chat) -> tuple[list[Any], tuple[list[Layer], dict[str, str],
                                                                   list[str], dict[str, int]], str]:
        """The chat's chain, the documents as labelled layers, and the prompt (storage thread)."""
        chain = self._chain(chat)
        return chain, self._layers(chain), PROMPT.read_text(encoding="utf-8")

    async def _consult(self, model: str, layers: list[Layer], chain: list[Any], exchanges: list[Turn],
                       template: str) -> tuple[str | None, object, int]:
        """The model's part, which a stop interrupts: (notice, ops, output tokens)."""
        notice = None
        if self._models_ready is not None:  # a retired model: refused, naming its successor
            notice = await self._models_ready(model, "knowledge")
        ops, tokens = await self._ask_model(layers, chain, exchanges, template)
        return notice, ops, tokens

    def _layers(self, chain: list[Any]) -> tuple[list[Layer], dict[str, str], list[str], dict[str, int]]:
        layers: list[Layer] = []
        owners: dict[str, str] = {}
        versions: dict[str, int] = {}
        chain_texts: list[str] = []

        def add(key: str, prefix: str, owner: str) -> None:
            doc = self.knowledge.get(owner)
            layers.append(Layer(key, prefix, doc.text))
            owners[key] = owner
            versions[key] = doc.version

        if chain:
            add("project", "P", chain[0].workspace.id)
            if len(chain) > 1:
                add("folder", "F", chain[-1].workspace.id)
            chain_texts = [layer.knowledge for layer in chain[1:-1]]
        if self.settings.get("memory.enabled"):
            add("personal", "U", PERSONAL)
        return layers, owners, chain_texts, versions

    async def _ask_model(self, layers: list[Layer], chain: list[Any], exchanges: list[Turn],
                         template: str, *, correction: str = "") -> tuple[object, int]:
        model = self.settings.get("model.knowledge")
        # Labelling every entry of 30,000-character documents takes a while: not on the loop.
        request = await asyncio.to_thread(self._request, model, layers, chain, exchanges,
                                          template)
        if correction:
            request["messages"][0]["content"] += "\n\n" + correction
        server = self._server()
        shape = self.catalog.knowledge_shape(model, server)
        known = self.catalog.knows_shape(model, server)
        targets = [layer.key for layer in layers]
        try:
            answer = _answer(await self._call(request, shape, targets), shape)
        except Exception as error:
            other = self._other_shape(error, shape, model, known=known)
            if other is None:
                raise
            # The server said this shape is unsupported (or, for a model nobody described,
            # answered it with no ops at all): the other one, once, and remember it.
            log.info("the knowledge model did not take %s output; trying %s", shape, other)
            try:
                answer = _answer(await self._call(request, other, targets), other)
            except Exception as again:
                if self._other_shape(again, other, model, known=False) is None:
                    raise
                raise _Unusable(self._unusable(model, error, again)) from again
            await asyncio.to_thread(self.catalog.remember_shape, model, other, server)
            return answer
        info = self.catalog.info(model)
        if not known and (info is None or not info.described):  # learnt: the next start asks so
            await asyncio.to_thread(self.catalog.remember_shape, model, shape, server)
        return answer

    def _server(self) -> str:
        """The server the knowledge model is reached at, as the models cache names it."""
        from app.base.logs import without_credentials

        return without_credentials(self.settings.base_url() or "https://api.anthropic.com")

    def _unusable(self, model: str, first: BaseException, second: BaseException) -> str:
        """Both ways of asking failed the same way: what to change, not a promise that the
        next turn tries again (it would fail alike)."""
        from app.llm.client import server_named

        who = server_named(self.settings.base_url())
        refused = not isinstance(first, _NoToolCall) and not isinstance(second, _NoToolCall)
        how = ("takes neither a structured answer (output_config.format) nor a forced tool call "
               "(tool_choice)" if refused else
               "records nothing either way Cairn asks (a structured answer, a forced tool "
               "call)")
        return (f"The knowledge model '{model}' on {who} {how}, so it cannot update "
                "knowledge; the documents are unchanged. Choose another knowledge model in "
                "Settings or with `cairn settings set model.knowledge MODEL`.")

    def _other_shape(self, error: BaseException, shape: str, model: str, *,
                     known: bool) -> str | None:
        """The shape to try after *error*: only when the server said *shape* itself is not
        supported (anywhere in its words: a proxy wraps them), or when a model nobody
        described answered it with no ops at all; never a forced tool for a model that
        refuses one (today's models)."""
        from app.llm.requests import unsupported_shape

        info = self.catalog.info(model)
        undescribed = info is None or not info.described
        if isinstance(error, _Unread):
            if known or not undescribed:
                return None  # it answered so before: the model's own slip, not the shape
            return "tool" if shape == "structured" else "structured"
        if unsupported_shape(error) != shape:
            return None  # another refusal (a schema, a limit): the other shape would not help
        if shape == "structured":
            return None if info is not None and info.refuses_forced_tool else "tool"
        return None if info is not None and info.described and not info.structured_outputs \
            else "structured"

    def _request(self, model: str, layers: list[Layer], chain: list[Any], exchanges: list[Turn],
                 template: str) -> dict[str, Any]:
        """The knowledge call's system prompt and message (on a worker thread).  The system
        part is the stable instructions, marked for caching; what changes is the message."""
        system = system_prompt(template, personal=any(la.key == "personal" for la in layers))
        titles = [layer.workspace.title for layer in chain]
        content = prompt_message(
            layers=layers, project=titles[0] if titles else None,
            folder=titles[-1] if len(titles) > 1 else None,
            middle=[(layer.workspace.title, layer.knowledge) for layer in chain[1:-1]],
            turns=exchanges, today=self._today().isoformat())
        return {"model": model,
                "system": [{"type": "text", "text": system,
                            "cache_control": {"type": "ephemeral"}}],
                "messages": [{"role": "user", "content": content}]}

    async def _call(self, request: dict[str, Any], shape: str, targets: list[str]) -> Reply:
        """One knowledge call, in the shape the model takes: structured output or forced tool.
        The SDK builds, sends and parses it on the network thread."""
        from app.llm.client import request_options
        from app.llm.requests import complete

        info = self.catalog.info(request["model"])
        options = request_options(info, effort=self.settings.get("model.knowledge_effort"),
                                  max_tokens=MAX_OUTPUT_TOKENS)
        options.pop("thinking", None)  # the model's default: today's models think by themselves
        if shape == "structured":
            config = dict(options.pop("output_config", {}))
            config["format"] = {"type": "json_schema", "schema": ops_schema(targets)}
            options["output_config"] = config
        else:
            options.pop("output_config", None)  # a forced tool: nothing a legacy model refuses
            options["tools"] = [update_tool(targets)]
            options["tool_choice"] = {"type": "tool", "name": "update_knowledge"}
        client = await asyncio.to_thread(self._client)  # the keychain, maybe the SDK's import
        listener = retry_listener.get()

        async def call() -> Reply:
            from app.llm import client as limits

            token = limits.retry_listener.set(listener)  # (on the network thread's task)
            try:
                return await complete(client, {**request, **options})
            finally:
                limits.retry_listener.reset(token)

        return await self._network.run(call)

    def _save_result(self, chat_id: str, changes: list[Change], notes: dict[str, str | None],
                     watermark: int, suggestions: list[Proposed]) -> bool:
        """The changed documents, the watermark, the owners' last success and the
        suggestions in one transaction, if no document moved on meanwhile (storage thread)."""
        for change in changes:  # an edit of CAIRN.md made meanwhile is a hand save: it wins
            self.knowledge.get(change.owner)
        saved = self.knowledge.save_rebuild(changes, chat_id=chat_id, covered=watermark,
                                            notes=notes, suggestions=suggestions)
        if saved:
            self.registry.hub.emit(RebuildApplied(chat_id, tuple(c.owner for c in changes)))
        return saved

    def _set_watermark(self, chat_id: str, message_id: int) -> None:
        watermarks.advance(self.registry.db, chat_id, message_id)

    def _record_error(self, owners: Iterable[str], sentence: str, *, chat_id: str) -> None:
        self.knowledge.record_failure(owners, sentence)
        self.registry.hub.emit(RebuildFailed(chat_id, sentence))


class _NoToolCall(Exception):
    """The model answered, but not with the ops (no tool call, no JSON, malformed input)."""


class _Unread(_NoToolCall):
    """The answer held no ops at all (no tool call, no JSON): a server may have ignored the
    shape it was asked for."""


class _Unusable(_NoToolCall):
    """Neither shape works with this model on this server: said with what to change."""


def _answer(response: Any, shape: str) -> tuple[object, int]:
    """The ops the knowledge model answered, and its output tokens; :class:`_NoToolCall`
    when it answered anything else."""
    if getattr(response, "stop_reason", None) == "refusal":
        # The same exchange would be declined again: say what to change, promise nothing.
        raise _NoToolCall("The knowledge model declined to record anything; the documents "
                          "are unchanged. If it keeps declining, choose another knowledge "
                          "model in Settings or with `cairn settings set model.knowledge "
                          "MODEL`.")
    if shape == "structured":
        answer: object = _json_answer(response)
    else:
        call = next((b for b in response.content if getattr(b, "type", "") == "tool_use"
                     and b.name == "update_knowledge"), None)
        if call is None:
            raise _Unread("The knowledge model answered without recording anything; "
                              "the documents are unchanged and the next turn tries again.")
        answer = call.input
    if getattr(response, "stop_reason", None) == "max_tokens":
        # A longer exchange next turn would be cut off again: say what to change.
        raise _NoToolCall("The knowledge model's answer was cut off before it ended; the "
                          "documents are unchanged. If it happens again, choose a knowledge "
                          "model that writes longer answers in Settings or with `cairn "
                          "settings set model.knowledge MODEL`.")
    if isinstance(answer, str):  # some compatible servers send the JSON as text
        try:
            answer = json.loads(answer)
        except json.JSONDecodeError:
            answer = None
    if not isinstance(answer, dict) or not isinstance(answer.get("ops"), list):
        raise _Unread("The knowledge model's answer was malformed; the documents are "
                          "unchanged and the next turn tries again.")
    return answer, int(getattr(response.usage, "output_tokens", 0) or 0)


def _json_answer(response: Reply) -> object:
    """The JSON a structured-output answer holds in its text (thinking blocks aside)."""
    text = "".join(getattr(b, "text", "") for b in response.content
                   if getattr(b, "type", "") == "text")
    if not text.strip():
        raise _Unread("The knowledge model answered without recording anything; the "
                          "documents are unchanged and the next turn tries again.")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None


def _joined(first: str | None, second: str | None) -> str | None:
    return " ".join(filter(None, (first, second))) or None


def _chunk(backlog: list[Exchange], places: list[str | None]) -> list[Exchange]:
    """The next exchanges to learn together: bounded, and all said in one place."""
    chunk: list[Exchange] = []
    size = 0
    for exchange, place in zip(backlog, places, strict=True):
        cost = len(exchange.user) + len(exchange.reply)
        if chunk and (len(chunk) >= CHUNK_EXCHANGES or size + cost > CHUNK_CHARS
                      or place != places[0]):
            break
        chunk.append(exchange)
        size += cost
    return chunk
