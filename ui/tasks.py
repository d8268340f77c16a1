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
