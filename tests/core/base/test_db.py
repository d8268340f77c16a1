"""The database: pragmas, migrations with a backup first, refusal of a newer or damaged file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.base import db as dbmod
from app.base.db import SCHEMA_VERSION, Database
from app.errors import StartupError


def test_pragmas(isolated):
    db = Database.open(isolated)
    with db.snapshot() as writer:  # the write connection
        assert writer.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
        assert writer.execute("PRAGMA synchronous").fetchall() == [(2,)]  # FULL
        assert writer.execute("PRAGMA foreign_keys").fetchall() == [(1,)]
    assert db.query("PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert db.query("PRAGMA query_only") == [(1,)]  # reads go on a read-only connection
    db.close()


def test_reads_never_wait_behind_a_commit(isolated):
    import threading

    db = Database.open(isolated)
    db.query("SELECT 1")
    inside, release = threading.Event(), threading.Event()

    def slow_writer() -> None:
        with db.write() as conn:
            conn.execute("INSERT INTO registry_state (key, value) VALUES ('probe', '1')")
            inside.set()
            release.wait(10)

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert inside.wait(10)
    # The writer holds the write lock mid-transaction; a read answers from the last commit.
    assert db.query("SELECT count(*) FROM registry_state WHERE key = 'probe'") == [(0,)]
    release.set()
    writer.join()
    assert db.query("SELECT count(*) FROM registry_state WHERE key = 'probe'") == [(1,)]
    db.close()


def test_data_folder_comes_from_the_environment(isolated, monkeypatch, tmp_path):
    from app.base import locations

    assert locations.data_dir() == isolated
    monkeypatch.delenv("CAIRN_DATA_DIR")
    assert locations.data_dir().name == "Cairn"  # platformdirs' folder, never a test's


def test_writes_begin_immediate_and_roll_back_on_error(isolated):
    db = Database.open(isolated)
    statements: list[str] = []
    db.set_trace(statements.append)
    with pytest.raises(RuntimeError):
        with db.write() as conn:
            conn.execute("INSERT INTO registry_state VALUES ('k', 'v')")
            raise RuntimeError("boom")
    assert statements[0] == "BEGIN IMMEDIATE" and statements[-1] == "ROLLBACK"
    assert db.query("SELECT * FROM registry_state") == []
    db.close()


def test_a_newer_database_is_refused_and_left_unchanged(isolated):
    isolated.mkdir(parents=True)
    path = isolated / "cairn.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE future (x)")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StartupError) as refused:
        Database.open(isolated)
    assert "written by a newer version of Cairn" in str(refused.value)
    assert "nothing was changed" in str(refused.value)
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_refused(isolated):
    isolated.mkdir(parents=True)
    (isolated / "cairn.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StartupError, match="is not a SQLite database"):
        Database.open(isolated)


def test_quick_check_failure_stops_the_start(isolated, monkeypatch):
    Database.open(isolated).close()
    real_connect = sqlite3.connect

    class Damaged:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def execute(self, sql: str, *args):
            if sql == "PRAGMA quick_check":
                return iter([("row 3 missing from index workspace_path_key",)])
            return self.conn.execute(sql, *args)

        def close(self) -> None:
            self.conn.close()

    monkeypatch.setattr(dbmod.sqlite3, "connect", lambda *a, **k: Damaged(real_connect(*a, **k)))
    with pytest.raises(StartupError, match="failed its integrity check \\(row 3 missing") as refused:
        Database.open(isolated)
    # One line, and it names only backups that exist.
    assert "backup" not in str(refused.value) and "\n" not in str(refused.value)
    (isolated / "cairn-v3-20261101T000000Z-1-abc.db.bak").write_bytes(b"x")
    with pytest.raises(StartupError, match="cairn-v3-20261101T000000Z-1-abc.db.bak"):
        Database.open(isolated)


def test_migration_takes_a_backup_first(isolated, monkeypatch):
    Database.open(isolated).close()
    extra = "CREATE TABLE later_feature (x INTEGER);"
    monkeypatch.setattr(dbmod, "MIGRATIONS", dbmod.MIGRATIONS + (extra,))
    monkeypatch.setattr(dbmod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    db = Database.open(isolated)
    assert db.query("PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]
    backups = list(isolated.glob("cairn-v*.db.bak"))
    assert len(backups) == 1 and backups[0].name.startswith(f"cairn-v{SCHEMA_VERSION}-")
    old = sqlite3.connect(backups[0])
    assert old.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert old.execute("SELECT name FROM sqlite_master WHERE name='later_feature'").fetchall() == []
    old.close()
    db.close()


def test_a_failed_migration_leaves_the_old_schema(isolated, monkeypatch):
    Database.open(isolated).close()
    monkeypatch.setattr(dbmod, "MIGRATIONS",
                        dbmod.MIGRATIONS + ("CREATE TABLE ok_part (x); THIS IS NOT SQL;",))
    monkeypatch.setattr(dbmod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StartupError):
        Database.open(isolated)
    conn = sqlite3.connect(isolated / "cairn.db")
    assert conn.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert conn.execute("SELECT name FROM sqlite_master WHERE name='ok_part'").fetchall() == []
    conn.close()


def test_a_fresh_database_takes_no_backup(isolated):
    Database.open(isolated).close()
    assert list(Path(isolated).glob("*.bak")) == []


def test_logs_go_to_the_log_folder_beside_the_test_data(isolated, folders, capsys):
    import logging

    from app import cli

    assert cli.main(["workspace", "list"]) == 0
    logging.getLogger("app.test").warning("hello from the test")
    log_file = isolated / "logs" / "cairn.log"
    assert "hello from the test" in log_file.read_text(encoding="utf-8")
