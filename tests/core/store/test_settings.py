"""Settings and the keychain: values that make no sense are
refused in one sentence, a damaged row is not fatal, a keychain that is missing, failing or
keeping nothing is said so with the way out (ANTHROPIC_API_KEY), and the command line names
commands, not a Settings screen."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import null

from app.store.settings import LABELS
from tests.helpers import run

ROOT = Path(__file__).resolve().parents[3]



def settings(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    code, out, err = run(capsys, "settings", "show", "--json")
    assert code == 0, err
    return dict(json.loads(out))


# ----------------------------------------------------------------- 6: values that make sense


@pytest.mark.parametrize("name, value, says", [
    ("knowledge.idle_seconds", "²", "'²' is not a whole number"),
    ("knowledge.idle_seconds", "٣", "'٣' is not a whole number"),
    ("knowledge.idle_seconds", "-5", "the delay is from 0 to 86,400 seconds (a day)"),
    ("knowledge.idle_seconds", "-", "'-' is not a whole number"),
    ("knowledge.idle_seconds", "1" + "0" * 20, "the delay is from 0 to 86,400 seconds (a day)"),
    ("knowledge.idle_seconds", "9" * 5000, "the delay is from 0 to 86,400 seconds (a day)"),
    ("knowledge.idle_seconds", "86401",
     "86,401 seconds is too long: the delay is from 0 to 86,400 seconds (a day)"),
    ("model.chat", "", "a model name cannot be empty"),
    ("model.knowledge", "  ", "a model name cannot be empty"),
    ("model.chat", "claude sonnet", "'claude sonnet' is not a model name: a model name has no spaces"),
    ("api.base_url", "notaurl",
     "'notaurl' is not an http or https URL with a host, such as http://localhost:11434"),
    ("api.base_url", "ftp://example.com", "'ftp://example.com' is not an http or https URL"),
    ("api.base_url", "http://", "'http://' is not an http or https URL"),
    ("api.base_url", "http://localhost:99999", "'http://localhost:99999' is not an http"),
])
def test_settings_that_make_no_sense_are_refused(isolated, capsys, name, value, says):
    before = settings(capsys)
    code, out, err = run(capsys, "settings", "set", name, value)
    assert (code, out) == (1, "")
    assert err.startswith(f"cannot change setting '{LABELS[name]}': {says}"), err
    assert len(err.splitlines()) == 1
    assert settings(capsys) == before


def test_a_refused_setting_is_named_by_its_label_never_its_key():
    """"cannot change setting 'Base URL'", not 'api.base_url'."""
    from app.errors import Refused
    from app.store.settings import DEFAULTS

    assert set(LABELS) == set(DEFAULTS)

    class NoDatabase:
        def query(self, _sql: str) -> list[tuple[str, str]]:
            return []

    from app.store.settings import Settings
    settings_ = Settings(NoDatabase())  # type: ignore[arg-type]
    with pytest.raises(Refused) as refused:
        settings_.set("api.base_url", "http://")
    assert str(refused.value).startswith("cannot change setting 'Base URL': ")
    assert "api.base_url" not in str(refused.value)


@pytest.mark.parametrize("name, value, stored", [
    ("knowledge.idle_seconds", "0", 0),
    ("knowledge.idle_seconds", "86400", 86_400),
    ("knowledge.idle_seconds", "007", 7),
    ("api.base_url", "http://localhost:11434", "http://localhost:11434"),
    ("api.base_url", "https://proxy.example.com/anthropic", "https://proxy.example.com/anthropic"),
    ("api.base_url", "", ""),
    ("model.chat", "qwen3:32b", "qwen3:32b"),
])
def test_settings_that_make_sense_are_kept(isolated, capsys, name, value, stored):
    assert run(capsys, "settings", "set", name, value)[0] == 0
    assert settings(capsys)[name] == stored


def test_the_core_refuses_what_the_command_line_refuses(online):
    from app.errors import Refused

    for name, value in (("knowledge.idle_seconds", 10**20), ("knowledge.idle_seconds", -1),
                        ("knowledge.idle_seconds", True), ("api.base_url", "localhost:8080"),
                        ("model.knowledge", "claude\thaiku")):
        with pytest.raises(Refused):
            online.settings.set(name, value)


# ----------------------------------------------------------------- 9: a damaged setting row


@pytest.mark.parametrize("key, raw", [
    ("model.chat", "{bad"),
    ("knowledge.idle_seconds", '"soon"'),
    ("knowledge.idle_seconds", "1e400"),
    ("memory.enabled", "\x00"),
    ("api.base_url", '"notaurl"'),
])
def test_a_damaged_setting_row_counts_as_unset_with_a_warning(isolated, capsys, caplog, folders,
                                                             key, raw):
    from app.store.settings import DEFAULTS

    (root,) = folders("Acme")
    assert run(capsys, "workspace", "add", root)[0] == 0
    with sqlite3.connect(isolated / "cairn.db") as conn:
        conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES (?, ?)", (key, raw))
    conn.close()
    with caplog.at_level(logging.WARNING, logger="app.store.settings"):
        assert settings(capsys)[key] == DEFAULTS[key]
        code, out, err = run(capsys, "context", "--folder", root)
    assert code == 0 and err == "" and "Acme" in out
    assert f"setting {key} holds" in caplog.text
    assert run(capsys, "settings", "set", "model.chat", "claude-haiku-5-5")[0] == 0


# ----------------------------------------------------------------- 8: no keychain, or a failing one


class RaisingKeyring(KeyringBackend):
    """A keychain whose every call fails, as a Secret Service does when D-Bus is gone."""

    priority = 1  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")

    def delete_password(self, service: str, username: str) -> None:
        raise RuntimeError("org.freedesktop.DBus.Error.ServiceUnknown")


UNAVAILABLE = "the system keychain is not available (it failed when asked)"


def test_a_failing_keychain_is_one_sentence_pointing_to_the_environment(isolated, capsys,
                                                                        monkeypatch):
    keyring.set_keyring(RaisingKeyring())
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-ant-typed\n"))
    assert run(capsys, "key", "set") == (
        1, "", f"cannot save the API key: {UNAVAILABLE}; set ANTHROPIC_API_KEY instead\n")
    assert run(capsys, "key", "status") == (
        1, "", f"No key can be read: {UNAVAILABLE}; set ANTHROPIC_API_KEY instead\n")
    assert run(capsys, "key", "forget") == (1, "", f"cannot forget the API key: {UNAVAILABLE}\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    assert run(capsys, "key", "status") == (0, "A key is set by ANTHROPIC_API_KEY.\n", "")


async def test_a_turn_without_a_keychain_says_why_and_what_to_do(online, workspace):
    from app.store.settings import _UNREAD

    keyring.set_keyring(RaisingKeyring())
    online.settings._keychain = _UNREAD  # forget the key the fixture stored: ask the keychain
    chat = online.registry.new_chat(folder=workspace.path)
    result = await online.engine.send(chat.id, "Hello")
    assert result.status == "failed"
    linux = ", or install and unlock GNOME Keyring or KWallet" if sys.platform.startswith(
        "linux") else ""
    assert result.error == (f"No API key: {UNAVAILABLE}. Set ANTHROPIC_API_KEY to give Cairn "
                            f"your key{linux}.")


async def test_a_keychain_that_keeps_nothing_points_the_chat_to_the_environment(online,
                                                                                 workspace):
    """On Linux without a keychain service, keyring answers "no key"
    forever; the chat's sentence points to ANTHROPIC_API_KEY, as Settings does."""
    from app.store.settings import _UNREAD

    keyring.set_keyring(null.Keyring())
    online.settings._keychain = _UNREAD
    chat = online.registry.new_chat(folder=workspace.path)
    result = await online.engine.send(chat.id, "Hello")
    assert result.status == "failed"
    assert result.error.startswith("No API key: no usable system keychain was found. Set "
                                   "ANTHROPIC_API_KEY to give Cairn your key")


