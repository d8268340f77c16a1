"""Live work on chats: what is running right now, so that archiving can refuse or stop it.

The chat engine registers a ``turn`` while a reply streams; the knowledge scheduler registers a
``background job`` while it rebuilds for a chat.  Nothing here is stored: live work dies with
the process.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

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
