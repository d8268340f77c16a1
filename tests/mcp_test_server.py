"""A small MCP server of the tests' own, written with the SDK's server API (2.x MCPServer),
run over stdio (``python tests/mcp_test_server.py [--hang-at-start] [--ignore-term]``) or
streamable HTTP (``--http PORT``) on 127.0.0.1.  Its tools cover what a real server may
answer: text, an image, an embedded resource, structured content, an error, a crash, a call
that never answers, a huge answer, and a changed tool list."""

from __future__ import annotations

import os
import signal
import sys
import threading

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.utilities.types import Image
from mcp_types import EmbeddedResource, TextResourceContents, ToolAnnotations

# A 1×1 PNG.
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")

server = MCPServer("cairn-test")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return f"echo: {text}"


@server.tool()
def variable(name: str) -> str:
    """An environment variable's value as the server sees it (the keychain reached it)."""
    return os.environ.get(name, "(unset)")


@server.tool()
def picture() -> Image:
    """A tiny picture."""
    return Image(data=PNG, format="png")


@server.tool()
def document() -> EmbeddedResource:
    """An embedded text resource."""
    return EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="file:///notes.txt", mime_type="text/plain", text="the notes' text"))


@server.tool()
def weather(city: str) -> dict[str, object]:
    """Structured content."""
    return {"city": city, "celsius": 21}


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("the disk is on fire")


@server.tool()
def crash() -> str:
    """Ends the process mid-call."""
    os._exit(7)


@server.tool()
def never() -> str:
    """Never answers."""
    threading.Event().wait()
    return ""


@server.tool(structured_output=False)  # (the text once: a message of *megabytes*)
def huge(megabytes: int) -> str:
    """A long text."""
    return "x" * (megabytes * 1_000_000)


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds a tool and says the list changed."""
    @server.tool(name="added_later")
    def added_later() -> str:
        """Appeared after a change."""
        return "new"

    await ctx.notify_tools_changed()
    return "grown"


def main() -> None:
    args = sys.argv[1:]
    sys.stderr.write("cairn-test server starting\n")
    sys.stderr.flush()
    if "--hang-at-start" in args:
        threading.Event().wait()
    if "--ignore-term" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--http" in args:
        port = int(args[args.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()
    if "--ignore-term" in args:  # stdin closed: it still will not go
        threading.Event().wait()


if __name__ == "__main__":
    main()
