"""app/base/schema.sql is the schema the migrations make, to read without replaying them; a
database migrated from the first version up ends the same as a fresh one.

After adding a migration, write the snapshot again with
``uv run python -m tests.core.test_schema`` and read its diff.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.base import db as dbmod
from app.base.db import MIGRATIONS_FOLDER, SCHEMA_VERSION, Database, _load_migrations

SNAPSHOT = Path(dbmod.__file__).parent / "schema.sql"
FTS5_SHADOWS = ("data", "idx", "content", "docsize", "config")


def schema_of(conn: sqlite3.Connection) -> str:
    """The schema of *conn* as SQL, in the order it was made: every table, index, trigger and
    view with its CREATE statement (FTS5's own shadow tables and SQLite's left out)."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                        "AND name NOT LIKE 'sqlite%' ORDER BY rowid").fetchall()
    virtual = [name for name, sql in rows if sql.startswith("CREATE VIRTUAL TABLE")]
    shadows = {f"{name}_{part}" for name in virtual for part in FTS5_SHADOWS}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    head = (f"-- Cairn's database at schema {version} (PRAGMA user_version), as the migrations\n"
            "-- in app/base/migrations/ make it: for reading, never run.  Written by\n"
            "-- `uv run python -m tests.core.test_schema`; tests/core/test_schema.py checks it.\n"
            "-- (SQLite writes a column added later at the end of its table's last line.)\n")
    return head + "".join(f"\n{sql};\n" for name, sql in rows if name not in shadows)


def fresh_schema(folder: Path) -> str:
    Database.open(folder).close()
    conn = sqlite3.connect(folder / dbmod.DB_NAME)
    try:
        return schema_of(conn)
    finally:
        conn.close()


def test_the_snapshot_is_the_schema_of_a_fresh_database(isolated):
    assert fresh_schema(isolated) == SNAPSHOT.read_text(encoding="utf-8"), (
        "app/base/schema.sql is out of date: `uv run python -m tests.core.test_schema` "
        "writes it again")


def test_a_database_migrated_from_the_first_version_ends_as_a_fresh_one(isolated, tmp_path):
    isolated.mkdir(parents=True)
    conn = sqlite3.connect(isolated / dbmod.DB_NAME)
    conn.executescript(dbmod.MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    db = Database.open(isolated)
    assert db.query("PRAGMA user_version") == [(SCHEMA_VERSION,)]
    db.close()
    conn = sqlite3.connect(isolated / dbmod.DB_NAME)
    upgraded = schema_of(conn)
    conn.close()
    assert upgraded == fresh_schema(tmp_path / "fresh")
    assert len(list(isolated.glob("cairn-v1-*.db.bak"))) == 1  # the backup came first


def test_migrations_are_numbered_files_with_no_gap(tmp_path):
    assert len(_load_migrations(MIGRATIONS_FOLDER)) == SCHEMA_VERSION >= 15
    for names in (["001_a.sql", "003_c.sql"], ["001_a.sql", "001_b.sql"], ["1_a.sql"], []):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        for name in names:
            (folder / name).write_text("SELECT 1;\n", encoding="utf-8")
        with pytest.raises(RuntimeError, match="no gap"):
            _load_migrations(folder)


if __name__ == "__main__":  # writes the snapshot again
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        SNAPSHOT.write_text(fresh_schema(Path(folder)), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
