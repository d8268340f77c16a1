"""The one task runner: the window's async work (mostly :class:`~app.ops.Operations` calls)
started on the running qasync loop from a click.

Each widget that starts work owns a :class:`TaskRunner`.  It keeps every task referenced until
it ends (the loop holds tasks only weakly), cancels what still runs when its owner goes, and
says how a task ended the way the window says everything: a refusal
(:class:`~app.errors.CairnError`) as the core's one sentence, anything else logged and told as
one sentence naming its kind.  A widget handed its parent's runner takes its ``run`` as a
:data:`RunTask`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import shiboken6
from PySide6.QtCore import QObject

from app.errors import CairnError

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

T = TypeVar("T")

RunTask: TypeAlias = "Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]"
"""Start a coroutine as a task that is kept, cancelled with its owner, and whose refusal is
said: what a widget is given to run its work (``TaskRunner.run``)."""

FAILURE = ("Something went wrong ({kind}); nothing was changed. The log folder has the "
           "details.")


class TaskRunner:
    """Runs coroutines as tasks on the running loop, on behalf of *owner* (a widget).

    *say* hears one sentence per task that did not end well; *failure* is the sentence for an
    unexpected error (``{kind}`` is its class name).  Once *owner* is destroyed, the tasks
    still running are cancelled and nothing more is said or done for them.
    """

    def __init__(self, say: Callable[[str], object], *, owner: QObject | None = None,
                 failure: str = FAILURE) -> None:
        self._say = say
        self._owner = owner
        self._failure = failure
        self._tasks: set[asyncio.Task[Any]] = set()
        if owner is not None:
            tasks = self._tasks  # (not self: the lambda must not keep the runner's owner alive)
            owner.destroyed.connect(lambda *_: [task.cancel() for task in list(tasks)])

    # ================================================================= public

    def run(self, work: Coroutine[Any, Any, T],
            then: Callable[[T], object] | None = None) -> asyncio.Task[T]:
        """Start *work*; *then* gets its result when it ended well (and the owner lives)."""
        import asyncio  # (not at the top: the window paints before asyncio is loaded)

        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._finished(done, then))
        return task

    def tasks(self) -> frozenset[asyncio.Task[Any]]:
        """The tasks still running (tests wait for them)."""
        return frozenset(self._tasks)

    def cancel(self) -> None:
        """Cancel every task still running."""
        for task in list(self._tasks):
            task.cancel()

    # ================================================================= private

    def _finished(self, task: asyncio.Task[T], then: Callable[[T], object] | None) -> None:
        self._tasks.discard(task)
        if task.cancelled() or (self._owner is not None and not shiboken6.isValid(self._owner)):
            return
        error = task.exception()
        if isinstance(error, CairnError):
            self._say(str(error))
        elif error is not None:
            log.error("a window task failed", exc_info=error)
            self._say(self._failure.format(kind=type(error).__name__))
        elif then is not None:
            then(task.result())


class Recurring:
    """A background job a timer starts again and again (the catch-up with other processes,
    the CAIRN.md watcher), never two runs at once.

    A run that never ends would keep the job "busy" for good, and the window would stop
    following what changes outside it: asyncio drops a task's step for good when it comes due
    while another task runs a nested event loop (``RuntimeError: Cannot enter into task``).
    So a run still unfinished after *patience* ticks is given up (logged, cancelled) and the
    next tick starts afresh.  *patience* is counted in ticks, not time: a slow run on a busy
    machine is waited for as long as the timer's interval times *patience*.
    """

    def __init__(self, run: RunTask, work: Callable[[], Coroutine[Any, Any, Any]], *,
                 name: str, patience: int = 60) -> None:
        self._run = run
        self._work = work
        self._name = name
        self._patience = patience
        self._task: asyncio.Task[Any] | None = None
        self._waited = 0

    # ================================================================= public

    def tick(self) -> bool:
        """Start a run unless one is under way (and still alive); whether one started."""
        task = self._task
        if task is not None and not task.done():
            self._waited += 1
            if self._waited < self._patience:
                return False
            log.warning("the %s has not ended in %d ticks: started again", self._name,
                        self._waited)
            task.cancel()
        self._waited = 0
        self._task = self._run(self._work())
        return True

    def busy(self) -> bool:
        """Whether a run is under way."""
        return self._task is not None and not self._task.done()
