"""The start-up load: the chats read in pages after the first paint.

``Registry.open`` with a ``FirstPaint`` reads what the window's first usable paint shows
(the workspaces, Pinned, the stored counts, the expanded workspaces' chats and the open
chat) and leaves the other chats to :meth:`Loader.load_step`, from one read snapshot; a read
that needs a page not read yet waits for that page only (:meth:`Loader.need`).  Memory is
changed by loading only until the load ends, and by changes only after it (every change
finishes the load first), so the two never interleave.  The loader fills the rows owner
(``memory.Memory``) it is handed.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from app.base import paths
from app.base.db import Database
from app.errors import StartupError
from app.records import OK, Chat, Workspace
from app.store.registry.consistency import CHECKED, find_problems
from app.store.registry.memory import Memory
from app.store.registry.nesting import Rows

log = logging.getLogger(__name__)

WORKSPACE_COLUMNS = ("SELECT id, path, path_key, title, description, instructions, build_status,"
                     " created_at, updated_at FROM workspace")
ORDER_QUERY = "SELECT workspace_id FROM display_order ORDER BY position"


@dataclass(slots=True)
class FirstPaint:
    """What the window's first usable paint shows besides the workspace list and Pinned:
    the workspaces it shows expanded and the chat it has open (the command line: none).
    ``Registry.open`` with one reads these first and leaves the other chats to
    :meth:`Loader.load_step`, or to the reads that need them."""

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


def workspace_records(known: dict[str, Workspace], rows: list[tuple[Any, ...]],
                      ) -> dict[str, Workspace]:
    """Workspace records from stored rows; a folder already known keeps its looked-at status."""
    workspaces: dict[str, Workspace] = {}
    for row in rows:
        seen = known.get(row[0])
        if seen is not None and seen.path == row[1]:
            # Catching up with another process: keep what we saw of the folder rather
            # than stat every folder (a slow network share) while holding the writer.
            status, identity = seen.status, seen.identity
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


def refuse(db: Database, problems: list[str]) -> None:
    """The start-up check's findings as a refusal to start."""
    if problems:
        raise StartupError(
            "Cairn stopped before changing anything: the stored workspace list is "
            f"inconsistent: {'; '.join(problems)}. The database is '{db.path}'."
        )


class Loader:
    """The load under way, if any (None: every chat is in memory)."""

    def __init__(self, mem: Memory, db: Database) -> None:
        self.mem = mem
        self.db = db
        # The chats of the workspaces in ``_pages`` (and Ungrouped's, once UNGROUPED is in
        # it) are in memory, the others come in pages (load_step).
        self._load: Load | None = None
        self._load_lock = threading.Lock()  # one page at a time; never taken under mem.lock
        self._pages: set[str] = set()

    def open_in_pages(self, first: FirstPaint) -> None:
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
            workspaces = workspace_records(self.mem.workspaces, rows)
            refuse(self.db, find_problems(conn, {r[0]: (r[1], r[2], r[3]) for r in rows}, order,
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

    def finish(self) -> None:
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

    def abandon(self) -> list[tuple[str | None, Callable[[], object]]]:
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
