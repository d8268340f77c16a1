"""One window per data folder: a second `cairn PATH` hands PATH to the running one.

The running window listens on a local socket (``QLocalServer``: a named pipe on Windows, a
Unix socket elsewhere) named for the user and the data folder.  A second start connects,
sends one line of JSON (``{"open": "/abs/path"}`` or ``{"raise": true}``), reads one line back
(``{"ok": true}`` or ``{"error": "<the spec's sentence>"}``) and exits 0 or 1 at once.

Every start asks first, before its window paints, so the asking side stays light: on macOS
and Linux it is Python's own ``socket`` on the path where ``QLocalServer`` puts its socket
(the temporary folder, as ``QDir.tempPath()`` finds it), and QtNetwork loads only for the
server, after the first paint; on Windows (named pipes) it is ``QLocalSocket``.
"""

from __future__ import annotations

import getpass
import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject

if TYPE_CHECKING:
    from PySide6.QtNetwork import QLocalSocket

log = logging.getLogger(__name__)

CONNECT_MS = 500  # a running window answers at once; a stale socket fails at once
ANSWER_MS = 15_000  # adding a folder on a slow share can take a while


def server_name(data_folder: Path) -> str:
    """Per user and per data folder, short enough for every platform's socket names."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment: the folder alone still separates
        user = ""
    digest = hashlib.sha256(f"{user}\0{data_folder.resolve()}".encode()).hexdigest()[:20]
    return f"cairn-{digest}"


def socket_path(name: str) -> str:
    """Where ``QLocalServer.listen(name)`` puts its socket on macOS and Linux:
    ``QDir.tempPath()``, which is ``$TMPDIR`` or ``/tmp``."""
    folder = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(os.path.normpath(folder), name)


def hand_over(data_folder: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """Give *request* to the window running on *data_folder*; None when none runs."""
    name = server_name(data_folder)
    if os.name != "posix":
        return _hand_over_qt(name, request)
    path = socket_path(name)
    if not os.path.exists(path):
        return None  # nothing listens: the usual start, which loads no socket module at all
    import socket as sockets

    connection = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    try:
        connection.settimeout(CONNECT_MS / 1000)
        try:
            connection.connect(path)
        except OSError:  # a socket file left by a crashed window: nobody answers on it
            return None
        connection.settimeout(ANSWER_MS / 1000)
        connection.sendall((json.dumps(request) + "\n").encode())
        answer = b""
        while not answer.endswith(b"\n"):
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


def _hand_over_qt(name: str, request: dict[str, Any]) -> dict[str, Any] | None:
    from PySide6.QtNetwork import QLocalSocket

    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(CONNECT_MS):
        return None
    socket.write((json.dumps(request) + "\n").encode())
    socket.flush()  # (waitForBytesWritten says False when flush already wrote it all)
    socket.waitForBytesWritten(CONNECT_MS)
    answer = b""
    while not answer.endswith(b"\n"):
        if not socket.waitForReadyRead(ANSWER_MS):
            break
        answer += bytes(socket.readAll().data())
    socket.disconnectFromServer()
    return _reply(answer)


def _reply(answer: bytes) -> dict[str, Any]:
    try:
        reply = json.loads(answer.decode() or "{}")
    except ValueError:
        reply = {}
    return reply if isinstance(reply, dict) and reply else {"error": "The running Cairn "
                                                            "window did not answer."}


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
        self._name = server_name(data_folder)

    def listen(self) -> bool:
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
                if not buffer.endswith(b"\n"):
                    return
                try:
                    request = json.loads(buffer.decode())
                except ValueError:
                    request = None
                if not isinstance(request, dict):
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
