"""`cairn ask` as a process: a closed stdout, Ctrl-C and SIGTERM, refusals that leave no
junk, and the window's own command-line words."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LONG = ("Our launch date is 2027-04-15 and the accent colour is orange #FF5500. " * 40).strip()


def env_for(isolated: Path, fake) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return dict(os.environ, CAIRN_DATA_DIR=str(isolated), ANTHROPIC_API_KEY="sk-test",
                ANTHROPIC_BASE_URL=fake.base_url, QT_QPA_PLATFORM="offscreen")


def cairn(*args: str, env: dict[str, str], **kwargs) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    return subprocess.Popen([sys.executable, "-m", "ui.main", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def stored(isolated: Path) -> list[dict]:
    """Every chat with its messages, as another process (the command line) reads them."""
    listing = subprocess.run([sys.executable, "-m", "ui.main", "chat", "list", "--json"],
                             cwd=ROOT, env=dict(os.environ, CAIRN_DATA_DIR=str(isolated)),
                             capture_output=True, text=True, check=True)
    data = json.loads(listing.stdout)
    chats = data["ungrouped"] + [c for w in data["workspaces"] for c in w["chats"]]
    out = []
    for chat in chats:
        shown = subprocess.run([sys.executable, "-m", "ui.main", "chat", "show", chat["id"],
                                "--json"], cwd=ROOT,
                               env=dict(os.environ, CAIRN_DATA_DIR=str(isolated)),
                               capture_output=True, text=True, check=True)
        out.append(json.loads(shown.stdout))
    return out


def test_a_closed_stdout_never_touches_what_is_stored(isolated, fake, tmp_path):
    folder = tmp_path / "here"
    folder.mkdir()
    fake.reply_text(LONG, chunk=10, delay=0.002)
    process = cairn("ask", "--folder", str(folder), "When do we launch?",
                    env=env_for(isolated, fake))
    assert process.stdout is not None
    first = process.stdout.read(20)  # `| head -c 20`
    process.stdout.close()
    _, err = process.communicate(timeout=60)
    assert len(first) == 20 and process.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    (chat,) = stored(isolated)
    reply = chat["messages"][-1]
    assert reply["status"] == "complete"
    assert "".join(b.get("text", "") for b in reply["content"]) == LONG


@pytest.mark.parametrize("how, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_stopping_ask_keeps_the_partial_reply_marked_stopped(isolated, fake, tmp_path, how,
                                                             code):
    folder = tmp_path / "here"
    folder.mkdir()
    fake.hang(text_before="Partial answer", model="claude-sonnet-5-5")
    process = cairn("ask", "--folder", str(folder), "Tell me everything",
                    env=env_for(isolated, fake))
    assert process.stdout is not None
    assert process.stdout.read(len("Partial answer")) == b"Partial answer"
    process.send_signal(how)
    _, err = process.communicate(timeout=60)
    lines = err.decode().strip().splitlines()
    assert process.returncode == code and lines == ["Stopped; the partial reply is kept."]
    (chat,) = stored(isolated)
    reply = chat["messages"][-1]
    assert reply["status"] == "stopped"
    assert "".join(b.get("text", "") for b in reply["content"]) == "Partial answer"


@pytest.mark.parametrize("make, sentence", [
    (lambda d: ["   "], "cannot send an empty message"),
    (lambda d: ["--attach", str(d / "missing.txt"), "hi"], "does not exist"),
    (lambda d: ["--attach", str(d / "tool.bin"), "hi"], "Cairn can send text files"),
])
def test_a_refused_ask_leaves_no_chat_behind(isolated, fake, tmp_path, make, sentence):
    folder = tmp_path / "here"
    folder.mkdir()
    (tmp_path / "tool.bin").write_bytes(bytes(range(256)) * 10)
    done = subprocess.run([sys.executable, "-m", "ui.main", "ask", "--folder", str(folder),
                           *make(tmp_path)], cwd=ROOT, env=env_for(isolated, fake),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and sentence in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert stored(isolated) == [] and fake.message_requests == []


def test_chat_new_resolves_its_folder_here_and_refuses_an_empty_one(isolated, tmp_path):
    env = dict(os.environ, CAIRN_DATA_DIR=str(isolated))
    (tmp_path / "work").mkdir()
    made = subprocess.run([sys.executable, "-m", "ui.main", "chat", "new", "--folder", ".",
                           "--json"], cwd=tmp_path / "work", env=env, capture_output=True,
                          text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["folder"] == str(tmp_path / "work")
    empty = subprocess.run([sys.executable, "-m", "ui.main", "chat", "new", "--folder", ""],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert empty.returncode == 1 and "--folder is empty" in empty.stderr


def test_help_names_the_window_words(isolated):
    done = subprocess.run([sys.executable, "-m", "ui.main", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    for word in ("open", "PATH", "--exit-after-first-paint"):
        assert word in done.stdout


def test_a_refused_path_never_blocks_a_timed_start(isolated, tmp_path):
    env = dict(os.environ, CAIRN_DATA_DIR=str(isolated), QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-m", "ui.main", str(tmp_path / "missing"),
                           "--exit-after-first-paint"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr  # the window opened; the notice is not modal


def test_what_the_knowledge_model_wrote_is_printed_escaped(online, fake, workspace, capsys):
    from app import cli

    online.close()
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": [{
        "op": "add", "target": "project", "section": "Facts",
        "text": "Launch 2027-04-15 \x1b[31mred\x1b[0m", "evidence": "launch date is 2027-04-15"}]})
    assert cli.main(["ask", "--folder", workspace.path, "When?"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err


@pytest.mark.parametrize("how, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_while_the_knowledge_update_waits_keeps_the_reply(isolated, fake, tmp_path, how,
                                                                 code):
    """As a terminal does it: the wait is said on stderr, Ctrl+C leaves the
    update for later, the reply is stored whole and the exchange still waits for a rebuild."""
    folder = tmp_path / "here"
    folder.mkdir()
    fake.reply_text(LONG)
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "50"})
    process = cairn("ask", "--folder", str(folder), "When do we launch?",
                    env=env_for(isolated, fake))
    assert process.stderr is not None
    said = process.stderr.readline().decode()  # blocks until the wait is said
    assert said == (f"Updating knowledge: the server at 127.0.0.1:{fake.port} asked to wait "
                    "50 seconds (Ctrl+C leaves it for later; your reply is saved).\n")
    process.send_signal(how)
    out, err = process.communicate(timeout=60)
    assert process.returncode == code, err.decode()
    assert out.decode() == LONG + "\n"
    assert "Knowledge update left for later" in err.decode() and b"Traceback" not in err
    (chat,) = stored(isolated)
    reply = chat["messages"][-1]
    assert reply["status"] == "complete"
    from app.cairn import Cairn

    opened = Cairn.open(isolated)
    try:
        assert [e.reply for e in opened.rebuilder.pending(chat["id"])] == [LONG]
    finally:
        opened.close()
