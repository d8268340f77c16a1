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
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from app.base import paths
from app.base.db import Database, utc_now
from app.base.ids import new_id
from app.base.live import LiveWork
from app.base.titles import one_line, text_lines, visible
from app.errors import StartupError
from app.events import Event, Hub, Reset
from app.records import BUILD_STATUSES, OK, Chat, Workspace
from app.store.registry.consistency import CHECKED, find_problems
from app.store.registry.memory import Memory
from app.store.registry.nesting import Rows

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


WORKSPACE_COLUMNS = ("SELECT id, path, path_key, title, description, instructions, build_status,"
                     " created_at, updated_at FROM workspace")
ORDER_QUERY = "SELECT workspace_id FROM display_order ORDER BY position"


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


@dataclass(slots=True)
class FirstPaint:
    """What the window's first usable paint shows besides the workspace list and Pinned:
    the workspaces it shows expanded and the chat it has open (the command line: none).
    ``Registry.open`` with one reads these first and leaves the other chats to
    :meth:`RegistryState.load_step`, or to the reads that need them."""

    expanded: Collection[str] = ()
    chat: str | None = None


# The page of Ungrouped's chats, for ``loaded`` and ``when_loaded`` (None there: every chat).
# Never read before the first paint, even shown expanded: finding them scans every chat
# (~30 ms per 50,000 here); asked for, it is the load's next page.
UNGROUPED = ""


# A chat the person deleted (kept among the recently removed chats, see ``removed_chats``)
# is loaded by no query: this condition on ``chat`` (as ``c`` or by its name) leaves it out.
NOT_REMOVED = "NOT EXISTS (SELECT 1 FROM removed_chat r WHERE r.chat_id = chat.id)"
NOT_REMOVED_C = "NOT EXISTS (SELECT 1 FROM removed_chat r WHERE r.chat_id = c.id)"


# A chat as a page reads it: its workspace (None: Ungrouped), its rowid (its place among
# chats made in the same millisecond), then the header.
PAGE_COLUMNS = ("c.rowid, c.id, c.title, c.folder, c.created_at, c.updated_at,"
                " c.archived_at, c.pin_seq")
PAGE_CHATS = 4_000  # about this many chats per background step (a few tens of ms)
SCAN_CHATS = 20_000  # rowids per step of the scan for Ungrouped's chats (~10 ms here)


@dataclass(slots=True)
class Load:
    """A load under way: the chats not read yet, read in pages from one snapshot."""

    conn: sqlite3.Connection  # its own connection, in the read transaction the first page began
    todo: list[str]  # pages not read yet: the workspaces in display order, then UNGROUPED
    counts: dict[str, tuple[int, int]]  # place ('' = Ungrouped): (visible, archived) chats
    last: int  # the chat table's largest rowid in the load's snapshot
    wanted: list[str] = field(default_factory=list)  # asked for by a reader: read next
    after: int = 0  # the scan for Ungrouped's chats: the rowids up to here are scanned
    loose: list[tuple[Any, ...]] = field(default_factory=list)  # rows of Ungrouped's chats
    waiting: list[tuple[str | None, Callable[[], object]]] = field(default_factory=list)


