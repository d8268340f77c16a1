"""MCP servers: configure, switch per workspace, tool policies, their running tools.

The window calls these through :class:`app.ops.Operations`; each runs on the storage thread
through the part's ``run`` / ``read`` (:mod:`app.ops.part`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from app.errors import Refused
from app.ops.part import Changes, Part, on_a_thread_of_its_own

if TYPE_CHECKING:
    from app.store.mcp import InWorkspace, ServerConfig
    from app.tools.mcp_client import ServerTool

log = logging.getLogger(__name__)

T = TypeVar("T")


class McpOperations(Part):
    """MCP servers: configure, switch per workspace, tool policies, their running tools."""

    async def mcp_servers(self) -> list[tuple[ServerConfig, list[str]]]:
        """Every MCP server, and the workspaces it is on in (none is started)."""
        store = self.cairn.mcp
        return await self.read(lambda: [(c, store.workspaces_of(c.name))
                                        for c in store.servers()])

    async def add_mcp_server(self, config: ServerConfig) -> tuple[ServerConfig, Changes]:
        """``cairn mcp add``'s use case: its env and headers to the keychain (which can be
        slow or ask the person), the rest stored; off in every workspace."""
        return await self.run(lambda: self.cairn.mcp.add(config))

    async def remove_mcp_server(self, name: str) -> tuple[None, Changes]:
        """``cairn mcp remove``'s: the server and its secrets go."""
        return await self.run(lambda: self.cairn.mcp.remove(name))

    async def import_claude_desktop(self, path: Path | None = None
                                    ) -> tuple[tuple[Path, list[str], list[str]], Changes]:
        """``cairn mcp import-claude-desktop``'s: Claude Desktop's file (its own place, or
        *path*) read and each server whose name is free added, off everywhere; (the file,
        added, kept as they were)."""
        from app.store.mcp import claude_desktop_file, read_claude_desktop

        def work() -> tuple[Path, list[str], list[str]]:
            where = path or claude_desktop_file()
            added, kept = self.cairn.mcp.import_servers(read_claude_desktop(where))
            return where, added, kept

        return await self.run(work)

    async def mcp_in_workspace(self, ws_id: str) -> list[InWorkspace]:
        """The servers as *ws_id*'s Tools page shows them (``McpStore.in_workspace``)."""
        chain = [ws.id for ws in self.cairn.registry.lineage(ws_id)] or [ws_id]
        return await self.read(lambda: self.cairn.mcp.in_workspace(chain))

    async def switch_mcp_server(self, name: str, ws_id: str, on: bool) -> tuple[None, Changes]:
        """``cairn mcp on|off``'s: chats in *ws_id* may use the server (from their next
        message), or no longer."""
        store = self.cairn.mcp
        self.cairn.registry.get_workspace(ws_id, verb=f"turn {'on' if on else 'off'} an MCP "
                                          "server in")
        return await self.run(lambda: (store.turn_on if on else store.turn_off)(name, ws_id))

    async def set_mcp_policy(self, name: str, tool: str, ws_id: str, policy: str
                             ) -> tuple[None, Changes]:
        """``cairn mcp allow|ask|deny``'s: a tool's policy in *ws_id* (allow is also what
        Always allow stored; ask takes it back)."""
        return await self.run(lambda: self.cairn.mcp.set_policy(name, tool, ws_id, policy))

    def running_mcp_tools(self, name: str) -> list[ServerTool] | None:
        """The server's tools when it runs now, else None (from memory; starts nothing)."""
        return self.cairn.running_mcp_tools(name)

    async def start_mcp_tools(self, name: str) -> list[ServerTool]:
        """Start the server (when it does not run) and list its tools, as ``cairn mcp
        tools`` does; refused in its one sentence when it cannot start."""
        from app.tools.mcp_client import ServerProblem

        store = self.cairn.mcp
        config = await self.read(lambda: store.get(name, verb="list the tools of the MCP "
                                                   "server"))
        # The keychain may be slow or ask the person: a thread of its own, not the writer.
        config = await on_a_thread_of_its_own(lambda: store.with_secrets(config),
                                               "cairn-keychain")
        try:
            return await self.cairn.mcp_servers.tools(config)
        except ServerProblem as problem:
            raise Refused(str(problem)) from None
