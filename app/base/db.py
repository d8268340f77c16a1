"""The SQLite database: pragmas, migrations, and the one writer.

Every write goes through :meth:`Database.write`, which serialises writers with a lock around
one connection and opens each transaction with ``BEGIN IMMEDIATE`` so that a second process
waits instead of failing half-way.  WAL with ``synchronous=FULL`` means a change that
reported success survives a crash or a power loss.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.base import locations
from app.errors import StartupError, StorageError

log = logging.getLogger(__name__)

DB_NAME = "cairn.db"

# The index of a message's text, as migrations/014_search_text_and_web.sql made it;
# ``cairn search --reindex`` makes it again after the first index's script.
SEARCH_TEXT_TRIGGER = """
    DROP TRIGGER IF EXISTS search_message_insert;
    CREATE TRIGGER search_message_insert AFTER INSERT ON message
    WHEN NEW.superseded_by IS NULL BEGIN
        INSERT INTO search_message (rowid, text, chat, chat_id, at) VALUES (NEW.id,
            coalesce(NEW.search_text, (SELECT replace(replace(coalesce(group_concat(
                json_extract(b.value, '$.text'), char(10)), ''), char(57344), ' '),
                char(57345), ' ')
             FROM json_each(CASE WHEN json_valid(NEW.content) THEN NEW.content ELSE '[]' END)
                AS b WHERE json_extract(CASE WHEN b.type = 'object' THEN b.value ELSE '{}' END,
                '$.type') = 'text')),
            hex(NEW.chat_id), NEW.chat_id, NEW.created_at);
    END;
