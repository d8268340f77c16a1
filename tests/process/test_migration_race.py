"""Several processes opening one data folder at once: a fresh start, an upgrade, an empty file.

The window plus a command right after an update is the real case: every process succeeds (or
says one sentence), one backup per migration, nothing left behind."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.base import db as dbmod
from app.base.db import DB_NAME, SCHEMA_VERSION, Database
from app.errors import StartupError

ROOT = Path(__file__).resolve().parents[2]

# Each child waits for the go file, so that all of them open the database at the same moment.
CHILD = """
import os, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from app.base.db import Database
go = Path({go!r})
while not go.exists():
    time.sleep(0.005)
db = Database.open(Path({folder!r}))
print(db.query("PRAGMA user_version")[0][0])
db.close()
"""


def run_together(folder: Path, count: int, tmp_path: Path) -> list[subprocess.CompletedProcess]:
    go = tmp_path / "go"
    code = CHILD.format(root=str(ROOT), go=str(go), folder=str(folder))
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(count)]
    time.sleep(0.3)  # let the interpreters start; the go file then releases them together
    go.touch()
    results = []
    for child in children:
        out, err = child.communicate(timeout=120)
        results.append(subprocess.CompletedProcess(child.args, child.returncode, out, err))
    return results


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()
                  if p.name.endswith((".new", ".partial", ".partial-wal", ".partial-shm")))


def test_twenty_processes_on_a_fresh_folder_all_succeed(tmp_path):
    folder = tmp_path / "data"
    results = run_together(folder, 20, tmp_path)
    assert [r.returncode for r in results] == [0] * 20, [r.stderr for r in results if r.returncode]
    assert {r.stdout.strip() for r in results} == {str(SCHEMA_VERSION)}
    assert leftovers(folder) == [] and list(folder.glob("*.bak")) == []
    db = Database.open(folder)
    assert db.query("SELECT count(*) FROM sqlite_master WHERE name = 'workspace'") == [(1,)]
    db.close()


def make_schema_one(folder: Path) -> None:
    folder.mkdir(parents=True)
    conn = sqlite3.connect(folder / DB_NAME)
    conn.executescript(dbmod.MIGRATIONS[0])
    conn.execute("INSERT INTO workspace (id, path, path_key, title, created_at, updated_at)"
                 " VALUES ('ws_old', '/old', '/old', 'Old', 'now', 'now')")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()


def test_eight_processes_upgrading_an_old_database_take_one_backup(tmp_path):
    folder = tmp_path / "data"
    make_schema_one(folder)
    results = run_together(folder, 8, tmp_path)
    assert [r.returncode for r in results] == [0] * 8, [r.stderr for r in results if r.returncode]
    backups = list(folder.glob("cairn-v*.db.bak"))
    assert len(backups) == 1 and backups[0].name.startswith("cairn-v1-")
    old = sqlite3.connect(backups[0])
    assert old.execute("PRAGMA user_version").fetchone() == (1,)  # the schema before, intact
    assert old.execute("SELECT title FROM workspace").fetchall() == [("Old",)]
    old.close()
    assert leftovers(folder) == []
    db = Database.open(folder)
    assert db.query("PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert db.query("SELECT title FROM workspace") == [("Old",)]
    db.close()


@pytest.mark.parametrize("content, what", [(b"", "is empty (0 bytes)"),
                                           (b"hello, not a database", "is not a SQLite database")])
def test_an_empty_or_headerless_file_is_refused_and_left_alone(isolated, content, what):
    isolated.mkdir(parents=True)
    (isolated / DB_NAME).write_bytes(content)
    with pytest.raises(StartupError, match=re.escape(what)) as refused:
        Database.open(isolated)
    assert "\n" not in str(refused.value)
    assert (isolated / DB_NAME).read_bytes() == content
    assert sorted(p.name for p in isolated.iterdir()) == [DB_NAME]


def test_the_command_line_says_one_sentence_for_an_empty_database(isolated, capsys):
    from app import cli

    isolated.mkdir(parents=True)
    (isolated / DB_NAME).write_bytes(b"")
    assert cli.main(["workspace", "list"]) == 1
    err = capsys.readouterr().err.strip()
    assert "is empty (0 bytes)" in err and len(err.splitlines()) == 1
    assert (isolated / DB_NAME).stat().st_size == 0
