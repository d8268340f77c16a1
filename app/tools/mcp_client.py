"""Running MCP servers: one owner task per server, on a thread and event loop of Cairn's own
for MCP, that opens the server's session and closes it (anyio's cancel scopes belong to the
task that entered them: the SDK's session must be entered and left by the same task).

A server starts at its first use in a chat (never at start-up), its stderr goes to a log file
of its own (``logs/mcp/NAME.log``, rotated at each start), and any failure — it crashed, did
not start within :attr:`Timeouts.start`, or did not answer a call within
:attr:`Timeouts.call` — is one sentence (:class:`ServerProblem`) and stops it; the next use
starts it again.  At quit every server stops together, within :data:`STOP_SECONDS`: stdin
closed, then terminate, then kill (the SDK's own escalation, its waits shortened here).

The SDK is imported here only, and this module only when a server is about to be used.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

from app.base import locations
from app.base.live import NetworkThread
from app.store.mcp import ServerConfig

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_SECONDS = 3.0  # every server stopped at quit within this, together
# The SDK waits 2 s after closing stdin and 2 s after SIGTERM; at quit that is too long for
# three seconds in all, so each wait is 1 s here (0.5 s of flushing before them).
_SDK_GRACE = 1.0
_AFTER_KILL = 0.5  # what a stop waits for the owner task once its server was killed
LOG_BYTES = 1_000_000  # a server's log is rotated at its start past this
LOG_KEPT = 3  # NAME.log.1 … NAME.log.3
MAX_TOOLS = 500  # tools one server may offer (pages of its listing, at most)
_CONNECTION_CLOSED = -32000  # JSON-RPC's code for the connection that went away (mcp_types)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """How long a server may take: to start and list its tools, and to answer one call
    (per server; tests make them short)."""

    start: float = 20.0
    call: float = 60.0


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One tool as the server listed it (annotations shown, never trusted)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)


class ServerProblem(Exception):
    """A server crashed, hung or could not start: ``str()`` is the one sentence to show."""


# The server processes the owner task running now has spawned (each owner sets its own list:
# a task's context is its own), so that a stop past its time can kill what the SDK's own
# shutdown, cancelled with the owner, never reached.
_SPAWNED: contextvars.ContextVar[list[Any]] = contextvars.ContextVar("cairn_mcp_spawned")


# Characters of one message from a stdio server (see _Lines): parsing a message holds the
# interpreter lock throughout (the SDK's pydantic parse: 24-54 ms for 12 MB here), so past
# this the window's loop could wait longer than its 50 ms bar.  8 MB still takes the largest
# image a result may hold (5 MB, as base64) and more than a turn's 4 MB of results.
MAX_MESSAGE = 8_000_000
_TOO_LARGE = -32099  # the error Cairn answers in a server's name for a message past it
_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')


class _Lines:
    """The SDK's stdio reader's text stream, replaced (``_configure_sdk``): it hands the SDK
    whole lines only.  The SDK joins each chunk to what it holds of a line (``buffer +
    chunk``), so a 50 MB answer, read in 64 kB chunks, was copied some 800 times: a minute
    of copying on the MCP thread, which held the interpreter lock long and often enough to
    stall the window's loop by hundreds of milliseconds.  Here a line's chunks are joined
    once.  A message past :data:`MAX_MESSAGE` characters (more than a turn's 4 MB of
    results could use, and its parse would hold the lock too long) is not kept: the
    SDK is handed an error answer for its id instead, so the call ends in one sentence."""

    def __init__(self, transport_stream: Any, encoding: str = "utf-8",
                 errors: str = "strict") -> None:
        from anyio.streams.text import TextReceiveStream

        self._text = TextReceiveStream(transport_stream, encoding=encoding, errors=errors)
        self._pending: list[str] = []
        self._size = 0
        self._head = ""  # of a message too long: where its id may be, first or last
        self._tail = ""

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        import anyio

        while True:
            try:
                chunk = await self._text.receive()
            except anyio.EndOfStream:
                raise StopAsyncIteration from None
            lines = self._take(chunk)
            if lines:
                return lines

    def _take(self, chunk: str) -> str:
        out: list[str] = []
        while chunk:
            at = chunk.find("\n")
            if at < 0:
                self._add(chunk)
                break
            self._add(chunk[:at])
            chunk = chunk[at + 1:]
            line = self._line()
            if line:
                out.append(line + "\n")
        return "".join(out)

    def _add(self, piece: str) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._size <= MAX_MESSAGE:
            self._pending.append(piece)
            return
        if self._pending:  # just past the limit: what it held is let go
            start = "".join(self._pending[:8])
            self._head = start[:300]
            self._pending = []
        self._tail = (self._tail + piece)[-300:]

    def _line(self) -> str:
        size, self._size = self._size, 0
        if size <= MAX_MESSAGE:
            line, self._pending = "".join(self._pending), []
            return line
        head, tail, self._head, self._tail = self._head, self._tail, "", ""
        # An answer's id: after "jsonrpc" at its start (Python's SDK), or at its end (others).
        found = _ID.search(head if '"id"' in head.split('"result"', 1)[0] else tail) \
            or _ID.search(tail)
        log.warning("an MCP server sent a message of %d characters: left out", size)
        if found is None:
            return ""  # no id to answer: the call ends at its timeout
        return json.dumps({"jsonrpc": "2.0", "id": json.loads(found.group(1)), "error": {
            "code": _TOO_LARGE, "message": f"{size / 1_000_000:,.0f} MB"}})


def _configure_sdk() -> None:
    import mcp.client.stdio as stdio

    stdio.PROCESS_TERMINATION_TIMEOUT = _SDK_GRACE  # type: ignore[misc]
    stdio.FORCE_KILL_TIMEOUT = _SDK_GRACE  # type: ignore[misc]
    stdio.TextReceiveStream = _Lines  # type: ignore[misc,assignment]
    spawn = stdio._create_platform_compatible_process
    if getattr(spawn, "cairn_records", False):
        return

    async def recorded(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        found = _SPAWNED.get(None)
        if found is not None:
            found.append(process)
        return process

    recorded.cairn_records = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = recorded  # type: ignore[assignment]


def _kill(processes: list[Any]) -> None:
    """Kill each process still running, with its whole group (the SDK starts a stdio server
    in a session of its own, so its pid is its group's)."""
    for process in processes:
        if getattr(process, "returncode", 0) is not None:
            continue
        try:
            if sys.platform == "win32":  # pragma: no cover - the job object ends the tree
                process.kill()
            else:
                os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            continue  # gone already, or not ours to signal


def log_file(name: str, folder: Path | None = None) -> Path:
    """Where a server's stderr goes; its name made safe for a file name."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "server"
    return (folder or locations.log_dir() / "mcp") / f"{safe}.log"


def open_log(path: Path) -> IO[bytes]:
    """The log, rotated first when it grew past :data:`LOG_BYTES` (kept: :data:`LOG_KEPT`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_size > LOG_BYTES:
            for n in range(LOG_KEPT - 1, 0, -1):
                older = path.with_name(f"{path.name}.{n}")
                if older.exists():
                    os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
            os.replace(path, path.with_name(f"{path.name}.1"))
    except FileNotFoundError:
        pass
    return open(path, "ab", buffering=0)


class ServerOwner:
    """One server: its owner task (which alone enters and leaves the session), its tools,
    and the calls made to it.  Used only on the MCP loop."""

    def __init__(self, config: ServerConfig, *, timeouts: Timeouts, logs: Path | None,
                 on_tools_changed: Callable[[str], None] | None = None) -> None:
        self.config = config
        self.timeouts = timeouts
        self._logs = logs
        self._on_tools_changed = on_tools_changed
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[list[ServerTool]] | None = None
        self._stop: asyncio.Event | None = None
        self._client: Any = None
        self._processes: list[Any] = []  # what this server's owner task spawned
        self.tools: list[ServerTool] = []
        self.starts = 0  # how often it was started (tests; the log)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done() and self._client is not None

    async def ensure(self) -> list[ServerTool]:
        """Started (once), its tools listed; :class:`ServerProblem` when it cannot be."""
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._ready, self._stop = loop.create_future(), asyncio.Event()
            self.starts += 1
            self._task = loop.create_task(self._own(self._ready, self._stop),
                                          name=f"mcp-{self.config.name}")
        assert self._ready is not None
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), self.timeouts.start)
        except TimeoutError:
            await self.stop()
            raise ServerProblem(
                f"The MCP server {self.config.name} did not start within "
                f"{_seconds(self.timeouts.start)}; it was stopped, and its log is "
                f"{log_file(self.config.name, self._logs)}.") from None

    async def call(self, tool: str, arguments: dict[str, Any], *,
                   timeout: float | None = None) -> Any:
        """One call, answered within the call timeout, else :class:`ServerProblem` (and the
        server is stopped: the next use starts it again)."""
        import anyio

        await self.ensure()
        client = self._client
        limit = timeout if timeout is not None else call_timeout(self.config, self.timeouts)
        try:
            with anyio.fail_after(limit):
                return await client.call_tool(tool, arguments)
        except TimeoutError:
            await self.stop()
            raise ServerProblem(f"The MCP server {self.config.name} did not answer {tool} "
                                f"within {_seconds(limit)}; it was stopped and starts again "
                                "at its next use.") from None
        except asyncio.CancelledError:
            raise
        except Exception as failure:
            from mcp import MCPError

            if isinstance(failure, MCPError) and failure.code == _TOO_LARGE:
                raise ServerProblem(
                    f"The MCP server {self.config.name}'s answer to {tool} was "
                    f"{_one_line(str(failure.message))}, past Cairn's "
                    f"{MAX_MESSAGE // 1_000_000} MB for one answer: left out.") from None
            closed = isinstance(failure, MCPError) and failure.code == _CONNECTION_CLOSED
            if isinstance(failure, MCPError) and not closed and self.running:  # an answer
                raise ServerProblem(f"The MCP server {self.config.name} refused {tool}: "
                                    f"{_one_line(str(failure))}.") from None
            log.warning("the MCP server %s failed during %s: %s", self.config.name, tool,
                        type(failure).__name__)
            await self.stop()
            raise ServerProblem(f"The MCP server {self.config.name} stopped while answering "
                                f"{tool}; it starts again at its next use (its log is "
                                f"{log_file(self.config.name, self._logs)}).") from None

    async def stop(self) -> None:
        """Stop the session (stdin closed, terminate, kill), waiting at most STOP_SECONDS;
        past that the owner task is cancelled (the SDK's shutdown is shielded and bounded)."""
        task, stop = self._task, self._stop
        if task is None or task.done():
            return
        assert stop is not None
        ready = self._ready
        if ready is not None and not ready.done():
            task.cancel()  # still starting (a hang at start): it waits on nothing of ours
        else:
            stop.set()
        done, _ = await asyncio.wait({task}, timeout=STOP_SECONDS)
        if not done:  # past its time (a slow machine, a server that ignores the signals)
            _kill(self._processes)
            task.cancel()  # its shielded shutdown may still poll: the process is gone already
            await asyncio.wait({task}, timeout=_AFTER_KILL if self._processes else STOP_SECONDS)
        _kill(self._processes)  # whatever the SDK's shutdown left running
        self._processes = [p for p in self._processes if p.returncode is None]
        if ready is not None and ready.done() and not ready.cancelled():
            ready.exception()  # seen: whoever waited for the start heard it already

    async def _own(self, ready: asyncio.Future[list[ServerTool]], stop: asyncio.Event) -> None:
        """The owner task: enter the session, list the tools, wait for the stop, leave."""
        config = self.config
        errlog: IO[bytes] | None = None
        _SPAWNED.set(self._processes)  # (this task's own context)
        try:
            async with AsyncExitStack() as stack:
                from mcp import Client

                if config.url:
                    transport = await self._http(stack)
                else:
                    from mcp.client.stdio import StdioServerParameters, stdio_client

                    errlog = open_log(log_file(config.name, self._logs))
                    params = StdioServerParameters(command=str(config.command),
                                                   args=list(config.args),
                                                   env=dict(config.env) or None)
                    transport = stdio_client(params, errlog=errlog)  # type: ignore[arg-type]
                client = await stack.enter_async_context(
                    Client(transport, message_handler=self._heard, cache=None))
                self.tools = await self._list(client)
                self._client = client
                if not ready.done():
                    ready.set_result(self.tools)
                listening = asyncio.get_running_loop().create_task(self._listen(client))
                try:
                    await stop.wait()
                finally:
                    listening.cancel()
                    await asyncio.wait({listening})
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(ServerProblem(
                    f"The MCP server {config.name} was stopped before it started."))
            raise
        except BaseException as failure:  # noqa: BLE001 - any failure of a server is one sentence
            log.warning("the MCP server %s ended: %s", config.name, _kind(failure))
            if not ready.done():
                ready.set_exception(ServerProblem(_start_failure(config, failure, self._logs)))
        finally:
            self._client = None
            if errlog is not None:
                errlog.close()

    async def _http(self, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(httpx2.AsyncClient(
            headers=dict(self.config.headers), timeout=self.timeouts.call))
        return streamable_http_client(self.config.url, http_client=http)  # type: ignore[arg-type]

    async def _list(self, client: Any, *, fresh: bool = False) -> list[ServerTool]:
        tools: list[ServerTool] = []
        cursor = None
        while len(tools) < MAX_TOOLS:
            page = await client.list_tools(cursor=cursor,
                                           cache_mode="refresh" if fresh else "use")
            for tool in page.tools:
                notes = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
                tools.append(ServerTool(tool.name, tool.description or "",
                                        dict(tool.input_schema or {"type": "object"}), notes))
            cursor = page.next_cursor
            if not cursor:
                break
        return tools[:MAX_TOOLS]

    async def _listen(self, client: Any) -> None:
        """A changed tool list, on the 2026 protocol: a ``subscriptions/listen`` stream,
        entered and left by this task alone (older servers send a notification: _heard)."""
        try:
            if client.protocol_version < "2026-07-28":
                return
            caps = client.server_capabilities.tools
            if caps is None or not getattr(caps, "list_changed", False):
                return
            async with client.listen(tools_list_changed=True) as changes:
                async for _ in changes:
                    await self._relist()
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - without the stream the list stays as it was
            log.info("the MCP server %s gives no tool changes", self.config.name, exc_info=True)

    async def _heard(self, message: Any) -> None:
        """A notification: a changed tool list is listed again (in a task of its own: this
        runs inside the session's receive loop, which the listing's answer needs)."""
        if type(message).__name__ == "ToolListChangedNotification" and self._client is not None:
            asyncio.get_running_loop().create_task(self._relist())

    async def _relist(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            self.tools = await self._list(client, fresh=True)
        except Exception:  # noqa: BLE001 - the old list stays; a call says what fails
            log.info("the MCP server %s could not list its tools again", self.config.name)
            return
        if self._on_tools_changed is not None:
            self._on_tools_changed(self.config.name)


class McpServers:
    """Every server Cairn has started, by name, on one thread of their own (so a server's
    50 MB answer is parsed off the window's loop).  Nothing starts until asked."""

    def __init__(self, *, logs: Path | None = None, timeouts: Timeouts | None = None) -> None:
        self._thread = NetworkThread()
        self._logs = logs
        self.timeouts = timeouts or Timeouts()
        self._owners: dict[str, ServerOwner] = {}
        self._configured = False
        self.changed: list[Callable[[str], None]] = []  # a server's tools changed

    async def _run(self, work: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if not self._configured:
            await asyncio.to_thread(_configure_sdk)  # the SDK's import: off the caller's loop
            self._configured = True
        return await self._thread.run(work)

    def _owner(self, config: ServerConfig) -> ServerOwner:
        owner = self._owners.get(config.name)
        if owner is None or owner.config != config:
            if owner is not None:  # its configuration changed: the old one stops
                asyncio.get_running_loop().create_task(owner.stop())
            owner = self._owners[config.name] = ServerOwner(
                config, timeouts=self.timeouts, logs=self._logs,
                on_tools_changed=self._tools_changed)
        return owner

    def _tools_changed(self, name: str) -> None:
        for listener in list(self.changed):
            try:
                listener(name)
            except Exception:
                log.exception("a listener of MCP tool changes failed")

    async def tools(self, config: ServerConfig) -> list[ServerTool]:
        """The server's tools, starting it if needed (:class:`ServerProblem` when it cannot)."""
        return await self._run(lambda: self._owner(config).ensure())

    async def call(self, config: ServerConfig, tool: str, arguments: dict[str, Any]) -> Any:
        """Call *tool*; the SDK's ``CallToolResult``, or :class:`ServerProblem`."""
        return await self._run(lambda: self._owner(config).call(tool, arguments))

    def owner(self, name: str) -> ServerOwner | None:
        return self._owners.get(name)

    async def stop(self, name: str) -> None:
        owner = self._owners.get(name)
        if owner is not None:
            await self._run(owner.stop)

    async def stop_all(self) -> None:
        """Every server at once (on the MCP loop)."""
        owners = list(self._owners.values())
        if owners:
            await asyncio.gather(*(o.stop() for o in owners), return_exceptions=True)

    def close(self) -> None:
        """At quit: every server stopped together, within STOP_SECONDS (and a little for the
        thread), then the thread let go.  Nothing to do when none was ever started."""
        self._thread.close(last=self.stop_all if self._owners else None)


def call_timeout(config: ServerConfig, timeouts: Timeouts) -> float:
    """A server's own ``"timeout"`` (seconds, as Cline and others write it in the same
    file), else the default."""
    own = config.extra.get("timeout")
    if isinstance(own, (int, float)) and not isinstance(own, bool) and 0 < own <= 3600:
        return float(own)
    return timeouts.call


def _start_failure(config: ServerConfig, failure: BaseException, logs: Path | None) -> str:
    where = log_file(config.name, logs)
    if isinstance(failure, FileNotFoundError) or (isinstance(failure, OSError)
                                                  and failure.errno == 2):
        return (f"The MCP server {config.name} could not start: there is no program "
                f"'{_one_line(str(config.command))}' on this computer.")
    if isinstance(failure, PermissionError):
        return (f"The MCP server {config.name} could not start: "
                f"'{_one_line(str(config.command))}' may not be run.")
    if config.url:
        return (f"The MCP server {config.name} at {_one_line(config.url)} could not be reached "
                f"or did not answer as an MCP server ({_kind(failure)}).")
    return (f"The MCP server {config.name} stopped before it was ready ({_kind(failure)}); "
            f"its log is {where}.")


def _kind(failure: BaseException) -> str:
    while isinstance(failure, BaseExceptionGroup) and failure.exceptions:
        failure = failure.exceptions[0]
    return type(failure).__name__


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return (line if len(line) <= 200 else line[:199] + "…").rstrip(".")


def _seconds(value: float) -> str:
    return f"{value:g} second{'s' if value != 1 else ''}"
