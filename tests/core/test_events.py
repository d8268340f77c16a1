"""Typed change events (app/events.py): the hub, each registry operation's events, and a
mirror that follows only the events and stays equal to a fresh listing."""

from __future__ import annotations

import dataclasses
import logging
import random
import shutil
import threading
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from app.base import paths
from app.base.live import TURN
from app.errors import Refused
from app.events import (
    REGISTRY_EVENTS,
    ChatAdded,
    ChatArchived,
    ChatChanged,
    ChatMoved,
    ChatPinned,
    ChatsRegrouped,
    ChatUnarchived,
    ChatUnpinned,
    Event,
    Hub,
    KnowledgeSaved,
    MessageStored,
    Reset,
    WorkEnded,
    WorkspaceAdded,
    WorkspaceChanged,
    WorkspaceMoved,
    WorkspaceRemoved,
    WorkStarted,
)
from app.records import MISSING_DIR


@pytest.fixture
def seen(registry):  # type: ignore[no-untyped-def]
    """Every event the registry emits from now on."""
    events: list[Event] = []
    registry.hub.subscribe(events.append)
    return events


def taken(events: list[Event]) -> list[Event]:
    """The events so far, and forget them."""
    out = list(events)
    events.clear()
    return out


# ================================================================= the hub


def test_events_are_frozen_and_slotted():
    event = MessageStored(chat="ch_1", message_id="m_1", role="user")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.chat = "ch_2"  # type: ignore[misc]
    assert not hasattr(event, "__dict__")
    assert event == MessageStored("ch_1", "m_1", "user")


def test_subscribe_filters_by_kind_and_close_stops_delivery():
    hub = Hub()
    everything: list[Event] = []
    knowledge: list[Event] = []
    all_sub = hub.subscribe(everything.append)
    with hub.subscribe(knowledge.append, kinds=KnowledgeSaved) as sub:
        hub.emit(KnowledgeSaved("ws_1", 2, "user"), Reset())
        assert not sub.closed
    assert sub.closed
    hub.emit(KnowledgeSaved("ws_1", 3, "rebuild"))
    assert knowledge == [KnowledgeSaved("ws_1", 2, "user")]
    assert everything == [
        KnowledgeSaved("ws_1", 2, "user"), Reset(), KnowledgeSaved("ws_1", 3, "rebuild")]
    all_sub.close()
    all_sub.close()  # twice is harmless
    hub.emit(Reset())
    assert len(everything) == 3 and hub.subscriber_count == 0


def test_a_failing_listener_is_logged_and_the_others_still_hear(caplog):
    hub = Hub()
    heard: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError("boom")

    hub.subscribe(broken)
    hub.subscribe(heard.append)
    with caplog.at_level(logging.ERROR, logger="app.events"):
        hub.emit(Reset())
    assert heard == [Reset()]
    assert "failed on Reset" in caplog.text


def test_an_event_emitted_by_a_listener_waits_for_the_current_one():
    hub = Hub()
    order: list[tuple[str, Event]] = []

    def first(event: Event) -> None:
        order.append(("first", event))
        if isinstance(event, Reset):
            hub.emit(KnowledgeSaved("ws_1", 1, "user"))

    hub.subscribe(first)
    hub.subscribe(lambda e: order.append(("second", e)))
    hub.emit(Reset())
    assert [(who, type(e).__name__) for who, e in order] == [
        ("first", "Reset"), ("second", "Reset"),
        ("first", "KnowledgeSaved"), ("second", "KnowledgeSaved"),
    ]


def test_a_subscription_closed_during_delivery_hears_no_more():
    hub = Hub()
    heard: list[Event] = []
    hub.subscribe(lambda e: later.close(), kinds=Reset)
    later = hub.subscribe(heard.append)
    hub.emit(KnowledgeSaved("ws_1", 1, "user"), Reset(), KnowledgeSaved("ws_1", 2, "user"))
    assert heard == [KnowledgeSaved("ws_1", 1, "user")]


def test_events_are_delivered_on_the_thread_that_committed(registry, folders):
    threads: list[threading.Thread] = []
    registry.hub.subscribe(lambda e: threads.append(threading.current_thread()))
    (path,) = folders("Acme")
    worker = threading.Thread(target=lambda: registry.add_workspace(path))
    worker.start()
    worker.join()
    assert threads == [worker]