"""

# Since branches every message is indexed, whichever branch it is on
# (migrations/016_branches.sql; ``cairn search --reindex`` makes it again).
SEARCH_BRANCHES_TRIGGER = SEARCH_TEXT_TRIGGER.replace("WHEN NEW.superseded_by IS NULL ", "")

# app/base/migrations/NNN_<name>.sql migrates from user_version NNN - 1 to NNN; they run in the
# order of their numbers, each in the transaction of the whole upgrade (Database._migrate).
# Never edit a shipped file: add the next one (docs/ARCHITECTURE.md, "A schema change").
# Uniqueness lives in separate indexes (not inline) so that the start-up check can be
# exercised on a database whose indexes were lost or hand-edited.  app/base/schema.sql is
# what they make, for reading; tests/core/test_schema.py keeps it true.
MIGRATIONS_FOLDER = Path(__file__).parent / "migrations"
_MIGRATION_NAME = re.compile(r"(\d{3})_[a-z0-9_]+\.sql")


def _load_migrations(folder: Path) -> tuple[str, ...]:
    """The scripts of *folder* in order: NNN_<name>.sql from 001 up, with no gap, no repeat
    and nothing else there (a missing folder would read as schema 0: refused loudly)."""
    names = sorted(path.name for path in folder.glob("*.sql"))
    numbers = [int(m.group(1)) if (m := _MIGRATION_NAME.fullmatch(n)) else -1 for n in names]
    if not names or numbers != list(range(1, len(names) + 1)):
        raise RuntimeError(f"the migrations in {folder} are not 001_<name>.sql up to the last "
                           f"with no gap: {names}")
    return tuple((folder / name).read_text(encoding="utf-8") for name in names)


MIGRATIONS: tuple[str, ...] = _load_migrations(MIGRATIONS_FOLDER)

SCHEMA_VERSION = len(MIGRATIONS)

# How long a writer waits for another process's transaction before saying "busy".
BUSY_TIMEOUT_MS = 10_000


def utc_now() -> str:
    """Timestamps are UTC ISO 8601 with milliseconds: sortable as text."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Database:
    """One write connection, one writer; reads on their own connections.  Create with
    :meth:`open`.

    WAL lets readers go on while a writer commits, so :meth:`query` reads on a read-only
    connection per thread and never waits behind another thread's commit and fsync.
    """

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path
        self._lock = threading.Lock()
        self._readers = threading.local()
        self._reader_list: list[sqlite3.Connection] = []  # to close them all, from any thread
        self._readers_lock = threading.Lock()
        self._trace: Callable[[str], object] | None = None
        self._closed = False
        self._checked = False  # the integrity check passed in this process

    # ----------------------------------------------------------------- opening

    @classmethod
    def open(cls, folder: Path, *, check_later: bool = False) -> Database:
        """Open (or create) ``cairn.db`` in *folder*: check, then migrate with a backup first.

        With *check_later*, a database already at this version skips the integrity check
        (it reads every page: 0.2 s at 250,000 chats); the caller runs :meth:`check`
        before anything writes (the window's start-up, see ``Loader.load_step``).

        Several processes may open the same folder at once (the window and a command right
        after an update): a fresh database appears complete or not at all, and each migration
        step runs under SQLite's write lock after re-reading the version, so exactly one
        process migrates and takes one backup.
        """
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = (error.strerror or str(error)).lower()
            raise StartupError(f"cannot use '{folder}' as Cairn's data folder: {reason}") from error
        locations.make_private(folder, folder=True)
        path = folder / DB_NAME
        _create_if_missing(path)
        # (SQLite gives the -wal and -shm files the database's own mode)
        for private in (path, path.with_name(DB_NAME + "-wal"), path.with_name(DB_NAME + "-shm")):
            locations.make_private(private)
        _refuse_if_not_a_database(path)
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:
            raise StartupError(f"cannot open Cairn's database at '{path}': {error}") from error
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # first: others may be busy
            # Read-only questions first: a database we must refuse is never modified.
            version = _scalar(conn, "PRAGMA user_version")
            if version > SCHEMA_VERSION:
                raise StartupError(
                    f"Cairn's database at '{path}' was written by a newer version of Cairn "
                    f"(schema {version}; this version reads up to {SCHEMA_VERSION}). "
                    "Update Cairn to open it; nothing was changed."
                )
            checked = not (check_later and version == SCHEMA_VERSION)
            if checked:
                _check(conn, path)
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            db = cls(conn, path)
            db._checked = checked
            db._migrate(version)
            return db
        except sqlite3.DatabaseError as error:
            conn.close()
            raise StartupError(
                f"cannot open Cairn's database at '{path}': {error}. Nothing was changed."
            ) from error
        except BaseException:
            conn.close()
            raise

    def _migrate(self, version: int) -> None:
        """Every step from *version* up, in one transaction under the write lock: another
        process may have migrated while we waited, so the version is read again inside it;
        a crash half-way leaves the old schema, and one backup covers the whole upgrade."""
        if version == SCHEMA_VERSION:
            return
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                current = _scalar(self._conn, "PRAGMA user_version")
                if current > 0 and current < SCHEMA_VERSION:
                    self._backup(current)
                for target in range(current + 1, SCHEMA_VERSION + 1):
                    log.info("migrating %s to schema %d", self.path, target)
                    for statement in _statements(MIGRATIONS[target - 1]):
                        self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {max(current, SCHEMA_VERSION)}")
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _backup(self, version: int) -> None:
        """A complete copy beside the database; only a finished copy carries the .bak name,
        and two processes (or two migrations in one second) never share a name."""
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        unique = f"{os.getpid()}-{secrets.token_hex(3)}"
        target = self.path.with_name(f"cairn-v{version}-{stamp}-{unique}.db.bak")
        partial = self.path.with_name(f".cairn-v{version}-{unique}.partial")
        # Our connection holds the write lock, and SQLite will not back up from a connection
        # that is writing: a second connection reads the committed state meanwhile.
        source = sqlite3.connect(self.path, isolation_level=None)
        dest = sqlite3.connect(partial, isolation_level=None)
        try:
            source.backup(dest)
            dest.execute("PRAGMA journal_mode=DELETE").fetchall()  # one file: no -wal, -shm
        finally:
            dest.close()
            source.close()
        locations.make_private(partial)
        os.replace(partial, target)
        log.info("backed up %s to %s before migrating", self.path, target)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
        with self._readers_lock:
            self._closed = True
            readers, self._reader_list = self._reader_list, []
        for reader in readers:
            reader.close()

    def check(self) -> None:
        """The integrity check :meth:`open` left for later: a :class:`StartupError` naming
        the problem, on a connection of its own (it never holds up a writer).  Once it has
        passed (here or at open), it is not run again."""
        if self._checked:
            return
        conn = self.load_connection()
        try:
            _check(conn, self.path)
        finally:
            conn.close()
        self._checked = True

    def load_connection(self) -> sqlite3.Connection:
        """A read-only connection of the caller's own, usable from any thread (one thread at
        a time): a start-up that reads in pages keeps one read transaction open on it, so
        that every page comes from the snapshot the first page saw.  The caller closes it."""
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA query_only=ON")
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if self._trace is not None:
            conn.set_trace_callback(self._trace)
        return conn

    # ----------------------------------------------------------------- reading and writing

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One SELECT on this thread's read connection: it sees every committed change and
        never waits for a writer (WAL)."""
        return self._reader().execute(sql, params).fetchall()

    def _reader(self) -> sqlite3.Connection:
        reader: sqlite3.Connection | None = getattr(self._readers, "conn", None)
        if reader is not None:
            return reader
        with self._readers_lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            reader = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            reader.execute("PRAGMA query_only=ON")  # a read connection can never write
            reader.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if self._trace is not None:
                reader.set_trace_callback(self._trace)
            self._reader_list.append(reader)
        self._readers.conn = reader
        return reader

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """Several SELECTs on this thread's read connection that see one committed state (a
        read transaction); like :meth:`query`, it never waits for a writer."""
        reader = self._reader()
        if reader.in_transaction:  # (nested: the outer one's snapshot)
            yield reader
            return
        reader.execute("BEGIN")
        try:
            yield reader
        finally:
            reader.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: several SELECTs that see one consistent state."""
        with self._lock:
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back on any error.

        SQLite's own failures (another process holding the write lock past the busy timeout,
        a full disk) become a :class:`StorageError` sentence; nothing of the change is kept.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as error:
                raise StorageError(_storage_sentence(error)) from error

    @staticmethod
    def data_version(conn: sqlite3.Connection) -> int:
        """Changes when *another* connection commits; our own commits leave it alone.

        Ask it on the connection a :meth:`write` or :meth:`snapshot` yielded.
        """
        return _scalar(conn, "PRAGMA data_version")

    def set_trace(self, callback: Callable[[str], object] | None) -> None:
        """Install a ``sqlite3`` trace callback on every connection, the read connections
        included (tests count storage reads with it)."""
        self._trace = callback
        self._conn.set_trace_callback(callback)
        with self._readers_lock:
            for reader in self._reader_list:
                reader.set_trace_callback(callback)


