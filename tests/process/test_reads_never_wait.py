"""Reads from memory never wait on a write: with another process holding the
database's write lock, a change of this process waits in ``BEGIN IMMEDIATE`` — and the
window's reads (the sidebar's counts and rows, the workspace list) still answer at once,
because the registry holds its memory lock only from a commit to the change's end, never
across a SQLite call.  Likewise a turn that starts while an archive of its chat waits is
refused in one sentence at once instead of waiting for it."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from app.base.live import TURN
from app.errors import CairnError, Refused

HOLD_SECONDS = 3.0
READ_BOUND_S = 0.050  # the window's bar: nothing on the GUI thread waits over 50 ms


@contextmanager
def write_lock_held_elsewhere(db_path: object) -> Iterator[subprocess.Popen[str]]:
    """Another process takes SQLite's write lock on the database and keeps it a while."""
    script = (
        "import sqlite3, sys, time\n"
        f"conn = sqlite3.connect({str(db_path)!r}, isolation_level=None)\n"
        "conn.execute('BEGIN IMMEDIATE')\n"
        "print('locked', flush=True)\n"
        f"time.sleep({HOLD_SECONDS})\n"
        "conn.execute('COMMIT')\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.wait(timeout=30)


def waiting_in_a_write(registry, change) -> tuple[threading.Thread, threading.Event, list]:  # type: ignore[no-untyped-def]
    """Run *change* on a thread of its own; the event is set once it entered its write."""
    entered = threading.Event()
    outcome: list[object] = []
    write = registry.db.write

    @contextmanager
    def noted_write():  # type: ignore[no-untyped-def]
        entered.set()
        with write() as conn:
            yield conn

    registry.db.write = noted_write

    def run() -> None:
        try:
            outcome.append(change())
        except CairnError as error:  # the busy timeout may run out first: a sentence, fine
            outcome.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, entered, outcome


def sidebar_reads(registry, ws_id: str) -> None:  # type: ignore[no-untyped-def]
    """What the sidebar model asks while it paints and expands."""
    registry.workspaces()
    registry.top_level()
    for row in range(registry.child_count(None)):
        registry.child_at(None, row)
    registry.children(ws_id)
    registry.row_of(ws_id)
    registry.tree()
    for row in range(registry.chat_count(ws_id)):
        registry.chat_at(ws_id, row)
    registry.chat_count(None)
    registry.pinned_count()
    registry.archived_count()
    registry.chat_listing()


def test_the_sidebars_reads_answer_while_a_write_waits_on_another_process(registry, folders):
    roots = folders("Acme", "Thesis", "Brand")
    spaces = [registry.add_workspace(root)[0] for root in roots]
    for n in range(20):
        registry.new_chat(folder=roots[n % 3], title=f"chat {n}")
    ws_id = spaces[0].id

    with write_lock_held_elsewhere(registry.db.path):
        thread, entered, outcome = waiting_in_a_write(
            registry, lambda: registry.rename_workspace(ws_id, "Renamed"))
        assert entered.wait(10)
        time.sleep(0.2)  # the writer is now inside BEGIN IMMEDIATE, waiting on the other process
        assert thread.is_alive()
        worst = 0.0
        for _ in range(50):  # a burst, as a repaint of a long tree makes
            started = time.perf_counter()
            sidebar_reads(registry, ws_id)
            worst = max(worst, time.perf_counter() - started)
        still_waiting = thread.is_alive()
    thread.join(30)
    assert worst < READ_BOUND_S, f"a burst of reads took {worst * 1000:.0f} ms"
    assert still_waiting, "the write did not wait on the other process: nothing was measured"
    assert outcome and (isinstance(outcome[0], CairnError)
                        or registry.workspace(ws_id).title == "Renamed")


def test_a_turn_starts_at_once_while_an_archive_of_its_chat_waits_and_the_archive_is_refused(
        registry, folders):
    (root,) = folders("Acme")
    registry.add_workspace(root)
    chat = registry.new_chat(folder=root, title="draft")

    with write_lock_held_elsewhere(registry.db.path):
        thread, entered, outcome = waiting_in_a_write(
            registry, lambda: registry.archive_chat(chat.id))
        assert entered.wait(10)
        time.sleep(0.2)
        started = time.perf_counter()
        work = registry.begin_work(chat.id, TURN, stop=lambda: None)  # Send, on the GUI thread
        waited = time.perf_counter() - started
        assert thread.is_alive()
    thread.join(30)
    assert waited < READ_BOUND_S, f"starting a turn waited {waited * 1000:.0f} ms"
    # The archive decides once it has the database: the turn runs, so it is refused (spec 004).
    assert isinstance(outcome[0], Refused)
    assert str(outcome[0]) == (f"cannot archive session '{chat.id}': the session is active (turn)")
    registry.end_work(work)
    assert not registry.chat(chat.id).archived


def test_a_turn_cannot_start_between_an_archives_check_and_its_commit(registry, folders):
    """The archive's check and its commit are one step for turns: a turn asked for in
    between is refused in one sentence instead of running in a chat being archived."""
    (root,) = folders("Acme")
    registry.add_workspace(root)
    chat = registry.new_chat(folder=root, title="draft")
    refused: list[str] = []
    write = registry.db.write

    @contextmanager
    def write_then_try_a_turn():  # type: ignore[no-untyped-def]
        with write() as conn:
            yield conn  # the archive checked the live work in here; now a Send comes in
            try:
                registry.begin_work(chat.id, TURN, stop=lambda: None)
            except Refused as error:
                refused.append(str(error))

    registry.db.write = write_then_try_a_turn
    registry.archive_chat(chat.id)
    registry.db.write = write
    assert refused == [f"cannot start work in session '{chat.id}': the session is being "
                       "archived or moved; try again in a moment"]
    assert registry.chat(chat.id).archived and registry.live.kinds(chat.id) == []
    with pytest.raises(Refused, match="is archived"):
        registry.begin_work(chat.id, TURN, stop=lambda: None)
