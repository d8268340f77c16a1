"""One window per data folder: a second `cairn PATH` hands PATH to the running one.

The running window listens on a local socket (``QLocalServer``: a named pipe on Windows, a
Unix socket elsewhere) named for the user and the data folder.  A second start connects,
sends one line of JSON (``{"open": "/abs/path"}`` or ``{"raise": true}``), reads one line back
(``{"ok": true}`` or ``{"error": "<the spec's sentence>"}``) and exits 0 or 1 at once.

On macOS and Linux the socket lives in a folder only this user can create names in
(``$XDG_RUNTIME_DIR``, or a 0700 folder of the user's in the temporary folder): in the shared
temporary folder another local user could create the name first, receive the paths and
answer with what the terminal then prints.  The asking side talks only to a socket of its
own user's (the file's owner, and on Linux the peer's), and both sides read at most
``MAX_LINE`` bytes and accept only the two requests and the two answers.

On Windows (a named pipe: any local user may create any name) the name is not one another
user can work out: it is derived from the user's security id and a random secret kept in the
data folder (``instance-secret``, which only this user can read), so no one else can create
it first; and before a request is sent the pipe's server process is checked to run as this
user (``GetNamedPipeServerProcessId``, then its token's user), so a pipe of someone else's is
never talked to.

Every start asks first, before its window paints, so the asking side stays light: on macOS
and Linux it is Python's own ``socket``, and QtNetwork loads only for the server, after the
first paint; on Windows (named pipes) it is ``QLocalSocket``.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

if TYPE_CHECKING:
    from PySide6.QtNetwork import QLocalSocket

log = logging.getLogger(__name__)

CONNECT_MS = 500  # a running window answers at once; a stale socket fails at once
ANSWER_MS = 15_000  # adding a folder on a slow share can take a while
MAX_LINE = 64 * 1024  # a request or an answer is a path and a sentence: far less than this


SECRET_FILE = "instance-secret"  # in the data folder: what makes the pipe's name unguessable


def server_name(data_folder: Path, *, create: bool = False, windows: bool | None = None
                ) -> str | None:
    """Per user and per data folder, short enough for every platform's socket names: on
    macOS and Linux the socket's path in the user's private folder (None without one); on
    Windows a pipe name no other user can work out (None when the secret is not there yet,
    or cannot be read: then no window is listening, or none that this start may trust).
    *create*: the window that listens makes the secret when there is none.  (*windows*: which
    system's name, for the tests; by default this one's.)"""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment: the folder alone still separates
        user = ""
    if os.name != "posix" if windows is None else windows:
        secret = instance_secret(data_folder, create=create)
        if secret is None:
            return None
        return pipe_name(data_folder, user=_user_sid() or user, secret=secret)
    digest = hashlib.sha256(f"{user}\0{data_folder.resolve()}".encode()).hexdigest()[:20]
    name = f"cairn-{digest}"
    folder = private_folder()
    return os.path.join(folder, name) if folder is not None else None


def pipe_name(data_folder: Path, *, user: str, secret: str) -> str:
    """The Windows pipe's name: 160 bits of a hash of the user's id, the data folder and the
    secret, so that knowing the first two (anyone can) names nothing without the third."""
    digest = hashlib.sha256(f"{user}\0{data_folder.resolve()}\0{secret}".encode()).hexdigest()
    return f"cairn-{digest[:40]}"


def instance_secret(data_folder: Path, *, create: bool = False) -> str | None:
    """The data folder's random secret (64 hex digits), made once, readable by this user
    only (a profile's folders are; elsewhere the mode says so); None when there is none and
    *create* is off, or it cannot be read or made."""
    path = data_folder / SECRET_FILE
    for _attempt in range(2):
        try:
            with open(path, encoding="ascii") as handle:
                found = handle.read(65).strip()
            if len(found) == 64 and all(c in "0123456789abcdef" for c in found):
                return found
            log.warning("the one-window secret is not one Cairn made; using none")
            return None
        except FileNotFoundError:
            if not create:
                return None
        except (OSError, ValueError):
            return None
        try:
            from app.base.locations import make_private

            data_folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o600)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(os.urandom(32).hex())
            make_private(path)
        except FileExistsError:
            continue  # another start made it a moment ago: read that one
        except OSError as error:
            log.warning("cannot keep the one-window secret: %s", error)
            return None
    return None


def _user_sid() -> str | None:
    """This process's user, as Windows names it (``S-1-5-21-…``); None elsewhere."""
    if os.name != "nt":
        return None
    try:
        sid = _token_user_sid(None)
        return None if sid is None else sid[1]
    except Exception:  # noqa: BLE001 - ctypes reports a missing function in several ways
        log.warning("cannot read this user's security id", exc_info=True)
        return None


def _token_user_sid(process: int | None) -> tuple[bytes, str] | None:
    """The user of *process*'s token (None: this process) as (the SID's bytes, its text)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    advapi32 = ctypes.WinDLL("advapi32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    advapi32.OpenProcessToken.argtypes = (wintypes.HANDLE, wintypes.DWORD,
                                          ctypes.POINTER(wintypes.HANDLE))
    advapi32.GetTokenInformation.argtypes = (wintypes.HANDLE, ctypes.c_int, ctypes.c_void_p,
                                             wintypes.DWORD, ctypes.POINTER(wintypes.DWORD))
    advapi32.GetLengthSid.argtypes = (ctypes.c_void_p,)
    advapi32.ConvertSidToStringSidW.argtypes = (ctypes.c_void_p,
                                                ctypes.POINTER(wintypes.LPWSTR))
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    process_query_limited, token_query, token_user = 0x1000, 0x0008, 1
    handle = (kernel32.GetCurrentProcess() if process is None
              else kernel32.OpenProcess(process_query_limited, False, process))
    if not handle:
        return None
    token = wintypes.HANDLE()
    try:
        if not advapi32.OpenProcessToken(handle, token_query, ctypes.byref(token)):
            return None
        try:
            size = wintypes.DWORD()
            advapi32.GetTokenInformation(token, token_user, None, 0, ctypes.byref(size))
            buffer = ctypes.create_string_buffer(size.value)
            if not advapi32.GetTokenInformation(token, token_user, buffer, size,
                                                ctypes.byref(size)):
                return None
            sid = ctypes.c_void_p.from_buffer(buffer).value  # TOKEN_USER's first field
            text = wintypes.LPWSTR()
            if not advapi32.ConvertSidToStringSidW(sid, ctypes.byref(text)):
                return None
            name = text.value or ""
            kernel32.LocalFree(text)
            if not sid:
                return None
            return ctypes.string_at(sid, advapi32.GetLengthSid(sid)), name
        finally:
            kernel32.CloseHandle(token)
    finally:
        if process is not None:
            kernel32.CloseHandle(handle)


def pipe_server_is_us(handle: int) -> bool:
    """Whether the process serving the connected pipe *handle* runs as this user (Windows;
    False whenever it cannot be told: an unknown server is never talked to)."""
    if os.name != "nt":
        return False
    try:
        import ctypes
        from ctypes import wintypes

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        kernel32.GetNamedPipeServerProcessId.argtypes = (wintypes.HANDLE,
                                                         ctypes.POINTER(wintypes.ULONG))
        pid = wintypes.ULONG()
        if not kernel32.GetNamedPipeServerProcessId(handle, ctypes.byref(pid)):
            return False
        theirs, mine = _token_user_sid(pid.value), _token_user_sid(None)
        return theirs is not None and mine is not None and theirs[0] == mine[0]
    except Exception:  # noqa: BLE001
        log.warning("cannot tell who serves the one-window pipe", exc_info=True)
        return False


def private_folder() -> str | None:
    """A folder where only this user can create names: ``$XDG_RUNTIME_DIR``, or
    ``cairn-<uid>`` made 0700 in the temporary folder; None when neither can be trusted
    (someone else's, or open to others): then each start opens its own window."""
    uid = os.getuid()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and _private(runtime, uid):
        return runtime
    folder = os.path.join(os.path.normpath(os.environ.get("TMPDIR") or "/tmp"), f"cairn-{uid}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as error:
        log.warning("no private folder for the one-window socket: %s", error)
        return None
    if _private(folder, uid):
        return folder
    log.warning("not using %s for the one-window socket: it is not private to this user",
                folder)
    return None


def _private(folder: str, uid: int) -> bool:
    try:
        found = os.lstat(folder)  # (a symbolic link is not followed: it is refused)
    except OSError:
        return False
    return stat.S_ISDIR(found.st_mode) and found.st_uid == uid and not found.st_mode & 0o077


def hand_over(data_folder: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """Give *request* to the window running on *data_folder*; None when none runs."""
    name = server_name(data_folder)
    if name is None:
        return None
    if os.name != "posix":
        return _hand_over_qt(name, request)
    try:
        found = os.lstat(name)
    except OSError:
        return None  # nothing listens: the usual start, which loads no socket module at all
    if not stat.S_ISSOCK(found.st_mode) or found.st_uid != os.getuid():
        return None  # not a socket of this user's: never talk to it
    import socket as sockets

    connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        connection.settimeout(CONNECT_MS / 1000)
        try:
            connection.connect(name)
        except OSError:  # a socket file left by a crashed window: nobody answers on it
            return None
        if not _peer_is_us(connection):
            return None
        connection.settimeout(ANSWER_MS / 1000)
        connection.sendall((json.dumps(request) + "\n").encode())
        answer = b""
        while not answer.endswith(b"\n") and len(answer) <= MAX_LINE:
            try:
                chunk = connection.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
    finally:
        connection.close()
    return _reply(answer)


def _peer_is_us(connection: Any) -> bool:
    """On Linux, whether the process at the other end runs as this user (elsewhere the
    private folder's owner and mode are what vouch for it)."""
    import socket as sockets
    import struct

    option = getattr(sockets, "SO_PEERCRED", None)
    if option is None:
        return True
    try:
        _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(
            sockets.SOL_SOCKET, option, struct.calcsize("3i")))
    except OSError:
        return False
    return bool(uid == os.getuid())


def _hand_over_qt(name: str, request: dict[str, Any]) -> dict[str, Any] | None:
    from PySide6.QtNetwork import QLocalSocket

    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_MS):
        return None
    if not server_is_us(int(socket.socketDescriptor())):
        socket.abort()
        return None  # a pipe someone else serves: nothing is sent to it
    socket.write((json.dumps(request) + "\n").encode())
    socket.flush()  # (waitForBytesWritten says False when flush already wrote it all)
    socket.waitForBytesWritten(CONNECT_MS)
    answer = b""
    while not answer.endswith(b"\n") and len(answer) <= MAX_LINE:
        # (an answer already buffered is read first: waiting for more would wait in vain)
        if not socket.bytesAvailable() and not socket.waitForReadyRead(ANSWER_MS):
            break
        answer += bytes(socket.readAll().data())
    socket.disconnectFromServer()
    return _reply(answer)


server_is_us = pipe_server_is_us  # (a name of its own: the tests replace it)


def _reply(answer: bytes) -> dict[str, Any]:
    """The running window's answer, if it is one of the two it gives."""
    reply: object = None
    if len(answer) <= MAX_LINE:
        try:
            reply = json.loads(answer.decode() or "{}")
        except (ValueError, RecursionError):
            reply = None
    if reply == {"ok": True}:
        return {"ok": True}
    if isinstance(reply, dict) and set(reply) == {"error"} and isinstance(reply["error"], str):
        return {"error": reply["error"]}
    return {"error": "The running Cairn window did not answer."}


def parse_request(line: bytes) -> dict[str, Any] | None:
    """One of the two requests a later start sends, or None."""
    try:
        request = json.loads(line.decode())
    except (ValueError, RecursionError):
        return None
    if request == {"raise": True}:
        return request
    if isinstance(request, dict) and set(request) == {"open"} \
            and isinstance(request["open"], str):
        return request
    return None


Handler = Callable[[dict[str, Any], Callable[[dict[str, Any]], None]], None]


class InstanceServer(QObject):
    """Listens for later starts; each request goes to the handler with a way to answer."""

    def __init__(self, data_folder: Path, handler: Handler, parent: QObject | None = None
                 ) -> None:
        from PySide6.QtNetwork import QLocalServer

        super().__init__(parent)
        self._handler = handler
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        self._name = server_name(data_folder, create=True)

    def listen(self) -> bool:
        if self._name is None:
            return False  # no private folder for the socket: each start opens its own window
        if self._server.listen(self._name):
            return True
        # A socket file left by a crashed window (Unix): nobody answers on it, so take it.
        type(self._server).removeServer(self._name)
        listening = self._server.listen(self._name)
        if not listening:
            log.warning("cannot listen for other starts: %s", self._server.errorString())
        return listening

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            buffer = bytearray()

            def read(socket: QLocalSocket = socket, buffer: bytearray = buffer) -> None:
                buffer.extend(bytes(socket.readAll().data()))
                if len(buffer) > MAX_LINE:
                    buffer.clear()
                    self._answer(socket, {"error": "Cairn did not understand the request."})
                    return
                if not buffer.endswith(b"\n"):
                    return
                request = parse_request(bytes(buffer))
                if request is None:
                    self._answer(socket, {"error": "Cairn did not understand the request."})
                    return
                self._handler(request, lambda reply: self._answer(socket, reply))

            socket.readyRead.connect(read)
            if socket.bytesAvailable():
                read()

    @staticmethod
    def _answer(socket: QLocalSocket, reply: dict[str, Any]) -> None:
        if socket.state() != type(socket).LocalSocketState.ConnectedState:
            return
        socket.write((json.dumps(reply) + "\n").encode())
        socket.flush()
        socket.disconnectFromServer()
