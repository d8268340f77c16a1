"""When rebuilds run: after a chat has been idle, when the person leaves it, and at quit.

A qualifying exchange (a reply of at least 80 characters) arms the chat's idle timer; another
turn re-arms it.  One rebuild at a time per project (they share documents), and a small bound
across projects.  A rebuild that lost to a hand edit runs again at once, on top of it; a
failed one waits for the next turn (never a retry loop), and so does a stopped one
(stop-and-archive): a stop is never undone behind the person's back.  Nothing here ever holds
up a reply.

It says ``RebuildQueued`` when a rebuild is armed or asked for, and ``RebuildFailed`` when one
ended with an error of its own (the rebuilder says the model's failures); on the loop's thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from app.base.live import TURN
from app.errors import CairnError
from app.events import RebuildFailed, RebuildQueued
from app.knowledge.rebuild import Rebuilder, Report
from app.knowledge.status import owner_knowledge
from app.store.registry.registry import Registry
from app.store.settings import Settings

log = logging.getLogger(__name__)

ACROSS_PROJECTS = 2


class KnowledgeScheduler:
    def __init__(self, rebuilder: Rebuilder, registry: Registry, settings: Settings) -> None:
        self._rebuilder = rebuilder
        self._registry = registry
        self._settings = settings
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: dict[str, asyncio.Task[Report]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._bound = asyncio.Semaphore(ACROSS_PROJECTS)
        self._again: set[str] = set()  # triggered while their rebuild was running
        self._draining = False  # quitting: finish what runs, start nothing new
        self.listeners: list[Callable[[Report], None]] = []

    # ----------------------------------------------------------------- triggers

    def turn_started(self, chat_id: str) -> None:
        """The chat is busy again: it is not idle, so its timer starts over after the turn."""
        self._cancel_timer(chat_id)

    def exchange_finished(self, chat_id: str) -> None:
        """A turn ended: rebuild once the chat has been idle for the configured delay."""
        self._cancel_timer(chat_id)
        delay = float(self._settings.get("knowledge.idle_seconds"))
        loop = asyncio.get_running_loop()
        self._timers[chat_id] = loop.call_later(delay, self.run_now, chat_id)
        self._registry.hub.emit(RebuildQueued(chat_id))

    def chat_left(self, chat_id: str) -> None:
        """The person moved to another chat: no reason to wait."""
        if chat_id in self._timers:
            self.run_now(chat_id)

    def run_now(self, chat_id: str) -> asyncio.Task[Report]:
        timed = self._cancel_timer(chat_id)  # (its RebuildQueued was said when it was armed)
        running = self._tasks.get(chat_id)
        if running is not None and not running.done():
            if chat_id not in self._again:
                self._again.add(chat_id)  # it may have read the chat before this exchange
                self._registry.hub.emit(RebuildQueued(chat_id))
            return running
        if not timed:
            self._registry.hub.emit(RebuildQueued(chat_id))
        return self._start(chat_id)

    async def retry(self, owner: str) -> int:
        """"Retry now": rebuild at once the chats with exchanges waiting for *owner*'s
        document (``app.knowledge.status``); how many were started."""
        state = await self._rebuilder.storage.run(owner_knowledge, self._registry,
                                                  self._rebuilder, owner)
        return self.rebuild_now(state.chats)

    def rebuild_now(self, chat_ids: Iterable[str]) -> int:
        """Rebuild each of *chat_ids* at once, because the person asked (Retry now, Keep
        mine); a chat removed meanwhile is skipped.  How many were started."""
        started = 0
        for chat_id in chat_ids:
            if self._registry.chat(chat_id) is not None:
                self.run_now(chat_id)
                started += 1
        return started

    def resume(self) -> None:
        """At start: chats whose exchanges no rebuild covered yet (the app quit first)."""
        for chat_id in self._rebuilder.waiting():
            self.run_now(chat_id)

    async def drain(self, timeout: float) -> None:
        """At quit: run what is waiting, for at most *timeout* seconds; the rest resumes later."""
        for chat_id in list(self._timers):
            self.run_now(chat_id)
        self._draining = True  # from here on nothing new starts
        self._again.clear()
        tasks = [t for t in self._tasks.values() if not t.done()]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    # ----------------------------------------------------------------- running

    async def _run(self, chat_id: str) -> Report:
        if TURN in self._registry.live.kinds(chat_id):
            return Report(chat_id)  # mid-turn: the turn's end arms the timer again
        # The project's lock first: a project waiting on itself must not hold a slot that
        # another project could use.
        lock = self._locks.setdefault(self._project_of(chat_id), asyncio.Lock())
        async with lock, self._bound:
            # (a rebuild a hand edit superseded runs once more on top of it by itself)
            report = await self._rebuilder.rebuild(chat_id)
            if report.status == "superseded":
                # Another hand edit meanwhile: queued again, as a new run (so one edit after
                # another never drops the rebuild, and each run waits its turn for the lock).
                self._again.add(chat_id)
        if report.status == "stopped":  # on purpose: nothing runs again until the next turn
            self._again.discard(chat_id)
            self._cancel_timer(chat_id)
        for listener in list(self.listeners):
            try:
                listener(report)
            except Exception:  # one broken listener must not hide the report from the others
                log.exception("a rebuild listener failed")
        return report

    def _start(self, chat_id: str) -> asyncio.Task[Report]:
        task = asyncio.get_running_loop().create_task(self._run(chat_id))
        self._tasks[chat_id] = task
        task.add_done_callback(lambda done: self._finished(chat_id, done))
        return task

    def _finished(self, chat_id: str, task: asyncio.Task[Report]) -> None:
        if self._tasks.get(chat_id) is task:
            del self._tasks[chat_id]
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None:  # never silent: say it, and let the next turn retry
            log.error("rebuild for %s stopped", chat_id, exc_info=failure)
            sentence = (str(failure) if isinstance(failure, CairnError) else
                        "The knowledge update failed unexpectedly; the documents are unchanged "
                        "and the next turn tries again.")
            self._registry.hub.emit(RebuildFailed(chat_id, sentence))
        if chat_id in self._again and not self._draining:
            self._again.discard(chat_id)
            self._start(chat_id)

    def _project_of(self, chat_id: str) -> str:
        chat = self._registry.chat(chat_id)
        ws_id = chat.workspace_id if chat else None
        while ws_id is not None and self._registry.parent_of(ws_id) is not None:
            ws_id = self._registry.parent_of(ws_id)
        return ws_id or "personal"  # Ungrouped chats can only touch personal memory

    def _cancel_timer(self, chat_id: str) -> bool:
        """True when a timer was armed."""
        timer = self._timers.pop(chat_id, None)
        if timer is not None:
            timer.cancel()
        return timer is not None
