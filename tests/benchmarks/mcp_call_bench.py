"""A tool call's overhead through Cairn over the SDK's own ``call_tool``.

Run: ``uv run python tests/benchmarks/mcp_call_bench.py [--calls 200]`` (not part of
``uv run pytest``).

Two sessions with the tests' own server (tests/mcp_test_server.py) over stdio: one opened
with the SDK alone (``Client(stdio_client(...))``, ``call_tool("echo")`` on this loop), one
through Cairn (the toolbox's call of ``test__echo``: policy looked up, the hop to the MCP
thread, the owner's timeout, the result made tool_result content on a worker).  Calls are
interleaved, one of each in turn, so the machine's noise falls on both; the medians are
compared.  Target: Cairn adds under 10 ms.  Exits 1 when missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SERVER = str(ROOT / "tests" / "mcp_test_server.py")
TARGET_MS = 10.0


async def main(calls: int) -> int:
    import keyring

    from tests.memory_keyring import MemoryKeyring

    keyring.set_keyring(MemoryKeyring())
    data = Path(tempfile.mkdtemp(prefix="cairn-mcp-bench-"))
    os.environ["CAIRN_DATA_DIR"] = str(data)
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from app.cairn import Cairn
    from app.store.mcp import ServerConfig
    from app.tools import ToolChat

    folder = data / "Bench"
    folder.mkdir(parents=True)
    cairn = Cairn.open(data)
    ws, _ = cairn.registry.add_workspace(str(folder))
    cairn.mcp.add(ServerConfig("test", command=sys.executable, args=(SERVER,)))
    cairn.mcp.turn_on("test", ws.id)
    cairn.mcp.set_policy("test", "echo", ws.id, "allow")
    chat = ToolChat("ch_bench", ws.id, (ws.id,))
    toolbox = cairn.engine.toolbox
    await toolbox.prepare(chat)
    offered = await cairn.storage.run(lambda: toolbox.offered(chat))
    call = {"type": "tool_use", "id": "toolu_1", "name": "test__echo", "input": {"text": "hi"}}
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    direct, through = [], []
    with open(os.devnull, "w") as quiet:
        async with Client(stdio_client(params, errlog=quiet)) as client:
            for _ in range(10):  # warm both
                await client.call_tool("echo", {"text": "hi"})
                await toolbox.call(offered, chat, call, limit=4_000_000)
            for _ in range(calls):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": "hi"})
                direct.append(time.perf_counter() - started)
                started = time.perf_counter()
                output, _, _ = await toolbox.call(offered, chat, call, limit=4_000_000)
                through.append(time.perf_counter() - started)
                assert output.content[0]["text"] == "echo: hi", output
    cairn.stop_mcp_servers()
    cairn.close()
    sdk, ours = statistics.median(direct) * 1000, statistics.median(through) * 1000
    added = ours - sdk
    print(f"{calls} calls each, interleaved, median: SDK call_tool {sdk:.2f} ms, through "
          f"Cairn {ours:.2f} ms, Cairn adds {added:.2f} ms (target < {TARGET_MS:g} ms)")
    print("\nMarkdown (for docs/performance.md):\n")
    print(table(calls, sdk, ours))
    return 0 if added < TARGET_MS else 1


def table(calls: int, sdk: float, ours: float) -> str:
    """The page's table: the medians in ms and what Cairn adds."""
    added = ours - sdk
    return "\n".join([
        f"| measure | median of {calls} calls, interleaved | target |",
        "| --- | ---: | --- |",
        f"| the SDK's own `call_tool(\"echo\")` | {sdk:.2f} ms | |",
        f"| the same call through Cairn's toolbox | {ours:.2f} ms | |",
        f"| what Cairn adds | {added:.2f} ms | < {TARGET_MS:g} ms "
        f"{'ok' if added < TARGET_MS else 'MISSED'} |",
    ])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    raise SystemExit(asyncio.run(main(parser.parse_args().calls)))
