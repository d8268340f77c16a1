"""The one-window pipe on Windows: a name another user cannot work out,
and a pipe that someone else serves is never talked to.

A named pipe needs Windows, so what can be checked here is checked as data: the name from
the user, the data folder and the secret; the secret made once and kept; and the asking side
(``_hand_over_qt``, the Windows path) sending nothing to a server the owner check does not
vouch for — driven here over a Unix socket, which QLocalSocket speaks the same way.  The
owner check itself (``GetNamedPipeServerProcessId`` and the process token's user) runs only
on Windows; off it, it says no.
"""

from __future__ import annotations

import os
import stat
import threading

import pytest

from tests.ui.helpers import wait_for
from ui import instance
from ui.instance import (
    SECRET_FILE,
    InstanceServer,
    instance_secret,
    pipe_name,
    pipe_server_is_us,
    server_name,
)

SID = "S-1-5-21-1004336348-1177238915-682003330-1001"


def test_the_name_depends_on_the_secret_so_knowing_the_user_and_folder_is_not_enough(isolated):
    one = pipe_name(isolated, user=SID, secret="a" * 64)
    other = pipe_name(isolated, user=SID, secret="b" * 64)
    assert one != other
    assert one.startswith("cairn-") and len(one) == len("cairn-") + 40  # 160 bits
    assert SID not in one and str(isolated) not in one
    assert pipe_name(isolated, user="S-1-5-21-2", secret="a" * 64) != one  # per user too


def test_the_secret_is_made_once_by_the_listening_window_and_kept_private(isolated):
    assert instance_secret(isolated) is None  # the asking side never makes one
    assert server_name(isolated, windows=True) is None  # so no window can be listening
    made = instance_secret(isolated, create=True)
    assert made is not None and len(made) == 64 and int(made, 16) >= 0
    assert instance_secret(isolated) == made == instance_secret(isolated, create=True)
    assert server_name(isolated, windows=True) == server_name(isolated, windows=True,
                                                              create=True)
    if os.name == "posix":
        assert stat.S_IMODE((isolated / SECRET_FILE).stat().st_mode) == 0o600


def test_a_secret_that_cairn_did_not_make_is_not_used(isolated):
    isolated.mkdir(parents=True, exist_ok=True)
    (isolated / SECRET_FILE).write_text("cairn", encoding="ascii")  # short, guessable
    assert instance_secret(isolated, create=True) is None
    assert server_name(isolated, windows=True, create=True) is None  # one window per start


def test_two_data_folders_never_share_a_name(tmp_path):
    names = {server_name(tmp_path / name, windows=True, create=True) for name in ("a", "b")}
    assert len(names) == 2 and None not in names


def test_the_owner_check_says_no_when_it_cannot_tell():
    if os.name == "nt":
        pytest.skip("on Windows the check asks the system")
    assert pipe_server_is_us(0) is False


@pytest.mark.skipif(os.name != "posix", reason="drives the Windows path over a Unix socket")
@pytest.mark.parametrize("vouched", [False, True])
def test_a_server_the_owner_check_does_not_vouch_for_hears_nothing(
        qapp, qtbot, isolated, tmp_path, monkeypatch, vouched):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    monkeypatch.setattr(instance, "ANSWER_MS", 1_000)  # (the reply is not what is tested)
    handled: list[dict[str, object]] = []
    server = InstanceServer(isolated, lambda request, answer: (handled.append(request),
                                                              answer({"ok": True})))
    assert server.listen()
    name = server_name(isolated)
    assert name is not None
    checked: list[int] = []
    monkeypatch.setattr(instance, "server_is_us", lambda handle: (checked.append(handle),
                                                                  vouched)[1])
    replies: list[object] = []
    thread = threading.Thread(target=lambda: replies.append(
        instance._hand_over_qt(name, {"open": "/work/Acme"})), daemon=True)
    thread.start()
    wait_for(lambda: not thread.is_alive())
    if not vouched:
        qtbot.wait(50)  # (a request that was sent would reach the handler in this time)
    server.close()
    assert len(checked) == 1 and checked[0] > 0  # asked about the connected handle
    if vouched:  # (the reply over a Unix socket is test_instance.py's; the gate is this one's)
        assert handled == [{"open": "/work/Acme"}]
    else:
        assert handled == [] and replies == [None]
