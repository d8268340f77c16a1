"""The command line in scripts (issue 39, items 4 and 8): standard input for `-` and for a
piped message, exit codes that tell a failed fetch, shell completion drawn from the real
parsers, `cairn ask -c`, and `cairn ask --jsonl`."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess

import pytest

from app import cli


def stdin_of(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """A pipe on standard input (not a terminal), holding *data*."""
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


@pytest.fixture
def offline_cli(online, workspace):
    online.close()  # the command line opens its own core on the same data folder
    return online


# ----------------------------------------------------------------------- item 4: stdin


def test_ask_dash_reads_the_message_from_standard_input(offline_cli, fake, workspace,
                                                         capsys, monkeypatch):
    stdin_of(monkeypatch, "Summarise: the launch is in April. ✓\n".encode())
    fake.reply_text("April it is.")
    assert cli.main(["ask", "--folder", workspace.path, "-"]) == 0
    assert capsys.readouterr().out.strip() == "April it is."
    sent = fake.message_requests[0].body["messages"][-1]["content"]
    assert "Summarise: the launch is in April. ✓" in json.dumps(sent, ensure_ascii=False)
    assert '"-"' not in json.dumps(sent)


def test_a_piped_message_with_no_text_argument_is_sent(offline_cli, fake, workspace, capsys,
                                                        monkeypatch):
    stdin_of(monkeypatch, b"What did we decide?")
    fake.reply_text("Orange.")
    assert cli.main(["ask", "--folder", workspace.path]) == 0
    assert "What did we decide?" in json.dumps(fake.message_requests[0].body["messages"])


def test_no_message_at_a_terminal_is_one_sentence_and_stores_nothing(offline_cli, fake,
                                                                      workspace, capsys,
                                                                      monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal())
    assert cli.main(["ask", "--folder", workspace.path]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "`-`" in err and "standard input" in err
    assert fake.message_requests == []
    assert cli.main(["chat", "list", "--json"]) == 0
    assert not any(w["chats"] for w in json.loads(capsys.readouterr().out)["workspaces"])


@pytest.mark.parametrize("data, words", [
    (b"\xff\xfe not text", "not UTF-8 text (byte 1"),
    (b"", "empty message"),
    (b"x" * 4_000_001, "over 4 MB"),
])
def test_a_message_from_standard_input_that_cannot_be_sent_is_refused(
        offline_cli, fake, workspace, capsys, monkeypatch, data, words):
    stdin_of(monkeypatch, data)
    assert cli.main(["ask", "--folder", workspace.path, "-"]) == 1
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert fake.message_requests == []


def test_knowledge_set_and_memory_set_read_standard_input_for_dash(offline_cli, workspace,
                                                                   capsys, monkeypatch):
    stdin_of(monkeypatch, "## Facts\n- The accent colour is orange.\n".encode())
    assert cli.main(["knowledge", "set", workspace.id, "-"]) == 0
    capsys.readouterr()
    assert cli.main(["knowledge", "show", workspace.id]) == 0
    assert "accent colour is orange" in capsys.readouterr().out
    stdin_of(monkeypatch, "I write in British English.\n".encode())
    assert cli.main(["memory", "set", "-"]) == 0
    capsys.readouterr()
    assert cli.main(["memory", "show"]) == 0
    assert "British English" in capsys.readouterr().out


def test_a_document_from_standard_input_too_large_or_not_text_changes_nothing(
        offline_cli, workspace, capsys, monkeypatch):
    for data, words in ((b"x" * 1_000_001, "at most 1 MB"), (b"ok \xc3", "not UTF-8")):
        stdin_of(monkeypatch, data)
        assert cli.main(["knowledge", "set", workspace.id, "-"]) == 1
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1
    assert cli.main(["knowledge", "history", workspace.id, "--json"]) == 0
    assert all(v["source"] != "user" for v in json.loads(capsys.readouterr().out))


# ----------------------------------------------------------------------- item 4: exit codes


def test_models_exits_1_when_the_list_could_not_be_fetched(offline_cli, fake, capsys):
    assert cli.main(["models"]) == 0  # fetched: the list is kept
    capsys.readouterr()
    fake.models_status = 500
    assert cli.main(["models", "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)  # the list fetched before, still printed for a person
    assert err.count("\n") == 1 and "Could not fetch the models list now" in err


def test_models_without_a_key_says_why_in_the_one_sentence(offline_cli, capsys, monkeypatch):
    from app.store.settings import Settings

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setattr(Settings, "api_key", lambda self: None)
    assert cli.main(["models"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Could not fetch the models list now (")
