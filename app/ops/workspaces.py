"""Workspaces: add, rename, move, remove and restore; a workspace's instructions and web settings.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from app.ops.part import Changes, Part

if TYPE_CHECKING:
    from app.records import WebSettings, Workspace
    from app.store.registry.removed import RemovedWorkspace

log = logging.getLogger(__name__)

T = TypeVar("T")


class WorkspaceOperations(Part):
    """Workspaces: add, rename, move, remove, restore; instructions and web settings."""

    async def add_workspace(self, path: str, *, at_end: bool = False
                            ) -> tuple[tuple[Workspace, bool], Changes]:
        return await self.run(lambda: self.cairn.registry.add_workspace(path, at_end=at_end))

    async def rename_workspace(self, ws_id: str, title: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.rename_workspace(ws_id, title))

    async def update_workspace(self, ws_id: str, **fields: Any) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.update_workspace(ws_id, **fields))

    async def advance_workspace(self, ws_id: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.advance_workspace(ws_id))

    async def move_workspace(self, ws_id: str, *, index: int) -> tuple[None, Changes]:
        return await self.run(lambda: self.cairn.registry.move_workspace(ws_id, index=index))

    async def move_to_folder(self, ws_id: str, path: str) -> tuple[Workspace, Changes]:
        return await self.run(lambda: self.cairn.registry.move_to_folder(ws_id, path))

    async def remove_workspace(self, ws_id: str) -> tuple[bool, Changes]:
        return await self.run(lambda: self.cairn.registry.remove_workspace(ws_id))

    async def removed_workspaces(self) -> list[RemovedWorkspace]:
        """Recently removed (a storage read): most recently removed first."""
        return await self.read(self.cairn.registry.removed_workspaces)

    async def restore_workspace(self, ws_id: str, *, into: str | None = None
                                ) -> tuple[Workspace, Changes]:
        """Restore a removed workspace at its folder, or *into* another one."""
        return await self.run(lambda: self.cairn.registry.restore_workspace(ws_id, into=into))

    async def web_settings(self, workspace_id: str) -> WebSettings:
        """Web search and fetch in the workspace (its own, else its parent's, else off)."""
        from app.chat.web import web_settings

        return await self.read(lambda: web_settings(self.cairn.registry, self.cairn.web,
                                                    workspace_id))

    async def set_web_settings(self, workspace_id: str, settings: WebSettings
                               ) -> tuple[WebSettings, Changes]:
        """The workspace's web switch, searches per reply and sites; refused in one sentence
        (``app.chat.web.set_web_settings``)."""
        from app.chat.web import set_web_settings

        return await self.run(lambda: set_web_settings(self.cairn.registry, self.cairn.web,
                                                       workspace_id, settings))

    async def save_instructions(self, ws_id: str, *, description: str, instructions: str,
                                expected: tuple[str, str]) -> tuple[Workspace | None, Changes]:
        """Save a workspace's description and instructions if they are still *expected*
        (what the editor opened); None, with nothing written, when they changed meanwhile
        (``Registry.save_description_and_instructions``)."""
        return await self.run(lambda: self.cairn.registry.save_description_and_instructions(
            ws_id, description=description, instructions=instructions, expected=expected))
