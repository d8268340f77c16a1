"""Helpers shared by tests of every level: running the command line in-process, a probe in
a fresh interpreter, and an exchange that gives a rebuild something to learn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cairn ARGV…`` in this process: its exit code, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """``cairn ARGV… --json``, which must succeed: its parsed output."""
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def fresh_python(probe: str, **env: str) -> str:
    """What *probe* prints, run by a fresh interpreter in the project's folder (what a start
    imports, before this test process's own imports could hide it); it must succeed."""
    done = subprocess.run([sys.executable, "-c", probe], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, env=dict(os.environ, **env),
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


# ----------------------------------------------------------------- knowledge through a chat

# A reply long enough, and with facts enough, for a rebuild to learn from.
LONG = "Our launch date is 2027-04-15 and the accent colour is orange #FF5500, as agreed today."


async def talk(cairn: Any, fake: Any, chat_id: str, question: str, reply: str = LONG) -> None:
    """One complete exchange in *chat_id*: *question* sent, *reply* streamed by the fake."""
    fake.reply_text(reply)
    result = await cairn.engine.send(chat_id, question)
    assert result.status == "complete"


def add_op(text: str, evidence: str, section: str = "Facts", target: str = "project") -> dict:
    """An ``add`` operation of a knowledge-model reply."""
    return {"op": "add", "target": target, "section": section, "text": text, "evidence": evidence}
