"""One key per server: the keychain entry is found by the base URL, so a
proxy's key set in one data folder never replaces the Anthropic key another one uses;
Anthropic's own entry keeps its old name; a key kept under it while a custom base URL is set
is copied to that server's entry, once."""

from __future__ import annotations

import keyring
import pytest

from app import cli
from app.cairn import Cairn
from app.store.settings import KEYRING_SERVICE, KEYRING_USER, key_owner, key_user, server_of

PROXY = "http://localhost:4000"


def entries() -> dict[str, str]:
    return {user: secret for (service, user), secret in keyring.get_keyring().secrets.items()
            if service == KEYRING_SERVICE}


@pytest.fixture(autouse=True)
def no_env_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


@pytest.mark.parametrize("url, server", [
    ("", None), (None, None), ("https://api.anthropic.com", None),
    ("HTTPS://API.Anthropic.com/", None),
    ("http://localhost:4000", PROXY), ("http://LOCALHOST:4000/", PROXY),
    ("http://localhost:4000/v1/", "http://localhost:4000/v1"),
    ("http://[::1]:11434", "http://[::1]:11434"),
])
def test_the_server_of_a_base_url(url, server):
    assert server_of(url) == server
    assert key_user(url) == (KEYRING_USER if server is None else f"{KEYRING_USER} {server}")


def test_whose_key_is_said_in_words():
    assert key_owner("") == "Anthropic"
    assert key_owner("http://localhost:4000/") == "the server at localhost:4000"
    assert key_owner("https://gw.example.com/anthropic") == "the server at gw.example.com/anthropic"


def test_a_proxys_key_in_one_data_folder_leaves_anthropics_key_of_another(tmp_path):
    anthropic = Cairn.open(tmp_path / "a", background_rebuilds=False)
    proxied = Cairn.open(tmp_path / "b", background_rebuilds=False)
    try:
        anthropic.settings.set_api_key("sk-ant-real")
        proxied.settings.set("api.base_url", PROXY + "/")
        proxied.settings.set_api_key("sk-litellm-proxy")
        assert entries() == {KEYRING_USER: "sk-ant-real",
                             f"{KEYRING_USER} {PROXY}": "sk-litellm-proxy"}
        fresh = Cairn.open(tmp_path / "a", background_rebuilds=False)  # read from the keychain
        assert fresh.settings.api_key() == "sk-ant-real"
        fresh.close()
        assert proxied.settings.api_key() == "sk-litellm-proxy"
        # Changing the base URL changes whose key is used, at once.
        proxied.settings.set("api.base_url", "")
        assert proxied.settings.api_key() == "sk-ant-real"
        proxied.settings.set("api.base_url", PROXY)
        assert proxied.settings.api_key() == "sk-litellm-proxy"
        proxied.settings.forget_api_key()  # the proxy's only
        assert entries() == {KEYRING_USER: "sk-ant-real"}
    finally:
        anthropic.close()
        proxied.close()


def test_an_old_key_under_a_custom_base_url_is_copied_to_its_server_once(tmp_path):
    keyring.set_password(KEYRING_SERVICE, KEYRING_USER, "sk-kept-before")  # the old, shared entry
    cairn = Cairn.open(tmp_path / "d", background_rebuilds=False)
    try:
        cairn.settings.set("api.base_url", PROXY)
        assert cairn.settings.api_key() == "sk-kept-before"  # what this server got before
        assert entries() == {KEYRING_USER: "sk-kept-before",  # copied, never moved
                             f"{KEYRING_USER} {PROXY}": "sk-kept-before"}
        cairn.settings.forget_api_key()
        again = Cairn.open(tmp_path / "d", background_rebuilds=False)
        assert again.settings.api_key() is None  # once: a key forgotten stays forgotten
        assert entries() == {KEYRING_USER: "sk-kept-before"}
        again.close()
    finally:
        cairn.close()


def test_with_anthropics_default_nothing_moves(tmp_path):
    keyring.set_password(KEYRING_SERVICE, KEYRING_USER, "sk-ant-old")
    cairn = Cairn.open(tmp_path / "e", background_rebuilds=False)
    try:
        assert cairn.settings.api_key() == "sk-ant-old"
        assert entries() == {KEYRING_USER: "sk-ant-old"}
    finally:
        cairn.close()


def test_cairn_key_says_which_server_the_key_is_for(isolated, capsys, monkeypatch):
    import io

    assert cli.main(["settings", "set", "api.base_url", PROXY]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-proxy\n"))
    assert cli.main(["key", "set"]) == 0
    assert "for the server at localhost:4000" in capsys.readouterr().out
    assert cli.main(["key", "status"]) == 0
    assert capsys.readouterr().out == ("A key for the server at localhost:4000 is stored in "
                                       "the system keychain.\n")
    assert entries() == {f"{KEYRING_USER} {PROXY}": "sk-proxy"}
