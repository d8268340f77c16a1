"""The command line's subcommand names, in a module that imports nothing: ``cairn`` decides
between the command line and the window before it loads either."""

from __future__ import annotations

CONVERSATION = ("ask", "context", "files", "memory", "knowledge", "settings", "key", "models")
SHARING = ("export", "import")
SEARCH = ("search",)
HISTORY = ("import-history",)
SETUP = ("completion", "install-desktop")  # about the system Cairn runs on: no data folder opened
MCP = ("mcp",)
SUBCOMMANDS = ("workspace", "chat", *CONVERSATION, *SHARING, *HISTORY, *SEARCH, *SETUP, *MCP)
