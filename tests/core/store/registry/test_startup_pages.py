"""The window's start reads in pages: what the first paint shows first, the rest
afterwards; memory ends where a whole read starts, and no read or change ever sees half of it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from app.base.db import Database
from app.errors import StartupError
from app.store.registry.registry import Registry
from app.store.registry.state import UNGROUPED, FirstPaint
from tests.scale_data import build


@pytest.fixture
def data(isolated: Path, tmp_path: Path) -> Registry:
    """3,000 chats in 40 workspaces; the whole registry, read at once, as the reference."""
    build(isolated, tmp_path / "folders", random.Random(4), chats=3_000, workspaces=40)
    whole = Registry.open(isolated)
    yield whole
    whole.close()


def pages(isolated: Path, **first: object) -> Registry:
    return Registry.open(isolated, first=FirstPaint(**first))  # type: ignore[arg-type]


def test_the_first_paint_has_the_workspaces_pinned_counts_expanded_and_open_chat(data, isolated):
    order = [ws.id for ws in data.workspaces()]
    open_chat = data.chats_of(order[3])[0]
    reg = pages(isolated, expanded=[order[0]], chat=open_chat.id)
    try:
        assert not reg.loaded(None)
        assert reg.loaded(order[0]) and reg.loaded(order[3]) and not reg.loaded(order[5])
        assert reg.workspaces() == data.workspaces()
        assert [reg.pinned_at(r) for r in range(reg.pinned_count())] == \
            [data.pinned_at(r) for r in range(data.pinned_count())]
        assert all(reg.chat_count(w) == data.chat_count(w) for w in order)  # stored counts
        assert reg.chat_count(None) == data.chat_count(None)
        assert reg.archived_count() == data.archived_count()
        assert reg.chat(open_chat.id) == open_chat
        assert not reg.loaded(order[5])  # counting read no page
    finally:
        reg.close()


def test_the_pages_end_where_a_whole_read_starts(data, isolated):
    reg = pages(isolated)
    try:
        heard: list[str] = []
        reg.when_loaded(None, lambda: heard.append("all"))
        steps = 0
        while reg.load_step():
            steps += 1
        assert steps > 1 and heard == ["all"] and reg.loaded(None)
        assert reg.chat_listing() == data.chat_listing()
        for chat in data.chat_listing().ungrouped[:50] + data.chat_listing().archived[:50]:
            assert reg.chat_row(chat.id) == data.chat_row(chat.id)
            assert reg.archived_row(chat.id) == data.archived_row(chat.id)
    finally:
        reg.close()


def test_a_read_waits_for_its_own_page_only(data, isolated):
    order = [ws.id for ws in data.workspaces()]
    reg = pages(isolated)
    try:
        told: list[str] = []
        reg.when_loaded(order[7], lambda: told.append(order[7]))
        assert reg.chats_of(order[7]) == data.chats_of(order[7])
        assert told == [order[7]]
        assert reg.loaded(order[7]) and not reg.loaded(order[8]) and not reg.loaded(None)
        assert reg.chat_order(order[9]) == data.chat_order(order[9])
        row = data.chats_of(order[10])[2]
        assert reg.chat_row(row.id) == 2 and reg.chat_at(order[10], 2) == row
    finally:
        reg.close()


def test_ungrouped_asked_for_is_read_first_and_on_its_own(data, isolated):
    """Ungrouped's chats are found by a scan of every chat: a page of their own, read before
    the workspaces when asked for (the window shows Ungrouped expanded), and once read, read
    from memory while the workspaces still load."""
    expected = data.chat_listing().ungrouped
    assert len(expected) > 100
    reg = pages(isolated)
    try:
        told: list[str] = []
        reg.when_loaded(UNGROUPED, lambda: told.append("ungrouped"))
        steps = 0
        while not reg.loaded(UNGROUPED):
            assert reg.load_step()
            steps += 1
        assert told == ["ungrouped"] and not reg.loaded(None)
        order = [ws.id for ws in data.workspaces()]
        assert not any(reg.loaded(ws_id) for ws_id in order)  # before every workspace
        assert [reg.chat_at(None, r) for r in range(reg.chat_count(None))] == expected
        assert reg.chat_row(expected[-1].id) == len(expected) - 1
        while reg.load_step():
            pass
        assert reg.chat_listing() == data.chat_listing()
    finally:
        reg.close()


def test_a_workspace_asked_for_during_ungrouped_s_scan_is_read_before_the_scan_ends(
        data, isolated, monkeypatch):
    import app.store.registry.loader as loader

    monkeypatch.setattr(loader, "SCAN_CHATS", 500)  # a scan of several steps at 3,000 chats
    order = [ws.id for ws in data.workspaces()]
    reg = pages(isolated)
    try:
        reg.when_loaded(UNGROUPED, lambda: None)
        assert reg.load_step() and not reg.loaded(UNGROUPED)  # the scan's first step
        reg.when_loaded(order[25], lambda: None)
        assert reg.load_step() and reg.loaded(order[25]) and not reg.loaded(UNGROUPED)
        while not reg.loaded(UNGROUPED):
            assert reg.load_step()
        assert not reg.loaded(order[30])  # the rest of the workspaces after Ungrouped
        while reg.load_step():
            pass
        assert reg.chat_listing() == data.chat_listing()
    finally:
        reg.close()


def test_a_read_of_ungrouped_waits_for_its_scan_only(data, isolated):
    reg = pages(isolated)
    try:
        assert reg.chat_at(None, 0) == data.chat_at(None, 0)
        assert reg.loaded(UNGROUPED) and not reg.loaded(None)
        assert not reg.loaded(data.workspaces()[0].id)
        assert reg.chat_count(None) == data.chat_count(None)
    finally:
        reg.close()


def test_a_chat_not_read_yet_is_found_by_its_own_row(data, isolated):
    order = [ws.id for ws in data.workspaces()]
    reg = pages(isolated)
    try:
        for chat in (data.chats_of(order[12])[0], data.chat_listing().ungrouped[0],
                     data.chat_listing().archived[0]):
            assert reg.chat(chat.id) == chat
        assert reg.chat("ch_nobody") is None
        assert reg.chat("\udcff") is None  # (a lone surrogate, typed on a command line)
        assert not reg.loaded(order[12])
    finally:
        reg.close()


def test_work_begun_on_a_chat_not_read_yet_never_deadlocks_with_a_page(data, isolated):
    """A Send in a chat opened before its page is in (from search, say): the chat is looked
    up under the load's lock, which a page holds while it waits for the memory lock; looking
    it up while holding the memory lock deadlocked the two."""
    import threading
    import time

    order = [ws.id for ws in data.workspaces()]
    chat = data.chats_of(order[30])[0]
    reg = pages(isolated)
    stuck = True
    try:
        holding, go_on = threading.Event(), threading.Event()

        def a_page() -> None:  # as _read_pages: the load's lock, then the memory lock
            with reg.loader._load_lock:
                holding.set()
                go_on.wait(10)
                with reg.mem.lock:
                    pass

        begun: list[object] = []
        page = threading.Thread(target=a_page, daemon=True)
        page.start()
        holding.wait(10)
        sender = threading.Thread(daemon=True, target=lambda: begun.append(
            reg.begin_work(chat.id, "turn", lambda: None)))
        sender.start()
        time.sleep(0.2)  # the sender is waiting for the load's lock by now
        go_on.set()
        page.join(10)
        sender.join(10)
        stuck = page.is_alive() or sender.is_alive()
        assert not stuck, "deadlocked"
        reg.end_work(begun[0])  # type: ignore[arg-type]
    finally:
        if not stuck:  # (closing takes the load's lock: it would wait forever)
            reg.close()


def test_a_change_finishes_the_load_first(data, isolated):
    order = [ws.id for ws in data.workspaces()]
    chat = data.chats_of(order[20])[1]
    data.close()
    reg = pages(isolated)
    try:
        reg.rename_chat(chat.id, "Renamed while loading")
        assert reg.loaded(None)
        fresh = Registry.open(isolated)
        try:
            assert reg.chat_listing() == fresh.chat_listing()
            assert fresh.chat(chat.id).title == "Renamed while loading"
        finally:
            fresh.close()
    finally:
        reg.close()


def test_a_damaged_file_found_after_the_first_paint_refuses_every_change(
        data, isolated, monkeypatch):
    order = [ws.id for ws in data.workspaces()]
    chat = data.chats_of(order[0])[0]
    data.close()

    def damaged(self: Database) -> None:
        raise StartupError("Cairn's database failed its integrity check (test)")

    monkeypatch.setattr(Database, "check", damaged)
    reg = pages(isolated)
    try:
        before = (isolated / "cairn.db").read_bytes()
        with pytest.raises(StartupError, match="integrity check"):
            while reg.load_step():
                pass
        with pytest.raises(StartupError, match="integrity check"):
            reg.rename_chat(chat.id, "never written")
        assert (isolated / "cairn.db").read_bytes() == before
    finally:
        reg.close()


def test_a_catch_up_and_a_folder_check_deliver_their_events_under_the_memory_lock(
        isolated, folders):
    """The sidebar hears an event on the committing thread and is given it on the GUI thread;
    when it is given one it has not heard yet it waits on the memory lock for the delivery to
    end (``InFlight.barrier``).  A change that wrote nothing used to deliver without holding
    it, and the sidebar then lost the event and stopped reading lists (found by the start-up
    test with changes from another process)."""
    import shutil
    import threading

    (path,) = folders("Project")
    reg = Registry.open(isolated)
    try:
        ws, _ = reg.add_workspace(path)
        other = Registry.open(isolated)  # another process, as far as SQLite can tell
        other.rename_workspace(ws.id, "Renamed elsewhere")
        other.close()
        free_during_delivery: list[bool] = []

        def listener(event: object) -> None:
            probe = threading.Thread(target=lambda: free_during_delivery.append(
                reg.mem.lock.acquire(blocking=False) and (reg.mem.lock.release() or True)))
            probe.start()
            probe.join()

        subscription = reg.hub.subscribe(listener)
        assert reg.sync()  # the catch-up: a Reset
        shutil.rmtree(path)
        reg.refresh_status()  # the folder check: a WorkspaceChanged
        subscription.close()
        assert free_during_delivery == [False, False]
    finally:
        reg.close()
