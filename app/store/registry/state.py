"""The registry's memory and its one way of writing.

Reads answer from memory and perform no storage reads.  Every change is written first (one
transaction through the database's one writer) and applied to memory only after its commit,
so memory never shows a change that is not stored.  Another process (the command line beside
the window) may write too: each write starts by checking SQLite's ``data_version`` and
reloads when someone else committed.

Memory keeps what a model shows as rows with index maps (``nesting.Rows``): each parent's
folders, each workspace's visible chats, Ungrouped, Pinned and Archived.  The code that
changes them also returns the events (``app.events``) that say how; a change's events go to
the hub once, after its commit.
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
from app.errors import StartupError
from app.events import Event, Hub, Reset
from app.records import BUILD_STATUSES, OK, Chat, Workspace
from app.store.registry.consistency import find_problems
from app.store.registry.nesting import Nesting, Rows, TreeChange

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


def read_stored(conn: sqlite3.Connection) -> Stored:
    return Stored(
        workspaces=conn.execute(
            "SELECT id, path, path_key, title, description, instructions, build_status,"
            " created_at, updated_at FROM workspace"
        ).fetchall(),
        order=[r[0] for r in conn.execute("SELECT workspace_id FROM display_order ORDER BY position")],
        # Oldest first: the order folders first appear in, for the first-start regrouping.
        chats=conn.execute(
            "SELECT id, title, folder, created_at, updated_at, archived_at, pin_seq"
            " FROM chat ORDER BY created_at, rowid"
        ).fetchall(),
        memberships=conn.execute(
            "SELECT workspace_id, chat_id FROM membership ORDER BY workspace_id, position"
        ).fetchall(),
        state=dict(conn.execute("SELECT key, value FROM registry_state").fetchall()),
        pending=conn.execute("SELECT id, op, args FROM pending_change ORDER BY id").fetchall(),
    )


class RegistryState:
    """Memory, loading, the start-up check, and the write path shared by every operation."""

    def __init__(self, db: Database, *, cleanup: Sequence[Cleanup] = (),
                 hub: Hub | None = None) -> None:
        self.db = db
        self.hub = hub or Hub()
        self.live = LiveWork()
        self._working: set[int] = set()  # tokens of work begun through begin_work
        self._cleanup = list(cleanup)
        # Two locks, so that a reader never waits on SQLite: ``_writer`` orders changes and is
        # held across their transactions (BEGIN IMMEDIATE may wait seconds on another
        # process); ``_lock`` guards memory and is held only while memory is read or changed,
        # from a change's commit to its end, never across a SQLite call.
        self._writer = threading.RLock()
        self._lock = threading.RLock()
        self._applying = 0  # times the change under way took ``_lock`` after a commit
        self._at_end: list[Callable[[], None]] = []  # run when the change under way ends
        self._outbox: list[Event] = []  # the events of the change under way
        self._depth = 0  # changes under way on this thread (they nest)
        self._data_version = -1
        self._workspaces: dict[str, Workspace] = {}
        self._order: list[str] = []
        self._nesting = Nesting()
        self._chats: dict[str, Chat] = {}
        self._members: dict[str, list[str]] = {}  # manual order, archived chats included
        self._state: dict[str, str] = {}
        # The chat lists as rows (see _index_chats); ``_seq``: the order chats were made in.
        self._seq: dict[str, int] = {}
        self._visible: dict[str, Rows] = {}
        self._ungrouped = Rows(newest_first=True)
        self._pinned = Rows(newest_first=True)
        self._archived = Rows(newest_first=True)

    def workspaces(self) -> list[Workspace]:
        """Every workspace, folders included, in display order.  No storage read."""
        with self._lock:
            return [self._workspaces[ws_id] for ws_id in self._order]

    def sync(self) -> bool:
        """Catch up with changes another process committed (one cheap PRAGMA when none).

        A long-lived reader (the window) calls this when it regains focus; writes catch up
        by themselves.  Returns True when memory was reloaded (``Reset`` is emitted when
        what it holds changed).
        """
        with self._changing():
            with self.db.snapshot() as conn:
                version = self.db.data_version(conn)
                if version == self._data_version:
                    return False
                stored = read_stored(conn)
            self._install(stored)
            self._data_version = version
        return True

    # ----------------------------------------------------------------- events

    @contextmanager
    def _changing(self) -> Iterator[list[Event]]:
        """One change, ordered after every other; its events go to the hub once, when it ends.

        Delivery happens while the change still holds ``_writer`` and the memory lock (taken
        after its commit, or for the delivery when it committed nothing), so listeners see changes in commit order and read the state
        right after this one.  A catch-up reload counts
        even when the change itself is then refused.
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
                            if not self._applying:
                                # A change that wrote nothing (a folder's status looked at
                                # again, a catch-up reload) holds no memory lock yet: take it,
                                # so a reader that waits for this change (a model's barrier)
                                # resumes only after every listener heard its events.
                                self._lock.acquire()
                                self._applying += 1
                            events, self._outbox = self._outbox, []
                            if any(isinstance(e, Reset) for e in events):
                                events = [Reset()]  # re-reading covers this change's own events
                            self.hub.emit(*events)
                    finally:
                        # After delivery: a reader that waited on this change sees its
                        # events already delivered (listeners only record or post them).
                        self._let_readers_in()

    def _fence(self, chat_id: str) -> list[str]:
        """Hold off new turns on *chat_id* until the change under way ends (see
        ``LiveWork.fence``); the kinds of work running now."""
        running = self.live.fence(chat_id)
        self._at_end.append(lambda: self.live.unfence(chat_id))
        return running

    def _let_readers_in(self) -> None:
        """Release the memory lock the change under way took after its commits."""
        while self._applying:
            self._applying -= 1
            self._lock.release()

    # ----------------------------------------------------------------- loading

    def _install(self, stored: Stored) -> None:
        """Replace memory with what is stored, refusing to start on an inconsistency."""
        workspaces: dict[str, Workspace] = {}
        for row in stored.workspaces:
            known = self._workspaces.get(row[0])
            if known is not None and known.path == row[1]:
                # Catching up with another process: keep what we saw of the folder rather
                # than stat every folder (a slow network share) while holding the writer.
                status, identity = known.status, known.identity
            else:
                status = paths.folder_status(row[1])
                identity = paths.identity(row[1]) if status == OK else None
            ws_id, path, key, title, description, instructions, build_status, created, updated = row
            workspaces[ws_id] = Workspace(
                id=ws_id, path=path, key=key, title=title, description=description,
                instructions=instructions, build_status=build_status, created_at=created,
                updated_at=updated, status=status, identity=identity,
            )
        problems = find_problems(workspaces, stored.order, stored.memberships,
                                 {row[0] for row in stored.chats})
        if problems:
            raise StartupError(
                "Cairn stopped before changing anything: the stored workspace list is "
                f"inconsistent: {'; '.join(problems)}. The database is '{self.db.path}'."
            )
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
            self._workspaces, self._order, self._members, self._chats
        ):
            self._outbox.append(Reset())
        with self._lock:  # readers wait for memory only (no SQLite call in here)
            self._workspaces = workspaces
            self._order = list(stored.order)
            self._members = members
            self._chats = chats
            self._state = dict(stored.state)
            self._nesting.rebuild(workspaces.values(), self._order)
            self._index_chats()

    def _index_chats(self) -> None:
        """The chat lists as rows, from ``_chats`` and ``_members``: one pass (50,000 at start)."""
        ungrouped, pinned, archived = [], [], []
        for chat in self._chats.values():  # oldest first
            if chat.archived_at is not None:
                archived.append(chat.id)
            elif chat.workspace_id is None:
                ungrouped.append(chat.id)
            if chat.pin_seq is not None:
                pinned.append(chat.id)
        chats = self._chats
        self._seq = dict(zip(chats, range(len(chats))))
        hidden = set(archived)
        self._visible = {
            ws_id: Rows([c for c in ids if c not in hidden] if hidden else ids)
            for ws_id, ids in self._members.items()
        }
        ungrouped.reverse()
        self._ungrouped = Rows(ungrouped, newest_first=True)
        # Stable sorts, newest first: a tie keeps the older chat first, as the keys below do.
        pinned.sort(key=self._pin_key, reverse=True)
        self._pinned = Rows(pinned, newest_first=True)
        archived.sort(key=lambda c: chats[c].archived_at or "", reverse=True)
        self._archived = Rows(archived, newest_first=True)

    # Sort keys of the newest-first lists, stored ascending.  Pin numbers are unique; chats
    # archived in the same millisecond show the older first.
    def _pin_key(self, chat_id: str) -> int:
        return self._chats[chat_id].pin_seq or 0

    def _archive_key(self, chat_id: str) -> tuple[str, int]:
        return self._chats[chat_id].archived_at or "", -self._seq[chat_id]

    def _reload(self) -> None:
        with self._changing():
            with self.db.snapshot() as conn:
                stored = read_stored(conn)
                self._data_version = self.db.data_version(conn)
            self._install(stored)

    # ----------------------------------------------------------------- writing

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, after catching up with any other process's commits.

        Readers are let in for the transaction (the memory lock is never held across SQLite
        calls); once it committed, the change applies itself to memory under the memory lock,
        held until the change ends or its next transaction starts.  Memory read while deciding
        is safe without it: only a change writes memory, and changes are ordered by
        ``_writer``.
        """
        with self._changing():
            self._let_readers_in()
            with self.db.write() as conn:
                version = self.db.data_version(conn)
                if version != self._data_version:
                    self._install(read_stored(conn))
                    self._data_version = version
                yield conn
            self._lock.acquire()
            self._applying += 1

    def _existing(self, folder: paths.Folder) -> Workspace | None:
        """The workspace of *folder* or of an alias of it: same key, or the same directory."""
        ws_id = self._nesting.by_key.get(folder.key)
        if ws_id is None and folder.identity is not None:
            candidate = self._nesting.by_identity.get(folder.identity)
            # The remembered identity may be stale (folder deleted, inode reused): look again.
            if candidate and paths.identity(self._workspaces[candidate].path) == folder.identity:
                ws_id = candidate
        return self._workspaces[ws_id] if ws_id else None

    def _insert_workspace(
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

    def _reshape(
        self,
        order: list[str],
        *,
        added: Workspace | None = None,
        removed: str | None = None,
        moved: str | None = None,
    ) -> TreeChange:
        """Memory after a committed change to the list: the new display *order* and the tree.

        A removed workspace's chats must have been regrouped first.
        """
        if added is not None:
            self._workspaces[added.id] = added
            self._members.setdefault(added.id, [])
            self._visible.setdefault(added.id, Rows())
        if removed is not None:
            del self._workspaces[removed]
            del self._members[removed], self._visible[removed]
        self._order = order
        return self._nesting.change(order, added=added, removed=removed, moved=moved)

    def _finish_removal(self, pending: int, ws_id: str) -> None:
        """The cleanup after a committed removal; a failure leaves the marker for next start."""
        if not self._cleanup:
            return  # this process has no cleanup to run (the CLI): leave it to one that does
        try:
            for cleanup in self._cleanup:
                cleanup(ws_id)
            with self.db.write() as conn:
                conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
        except Exception:
            log.exception("cleanup after removing workspace %s failed; retried at next start", ws_id)

    def _drop_blobs(self, pending: int | None, shas: list[str]) -> None:
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