def _check(conn: sqlite3.Connection, path: Path) -> None:
    problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
    if problems != ["ok"]:
        backups = sorted(path.parent.glob("cairn-v*.db.bak"))
        hint = (f" The backups beside it ({', '.join(b.name for b in backups[-3:])}) "
                "hold earlier copies." if backups else "")
        raise StartupError(
            f"Cairn's database at '{path}' failed its integrity check "
            f"({problems[0]}); nothing was changed.{hint}"
        )


def _storage_sentence(error: sqlite3.OperationalError) -> str:
    text = str(error)
    if "locked" in text or "busy" in text:
        return ("Cairn's data is busy: another Cairn window or command is saving a change. "
                "Nothing was changed; try again in a moment.")
    if "full" in text:
        return "Cairn could not save the change: the disk is full. Nothing was changed."
    return f"Cairn could not save the change ({text}). Nothing was changed."


_HEADER = b"SQLite format 3\x00"


def _create_if_missing(path: Path) -> None:
    """Make a fresh, fully migrated database appear at *path* in one step, or leave it be.

    Built beside it and linked into place: another process never sees a half-made (0-byte)
    file, and of several processes starting on a fresh folder exactly one database wins.
    """
    if path.exists():
        return
    fresh = path.with_name(f".{DB_NAME}.{os.getpid()}-{secrets.token_hex(3)}.new")
    try:
        conn = sqlite3.connect(fresh, isolation_level=None)
        locations.make_private(fresh)  # before the first write: its -wal takes this mode
        try:
            # WAL is kept in the file's header: the database arrives in WAL mode, so that
            # several processes starting on it never race to switch it.
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            conn.execute("BEGIN IMMEDIATE")
            for script in MIGRATIONS:
                for statement in _statements(script):
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        finally:
            conn.close()
        try:
            os.link(fresh, path)  # fails if another process got there first: theirs stands
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: the same, less atomically
            if not path.exists():
                os.replace(fresh, path)
    except (OSError, sqlite3.Error) as error:
        raise StartupError(f"cannot create Cairn's database at '{path}': {error}") from error
    finally:
        try:
            fresh.unlink()
        except FileNotFoundError:
            pass


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL (a database from before WAL, or made elsewhere).  The switch needs the
    database to itself and SQLite does not wait for it, so another process opening the same
    file at that moment is waited for here, up to the usual busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            # Read to the end: a statement left unfinished would keep its lock.
            if conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]:
                return
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as error:
            busy = "locked" in str(error) or "busy" in str(error)
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _refuse_if_not_a_database(path: Path) -> None:
    """An existing file that is empty or has no SQLite header is never taken for a fresh
    start: that would hide every workspace and chat without a word."""
    try:
        with open(path, "rb") as file:
            head = file.read(len(_HEADER))
    except OSError as error:
        raise StartupError(f"cannot read Cairn's database at '{path}': "
                           f"{(error.strerror or str(error)).lower()}") from error
    if head == _HEADER:
        return
    what = "is empty (0 bytes)" if not head else "is not a SQLite database"
    raise StartupError(f"Cairn's database at '{path}' {what}, so it cannot hold your workspaces "
                       "and chats; nothing was changed. Move it away to start afresh, or put "
                       "back a backup (cairn-v*.db.bak) if there is one.")


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration script, to run one by one inside our own transaction
    (``executescript`` would commit first)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                yield pending
            pending = ""
    if pending.strip() and not all(line.strip().startswith("--") or not line.strip()
                                   for line in pending.splitlines()):
        yield pending


def _scalar(conn: sqlite3.Connection, sql: str) -> int:
    # fetchall, not fetchone: a statement left unfinished keeps its read lock, and two
    # processes migrating at once would then deadlock on the write lock.
    rows = conn.execute(sql).fetchall()
    return int(rows[0][0]) if rows else 0
