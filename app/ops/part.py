"""What every part of the operations shares: :class:`Changes` (what one operation changed), and
:class:`Part`, a domain's operations run through the one composition's storage thread.

A part holds the :class:`Runner` it was given (the :class:`~app.ops.Operations` that built it)
and nothing else: it reads ``cairn``, ``run`` and ``read`` through it at each call, so the
parts share no state of their own and a test that replaces ``ops.run`` reaches them all.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypeVar

from app.events import Event

if TYPE_CHECKING:
    from app.cairn import Cairn

T = TypeVar("T")
E = TypeVar("E", bound=Event)


@dataclass(frozen=True, slots=True)
class Changes:
    """What one operation changed, as the events it emitted after its commits."""

    events: tuple[Event, ...] = ()

    def of(self, kind: type[E]) -> tuple[E, ...]:
        return tuple(e for e in self.events if isinstance(e, kind))

    def __bool__(self) -> bool:
        return bool(self.events)


class Runner(Protocol):
    """The machinery a part runs on: the core, the storage thread, its reads."""

    @property
    def cairn(self) -> Cairn: ...

    async def run(self, work: Callable[[], T]) -> tuple[T, Changes]: ...

    async def read(self, work: Callable[[], T]) -> T: ...


class Part:
    """One domain's operations over the runner that built it."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner

    @property
    def cairn(self) -> Cairn:
        return self._runner.cairn

    async def run(self, work: Callable[[], T]) -> tuple[T, Changes]:
        """Run *work* on the storage thread; the events it emitted there come back with it."""
        return await self._runner.run(work)

    async def read(self, work: Callable[[], T]) -> T:
        """A read that touches the disk, off the caller's thread."""
        return await self._runner.read(work)


async def on_a_thread_of_its_own(work: Callable[[], T], name: str) -> T:
    """``work()`` on a new daemon thread, awaited: for what can take seconds or hang (an
    import, the keychain) and must neither queue the storage thread's work nor hold up
    quitting (a pool's worker is joined at exit; a daemon thread is not)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)  # type: ignore[arg-type]

    def body() -> None:
        result: T | None = None
        error: BaseException | None = None
        try:
            result = work()
        except BaseException as raised:  # handed to the awaiting task
            error = raised
        try:
            loop.call_soon_threadsafe(settle, result, error)
        except RuntimeError:  # the loop closed meanwhile (quitting): nobody waits
            pass

    threading.Thread(target=body, name=name, daemon=True).start()
    return await done
