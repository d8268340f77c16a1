"""The one-window socket: where only the user can create it, talking only to the user's own
window, and reading only what a request or an answer can be."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ui.helpers import wait_for
from ui.instance import MAX_LINE, InstanceServer, hand_over, server_name

pytestmark = pytest.mark.skipif(os.name != "posix", reason="Unix sockets")


@pytest.fixture
def temporary(monkeypatch) -> Iterator[Path]:
    """A temporary folder of the test's own, as $TMPDIR, with no runtime folder.  Made directly
    in the system's temporary folder, not under pytest's tmp_path: under pytest-xdist that
    path (…/popen-gw0/<test name>/) leaves a socket's path longer than the 108 bytes
    AF_UNIX allows."""
    folder = Path(tempfile.mkdtemp(prefix="cairn-test-"))
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_socket_is_in_a_folder_only_the_user_can_create_names_in(temporary, isolated):
    name = server_name(isolated)
    assert name is not None
    folder = Path(name).parent
    assert folder != temporary and folder.parent == temporary
    found = folder.stat()
    assert found.st_uid == os.getuid() and stat.S_IMODE(found.st_mode) == 0o700


def test_a_private_runtime_folder_is_preferred(temporary, isolated, tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert Path(server_name(isolated) or "").parent == runtime


def test_a_folder_open_to_others_is_never_used(temporary, isolated, tmp_path, monkeypatch):
    planted = temporary / f"cairn-{os.getuid()}"
    planted.mkdir()
    planted.chmod(0o777)  # made first by someone else, for everyone
    runtime = tmp_path / "run"
    runtime.mkdir()
    runtime.chmod(0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert server_name(isolated) is None
    assert hand_over(isolated, {"raise": True}) is None  # nothing asked: this start opens


def serve_once(path: str, answer: bytes) -> threading.Thread:
    """A stranger's server on *path*: it reads the request and sends *answer*."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)

    def run() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            try:
                connection.sendall(answer)
            except OSError:
                pass
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("answer", [
    b"x" * (4 * MAX_LINE),  # no end of line, ever growing
    b"[" * 100_000 + b"\n",  # deeper than the JSON parser's recursion
    json.dumps({"error": "ok\x1b]52;c;cm0gLXJmIH4=\x07", "more": 1}).encode() + b"\n",
    json.dumps({"error": ["not", "a", "sentence"]}).encode() + b"\n",
])
def test_a_strange_answer_is_never_taken_as_a_sentence(temporary, isolated, answer):
    name = server_name(isolated)
    assert name is not None
    thread = serve_once(name, answer)
    reply = hand_over(isolated, {"raise": True})
    thread.join(5)
    assert reply == {"error": "The running Cairn window did not answer."}


def test_the_answer_is_printed_escaped(temporary, isolated, monkeypatch, capsys):
    from ui import app

    name = server_name(isolated)
    assert name is not None
    serve_once(name, json.dumps({"error": "Refused\x1b[2J\u202e"}).encode() + b"\n")
    assert app.run(data_dir=isolated, open_path=None, exit_after_first_paint=True) == 1
    printed = capsys.readouterr().err
    assert "\x1b" not in printed and "\u202e" not in printed
    assert "Refused\\x1b[2J\\u202e" in printed


def test_a_socket_of_another_user_is_never_talked_to(temporary, isolated):
    if os.getuid() != 0:
        pytest.skip("making a file another user's needs root")
    name = server_name(isolated)
    assert name is not None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(1)
    os.chown(name, 65534, 65534)
    try:
        assert hand_over(isolated, {"open": "/secret/path"}) is None
        listener.settimeout(0.2)
        with pytest.raises(TimeoutError):
            listener.accept()  # it never connected
    finally:
        listener.close()


def ask_raw(path: str, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(10)
        connection.connect(path)
        try:
            connection.sendall(data)
        except OSError:  # the window hung up on an oversized request, as it should
            pass
        answer = b""
        while not answer.endswith(b"\n"):
            try:
                chunk = connection.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            answer += chunk
        return answer


@pytest.mark.parametrize("request_line", [
    b"y" * (8 * MAX_LINE),
    b"[" * 100_000 + b"\n",
    json.dumps({"open": ["/a", "/b"]}).encode() + b"\n",
    json.dumps({"open": "/a", "also": "x"}).encode() + b"\n",
])
def test_the_window_reads_only_its_two_requests(qapp, qtbot, temporary, isolated,
                                                 request_line):
    handled: list[dict[str, object]] = []
    server = InstanceServer(isolated, lambda request, answer: handled.append(request))
    assert server.listen()
    name = server_name(isolated)
    assert name is not None
    result: list[bytes] = []
    thread = threading.Thread(target=lambda: result.append(ask_raw(name, request_line)),
                              daemon=True)
    thread.start()
    wait_for(lambda: not thread.is_alive())
    server.close()
    assert handled == []
    assert json.loads(result[0]) == {"error": "Cairn did not understand the request."}


def test_the_window_takes_a_path(qapp, qtbot, temporary, isolated):
    handled: list[dict[str, object]] = []
    server = InstanceServer(isolated, lambda request, answer: (handled.append(request),
                                                              answer({"ok": True})))
    assert server.listen()
    replies: list[object] = []
    thread = threading.Thread(
        target=lambda: replies.append(hand_over(isolated, {"open": "/work/Acme"})), daemon=True)
    thread.start()
    wait_for(lambda: not thread.is_alive())
    server.close()
    assert handled == [{"open": "/work/Acme"}] and replies == [{"ok": True}]
