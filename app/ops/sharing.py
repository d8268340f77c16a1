"""Sharing: a workspace exported as a bundle, a bundle checked and imported, a chat as Markdown.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.sharing.chat_markdown import ChatExported
    from app.sharing.export import Exported
    from app.sharing.importing import Imported

log = logging.getLogger(__name__)

T = TypeVar("T")


class SharingOperations(Part):
    """Sharing: bundles exported, checked and imported; a chat as Markdown."""

    async def export_workspace(self, ws_id: str, target: Path, *, with_chats: bool = False,
                               with_history: bool = False, replace: bool = False
                               ) -> tuple[Exported, Changes]:
        """Write a ``.cairn`` bundle (reads, hashes and zips: seconds for a large one).
        *replace* once the person agreed to overwrite an existing file."""
        from app.sharing.export import export_workspace

        return await self.run(lambda: export_workspace(
            self.cairn.registry, ws_id, target, with_chats=with_chats,
            with_history=with_history, replace=replace))

    async def check_bundle(self, source: Path) -> str:
        """Check a ``.cairn`` bundle before anything is asked or written: the title of the
        workspace it holds (refused with the import's own sentence)."""
        from app.sharing.importing import check_bundle

        title, _ = await self.run(lambda: check_bundle(source))
        return title

    async def import_bundle(self, source: Path, folder: str) -> tuple[Imported, Changes]:
        """Open a ``.cairn`` bundle into *folder* as a new workspace; the registry reloads
        (one ``Reset``) once it committed."""
        from app.sharing.importing import import_bundle

        return await self.run(lambda: import_bundle(self.cairn.registry, source, folder))

    async def export_chat(self, chat_id: str, target: Path, *, replace: bool = False
                          ) -> ChatExported:
        """One chat as a Markdown file (``app.sharing.chat_markdown``, as ``cairn chat
        export``)."""
        from app.sharing.chat_markdown import export_chat

        return await self.read(lambda: export_chat(
            self.cairn.registry, self.cairn.chats, chat_id, target, replace=replace))
