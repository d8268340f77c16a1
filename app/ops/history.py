"""History from Claude.ai and ChatGPT: preview, import, and learning from imported chats.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app.ops.part import Part

if TYPE_CHECKING:
    from app.history.importing import Preview, Progress, Report
    from app.knowledge.imported import Backlog

log = logging.getLogger(__name__)

T = TypeVar("T")


class HistoryOperations(Part):
    """History from Claude.ai and ChatGPT: preview, import, and learning from imported chats."""

    async def preview_history(self, source: Path, *, folders: dict[str, str] | None = None,
                              into: str | None = None) -> Preview:
        """What a Claude.ai or ChatGPT export holds (every bound checked: it reads the whole
        export, so it runs on a thread of its own, never holding up the writer)."""
        from app.history.importing import preview

        registry = self.cairn.registry
        return await asyncio.to_thread(lambda: preview(registry, source, folders=folders,
                                                       into=into))

    async def import_history(self, source: Path, *, folders: dict[str, str] | None = None,
                             into: str | None = None,
                             progress: Callable[[Progress], object] | None = None,
                             stop: threading.Event | None = None) -> Report:
        """Import an export (``app.history.importing``) on a thread of its own: its batches
        take the writer in turn with every other change.  *progress* hears each chat read,
        on the caller's loop.  *stop* set: the batch read so far is stored and the report
        says the import stopped.  Cancelling the task stops it the same way (and waits for
        that batch, so what was imported stays whole)."""
        from app.history.importing import import_history

        cairn = self.cairn
        stop = stop or threading.Event()
        loop = asyncio.get_running_loop()

        def tick(p: Progress) -> None:
            if progress is not None:
                loop.call_soon_threadsafe(progress, p)

        work = loop.run_in_executor(None, lambda: import_history(
            cairn.registry, cairn.files, source, folders=folders, into=into, progress=tick,
            stop=stop))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            stop.set()
            await asyncio.wait([work])
            raise

    async def imported_backlog(self, ws_id: str) -> Backlog:
        """What learning the workspace's imported chats would take, and cost (reads)."""
        from app.knowledge.imported import backlog

        cairn = self.cairn
        model = str(cairn.settings.get("model.knowledge"))
        result, _ = await self.run(lambda: backlog(cairn.registry, cairn.chats, model, ws_id))
        return result

    async def learn_imported(self, plan: Backlog,
                             progress: Callable[[int, int], object] | None = None) -> int:
        """Learn from *plan*'s imported chats, one at a time, in the background; cancel the
        task to stop (what was learned stays).  How many chats were learned."""
        from app.knowledge.imported import learn

        return await learn(self.cairn.registry, self.cairn.rebuilder, plan, progress)