def test_an_unknown_keyring_backend_is_one_sentence(isolated, tmp_path):
    """PYTHON_KEYRING_BACKEND naming nothing that exists: keyring raises ImportError."""
    env = {**os.environ, "PYTHON_KEYRING_BACKEND": "no.such.Backend"}
    said = ("the system keychain is not available (PYTHON_KEYRING_BACKEND names "
            "'no.such.Backend', which cannot be loaded)")
    for argv, stdin, expected in (
        (["key", "set"], "sk-ant-x\n", f"cannot save the API key: {said}; set ANTHROPIC_API_KEY instead\n"),
        (["key", "status"], "", f"No key can be read: {said}; set ANTHROPIC_API_KEY instead\n"),
        (["key", "forget"], "", f"cannot forget the API key: {said}\n"),
    ):
        done = subprocess.run([sys.executable, "-m", "ui.main", *argv], cwd=ROOT, input=stdin,
                              capture_output=True, text=True, env=env, timeout=60)
        assert (done.returncode, done.stderr) == (1, expected), done.stderr


# ----------------------------------------------------------------- 10: a keychain that keeps nothing


def test_key_set_reads_the_key_back(isolated, capsys, monkeypatch):
    keyring.set_keyring(null.Keyring())
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-ant-typed\n"))
    assert run(capsys, "key", "set") == (
        1, "", "cannot save the API key: the system keychain accepted it but kept nothing, so "
               "Cairn would not find it; set ANTHROPIC_API_KEY instead\n")


