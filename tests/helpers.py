"""Helpers shared by tests of every level: running the command line in-process, a probe in
a fresh interpreter, and an exchange that gives a rebuild something to learn."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
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


async def exchange_in(cairn: Any, fake: Any, workspace: Any) -> str:
    """A new chat in *workspace* with one complete exchange a rebuild can learn from; its id."""
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "When do we launch?")
    return chat.id


def watermark(cairn: Any, chat_id: str) -> int:
    """The id of the last message of *chat_id* the knowledge rebuild has read."""
    return cairn.registry.db.query("SELECT knowledge_watermark FROM chat WHERE id = ?",
                                   (chat_id,))[0][0]


def knowledge_requests(fake: Any) -> list:
    """The knowledge-model requests the fake server received (the ones asking for ops)."""
    return [r for r in fake.message_requests if "output_config" in (r.body or {})
            and "format" in r.body["output_config"]]


def hold_knowledge_calls(cairn: Any) -> tuple[asyncio.Event, asyncio.Event, list]:
    """Knowledge-model calls wait at a gate until the test opens it: (gate, entered, calls).

    The call runs on Cairn's network thread; the gate and ``entered`` belong to the test's
    loop, so the held call reaches them through it."""
    loop = asyncio.get_running_loop()
    gate, entered, calls = asyncio.Event(), asyncio.Event(), []
    real_client = cairn.rebuilder._client

    class Held:
        def __init__(self) -> None:
            self.messages = self

        async def create(self, **kwargs: Any) -> Any:
            calls.append(kwargs)
            loop.call_soon_threadsafe(entered.set)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(gate.wait(), loop))
            return await real_client().messages.create(**kwargs)

    cairn.rebuilder._client = Held
    return gate, entered, calls


# ---------------------------------------------------------------------- other processes

def children() -> set[int]:
    """The ids of this process's live child processes (read in /proc: Linux only)."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            found |= {int(p) for p in (task / "children").read_text().split()}
        except OSError:
            continue
    alive = set()
    for pid in found:  # a reaped or zombie child is no server left running
        try:
            state = (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0])
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def database_before(folder: Path, made_by: str) -> tuple[sqlite3.Connection, int]:
    """A database in *folder* exactly as the version before the migration whose script holds
    *made_by* left it (found by what it does, not by its place: later migrations may follow
    it), and that version; the connection commits each statement (autocommit)."""
    from app.base import db as dbmodule

    version = next(i for i, script in enumerate(dbmodule.MIGRATIONS) if made_by in script)
    folder.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(folder / dbmodule.DB_NAME, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL").fetchall()
    conn.execute("BEGIN")
    for script in dbmodule.MIGRATIONS[:version]:
        for statement in dbmodule._statements(script):
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("COMMIT")
    return conn, version
