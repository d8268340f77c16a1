"""Plain http to another machine: the API key would cross the network
unencrypted, so Cairn says so in Settings and on the command line and sends nothing there —
not the key, not the models list request — until the person agrees (``api.plain_http``, the
one origin they allowed).  Loopback http (a local server) needs no agreement.

Tests never leave this machine, so the fake server on 127.0.0.1 plays "another machine":
``plain_http_host`` is told to take its address for a remote one."""

from __future__ import annotations

import pytest

from app.store import settings as settings_module
from app.store.settings import origin, plain_http_host, reason_to_refuse
from tests.helpers import run

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("url, host", [
    ("http://localhost:11434", None), ("http://LOCALHOST:1234/v1", None),
    ("http://127.0.0.1:8080", None), ("http://127.8.9.10", None), ("http://[::1]:11434", None),
    ("http://[::ffff:127.0.0.1]:80", None), ("http://ollama.localhost", None),
    ("https://api.anthropic.com", None), ("https://10.0.0.5", None),
    ("http://192.168.1.20:11434", "192.168.1.20"), ("http://10.0.0.5", "10.0.0.5"),
    ("http://ollama.lan:11434", "ollama.lan"), ("http://user:pw@proxy.example:3128", "proxy.example"),
    ("HTTP://Gateway.Example", "gateway.example"), ("http://[2001:db8::1]:8080", "2001:db8::1"),
    ("http://localhost.evil.example", "localhost.evil.example"),
])
def test_what_counts_as_plain_http_to_another_machine(url, host):
    assert plain_http_host(url) == host


def test_the_agreement_names_one_origin_of_another_machine():
    assert origin("http://Ollama.lan:11434/v1/") == "http://ollama.lan:11434"
    assert origin("http://10.0.0.5") == "http://10.0.0.5:80"
    assert reason_to_refuse("api.plain_http", "http://10.0.0.5:80") is None
    for wrong in ("http://localhost:11434", "https://10.0.0.5:443", "http://10.0.0.5",
                  "http://10.0.0.5:80/v1"):
        assert reason_to_refuse("api.plain_http", wrong), wrong


@pytest.fixture
def remote(online, fake, monkeypatch):
    """The fake server, taken for another machine: its plain http address needs agreeing."""
    real = settings_module.plain_http_host
    monkeypatch.setattr(settings_module, "plain_http_host",
                        lambda url: "fake.example" if url.startswith(fake.base_url) else real(url))
    return online


async def test_nothing_is_sent_before_the_person_agrees_then_it_works(remote, fake, folders):
    (root,) = folders("Acme")
    chat = remote.registry.new_chat(folder=root)
    fake.reply_text("Hello.")
    result = await remote.engine.send(chat.id, "Hi")
    assert result.status == "failed"
    assert result.error.startswith("Cairn did not send your API key: ")
    assert "unencrypted" in result.error and "cairn settings set api.plain_http " in result.error
    assert fake.requests == []  # not the models list, not the message: nothing at all
    remote.settings.set("api.plain_http", origin(fake.base_url))
    fake.reply_text("Hello.")
    assert (await remote.engine.send(chat.id, "Hi again")).status == "complete"
    assert fake.message_requests
    # Withdrawn: refused again (the client made under the agreement is not reused).
    remote.settings.set("api.plain_http", "")
    before = len(fake.requests)
    assert (await remote.engine.send(chat.id, "And again")).status == "failed"
    assert len(fake.requests) == before


def test_the_environments_base_url_is_held_to_the_same(remote, fake, monkeypatch):
    remote.settings.set("api.base_url", "")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    from app.llm.client import ModelError, make_client

    with pytest.raises(ModelError, match="^Cairn did not send your API key") as refused:
        make_client(remote.settings)
    assert refused.value.kind == "plain-http"
    assert fake.requests == []


async def test_settings_test_asks_only_with_the_persons_agreement(remote, fake):
    from app.errors import CairnError
    from app.ops import Operations

    ops = Operations(remote)
    with pytest.raises(CairnError, match="^Cairn did not send your API key"):
        await ops.test_connection(key=None, base_url=fake.base_url)
    assert fake.requests == []
    _server, count, error = await ops.test_connection(key=None, base_url=fake.base_url,
                                                      plain_http=True)
    assert error is None and count is not None and fake.requests


def test_the_command_line_warns_and_says_how_to_allow(remote, fake, capsys):
    code, _out, err = run(capsys, "settings", "show")
    assert code == 0
    assert err.startswith("Warning: ") and "unencrypted" in err
    assert f"cairn settings set api.plain_http {origin(fake.base_url)}" in err
    code, _out, err = run(capsys, "settings", "set", "api.plain_http", origin(fake.base_url))
    assert code == 0 and "You allowed it" in err
    code, _out, err = run(capsys, "settings", "set", "api.base_url", "http://localhost:1")
    assert code == 0 and err == ""  # this machine's own: nothing to warn of


async def test_a_redirect_never_carries_the_key_elsewhere(online, fake, folders):
    """The server the person chose (here a local one: no agreement needed) answers a redirect
    to another server, say plain http on another machine: the key is not sent there, nor is
    the chat."""
    from tests.fake_anthropic import FakeAnthropic

    (root,) = folders("Acme")
    chat = online.registry.new_chat(folder=root)
    with FakeAnthropic() as elsewhere:
        fake.reply_error_status(307, "redirect", "Moved.",
                                headers={"Location": f"{elsewhere.base_url}/v1/messages"})
        elsewhere.reply_text("Hello from elsewhere.")
        result = await online.engine.send(chat.id, "Hi")
        assert [r.api_key for r in elsewhere.requests if r.api_key] == []
        assert elsewhere.message_requests == []
    assert result.status == "failed" and result.error == (
        f"The server at 127.0.0.1:{fake.port} refused the request: Moved.")