class RegistryState:
    """Memory, loading, the start-up check, and the write path shared by every operation."""

    def __init__(self, db: Database, *, cleanup: Sequence[Cleanup] = (),
                 hub: Hub | None = None) -> None:
        self.db = db
        self.hub = hub or Hub()
        self.live = LiveWork()
        self._cleanup = list(cleanup)
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
        self._data_version = -1
        # A load under way (``Registry.open`` with a FirstPaint): the chats of the workspaces
        # in ``_pages`` (and Ungrouped's, once UNGROUPED is in it) are in memory, the others
        # come in pages (load_step); a read that needs one waits for that page only (_need).  None: every chat is in memory.  Memory is
        # changed by loading only until the load ends, and by changes only after it (every
        # change finishes the load first), so the two never interleave.
        self._load: Load | None = None
        self._load_lock = threading.Lock()  # one page at a time; never taken under ``mem.lock``
        self._pages: set[str] = set()

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
                if version == self._data_version:
                    return False
                stored = read_stored(conn)
            self._install(stored)
            self._data_version = version
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

    def _install(self, stored: Stored) -> None:
        """Replace memory with what is stored, refusing to start on an inconsistency."""
        workspaces = self._workspace_records(stored.workspaces)
        self._refuse(stored.problems)
        waiting = self._abandon_load()  # everything is read here: a load under way ends
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

    def _workspace_records(self, rows: list[tuple[Any, ...]]) -> dict[str, Workspace]:
        workspaces: dict[str, Workspace] = {}
        for row in rows:
            known = self.mem.workspaces.get(row[0])
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
        return workspaces

    def _refuse(self, problems: list[str]) -> None:
        if problems:
            raise StartupError(
                "Cairn stopped before changing anything: the stored workspace list is "
                f"inconsistent: {'; '.join(problems)}. The database is '{self.db.path}'."
            )

    def reload(self) -> None:
        with self.changing():
            with self.db.snapshot() as conn:
                stored = read_stored(conn)
                self._data_version = self.db.data_version(conn)
            self._install(stored)

    # ----------------------------------------------------------------- loading in pages

    def _open_in_pages(self, first: FirstPaint) -> None:
        """Memory for the first usable paint: the workspaces, their order and nesting, the
        start-up check, Pinned, every place's count, the chats of the *first.expanded*
        workspaces and the open chat; the rest is read by :meth:`load_step`, from the same
        snapshot (a read transaction kept open on a connection of the load's own)."""
        conn = self.db.load_connection()
        try:
            conn.execute("BEGIN")
            rows = conn.execute(WORKSPACE_COLUMNS).fetchall()
            order = [r[0] for r in conn.execute(ORDER_QUERY)]
            state = dict(conn.execute("SELECT key, value FROM registry_state").fetchall())
            workspaces = self._workspace_records(rows)
            self._refuse(find_problems(conn, {r[0]: (r[1], r[2], r[3]) for r in rows}, order,
                                       whole=CHECKED not in state))
            counts = {place: (shown, hidden) for place, shown, hidden in conn.execute(
                "SELECT place, visible, archived FROM chat_count")}
            # Pinned and the open chat, with their workspaces (a few rows, by index).
            picked = conn.execute(
                f"SELECT m.workspace_id, {PAGE_COLUMNS} FROM chat c"
                " LEFT JOIN membership m ON m.chat_id = c.id"
                f" WHERE (c.pin_seq IS NOT NULL OR c.id = ?) AND {NOT_REMOVED_C}",
                (first.chat or "",)).fetchall()
            last = conn.execute("SELECT max(rowid) FROM chat").fetchone()[0] or 0
            load = Load(conn, [*(ws_id for ws_id in order if ws_id in workspaces), UNGROUPED],
                        counts, last)
        except BaseException:
            conn.close()
            raise
        chats, seq = self._records(picked, workspaces)
        pinned = sorted((c for c in chats.values() if c.pin_seq is not None),
                        key=lambda c: c.pin_seq or 0)
        with self.mem.lock:
            self.mem.workspaces = workspaces
            self.mem.order = order
            self.mem.state = state
            self.mem.nesting.rebuild(workspaces.values(), order)
            self.mem.chats, self.mem.seq = chats, seq
            self.mem.members, self.mem.visible, self._pages = {}, {}, set()
            self.mem.pinned = Rows([c.id for c in reversed(pinned)], newest_first=True)
            self.mem.ungrouped = Rows(newest_first=True)
            self.mem.archived = Rows(newest_first=True)
            self._load = load
        wanted = [ws_id for ws_id in first.expanded if ws_id in workspaces]
        open_in = chats[first.chat].workspace_id if first.chat in chats else None
        if open_in is not None:
            wanted.append(open_in)
        if wanted:
            with self._load_lock:
                self._read_pages(load, wanted)

    def loaded(self, ws_id: str | None) -> bool:
        """Whether the chats of *ws_id* (UNGROUPED: Ungrouped's; None: every chat, Archived's
        included) are in memory, so that reading them waits for nothing."""
        return self._load is None or (ws_id is not None and ws_id in self._pages)

    def when_loaded(self, ws_id: str | None, callback: Callable[[], object]) -> None:
        """Call *callback* once :meth:`loaded` is true for *ws_id* (at once when it is;
        otherwise on the loading thread, that page read first).  Never waits."""
        with self.mem.lock:
            load = self._load
            if load is not None and not (ws_id is not None and ws_id in self._pages):
                load.waiting.append((ws_id, callback))
                if ws_id is not None:
                    load.wanted.append(ws_id)
                return
        callback()

    @property
    def loading(self) -> bool:
        """Whether the start-up load is under way (some chats are not in memory yet)."""
        return self._load is not None

    def stored_count(self, ws_id: str | None) -> int | None:
        """While a load runs and *ws_id*'s page (None: Ungrouped's) is not read: its visible
        chats as stored (the ``chat_count`` table); None once the rows are in memory.
        Call under ``mem.lock``."""
        load = self._load
        if load is None or (ws_id or UNGROUPED) in self._pages:
            return None
        if ws_id is not None and ws_id not in self.mem.workspaces:
            raise KeyError(f"no workspace '{ws_id}'")
        return load.counts.get(ws_id or "", (0, 0))[0]

    def stored_archived_count(self) -> int | None:
        """While a load runs: how many chats are archived, as stored; None after it."""
        load = self._load
        return None if load is None else sum(hidden for _, hidden in load.counts.values())

    def load_step(self) -> bool:
        """Read the next page of the load under way; True while more remains.  The window
        calls this on the storage thread until it returns False (``Operations.load_rest``):
        the workspaces' chats a few thousand at a time, the ones a reader waits for first,
        then Ungrouped's, then the integrity check ``Database.open`` left for later."""
        if self._load is None:
            return False
        with self._load_lock:
            load = self._load
            if load is not None:
                self._step(load)
            return self._load is not None

    def need(self, ws_id: str | None) -> None:
        """Wait for the page of *ws_id* (None: for every chat), read on this thread if no
        one is reading it.  Never called under ``mem.lock`` (the page is installed under it)."""
        if self.loaded(ws_id):
            return
        with self._load_lock:
            load = self._load
            if load is None:
                return
            if ws_id is None:
                while self._load is not None:
                    self._step(load)
            elif ws_id == UNGROUPED:
                while UNGROUPED not in self._pages:
                    self._scan_ungrouped(load)
            elif ws_id not in self._pages and ws_id in self.mem.workspaces:
                self._read_pages(load, [ws_id])

    def _finish_load(self) -> None:
        """Every chat in memory, before a change decides on it (on the writer's thread)."""
        self.need(None)

    def lookup(self, chat_id: str) -> Chat | None:
        """One chat not read yet, from the load's snapshot (one indexed row), not kept."""
        with self._load_lock:
            load = self._load
            if load is None:
                return self.mem.chats.get(chat_id)
            try:
                rows = load.conn.execute(
                    f"SELECT m.workspace_id, {PAGE_COLUMNS} FROM chat c"
                    f" LEFT JOIN membership m ON m.chat_id = c.id WHERE c.id = ?"
                    f" AND {NOT_REMOVED_C}", (chat_id,)
                ).fetchall()
            except UnicodeEncodeError:  # (typed: a lone surrogate) no stored id is that
                return None
        return self._records(rows, self.mem.workspaces)[0].get(chat_id)

    def _step(self, load: Load) -> None:
        """One page (under ``_load_lock``): the workspaces a reader waits for, a few thousand
        chats at a time; a step of the scan for Ungrouped's chats when a reader waits for them
        (a workspace asked for meanwhile goes first: the scan takes many steps); the other
        workspaces in display order, then Ungrouped; then the integrity check."""
        with self.mem.lock:  # (``when_loaded`` adds to ``wanted`` under it)
            batch = self._take(load, load.wanted)
            if not batch and not load.wanted:
                batch = self._take(load, load.todo)
        if batch:
            self._read_pages(load, batch)
        elif UNGROUPED not in self._pages:  # asked for, or the last page
            self._scan_ungrouped(load)
        else:
            try:
                self.db.check()  # the integrity check, before anything may write
            finally:
                load.conn.close()
            self._end_load(load)

    def _take(self, load: Load, queue: list[str]) -> list[str]:
        """The workspaces not read yet at the front of *queue*, about ``PAGE_CHATS`` chats'
        worth, taken off it; what is read already is dropped, Ungrouped stays."""
        batch: list[str] = []
        keep: list[str] = []
        size = 0
        for place in queue:
            if place in self._pages or place in batch:
                continue
            if place == UNGROUPED or size >= PAGE_CHATS:
                keep.append(place)
            elif place in self.mem.workspaces:
                batch.append(place)
                size += sum(load.counts.get(place, (0, 0)))
        queue[:] = keep
        return batch

    def _scan_ungrouped(self, load: Load) -> None:
        """The next rowids of the scan for Ungrouped's chats (those no membership names: a
        chat table with no index to find them by), installed once it has seen every chat."""
        load.loose += load.conn.execute(
            f"SELECT {PAGE_COLUMNS} FROM chat c WHERE c.rowid > ? AND c.rowid <= ?"
            " AND NOT EXISTS (SELECT 1 FROM membership m WHERE m.chat_id = c.id)"
            f" AND {NOT_REMOVED_C}",
            (load.after, load.after + SCAN_CHATS)).fetchall()
        load.after += SCAN_CHATS
        if load.after < load.last:
            return
        chats, seq = self._records([(None, *r) for r in load.loose], self.mem.workspaces)
        load.loose = []
        with self.mem.lock:
            self.mem.chats.update(chats)
            self.mem.seq.update(seq)
            self.mem.seq_top = max(self.mem.seq_top, max(seq.values(), default=-1))
            ungrouped = sorted((c for c, chat in chats.items() if chat.archived_at is None),
                               key=self.mem.created_key, reverse=True)
            self.mem.ungrouped = Rows(ungrouped, newest_first=True)
            ready = self._read_in(load, UNGROUPED)
        for callback in ready:
            callback()

    def _read_in(self, load: Load, *places: str) -> list[Callable[[], object]]:
        """Mark *places* read; whom to tell (under ``mem.lock``)."""
        self._pages.update(places)
        ready = [w for w in load.waiting if w[0] is not None and w[0] in self._pages]
        load.waiting = [w for w in load.waiting if w not in ready]
        return [callback for _, callback in ready]

    def _read_pages(self, load: Load, ws_ids: list[str]) -> None:
        """The chats of *ws_ids*, in their manual order, into memory (under ``_load_lock``)."""
        marks = ", ".join("?" * len(ws_ids))
        rows = load.conn.execute(
            f"SELECT m.workspace_id, {PAGE_COLUMNS} FROM membership m"
            f" JOIN chat c ON c.id = m.chat_id WHERE m.workspace_id IN ({marks})"
            " ORDER BY m.workspace_id, m.position", ws_ids).fetchall()
        chats, seq = self._records(rows, self.mem.workspaces)
        members: dict[str, list[str]] = {ws_id: [] for ws_id in ws_ids}
        for row in rows:
            members[row[0]].append(row[2])
        with self.mem.lock:
            self.mem.chats.update(chats)
            self.mem.seq.update(seq)
            for ws_id, ids in members.items():
                self.mem.members[ws_id] = ids
                self.mem.visible[ws_id] = Rows([c for c in ids if chats[c].archived_at is None])
            self.mem.seq_top = max(self.mem.seq_top, max(seq.values(), default=-1))
            ready = self._read_in(load, *ws_ids)
        for callback in ready:
            callback()

    @staticmethod
    def _records(rows: list[tuple[Any, ...]], workspaces: dict[str, Workspace],
                 ) -> tuple[dict[str, Chat], dict[str, int]]:
        """Chat records from page rows (workspace, rowid, header...): plain tuples, and the
        strings a chat shares with its workspace or itself kept once (its folder is mostly
        its workspace's path; a chat never changed has updated_at == created_at)."""
        new = tuple.__new__
        chats: dict[str, Chat] = {}
        seq: dict[str, int] = {}
        for ws_id, rowid, chat_id, title, folder, created, updated, archived, pin in rows:
            ws = workspaces.get(ws_id) if ws_id is not None else None
            if ws is not None and folder == ws.path:
                folder = ws.path
            chats[chat_id] = new(Chat, (chat_id, title, folder, ws_id, created,
                                        created if updated == created else updated,
                                        archived, pin))
            seq[chat_id] = rowid
        return chats, seq

    def _end_load(self, load: Load) -> None:
        """Archived's rows, once every chat is read; the load ends."""
        with self.mem.lock:
            chats = self.mem.chats
            archived = sorted((c for c, chat in chats.items() if chat.archived_at is not None),
                              key=self.mem.created_key)
            # Stable: chats archived in the same millisecond keep the older first.
            archived.sort(key=lambda c: chats[c].archived_at or "", reverse=True)
            self.mem.archived = Rows(archived, newest_first=True)
            self._load = None
            self._pages = set()
            waiting, load.waiting = load.waiting, []
        log.debug("start-up load ended: %d chats", len(chats))
        for _, callback in waiting:
            callback()

    def _abandon_load(self) -> list[tuple[str | None, Callable[[], object]]]:
        """End a load under way without reading the rest (a whole reload replaces memory);
        returns whom to tell once memory is whole."""
        if self._load is None:
            return []
        with self._load_lock, self.mem.lock:  # (``when_loaded`` adds to the list under ``mem.lock``)
            load, self._load = self._load, None
            self._pages = set()
            if load is None:
                return []
            waiting, load.waiting = load.waiting, []
        load.conn.close()
        return waiting

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
            self._finish_load()  # a change decides on every chat, never on half of them
            with self.db.write() as conn:
                version = self.db.data_version(conn)
                if version != self._data_version:
                    self._install(read_stored(conn))
                    self._data_version = version
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
        if not self._cleanup:
            return  # this process has no cleanup to run (the CLI): leave it to one that does
        try:
            for cleanup in self._cleanup:
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