def test_key_set_that_worked_says_so(isolated, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-ant-typed\n"))
    assert run(capsys, "key", "set") == (0, "Saved in the system keychain for Anthropic (read back to check).\n", "")
    assert keyring.get_password("Cairn", "anthropic-api-key") == "sk-ant-typed"


# ----------------------------------------------------------------- 14: name the command


def test_no_sentence_sends_a_command_line_user_to_a_settings_screen_alone():
    """Every sentence that mentions Settings also names the command that does it."""
    lonely = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"in Settings", text):
            after = text[match.end(): match.end() + 120]
            if "`cairn " not in after:
                line = text.count("\n", 0, match.start()) + 1
                lonely.append(f"{path.relative_to(ROOT)}:{line}")
    assert not lonely, lonely


async def test_the_missing_key_sentence_names_the_command(online, fake, workspace):
    online.settings.forget_api_key()
    chat = online.registry.new_chat(folder=workspace.path)
    result = await online.engine.send(chat.id, "Hello")
    assert result.error == ("No API key is set. Add the API key for the server at "
                            f"127.0.0.1:{fake.port} in Settings or with "
                            "`cairn key set` (Cairn keeps it in your system keychain), or set "
                            "ANTHROPIC_API_KEY.")


async def test_a_rejected_key_names_the_command(online, fake, workspace):
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_error_status(401, "authentication_error", "invalid x-api-key")
    result = await online.engine.send(chat.id, "Hello")
    assert result.error == (f"The server at 127.0.0.1:{fake.port} rejected the API key. "
                            "Check or replace it in Settings or "
                            "with `cairn key set`; your message is kept.")


def test_a_setting_another_process_saved_is_seen_after_reload_and_announced(isolated):
    """``Settings.reload`` takes what another process
    stored and announces exactly the keys that changed."""
    from app.cairn import Cairn
    from app.events import SettingChanged

    window = Cairn.open(isolated)
    heard: list[str] = []
    window.registry.hub.subscribe(
        lambda event: isinstance(event, SettingChanged) and heard.append(event.key))
    try:
        terminal = Cairn.open(isolated)
        try:
            terminal.settings.set("api.base_url", "http://127.0.0.1:9/elsewhere")
            terminal.settings.set("chat.enter_sends", terminal.settings.get("chat.enter_sends"))
        finally:
            terminal.close()
        assert window.settings.get("api.base_url") != "http://127.0.0.1:9/elsewhere"
        assert window.settings.reload() == ["api.base_url"]
        assert window.settings.get("api.base_url") == "http://127.0.0.1:9/elsewhere"
        assert heard == ["api.base_url"]
        assert window.settings.reload() == [] and heard == ["api.base_url"]  # nothing new
    finally:
        window.close()
