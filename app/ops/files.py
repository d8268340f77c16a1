"""A workspace's uploaded files: add, list, describe, remove.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.store.files import KnowledgeFile

log = logging.getLogger(__name__)

T = TypeVar("T")


class FileOperations(Part):
    """A workspace's uploaded files: add, list, describe, remove."""

    async def add_file(self, ws_id: str, source: Path, *, description: str = ""
                       ) -> tuple[KnowledgeFile, Changes]:
        """Read, hash and store a file: seconds for a large one, never on the GUI thread."""
        return await self.run(
            lambda: self.cairn.files.add(ws_id, source, description=description))

    async def files_of(self, ws_ids: Sequence[str]) -> list[KnowledgeFile]:
        return await self.read(lambda: self.cairn.files.of_workspaces(list(ws_ids)))

    async def manifest(self, ws_id: str) -> list[tuple[KnowledgeFile, str]]:
        """A workspace's own knowledge files, each with its line as the model sees it in the
        manifest (``FileStore.manifest``, ``app.chat.context.manifest_line``)."""
        from app.chat.context import manifest_line

        chain = [ws.id for ws in self.cairn.registry.lineage(ws_id)]
        files = await self.read(lambda: self.cairn.files.manifest(chain, own=True))
        return [(f, manifest_line(f, scope)) for f, scope in files]

    async def describe_file(self, file_id: str, description: str
                            ) -> tuple[KnowledgeFile, Changes]:
        return await self.run(lambda: self.cairn.files.describe(file_id, description))

    async def remove_file(self, file_id: str) -> tuple[KnowledgeFile, Changes]:
        """The record, and the blob when nothing else uses it (a file removal on disk)."""
        return await self.run(lambda: self.cairn.files.remove(file_id))
