"""Knowledge documents: read, save, restore, their history and comparisons, their status, and
the suggestions a rebuild left.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.knowledge.merge import Hunk, Merged
    from app.knowledge.status import OwnerKnowledge
    from app.store.documents import Conflict, Document, Saved, Version
    from app.store.suggestions import Suggestion

log = logging.getLogger(__name__)

T = TypeVar("T")


class KnowledgeOperations(Part):
    """Knowledge documents: read, save, restore, their history and comparisons, their status, and"""

    async def document(self, owner: str) -> Document:
        return await self.read(lambda: self.cairn.knowledge.get(owner))

    async def save_knowledge(self, owner: str, text: str, *, based_on: int | None
                             ) -> tuple[Saved | Conflict, Changes]:
        """The editor's save: ``Conflict`` when a rebuild wrote a newer version meanwhile."""
        return await self.run(lambda: self.cairn.knowledge.save(owner, text, source="user",
                                                                based_on=based_on))

    async def keep_knowledge(self, owner: str, text: str, *, based_on: int, opened_at: int
                             ) -> tuple[Saved | Conflict, Changes]:
        """"Keep mine" (``KnowledgeStore.keep_mine``): the chats whose rebuild results it
        replaces are rebuilt now, on top of the person's text."""
        (result, relearn), changes = await self.run(lambda: self.cairn.knowledge.keep_mine(
            owner, text, based_on=based_on, opened_at=opened_at))
        self.cairn.scheduler.rebuild_now(relearn)
        return result, changes

    async def restore_knowledge(self, owner: str, version: int) -> tuple[Document, Changes]:
        return await self.run(lambda: self.cairn.knowledge.restore(owner, version))

    async def history(self, owner: str) -> list[Version]:
        return await self.read(lambda: self.cairn.knowledge.history(owner))

    async def diff(self, owner: str, old: int, new: int) -> str:
        return await self.read(lambda: self.cairn.knowledge.diff(owner, old, new))

    async def version_text(self, owner: str, version: int) -> str:
        """A saved version's text ('' for version 0, before the first save)."""
        if version == 0:
            return ""
        return await self.read(lambda: self.cairn.knowledge.version_text(owner, version))

    async def compare(self, owner: str, old: int, new: int) -> list[Hunk]:
        """Two saved versions as the hunks a diff view shows (version 0: empty)."""
        from app.knowledge.merge import compare

        store = self.cairn.knowledge

        def work() -> list[Hunk]:
            before = store.version_text(owner, old) if old else ""
            after = store.version_text(owner, new) if new else ""
            return compare(before, after)

        return await self.read(work)

    async def compare_texts(self, old: str, new: str) -> list[Hunk]:
        from app.knowledge.merge import compare

        return await self.read(lambda: compare(old, new))

    async def merge_knowledge(self, owner: str, base: int, mine: str) -> tuple[Merged, Document]:
        """The changes made since version *base* put into *mine* (``merge3``), with the
        current document they came from: the editor then saves on that version."""
        from app.knowledge.merge import merge3

        store = self.cairn.knowledge

        def work() -> tuple[Merged, Document]:
            current = store.get(owner)
            before = store.version_text(owner, base) if base else ""
            return merge3(before, mine, current.text), current

        return await self.read(work)

    async def knowledge_status(self, owner: str) -> OwnerKnowledge:
        """What the knowledge panel says about *owner*'s document (``app.knowledge.status``)."""
        from app.knowledge.status import owner_knowledge

        return await self.read(
            lambda: owner_knowledge(self.cairn.registry, self.cairn.rebuilder, owner))

    async def suggestions(self, owner: str) -> list[Suggestion]:
        """What waits for the person to decide about *owner*'s document
        (``app.knowledge.suggestions``)."""
        return await self.read(lambda: self.cairn.knowledge.suggestions([owner]))

    async def accept_suggestion(self, suggestion_id: int, *, edited: str | None = None
                                ) -> tuple[Document, Changes]:
        """Apply a suggestion as the person's save (in their words when *edited*)."""
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.accept(self.cairn.knowledge, suggestion_id,
                                                         edited=edited))

    async def dismiss_suggestion(self, suggestion_id: int) -> tuple[Suggestion, Changes]:
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.dismiss(self.cairn.knowledge, suggestion_id))

    async def undo_dismiss_suggestion(self, suggestion: Suggestion
                                      ) -> tuple[Suggestion, Changes]:
        from app.knowledge import suggestions

        return await self.run(lambda: suggestions.undo_dismiss(self.cairn.knowledge,
                                                               suggestion))

    async def retry_knowledge(self, owner: str) -> int:
        """"Retry now" (``KnowledgeScheduler.retry``): how many chats' rebuilds started."""
        return await self.cairn.scheduler.retry(owner)
