"""Real MCP servers over stdio (mcp-server-time from the index, and the tests' own server)
and streamable HTTP on 127.0.0.1: started at first use, one sentence for a crash, a hang at
start and a slow call, started again at the next use, stderr to a log of their own, and
none left behind after stop (counted in /proc), even one that ignores stdin and SIGTERM."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from app.store.mcp import ServerConfig
from app.tools.mcp_client import LOG_BYTES, McpServers, ServerProblem, Timeouts, log_file, open_log
from tests.helpers import children

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "mcp_test_server.py")
TIME = str(Path(sys.executable).parent / "mcp-server-time")

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(),
                                reason="children are counted in /proc (Linux)")


def ours(name: str, *extra: str) -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(SERVER, *extra))


@pytest.fixture
def servers(tmp_path):
    made = McpServers(logs=tmp_path / "logs", timeouts=Timeouts(start=15, call=15))
    yield made
    made.close()


async def test_mcp_server_time_from_the_index(servers):
    time = ServerConfig("time", command=TIME, args=("--local-timezone", "UTC"))
    before = children()
    assert children() == before  # nothing runs before its first use
    tools = {t.name for t in await servers.tools(time)}
    assert {"get_current_time", "convert_time"} <= tools
    result = await servers.call(time, "get_current_time", {"timezone": "Europe/Oslo"})
    assert not result.is_error and "Europe/Oslo" in result.content[0].text
    assert len(children() - before) == 1
    await servers.stop_all()
    assert children() - before == set()


async def test_three_servers_leave_no_process_after_stop_even_a_stubborn_one(servers):
    before = children()
    configs = [ours("a"), ours("b"), ours("stubborn", "--ignore-term")]
    for config in configs:
        await servers.tools(config)
    assert len(children() - before) == 3
    await servers.stop_all()  # stdin closed, terminate, kill
    assert children() - before == set()


async def test_a_stop_past_its_time_still_kills_the_server(servers, monkeypatch):
    """On a slow machine the SDK's own shutdown (stdin closed, SIGTERM, SIGKILL) may not end
    within the stop's time; the owner task is then cancelled, and Cairn kills the server's
    group itself: nothing is left running (here the time is made shorter than the SDK's)."""
    from app.tools import mcp_client

    monkeypatch.setattr(mcp_client, "STOP_SECONDS", 0.2)
    before = children()
    await servers.tools(ours("stubborn", "--ignore-term"))
    assert len(children() - before) == 1
    await servers.stop_all()
    assert children() - before == set()


def test_close_at_quit_stops_them_too(tmp_path):
    import asyncio

    made = McpServers(logs=tmp_path / "logs")
    before = children()

    async def start() -> None:
        for name in ("a", "b", "c"):
            await made.tools(ours(name))

    asyncio.run(start())
    assert len(children() - before) == 3
    made.close()
    assert children() - before == set()


async def test_a_crash_is_one_sentence_and_the_next_use_starts_it_again(servers):
    config = ours("crashy")
    await servers.tools(config)
    with pytest.raises(ServerProblem, match=r"^The MCP server crashy stopped while answering "
                                            r"crash; it starts again at its next use") as raised:
        await servers.call(config, "crash", {})
    assert "\n" not in str(raised.value)
    again = await servers.call(config, "echo", {"text": "back"})
    assert again.content[0].text == "echo: back" and servers.owner("crashy").starts == 2


async def test_a_hang_at_start_is_one_sentence_and_leaves_no_process(tmp_path):
    made = McpServers(logs=tmp_path / "logs", timeouts=Timeouts(start=0.5, call=5))
    before = children()
    try:
        with pytest.raises(ServerProblem, match="did not start within 0.5 seconds; it was "
                                                "stopped"):
            await made.tools(ours("hang", "--hang-at-start"))
        assert children() - before == set()
    finally:
        made.close()


async def test_a_slow_call_is_one_sentence_then_it_starts_again(tmp_path):
    made = McpServers(logs=tmp_path / "logs", timeouts=Timeouts(start=15, call=0.5))
    before = children()
    try:
        config = ours("slow")
        with pytest.raises(ServerProblem, match="did not answer never within 0.5 seconds"):
            await made.call(config, "never", {})
        assert children() - before == set()  # stopped, not left hanging
        assert (await made.call(config, "echo", {"text": "x"})).content[0].text == "echo: x"
    finally:
        made.close()


async def test_a_program_that_is_not_there(servers):
    with pytest.raises(ServerProblem, match="there is no program 'no-such-mcp-server-42'"):
        await servers.tools(ServerConfig("missing", command="no-such-mcp-server-42"))


async def test_stderr_goes_to_its_own_log(servers, tmp_path):
    await servers.tools(ours("talker"))
    await servers.stop_all()
    assert "cairn-test server starting" in log_file("talker", tmp_path / "logs").read_text()


def test_the_log_is_rotated(tmp_path):
    path = log_file("big", tmp_path)
    path.write_bytes(b"x" * (LOG_BYTES + 1))
    open_log(path).close()
    assert path.stat().st_size == 0 and path.with_name("big.log.1").stat().st_size > LOG_BYTES


async def test_a_changed_tool_list_is_listed_again(servers):
    import asyncio

    config = ours("growing")
    await servers.tools(config)
    changed = asyncio.Event()
    loop = asyncio.get_running_loop()
    servers.changed.append(lambda name: loop.call_soon_threadsafe(changed.set))
    await servers.call(config, "grow", {})
    await asyncio.wait_for(changed.wait(), 15)
    assert "added_later" in {t.name for t in servers.owner("growing").tools}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_streamable_http_on_loopback(servers, tmp_path):
    port = _free_port()
    process = subprocess.Popen([sys.executable, SERVER, "--http", str(port)],
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        for line in process.stderr:  # waits on the server's own word that it listens
            if "Uvicorn running" in line or "Application startup complete" in line:
                break
        config = ServerConfig("web", url=f"http://127.0.0.1:{port}/mcp",
                              headers={"Authorization": "Bearer token"})
        assert "echo" in {t.name for t in await servers.tools(config)}
        result = await servers.call(config, "echo", {"text": "over http"})
        assert result.content[0].text == "echo: over http"
    finally:
        await servers.stop_all()
        process.terminate()
        process.wait(timeout=10)


async def test_an_answer_past_the_limit_is_one_sentence_and_the_server_goes_on(servers):
    """A 10 MB answer is not parsed: the call ends in one sentence, and the next call is
    answered.
    (Before, the SDK's reader copied what it held of the line at each 64 kB chunk: minutes
    of copying on the MCP thread for 100 MB, stalling the window.)"""
    config = ours("big")
    with pytest.raises(ServerProblem) as said:
        await servers.call(config, "huge", {"megabytes": 10})
    assert str(said.value) == ("The MCP server big's answer to huge was 10 MB, past Cairn's "
                               "8 MB for one answer: left out.")
    result = await servers.call(config, "echo", {"text": "still here"})
    assert result.content[0].text == "echo: still here"
    owner = servers.owner("big")
    assert owner is not None and owner.starts == 1
