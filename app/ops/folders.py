"""A workspace's folder: CAIRN.md kept in step (``CairnFileSync``), reveal and terminal, and
Claude's access to the folder.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.knowledge.cairn_file import FileState
    from app.knowledge.merge import Hunk
    from app.store.documents import Document

log = logging.getLogger(__name__)

T = TypeVar("T")


class FolderOperations(Part):
    """A workspace's folder: CAIRN.md kept in step (``CairnFileSync``), reveal and terminal, and"""

    async def knowledge_file(self, ws_id: str) -> FileState:
        """CAIRN.md for *ws_id*: on or off, and what the panel says about it (the read
        takes in an outside edit first)."""
        def work() -> FileState:
            self.cairn.cairn_file_sync.sync(ws_id)
            return self.cairn.cairn_file_sync.state(ws_id)

        return await self.read(work)

    async def switch_knowledge_file(self, ws_id: str, on: bool, *, keep: str | None = None
                                    ) -> tuple[FileState, Changes]:
        """The knowledge panel's switch (``CairnFileSync.switch``)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.switch(ws_id, on, keep=keep))

    async def knowledge_file_conflict(self, ws_id: str) -> bool:
        """Would turning CAIRN.md on meet a file of the folder that is not the document?"""
        return await self.read(lambda: self.cairn.cairn_file_sync.conflict(ws_id))

    async def adopt_knowledge_files(self, ws_ids: tuple[str, ...], *, keep: str | None = None
                                    ) -> tuple[list[str], Changes]:
        """After an import: CAIRN.md on where the bundle had it on; the ids whose folder has
        its own CAIRN.md are returned, to ask which to keep."""
        return await self.run(lambda: self.cairn.cairn_file_sync.adopt(ws_ids, keep=keep))

    async def restore_removed_entries(self, ws_id: str) -> tuple[Document, Changes]:
        """The panel's Restore: the entries an outside save of CAIRN.md removed of Cairn's
        put back (``CairnFileSync.restore_removed``)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.restore_removed(ws_id))

    async def dismiss_removed_entries(self, ws_id: str) -> None:
        """The panel's Dismiss beside Restore: the outside save stands as it is."""
        await self.run(lambda: self.cairn.cairn_file_sync.dismiss_removed(ws_id))

    async def compare_conflict_copy(self, ws_id: str, name: str) -> list[Hunk]:
        """Compare: the document against a sync conflict copy, line by line, computed off the
        GUI thread."""
        from app.knowledge.merge import compare

        def work() -> list[Hunk]:
            copy = self.cairn.cairn_file_sync.copy_text(ws_id, name)
            return compare(self.cairn.knowledge.get(ws_id).text, copy)

        return await self.read(work)

    async def merge_conflict_copy(self, ws_id: str, name: str) -> tuple[Document, Changes]:
        """Merge: what the copy has that the document has not, put in (nothing dropped)."""
        return await self.run(lambda: self.cairn.cairn_file_sync.merge_copy(ws_id, name))

    async def dismiss_conflict_copy(self, ws_id: str, name: str) -> None:
        """Dismiss: not offered again until it changes; the file stays in the folder."""
        await self.run(lambda: self.cairn.cairn_file_sync.dismiss_copy(ws_id, name))

    async def watch_knowledge_files(self) -> list[str]:
        """The window's watcher, about once a second: outside edits of every CAIRN.md taken in
        (a file is read only when its size, time or identity moved)."""
        return (await self.run(self.cairn.cairn_file_sync.sync_all))[0]

    async def reveal_folder(self, ws_id: str) -> None:
        """Show the workspace's folder in the file manager (``app.base.desktop``)."""
        from app.base import desktop

        folder = self.cairn.registry.get_workspace(ws_id, verb="show").path
        await self.read(lambda: desktop.reveal(folder))

    async def open_terminal(self, ws_id: str) -> None:
        """Open a terminal in the workspace's folder (``app.base.desktop``)."""
        from app.base import desktop

        folder = self.cairn.registry.get_workspace(ws_id, verb="open a terminal in").path
        await self.read(lambda: desktop.open_terminal(folder))

    async def folder_access(self, ws_id: str) -> tuple[bool, tuple[str, ...]]:
        """May Claude read the folder of *ws_id*'s project (and what was allowed)?"""
        from app.tools.folder_reading import access

        return await self.read(lambda: access(self.cairn.registry, self.cairn.folders, ws_id))

    async def switch_folder_access(self, ws_id: str, on: bool, *,
                                   allow: list[str] | None = None) -> tuple[None, Changes]:
        """The window's folder-access switch and its allow list
        (``app.tools.folder_reading.switch_access``)."""
        from app.tools.folder_reading import switch_access

        return await self.run(lambda: switch_access(self.cairn.registry, self.cairn.folders,
                                                    ws_id, on, allow=allow))