# ================================================================= workspaces


def test_add_workspace_top_level_and_at_end(registry, seen, folders):
    a, b, c = folders("a", "b", "c")
    wa, _ = registry.add_workspace(a)
    wb, _ = registry.add_workspace(b)
    wc, _ = registry.add_workspace(c, at_end=True)
    assert taken(seen) == [
        WorkspaceAdded(wa.id, None, 0, wa),
        WorkspaceAdded(wb.id, None, 0, wb),
        WorkspaceAdded(wc.id, None, 2, wc),
    ]
    assert registry.add_workspace(a) == (wa, False)
    assert taken(seen) == []  # nothing changed, nothing said


def test_adding_a_parent_re_parents_its_folders(registry, seen, folders):
    acme, brand, logo, other = folders("Acme", "Acme/Brand", "Acme/Logo", "Other")
    w_other, _ = registry.add_workspace(other)
    w_brand, _ = registry.add_workspace(brand, at_end=True)
    w_logo, _ = registry.add_workspace(logo)  # order: logo, other, brand
    taken(seen)
    w_acme, _ = registry.add_workspace(acme, at_end=True)  # order: logo, other, brand, acme
    assert taken(seen) == [
        WorkspaceAdded(w_acme.id, None, 3, w_acme),
        WorkspaceMoved(w_logo.id, None, w_acme.id, 0, 0),
        WorkspaceMoved(w_brand.id, None, w_acme.id, 1, 1),
    ]
    assert [ws.id for ws in registry.children(w_acme.id)] == [w_logo.id, w_brand.id]
    assert [ws.id for ws in registry.top_level()] == [w_other.id, w_acme.id]


def test_adding_a_folder_between_a_parent_and_its_folders(registry, seen, folders):
    acme, brand, logo = folders("Acme", "Acme/Brand", "Acme/Brand/Logo")
    w_acme, _ = registry.add_workspace(acme)
    w_logo, _ = registry.add_workspace(logo)
    taken(seen)
    w_brand, _ = registry.add_workspace(brand)
    assert taken(seen) == [
        WorkspaceAdded(w_brand.id, w_acme.id, 0, w_brand),
        WorkspaceMoved(w_logo.id, w_acme.id, w_brand.id, 0, 1),
    ]


def test_removing_a_parent_lifts_its_folders_then_removes_it(registry, seen, folders):
    acme, brand, logo = folders("Acme", "Acme/Brand", "Acme/Logo")
    w_logo, _ = registry.add_workspace(logo)
    w_brand, _ = registry.add_workspace(brand)
    w_acme, _ = registry.add_workspace(acme, at_end=True)  # order: brand, logo, acme
    taken(seen)
    registry.remove_workspace(w_acme.id)
    assert taken(seen) == [
        WorkspaceMoved(w_brand.id, w_acme.id, None, 0, 0),
        WorkspaceMoved(w_logo.id, w_acme.id, None, 1, 0),
        WorkspaceRemoved(w_acme.id, None, 2),
    ]
    assert registry.remove_workspace(w_acme.id) is False
    assert taken(seen) == []


def test_removal_regroups_its_chats_into_ungrouped_first(registry, seen, folders):
    acme, = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    loose = registry.new_chat(title="loose")
    old = registry.new_chat(folder=acme, title="old")
    hidden = registry.new_chat(folder=acme, title="hidden")
    new = registry.new_chat(folder=acme, title="new")
    registry.archive_chat(hidden.id)
    taken(seen)
    registry.remove_workspace(ws.id)
    # Ungrouped is newest first: new, old, loose; the archived chat stays in Archived.
    assert taken(seen) == [
        ChatsRegrouped(ids=(new.id, old.id, hidden.id), to=None, rows=(0, 1, None)),
        WorkspaceRemoved(ws.id, None, 0),
    ]
    assert [c.id for c in registry.chat_listing().ungrouped] == [new.id, old.id, loose.id]


