"""Live work on chats: what is running right now, so that archiving can refuse or stop it,
and the one storage thread that running work stores on.

The chat engine registers a ``turn`` while a reply streams; the rebuild registers a
``background job`` while it rebuilds for a chat.  Nothing here is stored: live work dies with
the process.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

TURN = "turn"
HELPER = "helper"
BACKGROUND_JOB = "background job"
REMINDER = "reminder"
# The order kinds are named in messages: the chat's own turn first, as spec 004 lists them.
KINDS: tuple[str, ...] = (TURN, HELPER, BACKGROUND_JOB, REMINDER)


@dataclass(frozen=True, slots=True)
class Work:
    """One running piece of work; ``stop`` asks it to stop (e.g. ``task.cancel``)."""

    chat_id: str
    kind: str
    stop: Callable[[], object]
    token: int  # tells apart two pieces of the same kind on the same chat


class LiveWork:
    """A thread-safe registry of running work, keyed by chat id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._work: dict[int, Work] = {}
        self._tokens = itertools.count(1)

    def begin(self, chat_id: str, kind: str, stop: Callable[[], object]) -> Work:
        """Record that *kind* runs for *chat_id*; call :meth:`end` with the result when done."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of live work: {kind!r}")
        with self._lock:
            work = Work(chat_id, kind, stop, next(self._tokens))
            self._work[work.token] = work
            return work

    def end(self, work: Work) -> None:
        with self._lock:
            self._work.pop(work.token, None)

    def kinds(self, chat_id: str) -> list[str]:
        """The distinct kinds running for a chat, in the order of :data:`KINDS`."""
        with self._lock:
            running = {w.kind for w in self._work.values() if w.chat_id == chat_id}
        return [kind for kind in KINDS if kind in running]

    def stop(self, chat_id: str) -> list[Exception]:
        """Ask every piece of work on a chat to stop; failures are logged and returned."""
        with self._lock:
            running = [w for w in self._work.values() if w.chat_id == chat_id]
        failures: list[Exception] = []
        for work in running:
            try:
                work.stop()
            except Exception as error:  # a failed stop must never undo what the caller did
                log.warning("could not stop %s of chat %s: %s", work.kind, chat_id, error)
                failures.append(error)
        return failures


class Stopped(Exception):
    """Stop was asked for: the work ends where it is, keeping what it already stored."""


class Stopper:
    """How long-running work stops: a flag, and the one awaited step (a stream, a model call)
    that a stop interrupts by cancelling it.

    Only that step is cancelled, never the task running the work: the work itself decides
    what to keep, stores it, and ends with a result (calibre's abort event, not a kill).
    ``stop`` is safe from any thread, any number of times.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._stopped = threading.Event()
        self._step: asyncio.Future[object] | None = None

    @property
    def stopped(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._interrupt()
        elif not self._loop.is_closed():  # from another thread: the loop cancels, not us
            self._loop.call_soon_threadsafe(self._interrupt)

    def check(self) -> None:
        """Raise :class:`Stopped` when a stop was asked for."""
        if self._stopped.is_set():
            raise Stopped

    async def step(self, work: Awaitable[T]) -> T:
        """Await *work* as the part a stop interrupts; :class:`Stopped` when it did."""
        future: asyncio.Future[T] = asyncio.ensure_future(work)
        if self._stopped.is_set():
            future.cancel()
        self._step = future  # type: ignore[assignment]
        try:
            await asyncio.wait({future})
        except asyncio.CancelledError:  # the task itself was cancelled: take the step along
            future.cancel()
            await asyncio.wait({future})
            if not future.cancelled():
                future.exception()  # seen: its failure no longer matters
            raise
        finally:
            self._step = None
        if future.cancelled():
            raise Stopped
        return future.result()

    def _interrupt(self) -> None:
        if self._step is not None and not self._step.done():
            self._step.cancel()


class StorageThread:
    """One thread for the storage work of turns and rebuilds (Anki's collection thread).

    A commit with ``synchronous=FULL`` waits for the disk; run here, it never holds up the
    event loop, and the writes of a turn and of a rebuild land one after another, in the
    order they were asked for (the ``Database.write`` lock still keeps one writer across
    threads).  Work already started always finishes: cancelling the awaiting task does not
    undo a write, so state that belongs to a write is updated inside the same call.
    """

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-storage")

    @property
    def executor(self) -> Executor:
        """The thread itself, for callers that queue work on it their own way (``ops``)."""
        return self._executor

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the storage thread, awaited."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def close(self) -> None:
        """Finish what was asked for, then let the thread go."""
        self._executor.shutdown(wait=True)
