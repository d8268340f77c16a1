"""The command line in scripts: standard input for `-` and for a
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
    stdin_of(monkeypatch, b"## Facts\n- The accent colour is orange.\n")
    assert cli.main(["knowledge", "set", workspace.id, "-"]) == 0
    capsys.readouterr()
    assert cli.main(["knowledge", "show", workspace.id]) == 0
    assert "accent colour is orange" in capsys.readouterr().out
    stdin_of(monkeypatch, b"I write in British English.\n")
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


# ----------------------------------------------------------------------- item 8: completion


def command_paths(parser) -> list[str]:
    """Every command path of the real parsers, found without the completion module."""
    import argparse

    found: list[str] = []

    def walk(path: str, p: argparse.ArgumentParser) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append(f"{path} {name}".strip())
                    walk(f"{path} {name}".strip(), sub)

    walk("", parser)
    return found


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "powershell"])
def test_completion_names_every_subcommand_of_the_real_parsers(isolated, capsys, shell):
    assert cli.main(["completion", shell]) == 0
    out = capsys.readouterr().out
    paths = command_paths(cli.build_parser())
    assert {"workspace add", "knowledge set", "ask", "completion", "chat archive"} <= set(paths)
    quote = "'" if shell in ("fish", "powershell") else '"'
    missing = [p for p in paths if f"{quote}{p}{quote}" not in out]
    assert not missing
    for option in ("--jsonl", "--continue", "--attach", "--data-dir"):
        assert option in out
    assert not (isolated / "cairn.db").exists()  # printing a script opens no data folder


def test_a_subcommand_added_to_the_parsers_is_completed_without_touching_the_scripts():
    from app.cli.completion import script

    parser = cli.build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    commands.add_parser("zzz-new").add_argument("--zzz-flag", action="store_true")
    for shell in ("bash", "zsh", "fish", "powershell"):
        text = script(shell, parser)
        assert "zzz-new" in text and "--zzz-flag" in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("typed, expected", [
    (["knowledge", "s"], {"set", "show", "status", "suggestions"}),
    (["ask", "--js"], {"--json", "--jsonl"}),
    (["completion", "p"], {"powershell"}),
    (["--data-dir", "x", "work"], {"workspace"}),
    (["workspace", "knowledge-file", ""], {"on", "off", "status"}),
    (["knowledge", "set", "ws_1", "no"], {"notes.md"}),  # a FILE: file names
])
def test_bash_completes_from_the_generated_script(isolated, capsys, tmp_path, typed, expected):
    assert cli.main(["completion", "bash"]) == 0
    (tmp_path / "cairn.bash").write_text(capsys.readouterr().out)
    (tmp_path / "notes.md").write_text("x")
    words = " ".join(f"'{w}'" for w in ["cairn", *typed])
    probe = (f"source cairn.bash; COMP_WORDS=({words}); COMP_CWORD={len(typed)}; _cairn; "
             'printf "%s\\n" "${COMPREPLY[@]}"')
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe], cwd=tmp_path,
                          capture_output=True, text=True, timeout=30,
                          env={**os.environ, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == expected


# ----------------------------------------------------------------------- item 8: ask -c, --jsonl


def test_ask_continue_goes_on_with_the_last_chat_of_the_current_folder(
        offline_cli, fake, workspace, capsys, monkeypatch, folders):
    fake.reply_text("First.")
    fake.reply_text("Elsewhere.")
    fake.reply_text("Second.")
    (other,) = folders("Other")
    assert cli.main(["ask", "--folder", workspace.path, "One", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["chat"]
    assert cli.main(["ask", "--folder", other, "Two", "--json"]) == 0
    capsys.readouterr()
    monkeypatch.chdir(workspace.path)
    assert cli.main(["ask", "-c", "Three", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chat"] == first
    texts = json.dumps(fake.message_requests[-1].body["messages"])
    assert "One" in texts and "First." in texts and "Two" not in texts


def test_ask_continue_where_no_chat_was_started_is_one_sentence(offline_cli, fake, capsys,
                                                                monkeypatch, folders):
    (empty,) = folders("Empty")
    monkeypatch.chdir(empty)
    assert cli.main(["ask", "--continue", "Hello"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no chat was started in this folder" in err
    assert fake.message_requests == []
    assert cli.main(["ask", "-c", "--chat", "ch_x", "Hi"]) == 2  # one of the three, not two


def test_ask_keeps_spec_004s_exact_refusal_for_an_unknown_chat(offline_cli, capsys):
    assert cli.main(["ask", "--chat", "ch_nope", "Hi"]) == 1
    assert capsys.readouterr().err == "cannot continue session 'ch_nope': no such session\n"


def test_ask_jsonl_streams_one_object_per_event_and_ends_with_the_json_summary(
        offline_cli, fake, workspace, capsys):
    fake.reply_text("Orange and black, as agreed.", chunk=6)
    assert cli.main(["ask", "--folder", workspace.path, "Colours?", "--jsonl"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    texts = [e for e in events if e.get("type") == "text"]
    assert len(texts) > 1 and "".join(e["text"] for e in texts) == "Orange and black, as agreed."
    assert [e["type"] for e in events[len(texts):-1]] == ["reply"]
    final = events[-1]
    fake.reply_text("Orange and black, as agreed.")
    assert cli.main(["ask", "--folder", workspace.path, "Colours?", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(final) == set(summary) and final["text"] == summary["text"]
    assert final["status"] == "complete" or final["status"] == summary["status"]


def test_the_cairn_command_runs_completion_as_a_command_not_the_window(isolated, capsys):
    from ui.main import main

    assert main(["completion", "fish"]) == 0
    assert "complete -c cairn" in capsys.readouterr().out
