"""Find anything: titles and the search index, on a search thread of its own.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from app.errors import Refused
from app.ops.part import Part

if TYPE_CHECKING:
    from app.base.fuzzy import Match
    from app.store.search import Hit

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Found:
    """What the search box shows for *text*: titles first, then content."""

    text: str
    workspaces: list[Match[str]]
    chats: list[Match[str]]
    hits: list[Hit]
    refusal: str | None = None  # the sentence when the index cannot answer this text
    words: tuple[str, ...] = ()  # the words typed, as the query reads them (to highlight)


class SearchOperations(Part):
    """Find anything: titles and the search index, on a search thread of its own."""

    def _search_thread(self) -> Executor:
        """Searches run on a thread of their own: as-you-type queries never queue behind a
        write, and read through WAL without waiting for one."""
        executor: Executor | None = getattr(self, "_searcher", None)
        if executor is None:
            executor = self._searcher = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="cairn-search")
        return executor

    async def search(self, text: str, *, limit: int = 30) -> list[Hit]:
        """The best results for *text* (a refusal for what cannot be searched, the index's
        problem included)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.find(text, limit=limit))

    async def find_anything(self, text: str, *, limit: int = 30) -> Found:
        """The search box: workspace and chat titles matched fuzzily (from the registry's
        memory), then the index's results; a query the index refuses keeps the titles."""
        registry = self.cairn.registry

        def work() -> Found:
            from app.base import fuzzy

            workspaces = fuzzy.best(text, ((w.id, w.title) for w in registry.workspaces()),
                                    limit=5)
            listing = registry.chat_listing()
            live = {c.id: c.title for c in listing.pinned}  # (a pinned chat is listed twice)
            live.update((c.id, c.title) for _, cs in listing.workspaces for c in cs)
            live.update((c.id, c.title) for c in listing.ungrouped)
            chats = fuzzy.best(text, live.items(), limit=8)
            try:
                hits = self.cairn.search.find(text, limit=limit)
                refusal = None
            except Refused as refused:
                hits, refusal = [], str(refused)
            return Found(text, workspaces, chats, hits, refusal, self.words(text))

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_thread(), work)

    def words(self, text: str) -> tuple[str, ...]:
        """The words of *text* as a query reads them (what a view highlights); no I/O."""
        return self.cairn.search.words(text)

    async def find_in_chat(self, chat_id: str, text: str) -> list[int]:
        """The ids of the chat's messages that match *text*, oldest first (the whole chat)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.in_chat(chat_id, text))

    async def find_matches_in_chat(self, chat_id: str, text: str) -> list[tuple[int, int]]:
        """The chat's messages that match *text*, oldest first, each with its number of
        matches (``Search.in_chat_counted``)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._search_thread(), lambda: self.cairn.search.in_chat_counted(chat_id, text))

    async def search_problem(self) -> str | None:
        """The search index's start-up check: a sentence when it is missing or damaged."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._search_thread(), self.cairn.search.check)

    async def reindex(self) -> dict[str, int]:
        """Rebuild the search index from scratch, on the writer thread."""
        counts, _ = await self.run(self.cairn.search.reindex)
        return counts

    def close(self) -> None:
        """Queued searches dropped, the one running (whose index check may write) finished."""
        searcher: ThreadPoolExecutor | None = getattr(self, "_searcher", None)
        if searcher is not None:
            searcher.shutdown(wait=True, cancel_futures=True)