def test_move_workspace_in_the_display_order(registry, seen, folders):
    a, b, acme, brand = folders("a", "b", "Acme", "Acme/Brand")
    wa, _ = registry.add_workspace(a, at_end=True)
    w_acme, _ = registry.add_workspace(acme, at_end=True)
    wb, _ = registry.add_workspace(b, at_end=True)
    w_brand, _ = registry.add_workspace(brand, at_end=True)  # order: a, acme, b, brand
    taken(seen)
    registry.move_workspace(wb.id, index=0)
    assert taken(seen) == [WorkspaceMoved(wb.id, None, None, 0, 2)]
    registry.move_workspace(w_brand.id, index=0)  # past top-level ones only: same row
    assert taken(seen) == [WorkspaceMoved(w_brand.id, w_acme.id, w_acme.id, 0, 0)]
    assert [ws.id for ws in registry.top_level()] == [wb.id, wa.id, w_acme.id]


def test_workspace_changes(registry, seen, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    taken(seen)
    renamed = registry.rename_workspace(ws.id, "Acme Inc")
    updated = registry.update_workspace(ws.id, description="d", instructions="i")
    advanced = registry.advance_workspace(ws.id)
    assert taken(seen) == [
        WorkspaceChanged(ws.id, renamed),
        WorkspaceChanged(ws.id, updated),
        WorkspaceChanged(ws.id, advanced),
    ]
    assert advanced.build_status == "planning"
    with pytest.raises(Refused):
        registry.rename_workspace(ws.id, "  ")
    assert taken(seen) == []


def test_a_missing_folder_is_a_change_once(registry, seen, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    taken(seen)
    registry.refresh_status()
    assert taken(seen) == []
    shutil.rmtree(path)
    registry.refresh_status()
    (event,) = taken(seen)
    assert event == WorkspaceChanged(ws.id, registry.workspace(ws.id))
    assert event.record.status == MISSING_DIR
    registry.refresh_status()
    assert taken(seen) == []


def test_a_folder_status_change_keeps_readers_out_until_every_listener_heard_it(
        registry, folders):
    """The sidebar's row sometimes stayed *missing* after the folder came
    back.  A status change commits nothing, so its events went out without the memory lock:
    the window could be handed the event by the first listener (the bridge) and read past
    it before the second (the model's bookkeeping) had heard it, and then dropped every later
    event.  Readers must wait while a change's events are delivered, writes or not."""
    (path,) = folders("Acme")
    registry.add_workspace(path)
    readers_got_in: list[bool] = []

    def try_to_read(_event: Event) -> None:
        # From another thread, as the GUI thread would: can it take the memory lock now?
        def attempt() -> None:
            got = registry.mem.lock.acquire(blocking=False)
            if got:
                registry.mem.lock.release()
            readers_got_in.append(got)
        reader = threading.Thread(target=attempt)
        reader.start()
        reader.join()

    registry.hub.subscribe(try_to_read)
    shutil.rmtree(path)
    registry.refresh_status()  # missing
    Path(path).mkdir()
    registry.refresh_status()  # back
    registry.sync()  # nothing new: no events
    assert readers_got_in == [False, False]


def test_move_to_folder_keeps_the_workspace_and_re_reads_the_tree(registry, seen, folders):
    """The same workspace (its id, place, chats) at its new folder, said
    as a removal at the old place and an addition at the new one (never a Reset)."""
    a, old, b = folders("a", "Thesis", "b")
    registry.add_workspace(a)
    ws, _ = registry.add_workspace(old)
    registry.add_workspace(b, at_end=True)  # order: Thesis, a, b
    first = registry.new_chat(folder=old, title="first")
    second = registry.new_chat(folder=old, title="second")
    shutil.rmtree(old)
    registry.refresh_status()
    taken(seen)
    (target,) = folders("Moved/Thesis")
    moved = registry.move_to_folder(ws.id, target)
    assert taken(seen) == [
        ChatsRegrouped(ids=(second.id, first.id), to=None, rows=(0, 1)),
        WorkspaceRemoved(ws.id, None, 0),
        WorkspaceAdded(ws.id, None, 0, moved),
        ChatsRegrouped(ids=(second.id, first.id), to=ws.id, rows=(0, 1)),
    ]
    assert (moved.id, moved.path, moved.title, moved.status) == (ws.id, target, "Thesis", "ok")
    assert [w.id for w in registry.workspaces()][0] == ws.id
    assert [c.id for c in registry.chats_of(ws.id)] == [second.id, first.id]


def test_move_to_folder_into_a_parent_of_other_workspaces(registry, seen, folders):
    old, inner, other_inner = folders("Old", "New/inner", "Else/inner")
    w_inner, _ = registry.add_workspace(inner)
    registry.add_workspace(other_inner)
    ws, _ = registry.add_workspace(old, at_end=True)
    shutil.rmtree(old)
    registry.refresh_status()
    taken(seen)
    moved = registry.move_to_folder(ws.id, str(Path(inner).parent))
    assert taken(seen) == [
        WorkspaceRemoved(ws.id, None, 2),
        WorkspaceAdded(ws.id, None, 2, moved),
        WorkspaceMoved(w_inner.id, None, ws.id, 0, 1),
    ]
    assert moved.id == ws.id and registry.parent_of(w_inner.id) == ws.id


# ================================================================= chats


def test_new_chats(registry, seen, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    taken(seen)
    one = registry.new_chat(folder=path)
    two = registry.new_chat(folder=path)
    loose = registry.new_chat(title="loose")
    assert taken(seen) == [
        ChatAdded(one.id, ws.id, 0, one),
        ChatAdded(two.id, ws.id, 0, two),
        ChatAdded(loose.id, None, 0, loose),
    ]


def test_rename_pin_unpin(registry, seen, folders):
    a = registry.new_chat(title="a")
    b = registry.new_chat(title="b")
    taken(seen)
    renamed = registry.rename_chat(a.id, "A")
    pinned_a = registry.pin_chat(a.id)
    pinned_b = registry.pin_chat(b.id)
    assert registry.pin_chat(b.id) == pinned_b  # already pinned: nothing
    unpinned = registry.unpin_chat(a.id)
    assert taken(seen) == [
        ChatChanged(a.id, renamed),
        ChatPinned(a.id, 0), ChatChanged(a.id, pinned_a),
        ChatPinned(b.id, 0), ChatChanged(b.id, pinned_b),
        ChatUnpinned(a.id, 1), ChatChanged(a.id, unpinned),
    ]


def test_archive_and_unarchive_say_where_from_and_to(registry, seen, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    low = registry.new_chat(folder=path, title="low")
    mid = registry.new_chat(folder=path, title="mid")
    top = registry.new_chat(folder=path, title="top")  # rows: top, mid, low
    registry.pin_chat(mid.id)
    taken(seen)
    archived_mid = registry.archive_chat(mid.id)
    archived_top = registry.archive_chat(top.id)
    assert taken(seen) == [
        ChatUnpinned(mid.id, 0),  # the pin goes in the same write
        ChatArchived(mid.id, ws.id, 1, 0), ChatChanged(mid.id, archived_mid),
        ChatArchived(top.id, ws.id, 0, registry.archived_row(top.id)),
        ChatChanged(top.id, archived_top),
    ]
    was = registry.archived_row(mid.id)  # archived in the same millisecond: the older first
    back = registry.unarchive_chat(mid.id)
    assert taken(seen) == [
        ChatUnarchived(mid.id, ws.id, 0, was),  # above low again; top stays archived
        ChatChanged(mid.id, back),
    ]
    assert [c.id for c in registry.chats_of(ws.id)] == [mid.id, low.id]


def test_move_chat(registry, seen, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    c1, c2, c3 = (registry.new_chat(folder=path, title=t) for t in ("1", "2", "3"))
    taken(seen)  # rows: 3, 2, 1
    registry.move_chat(c3.id, index=2)
    registry.move_chat(c1.id, index=1)  # already there
    assert taken(seen) == [ChatMoved(c3.id, ws.id, 0, 2)]
    with pytest.raises(Refused):
        registry.move_chat(c1.id, index=9)
    assert taken(seen) == []


def test_work_started_and_ended_once(registry, seen):
    chat = registry.new_chat()
    taken(seen)
    work = registry.begin_work(chat.id, TURN, stop=lambda: None)
    registry.end_work(work)
    registry.end_work(work)  # a second end (a cancel path) says nothing more
    assert taken(seen) == [WorkStarted(chat.id, TURN), WorkEnded(chat.id, TURN)]


# ================================================================= another process


def test_catching_up_emits_reset_only_when_something_changed(registry, seen, open_registry):
    other = open_registry()
    other.new_chat(title="elsewhere")
    assert taken(seen) == []  # nothing known yet
    assert registry.sync() is True
    assert taken(seen) == [Reset()]
    assert registry.sync() is False
    with other.db.write() as conn:  # another process writes something the registry ignores
        conn.execute("INSERT OR REPLACE INTO setting (key, value) VALUES ('x', '1')")
    assert registry.sync() is True
    assert taken(seen) == []


def test_a_write_after_another_process_wrote_is_one_reset(registry, seen, open_registry, folders):
    a, b = folders("a", "b")
    other = open_registry()
    other.add_workspace(a)
    registry.add_workspace(b)
    assert taken(seen) == [Reset()]  # the re-read covers this write too
    other.new_chat(title="x")
    with pytest.raises(Refused):
        registry.rename_workspace("ws_unknown", "y")  # refused, but memory did reload
    assert taken(seen) == [Reset()]


def test_a_listener_reading_during_delivery_sees_the_state_after_the_change(registry, folders):
    (path,) = folders("Acme")
    rows: list[int] = []
    registry.hub.subscribe(lambda e: rows.append(registry.child_count(None)), kinds=WorkspaceAdded)
    registry.add_workspace(path)
    assert rows == [1]


# ================================================================= model-shaped reads


def test_rows_reads(registry, folders):
    acme, brand, logo, other = folders("Acme", "Acme/Brand", "Acme/Logo", "Other")
    w_acme, _ = registry.add_workspace(acme)
    w_brand, _ = registry.add_workspace(brand)
    w_logo, _ = registry.add_workspace(logo, at_end=True)
    w_other, _ = registry.add_workspace(other, at_end=True)
    assert registry.child_count(None) == 2 and registry.child_count(w_acme.id) == 2
    assert registry.child_count(w_logo.id) == 0
    assert registry.child_at(None, 1) == w_other and registry.child_at(w_acme.id, 1) == w_logo
    assert (registry.row_of(w_other.id), registry.row_of(w_brand.id)) == (1, 0)
    with pytest.raises(IndexError):
        registry.child_at(None, 2)
    chat = registry.new_chat(folder=brand)
    loose = registry.new_chat()
    registry.pin_chat(loose.id)
    assert (registry.chat_count(w_brand.id), registry.chat_count(None)) == (1, 1)
    assert registry.chat_at(w_brand.id, 0) == chat and registry.chat_row(chat.id) == 0
    assert registry.pinned_count() == 1 and registry.pinned_at(0).id == loose.id
    assert registry.pinned_row(chat.id) is None
    registry.archive_chat(chat.id)
    assert registry.chat_row(chat.id) is None and registry.archived_row(chat.id) == 0
    assert registry.archived_at(0).id == chat.id and registry.archived_count() == 1
    assert registry.chat_count(w_brand.id) == 0


def test_many_moves_into_one_gap_keep_the_order(registry, seen, folders):
    # Each move takes a rank halfway between its neighbours'; after ~50 halvings there is no
    # number left between them and the ranks are spread out again.
    a, b, c = (registry.add_workspace(p, at_end=True)[0] for p in folders("a", "b", "c"))
    taken(seen)
    for i in range(120):
        moving = registry.workspaces()[2]
        registry.move_workspace(moving.id, index=1)
        assert taken(seen) == [WorkspaceMoved(moving.id, None, None, 1, 2)], i
        assert registry.top_level() == registry.workspaces()
    assert [registry.row_of(ws.id) for ws in registry.workspaces()] == [0, 1, 2]


@given(st.lists(st.tuples(st.sampled_from(["insert", "sorted", "remove", "read"]),
                          st.integers(0, 40)), max_size=60),
       st.booleans())
def test_rows_behave_like_a_list(steps, newest_first):
    from app.store.registry.nesting import Rows

    model = ["s2", "s1"] if newest_first else ["s1", "s2"]  # shown order, as sorted below
    rows = Rows(model, newest_first=newest_first)
    made = 2
    for what, n in steps:
        if what == "insert":
            made += 1
            rows.insert(n % (len(model) + 1), f"i{made}")
            model.insert(n % (len(model) + 1), f"i{made}")
        elif what == "sorted" and not any(x.startswith("i") for x in model):
            made += 1  # "s" ids sort by number; shown ascending, or descending newest first
            new = f"s{made * 50 + n}"  # unique, in any order
            row = rows.insert_sorted(new, lambda x: int(x[1:]))
            model = sorted([*model, new], key=lambda x: int(x[1:]), reverse=newest_first)
            assert model[row] == new
        elif what == "remove" and model:
            item = model[n % len(model)]
            assert rows.remove(item) == model.index(item)
            model.remove(item)
        else:
            assert [rows.row_of(x) for x in model] == list(range(len(model)))
        assert list(rows) == model and len(rows) == len(model)
        assert [rows.at(r) for r in range(len(model))] == model


# ================================================================= the mirror


class Mirror:
    """A model of the sidebar that knows only what the events say (and re-reads on Reset)."""

    def __init__(self, registry) -> None:  # type: ignore[no-untyped-def]
        self.registry = registry
        self.resets = 0
        self.reread()
        registry.hub.subscribe(self.apply, kinds=REGISTRY_EVENTS)

    def reread(self) -> None:
        reg = self.registry
        self.workspaces = {ws.id: ws for ws in reg.workspaces()}
        self.children = {p: [ws.id for ws in kids] for p, kids in reg.tree().items()}
        listing = reg.chat_listing()
        self.lists: dict[str | None, list[str]] = {
            ws.id: [c.id for c in chats] for ws, chats in listing.workspaces}
        self.lists[None] = [c.id for c in listing.ungrouped]
        self.pinned = [c.id for c in listing.pinned]
        self.archived = [c.id for c in listing.archived]
        self.chats = {c.id: c for c in (*listing.ungrouped, *listing.archived)}
        self.chats.update((c.id, c) for _, chats in listing.workspaces for c in chats)

    def apply(self, e: Event) -> None:
        kids = self.children
        if isinstance(e, Reset):
            self.resets += 1
            self.reread()
        elif isinstance(e, WorkspaceAdded):
            kids.setdefault(e.parent, []).insert(e.row, e.id)
            self.workspaces[e.id] = e.record
            self.lists[e.id] = []
        elif isinstance(e, WorkspaceRemoved):
            assert kids[e.parent].pop(e.row) == e.id
            assert not kids.pop(e.id, []) and not self.lists.pop(e.id)
            del self.workspaces[e.id]
        elif isinstance(e, WorkspaceMoved):
            assert kids[e.old_parent].pop(e.old_row) == e.id
            kids.setdefault(e.new_parent, []).insert(e.row, e.id)
        elif isinstance(e, WorkspaceChanged):
            self.workspaces[e.id] = e.record
        elif isinstance(e, ChatAdded):
            self.lists[e.workspace].insert(e.row, e.id)
            self.chats[e.id] = e.record
        elif isinstance(e, ChatChanged):
            self.chats[e.id] = e.record
        elif isinstance(e, ChatMoved):
            assert self.lists[e.workspace].pop(e.old_row) == e.id
            self.lists[e.workspace].insert(e.new_row, e.id)
        elif isinstance(e, ChatPinned):
            self.pinned.insert(e.row, e.id)
        elif isinstance(e, ChatUnpinned):
            assert self.pinned.pop(e.row) == e.id
        elif isinstance(e, ChatArchived):
            assert self.lists[e.workspace].pop(e.row) == e.id
            self.archived.insert(e.archived_row, e.id)
        elif isinstance(e, ChatUnarchived):
            assert self.archived.pop(e.archived_row) == e.id
            self.lists[e.workspace].insert(e.row, e.id)
        elif isinstance(e, ChatsRegrouped):
            for chat_id in e.ids:
                chat = self.chats[chat_id]
                if not chat.archived:
                    self.lists[chat.workspace_id].remove(chat_id)
                self.chats[chat_id] = chat._replace(workspace_id=e.to)
            for chat_id, row in zip(e.ids, e.rows):
                if row is not None:
                    self.lists[e.to].insert(row, chat_id)
        else:  # pragma: no cover
            raise AssertionError(f"unexpected {e!r}")

    def shape(self) -> dict[str, object]:
        return {
            "workspaces": self.workspaces,
            "tree": {p: ids for p, ids in self.children.items() if ids},
            "lists": self.lists,
            "pinned": self.pinned,
            "archived": self.archived,
            "chats": self.chats,
        }


def plain(reg) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The listing computed the plain way, from the registry's records alone: parents by
    path, chats filtered and sorted on every call (what the registry did before rows)."""
    order = reg.workspaces()
    by_key = {ws.key: ws.id for ws in order}
    tree: dict[str | None, list[str]] = {}
    for ws in order:
        parent = next((by_key[k] for k in paths.parent_keys(ws.key) if k in by_key), None)
        tree.setdefault(parent, []).append(ws.id)
    chats = list(reg.mem.chats.values())  # every chat, in the order they were made
    lists: dict[str | None, list[str]] = {
        ws.id: [c for c in reg.mem.members[ws.id] if not reg.mem.chats[c].archived] for ws in order}
    lists[None] = [c.id for c in reversed(chats) if c.workspace_id is None and not c.archived]
    return {
        "workspaces": {ws.id: ws for ws in order},
        "tree": tree,
        "lists": lists,
        "pinned": [c.id for c in sorted((c for c in chats if c.pinned),
                                        key=lambda c: c.pin_seq, reverse=True)],
        "archived": [c.id for c in sorted((c for c in chats if c.archived),
                                          key=lambda c: c.archived_at, reverse=True)],
        "chats": {c.id: c for c in chats},
    }


def rows_agree(reg, shape: dict[str, object]) -> None:  # type: ignore[no-untyped-def]
    """The registry's O(1) reads say what the plain listing says."""
    tree = shape["tree"]
    assert isinstance(tree, dict)
    assert {p: [ws.id for ws in kids] for p, kids in reg.tree().items()} == tree
    for parent in [None, *shape["workspaces"]]:  # type: ignore[misc]
        ids = tree.get(parent, [])
        assert reg.child_count(parent) == len(ids)
        assert [reg.child_at(parent, r).id for r in range(len(ids))] == ids
        assert [reg.row_of(i) for i in ids] == list(range(len(ids)))
    lists = shape["lists"]
    assert isinstance(lists, dict)
    for ws_id, ids in lists.items():
        assert reg.chat_count(ws_id) == len(ids)
        assert [reg.chat_at(ws_id, r).id for r in range(len(ids))] == ids
        assert [reg.chat_row(i) for i in ids] == list(range(len(ids)))
    for name in ("pinned", "archived"):
        ids = shape[name]
        assert isinstance(ids, list)
        assert getattr(reg, f"{name}_count")() == len(ids)
        assert [getattr(reg, f"{name}_at")(r).id for r in range(len(ids))] == ids
        assert [getattr(reg, f"{name}_row")(i) for i in ids] == list(range(len(ids)))
    listing = reg.chat_listing()
    assert [c.id for c in listing.pinned] == shape["pinned"]
    assert [c.id for c in listing.archived] == shape["archived"]
    assert [c.id for c in listing.ungrouped] == lists[None]
    assert {ws.id: [c.id for c in cs] for ws, cs in listing.workspaces} == {
        k: v for k, v in lists.items() if k is not None}


# Folders the operations pick from: nested, so that adding and removing parents re-parents.
POOL = [f"{top}{sub}" for top in ("p", "q", "r") for sub in ("", "/a", "/a/x", "/a/y", "/b")]
POOL += ["s", "t/u/v", "t"]


class Run:
    """One random sequence of operations on two registries of one data folder."""

    def __init__(self, first, other, base: Path, rng: random.Random) -> None:  # type: ignore[no-untyped-def]
        self.first, self.other, self.base, self.rng = first, other, base, rng
        self.other_wrote = False
        self.made = 0

    def path(self) -> str:
        return str(self.base / self.rng.choice(POOL))

    def pick(self, items):  # type: ignore[no-untyped-def]
        items = list(items)
        return self.rng.choice(items) if items else None

    def step(self) -> str:
        rng = self.rng
        by_other = rng.random() < 0.08
        reg = self.other if by_other else self.first
        op = rng.choices(
            ["add", "remove", "move", "edit", "chat", "rename_chat", "pin", "unpin", "archive",
             "unarchive", "move_chat", "move_to_folder", "disk", "sync"],
            weights=[14, 5, 5, 3, 14, 3, 4, 3, 4, 3, 6, 3, 3, 1])[0]
        try:
            self.do(reg, op)
        except Refused:
            pass
        if by_other and op not in ("disk", "sync"):
            self.other_wrote = True
        return f"{'other' if by_other else 'first'}:{op}"

    def do(self, reg, op: str) -> None:  # type: ignore[no-untyped-def]
        rng = self.rng
        ws = self.pick(reg.workspaces())
        chats = list(reg.mem.chats.values())
        chat = self.pick(chats)
        if op == "add":
            reg.add_workspace(self.path(), at_end=rng.random() < 0.4)
        elif op == "remove" and ws:
            reg.remove_workspace(ws.id)
        elif op == "move" and ws:
            reg.move_workspace(ws.id, index=rng.randrange(len(reg.workspaces())))
        elif op == "edit" and ws:
            rng.choice([lambda: reg.rename_workspace(ws.id, f"T{rng.randrange(9)}"),
                        lambda: reg.advance_workspace(ws.id),
                        lambda: reg.update_workspace(ws.id, description=f"d{rng.random()}")])()
        elif op == "chat":
            reg.new_chat(folder=self.path() if rng.random() < 0.8 else None)
        elif op == "rename_chat" and chat:
            reg.rename_chat(chat.id, f"c{rng.randrange(99)}")
        elif op == "pin" and chat:
            reg.pin_chat(chat.id)
        elif op == "unpin" and (chat := self.pick(c for c in chats if c.pinned)):
            reg.unpin_chat(chat.id)
        elif op == "archive" and chat:
            reg.archive_chat(chat.id)
        elif op == "unarchive" and (chat := self.pick(c for c in chats if c.archived)):
            reg.unarchive_chat(chat.id)
        elif op == "move_chat" and (
            chat := self.pick(c for c in chats if c.workspace_id and not c.archived)
        ):
            reg.move_chat(chat.id, index=rng.randrange(len(reg.chats_of(chat.workspace_id))))
        elif op == "move_to_folder" and ws:
            gone = self.pick(w for w in reg.workspaces() if w.status == MISSING_DIR)
            if gone is None:  # make one: its folder (and what is inside) goes away
                shutil.rmtree(ws.path, ignore_errors=True)
                self.first.refresh_status()
                gone = ws
            free = [p for p in POOL if (self.base / p).is_dir()
                    and reg.workspace_for_folder(str(self.base / p)) is None]
            if free and rng.random() < 0.6:  # may hold or sit inside other workspaces
                target = self.base / rng.choice(free)
            else:
                self.made += 1
                target = self.base / rng.choice(POOL) / f"m{self.made}"
                target.mkdir(parents=True)  # perhaps a missing workspace's folder with it
                self.first.refresh_status()
            reg.move_to_folder(gone.id, str(target))
        elif op == "disk":  # a folder goes away or comes back; the first one looks again
            folder = self.base / rng.choice(POOL)
            if folder.exists() and rng.random() < 0.6:
                shutil.rmtree(folder)
            else:
                folder.mkdir(parents=True, exist_ok=True)
            self.first.refresh_status()
        elif op == "sync":
            self.first.sync()
            self.other_wrote = False


def run_mirror(base: Path, seed: int, steps: int) -> None:
    from app.store.registry.registry import Registry

    for name in POOL:
        (base / name).mkdir(parents=True, exist_ok=True)
    opened: list[Registry] = []

    def open_registry() -> Registry:
        opened.append(Registry.open(base / "data"))
        return opened[-1]

    try:
        first, other = open_registry(), open_registry()  # the window and the command line
        mirror = Mirror(first)
        run = Run(first, other, base, random.Random(seed))
        for step in range(steps):
            resets, could_reset = mirror.resets, run.other_wrote
            what = run.step()
            if mirror.resets > resets:  # only another process's writes cause a re-read
                assert could_reset, f"seed {seed}, step {step} ({what}): a Reset nobody caused"
                run.other_wrote = False
            truth = plain(first)
            assert mirror.shape() == truth, f"seed {seed}, step {step} ({what}): the mirror drifted"
            rows_agree(first, truth)
            if step % 100 == 99 or step == steps - 1:  # memory is what is stored
                first.sync()
                run.other_wrote = False
                fresh = open_registry()
                assert plain(fresh) == plain(first), f"seed {seed}, step {step}: memory != storage"
                assert mirror.shape() == plain(first)
                fresh.close()
    finally:
        for registry in opened:
            registry.close()


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**32 - 1))
@example(seed=8)
def test_a_mirror_of_the_events_stays_equal_to_a_fresh_listing(seed):
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cairn-mirror-") as tmp:
        run_mirror(Path(tmp), seed, steps=1000)
