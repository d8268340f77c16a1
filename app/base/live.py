"""Live work on chats: what is running right now, so that archiving can refuse or stop it,
the one storage thread that running work stores on, and the one network thread where every
model call runs.

The chat engine registers a ``turn`` while a reply streams; the rebuild registers a
``background job`` while it rebuilds for a chat.  Nothing here is stored: live work dies with
the process.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import itertools
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

TURN = "turn"
HELPER = "helper"
BACKGROUND_JOB = "background job"
REMINDER = "reminder"
# The order kinds are named in messages: the chat's own turn first.
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
        self._fences: dict[str, int] = {}  # chats a change is archiving or moving right now

    def begin(self, chat_id: str, kind: str, stop: Callable[[], object], *,
              fenced: Callable[[], Exception] | None = None) -> Work:
        """Record that *kind* runs for *chat_id*; call :meth:`end` with the result when done.

        With *fenced*, work that must not start while the chat is being archived or moved
        (a turn) raises what *fenced* makes instead of starting."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind of live work: {kind!r}")
        with self._lock:
            if fenced is not None and chat_id in self._fences:
                raise fenced()
            work = Work(chat_id, kind, stop, next(self._tokens))
            self._work[work.token] = work
            return work

    def fence(self, chat_id: str) -> list[str]:
        """Hold off fenced work on *chat_id* until :meth:`unfence`: one step with reading the
        kinds running, so nothing can start between a check and the change it allows.
        Returns the kinds running (the caller unfences and refuses when there are any)."""
        with self._lock:
            self._fences[chat_id] = self._fences.get(chat_id, 0) + 1
            running = {w.kind for w in self._work.values() if w.chat_id == chat_id}
        return [kind for kind in KINDS if kind in running]

    def unfence(self, chat_id: str) -> None:
        with self._lock:
            left = self._fences.get(chat_id, 0) - 1
            if left > 0:
                self._fences[chat_id] = left
            else:
                self._fences.pop(chat_id, None)

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


@contextmanager
def collector_held() -> Iterator[None]:
    """The cyclic collector off while a burst of long-lived objects is made (the SDK's
    import, ~150,000 objects), and what was made frozen before it is back on.  Every pass of
    the collector walks the objects it tracks holding the interpreter lock, on whichever
    thread it runs, and the event loop waits as long: left young, the import's objects made
    its first pass after the import take 55 ms."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


SWITCH_INTERVAL = 0.001  # seconds a thread may keep the interpreter lock when another asks
_settled = False
_settled_lock = threading.Lock()


def settle_interpreter() -> None:
    """Start-up is over (the registry read, the SDK imported): make the interpreter fair to
    the event loop while model calls, rebuilds and storage run on threads beside it.  Once
    per process; the chat engine calls it when it makes its first client.

    - ``gc.freeze()``: what start-up made (the SDK's modules alone are ~150,000 objects) is
      taken out of the cyclic collector's sight.  A full collection walks every tracked
      object holding the interpreter lock, on whichever thread it happens to run, and took
      100–200 ms with the SDK loaded on a 2-core machine: the loop waited as long.  Frozen
      objects are still freed by reference counting; only cycles among them stay.
    - ``sys.setswitchinterval(0.001)``: a thread running Python (validating a rebuild,
      parsing a stream) hands the lock over within about 1 ms of the loop asking, not 5 ms;
      the loop asks after every wait, so this bounds most of its lateness.
    """
    global _settled
    with _settled_lock:
        if _settled:
            return
        _settled = True
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)


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


class NetworkThread:
    """One thread with an event loop of its own, where every model call runs: the SDK builds,
    checks and JSON-encodes a request there (tens of milliseconds for a long chat), streams
    the reply and parses each event, so none of it holds up the caller's loop (the window's).

    The SDK's async client keeps its connections on the loop that opened them, so one client
    must only ever be used here: every call of Cairn's client goes through :meth:`run`.
    Started on first use (``cairn workspace list`` never starts it); a daemon thread, so an
    engine nobody closed never holds up the interpreter's exit.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    async def run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``await work()`` on the network thread, awaited here.

        *work* is called there, so the coroutine and everything it creates belong to that
        loop.  Cancelling the caller cancels the call there (closing a stream); the caller
        goes on at once, while the call winds down on its own thread.
        """
        loop = self._started()

        async def call() -> T:
            return await work()

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call(), loop))

    def close(self, last: Callable[[], Coroutine[Any, Any, object]] | None = None) -> None:
        """Run *last* there (closing a client's connections on the loop that owns them, for
        at most a few seconds), cancel what still runs, and let the thread go."""
        with self._lock:
            self._closed = True
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if last is not None:
            async def call() -> object:
                return await last()

            try:
                asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=5)
            except Exception:  # closing down: a client that will not close is let go
                log.debug("closing on the network thread failed", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise RuntimeError("the network thread is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=_serve, args=(loop,), name="cairn-network",
                                          daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The network thread: its loop runs until closed, then what is left is cancelled."""
    asyncio.set_event_loop(loop)
    try:
        loop.run_forever()
    finally:
        try:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        except Exception:  # closing down: nothing left to tell
            log.debug("the network thread did not close cleanly", exc_info=True)
        finally:
            loop.close()
