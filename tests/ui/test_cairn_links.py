"""cairn:// links in the window: handed to the running window as a later
`cairn LINK` is (the desktop's %u, macOS's open event, Windows' URL protocol), a link opens its
chat or selects its workspace; anything else is one sentence, and nothing changes."""

from __future__ import annotations

import pytest

from app.base.cairn_link import REFUSAL
from tests.ui.helpers import run, wait_for


def test_a_chat_link_opens_the_chat_in_the_running_window(opened, folders):
    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    chat = opened.cairn.registry.new_chat(folder=acme, title="Launch plan")
    answers: list[dict] = []
    opened._request({"open": f"cairn://chat/{chat.id}"}, answers.append)
    wait_for(lambda: answers)
    assert answers == [{"ok": True}]
    wait_for(lambda: opened.window.chat_panel.chat_id == chat.id)


def test_a_workspace_link_selects_it(opened, folders):
    acme, beta = folders("Acme Inc", "Beta")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    run(opened.ops.add_workspace(beta))
    answers: list[dict] = []
    opened._request({"open": f"cairn://open?workspace={ws.id}"}, answers.append)
    wait_for(lambda: answers)
    assert answers == [{"ok": True}]
    wait_for(lambda: opened.window.sidebar.current_id() == ws.id)


@pytest.mark.parametrize("link, sentence", [
    ("cairn://open?workspace=/etc", REFUSAL),
    ("cairn://chat/ch_abcdefghijkl?send=rm", REFUSAL),
    ("cairn://chat/ch_abcdefghijkl",
     "The link names chat ch_abcdefghijkl, which is not in this data folder."),
])
def test_any_other_link_is_one_sentence_and_changes_nothing(opened, folders, link, sentence):
    before = (opened.cairn.registry.top_level(), opened.window.chat_panel.chat_id)
    answers: list[dict] = []
    opened._request({"open": link}, answers.append)
    wait_for(lambda: answers)
    assert answers == [{"error": sentence}]
    assert (opened.cairn.registry.top_level(), opened.window.chat_panel.chat_id) == before


def test_the_desktop_s_url_is_read_as_a_link_or_a_path(tmp_path):
    from ui.main import _link_or_file_url

    assert _link_or_file_url("CAIRN://chat/ch_abcdefghijkl/") == "cairn://chat/ch_abcdefghijkl"
    assert _link_or_file_url("cairn://evil?x") == f"cairn: {REFUSAL}"
    bundle = tmp_path / "a b.cairn"
    assert _link_or_file_url(bundle.as_uri()) == str(bundle)
    assert _link_or_file_url("file://elsewhere/share/a.cairn") is None  # not this machine
    assert _link_or_file_url(str(bundle)) is None  # a path: as typed


def test_cairn_with_a_bad_link_says_so_and_opens_nothing(capsys, isolated):
    from ui.main import main

    assert main(["cairn://chat/nope"]) == 2
    assert capsys.readouterr().err == f"cairn: {REFUSAL}\n"


def test_a_link_starts_the_window_on_its_chat(qapp, loop, isolated, fake, folders):
    """No window running: `cairn cairn://chat/ID` starts one, which opens the chat."""
    from app.cairn import Cairn
    from tests.ui.helpers import close_window, configure
    from ui.app import start

    configure(isolated, fake)
    (acme,) = folders("Acme Inc")
    cairn = Cairn.open(isolated)
    try:
        cairn.registry.add_workspace(acme)
        chats = [cairn.registry.new_chat(folder=acme, title=f"Chat {n}") for n in range(40)]
    finally:
        cairn.close()
    wanted = chats[3]  # an older one: not among the first the window lists
    starter = start(qapp, isolated, open_path=f"cairn://chat/{wanted.id}")
    starter.begin()
    try:
        wait_for(lambda: starter.window.chat_panel is not None
                 and starter.window.chat_panel.chat_id == wanted.id)
    finally:
        close_window(starter)
