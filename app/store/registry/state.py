"""The registry's memory and its one way of writing.

Reads answer from memory and perform no storage reads.  Every change is written first (one
transaction through the database's one writer) and applied to memory only after its commit,
so memory never shows a change that is not stored.  Another process (the command line beside
the window) may write too: each write starts by checking SQLite's ``data_version`` and
reloads when someone else committed.

The rows themselves (what a model shows: each parent's folders, each workspace's visible
chats, Ungrouped, Pinned and Archived) are one object, ``memory.Memory``, that every part of
the registry is handed with this write path.  The code that changes them also returns the
events (``app.events``) that say how; a change's events go to the hub once, after its commit.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from app.base import paths
from app.base.db import Database, utc_now
from app.base.ids import new_id
from app.base.live import LiveWork
from app.base.titles import one_line, text_lines, visible
from app.events import Event, Hub, Reset
from app.records import BUILD_STATUSES, OK, Chat, Workspace
from app.store.registry.consistency import CHECKED, find_problems
from app.store.registry.loader import (  # noqa: F401 (re-exported: their old home)
    NOT_REMOVED,
    NOT_REMOVED_C,
    ORDER_QUERY,
    PAGE_CHATS,
    PAGE_COLUMNS,
    SCAN_CHATS,
    UNGROUPED,
    WORKSPACE_COLUMNS,
    FirstPaint,
    Load,
    Loader,
    refuse,
    workspace_records,
)
from app.store.registry.memory import Memory

log = logging.getLogger(__name__)

Cleanup = Callable[[str], None]
"""Called with a removed workspace's id after the removal committed (a hook for work beside
the database; what the workspace held is kept among the recently removed, see
``removed``)."""


def attach_at_top(conn: sqlite3.Connection, ws_id: str, chat_id: str) -> None:
    """A chat joining a workspace goes to the top of its manual order."""
    conn.execute(
        "INSERT INTO membership (workspace_id, chat_id, position)"
        " SELECT ?, ?, coalesce(min(position), 1) - 1 FROM membership WHERE workspace_id = ?",
        (ws_id, chat_id, ws_id),
    )


@dataclass(slots=True)
class Stored:
    """Everything the registry loads, as read in one snapshot."""

    workspaces: list[tuple[Any, ...]]
    order: list[str]
    chats: list[tuple[Any, ...]]
    memberships: list[tuple[str, str]]
    state: dict[str, str]
    pending: list[tuple[int, str, str]]
    problems: list[str]  # what the start-up check found (consistency.find_problems)


def read_stored(conn: sqlite3.Connection) -> Stored:
    workspaces = conn.execute(WORKSPACE_COLUMNS).fetchall()
    order = [r[0] for r in conn.execute(ORDER_QUERY)]
    state = dict(conn.execute("SELECT key, value FROM registry_state").fetchall())
    return Stored(
        workspaces=workspaces,
        order=order,
        # Oldest first: the order folders first appear in, for the first-start regrouping.
        chats=conn.execute(
            "SELECT id, title, folder, created_at, updated_at, archived_at, pin_seq"
            f" FROM chat WHERE {NOT_REMOVED} ORDER BY created_at, rowid"
        ).fetchall(),
        memberships=conn.execute(
            "SELECT workspace_id, chat_id FROM membership ORDER BY workspace_id, position"
        ).fetchall(),
        state=state,
        pending=conn.execute("SELECT id, op, args FROM pending_change ORDER BY id").fetchall(),
        problems=find_problems(conn, {r[0]: (r[1], r[2], r[3]) for r in workspaces}, order,
                               whole=CHECKED not in state),
    )


class RegistryState:
    """Memory, loading, the start-up check, and the write path shared by every operation."""

    def __init__(self, db: Database, *, cleanup: Sequence[Cleanup] = (),
                 hub: Hub | None = None) -> None:
        self.db = db
        self.hub = hub or Hub()
        self.live = LiveWork()
        self.cleanup = list(cleanup)
        # The rows and their order (the sidebar's order): one owner, handed to every part.
        self.mem = Memory()
        # Two locks, so that a reader never waits on SQLite: ``_writer`` orders changes and is
        # held across their transactions (BEGIN IMMEDIATE may wait seconds on another
        # process); ``mem.lock`` guards memory and is held only while memory is read or
        # changed, from a change's commit to its end, never across a SQLite call.
        self._writer = threading.RLock()
        self._applying = 0  # times the change under way took ``mem.lock`` after a commit
        self._at_end: list[Callable[[], None]] = []  # run when the change under way ends
        self._outbox: list[Event] = []  # the events of the change under way
        self._depth = 0  # changes under way on this thread (they nest)
        self.seen_version = -1
        self.loader = Loader(self.mem, db)  # the start-up load, when one runs

    def workspaces(self) -> list[Workspace]:
        """Every workspace, folders included, in display order.  No storage read."""
        return self.mem.in_order()

    def sync(self) -> bool:
        """Catch up with changes another process committed (one cheap PRAGMA when none).

        A long-lived reader (the window) calls this when it regains focus; writes catch up
        by themselves.  Returns True when memory was reloaded (``Reset`` is emitted when
        what it holds changed).
        """
        with self.changing():
            with self.db.snapshot() as conn:
                version = self.db.data_version(conn)
                if version == self.seen_version:
                    return False
                stored = read_stored(conn)
            self.install(stored)
            self.seen_version = version
        return True

    # ----------------------------------------------------------------- events

    @contextmanager
    def changing(self) -> Iterator[list[Event]]:
        """One change, ordered after every other; its events go to the hub once, when it ends.

        Delivery happens while the change still holds ``_writer`` and the memory lock (taken
        after its commit, or for the delivery when it committed nothing), so listeners see
        changes in commit order and read the state right after this one.  A catch-up reload
        counts even when the change itself is then refused.
        """
        with self._writer:
            self._depth += 1
            try:
                yield self._outbox
            finally:
                self._depth -= 1
                if self._depth == 0:
                    try:
                        while self._at_end:
                            self._at_end.pop()()
                        if self._outbox:
                            events, self._outbox = self._outbox, []
                            if any(isinstance(e, Reset) for e in events):
                                events = [Reset()]  # re-reading covers this change's own events
                            if not self._applying:  # (a change that wrote holds it already)
                                self._hold_for_delivery()
                            self.hub.emit(*events)
                    finally:
                        # After delivery: a reader that waited on this change sees its
                        # events already delivered (listeners only record or post them).
                        self._let_readers_in()

    def fence(self, chat_id: str) -> list[str]:
        """Hold off new turns on *chat_id* until the change under way ends (see
        ``LiveWork.fence``); the kinds of work running now."""
        running = self.live.fence(chat_id)
        self._at_end.append(lambda: self.live.unfence(chat_id))
        return running

    def _hold_for_delivery(self) -> None:
        """Deliver a change's events under the memory lock: a reader that was given an
        event before its own listener heard it (the sidebar's barrier, ``InFlight``) waits
        for the delivery to end.  A write takes it after its commit; a change that wrote
        nothing (a catch-up reload, a folder's status) takes it here, before delivering."""
        self.mem.lock.acquire()
        self._applying += 1

    def _let_readers_in(self) -> None:
        """Release the memory lock the change under way took after its commits."""
        while self._applying:
            self._applying -= 1
            self.mem.lock.release()

    # ----------------------------------------------------------------- loading

    def install(self, stored: Stored) -> None:
        """Replace memory with what is stored, refusing to start on an inconsistency."""
        workspaces = workspace_records(self.mem.workspaces, stored.workspaces)
        refuse(self.db, stored.problems)
        waiting = self.loader.abandon()  # everything is read here: a load under way ends
        members: dict[str, list[str]] = {ws_id: [] for ws_id in workspaces}
        owner: dict[str, str] = {}
        for ws_id, chat_id in stored.memberships:
            members[ws_id].append(chat_id)
            owner[chat_id] = ws_id
        new_chat = Chat._make  # 50,000 of these at start: the cheapest constructor
        chats = {
            row[0]: new_chat((row[0], row[1], row[2], owner.get(row[0]), *row[3:]))
            for row in stored.chats
        }
        if (workspaces, stored.order, members, chats) != (
            self.mem.workspaces, self.mem.order, self.mem.members, self.mem.chats
        ):
            self._outbox.append(Reset())
        with self.mem.lock:  # readers wait for memory only (no SQLite call in here)
            self.mem.workspaces = workspaces
            self.mem.order = list(stored.order)
            self.mem.members = members
            self.mem.chats = chats
            self.mem.state = dict(stored.state)
            self.mem.nesting.rebuild(workspaces.values(), self.mem.order)
            self.mem.index_chats()
            self.mem.seq_top = len(chats) - 1
        for _, callback in waiting:
            callback()

    def reload(self) -> None:
        with self.changing():
            with self.db.snapshot() as conn:
                stored = read_stored(conn)
                self.seen_version = self.db.data_version(conn)
            self.install(stored)

    # ----------------------------------------------------------------- writing

    @contextmanager
    def writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, after catching up with any other process's commits.

        Readers are let in for the transaction (the memory lock is never held across SQLite
        calls); once it committed, the change applies itself to memory under the memory lock,
        held until the change ends or its next transaction starts.  Memory read while deciding
        is safe without it: only a change writes memory, and changes are ordered by
        ``_writer``.
        """
        with self.changing():
            self._let_readers_in()
            self.loader.finish()  # a change decides on every chat, never on half of them
            with self.db.write() as conn:
                version = self.db.data_version(conn)
                if version != self.seen_version:
                    self.install(read_stored(conn))
                    self.seen_version = version
                yield conn
            self.mem.lock.acquire()
            self._applying += 1


    def insert_workspace(
        self, conn: sqlite3.Connection, folder: paths.Folder, *, at_end: bool, **fields: str
    ) -> Workspace:
        """Write a new workspace row and its place in the display order (memory: caller's)."""
        now = utc_now()
        ws = Workspace(
            id=new_id("ws"),
            path=folder.canonical,
            key=folder.key,
            title=_title(fields.get("title") or paths.title_for(folder.canonical)),
            description=text_lines(fields.get("description", "")),
            instructions=fields.get("instructions", ""),
            build_status=fields.get("build_status", BUILD_STATUSES[0]),
            created_at=now,
            updated_at=now,
            status=OK,
            identity=folder.identity,
        )
        conn.execute(
            "INSERT INTO workspace (id, path, path_key, title, description, instructions,"
            " build_status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (ws.id, ws.path, ws.key, ws.title, ws.description, ws.instructions,
             ws.build_status, ws.created_at, ws.updated_at),
        )
        position = (
            "SELECT coalesce(max(position), -1) + 1, ? FROM display_order"
            if at_end
            else "SELECT coalesce(min(position), 1) - 1, ? FROM display_order"
        )
        conn.execute(f"INSERT INTO display_order (position, workspace_id) {position}", (ws.id,))
        return ws


    def finish_removal(self, pending: int, ws_id: str) -> None:
        """The cleanup after a committed removal; a failure leaves the marker for next start."""
        if not self.cleanup:
            return  # this process has no cleanup to run (the CLI): leave it to one that does
        try:
            for cleanup in self.cleanup:
                cleanup(ws_id)
            with self.db.write() as conn:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
        except Exception:
            log.exception("cleanup after removing workspace %s failed; retried at next start", ws_id)

    def drop_blobs(self, pending: int | None, shas: list[str]) -> None:
        """A purge's last step: the blobs no record uses go, then the marker."""
        from app.store.blob_refs import drop_unused
        from app.store.blobs import BlobStore

        try:
            drop_unused(self.db, BlobStore(self.db.path.parent / "files"), shas,
                        pending=pending)
        except Exception:
            log.exception("dropping unused blobs failed; retried at next start")


def _title(title: str) -> str:
    """A new workspace's title (a folder's name, an import's): normalised as every title is
    (:func:`one_line`); a name with nothing left to show keeps its characters, escaped."""
    clean = one_line(title)
    return clean if visible(clean) else one_line(paths.shown(title)) or "Workspace"
