"""The sidebar (ui/sidebar): a lazily read item model that follows the registry's events with
row inserts, removals and moves, never a reset on ordinary changes; its menus, drops, keys and
filter, driven through the real widget with the operations on their writer thread."""

from __future__ import annotations

import random
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QModelIndex, QPoint, Qt, QUrl
from PySide6.QtTest import QAbstractItemModelTester
from PySide6.QtWidgets import QApplication, QMenu

from app.base.live import TURN
from app.cairn import Cairn
from app.errors import Refused
from app.events import Reset
from app.ops import Operations
from app.records import MISSING_DIR
from tests.ui.drivers import action_texts, trigger
from tests.ui.helpers import texts, walk
from ui.bridge import EventBridge
from ui.sidebar import (
    ARCHIVED,
    CHAT,
    ID_ROLE,
    KIND_ROLE,
    PINNED,
    SECTION,
    UNGROUPED,
    WORKSPACE,
    WORKSPACES,
    Sidebar,
    SidebarModel,
)
from ui.sidebar.model import ICON_ROLE, MISSING_ROLE, WORKING_ROLE

# ================================================================= fixtures and helpers


@pytest.fixture
def bridge(registry: Any) -> Iterator[EventBridge]:
    made = EventBridge(registry)
    yield made
    made.detach()


@pytest.fixture
def ops(registry: Any) -> Iterator[Operations]:
    cairn = Cairn(registry, background_rebuilds=False)
    yield Operations(cairn)
    cairn.storage.close()


def make_sidebar(qtbot: Any, registry: Any, bridge: EventBridge, ops: Operations) -> Sidebar:
    widget = Sidebar(registry, bridge, ops)
    qtbot.addWidget(widget)
    widget.errors = []  # type: ignore[attr-defined]
    widget.sig_error.connect(widget.errors.append)  # type: ignore[attr-defined]
    widget.resize(320, 700)
    widget.show()
    return widget


@pytest.fixture
def sidebar(qtbot: Any, loop: Any, registry: Any, bridge: EventBridge,  # noqa: F811
            ops: Operations) -> Sidebar:
    return make_sidebar(qtbot, registry, bridge, ops)


def settle(qtbot: Any, sidebar: Sidebar) -> None:
    """Wait until every operation returned and the model applied every event it heard."""
    qtbot.waitUntil(lambda: not sidebar.tasks() and sidebar.model.is_settled(), timeout=10_000)


def settled(qtbot: Any, model: SidebarModel) -> None:
    qtbot.waitUntil(model.is_settled, timeout=10_000)






def shape(model: SidebarModel) -> dict[str, Any]:
    """What the model shows, read through the Qt interface only, every list read."""
    out: dict[str, Any] = {"tree": {}, "lists": {}, "titles": {}}
    top = QModelIndex()
    assert model.rowCount(top) == 4
    sections = [model.index(r, 0, top) for r in range(4)]
    assert [s.data(ID_ROLE) for s in sections] == [PINNED, WORKSPACES, UNGROUPED, ARCHIVED]
    for section in sections:
        if model.canFetchMore(section):
            model.fetchMore(section)

    def chats(parent: QModelIndex, first: int = 0) -> list[str]:
        ids = []
        for r in range(first, model.rowCount(parent)):
            index = model.index(r, 0, parent)
            assert index.data(KIND_ROLE) == CHAT and index.parent() == parent
            assert index.data(Qt.ItemDataRole.AccessibleTextRole) == index.data()
            ids.append(index.data(ID_ROLE))
            out["titles"][index.data(ID_ROLE)] = index.data()
        return ids

    def workspace(index: QModelIndex, parent_id: str | None) -> None:
        ws_id = index.data(ID_ROLE)
        out["titles"][ws_id] = index.data()
        if model.canFetchMore(index):
            model.fetchMore(index)
        folders = []
        row = 0
        while (row < model.rowCount(index)
               and model.index(row, 0, index).data(KIND_ROLE) == WORKSPACE):
            child = model.index(row, 0, index)
            assert child.parent() == index
            folders.append(child.data(ID_ROLE))
            workspace(child, ws_id)
            row += 1
        if folders:
            out["tree"][ws_id] = folders
        out["lists"][ws_id] = chats(index, row)

    top_level = []
    for r in range(model.rowCount(sections[1])):
        index = model.index(r, 0, sections[1])
        top_level.append(index.data(ID_ROLE))
        workspace(index, None)
    if top_level:
        out["tree"][None] = top_level
    out["pinned"] = chats(sections[0])
    out["lists"][None] = chats(sections[2])
    out["archived"] = chats(sections[3])
    return out


def truth(registry: Any) -> dict[str, Any]:
    """The same, from the core's own listing."""
    listing = registry.chat_listing()
    titles = {ws.id: ws.title for ws in registry.workspaces()}
    for chats in (listing.pinned, listing.ungrouped, listing.archived,
                  *(c for _, c in listing.workspaces)):
        titles.update((c.id, c.title) for c in chats)
    lists: dict[str | None, list[str]] = {ws.id: [c.id for c in chats]
                                          for ws, chats in listing.workspaces}
    lists[None] = [c.id for c in listing.ungrouped]
    return {
        "tree": {p: [ws.id for ws in kids] for p, kids in registry.tree().items()},
        "lists": lists,
        "titles": titles,
        "pinned": [c.id for c in listing.pinned],
        "archived": [c.id for c in listing.archived],
    }


def agrees_so_far(model: SidebarModel, registry: Any) -> None:
    """Without reading anything new: the tree, Pinned and every list already read agree."""
    want = truth(registry)
    tree = {p: model.folders_of(p) for p in [None, *want["titles"]] if model.folders_of(p)}
    assert tree == want["tree"]
    assert model.chats_in(PINNED) == want["pinned"]
    for place, ids in want["lists"].items():
        shown = model.chats_in(UNGROUPED if place is None else place)
        assert shown is None or shown == ids, place
    archived = model.chats_in(ARCHIVED)
    assert archived is None or archived == want["archived"]


def find(model: Any, kind: str, item_id: str) -> QModelIndex:
    """The index of a row by kind and id in a tree model (the view's model, proxy or not)."""
    for index in walk(model):
        if index.data(KIND_ROLE) == kind and index.data(ID_ROLE) == item_id:
            return index
    return QModelIndex()


# ================================================================= what it shows


def test_sections_workspaces_folders_and_chats(qtbot, sidebar, registry, folders):
    acme, brand, thesis = folders("Acme", "Acme/Brand", "Thesis")
    registry.add_workspace(acme)
    b, _ = registry.add_workspace(brand)
    registry.add_workspace(thesis)
    launch = registry.new_chat(folder=brand, title="Launch copy")
    registry.new_chat(folder=acme, title="Q3 planning")
    registry.new_chat(title="Scratch chat")
    registry.pin_chat(launch.id)
    settle(qtbot, sidebar)
    model = sidebar.model
    assert sidebar.tree.accessibleName() == "Workspaces"
    assert texts(model) == ["Pinned", "Workspaces", "Ungrouped", "Archived"]
    pinned, spaces, ungrouped, archived = (model.index(r, 0) for r in range(4))
    assert {pinned.data(KIND_ROLE), spaces.data(KIND_ROLE)} == {SECTION}
    assert texts(model, pinned) == ["Launch copy"]
    assert texts(model, spaces) == ["Thesis", "Acme"]
    acme_index = model.index(1, 0, spaces)
    model.fetchMore(acme_index)
    assert texts(model, acme_index) == ["Brand", "Q3 planning"]  # folders first, then chats
    brand_index = model.index(0, 0, acme_index)
    assert brand_index.data(ID_ROLE) == b.id and brand_index.data(KIND_ROLE) == WORKSPACE
    assert brand_index.parent() == acme_index
    model.fetchMore(brand_index)
    chat = model.index(0, 0, brand_index)
    assert (chat.data(), chat.data(ID_ROLE), chat.data(KIND_ROLE)) == (
        "Launch copy", launch.id, CHAT)
    assert chat.data(Qt.ItemDataRole.AccessibleTextRole) == "Launch copy"
    assert model.index(0, 0, pinned).data(ICON_ROLE) == "pin"
    model.fetchMore(ungrouped)
    assert texts(model, ungrouped) == ["Scratch chat"]
    assert sidebar.tree.isRowHidden(3, QModelIndex())  # Archived: on demand
    assert not sidebar.tree.isRowHidden(0, QModelIndex())
    # Nothing seen by the tester is wrong, and nothing was reset.
    tester = QAbstractItemModelTester(model, QAbstractItemModelTester.FailureReportingMode.Warning)
    assert shape(model) == truth(registry)
    del tester


def test_a_missing_folder_shows_a_warning_and_says_so(qtbot, sidebar, registry, folders):
    (thesis,) = folders("Thesis")
    ws, _ = registry.add_workspace(thesis)
    shutil.rmtree(thesis)
    registry.refresh_status()
    settle(qtbot, sidebar)
    index = sidebar.model.workspace_index(ws.id)
    assert registry.workspace(ws.id).status == MISSING_DIR
    assert index.data(MISSING_ROLE) is True and index.data(ICON_ROLE) == "warning"
    assert "is missing" in index.data(Qt.ItemDataRole.ToolTipRole)
    assert "Move to folder…" in action_texts(sidebar.context_menu(index))


def test_empty_sections_hide_and_come_back(qtbot, sidebar, registry):
    settle(qtbot, sidebar)
    tree = sidebar.tree
    assert [tree.isRowHidden(r, QModelIndex()) for r in range(4)] == [True, True, True, True]
    chat = registry.new_chat(title="Scratch")
    settle(qtbot, sidebar)
    assert not tree.isRowHidden(2, QModelIndex())
    registry.pin_chat(chat.id)
    settle(qtbot, sidebar)
    assert not tree.isRowHidden(0, QModelIndex())
    registry.archive_chat(chat.id)
    settle(qtbot, sidebar)
    assert tree.isRowHidden(0, QModelIndex()) and tree.isRowHidden(2, QModelIndex())
    sidebar.set_show_archived(True)
    assert not tree.isRowHidden(3, QModelIndex())
    assert texts(sidebar.model, sidebar.model.section_index(ARCHIVED)) == ["Scratch"]


# ================================================================= events, never a reset


POOL = [f"{top}{sub}" for top in ("p", "q") for sub in ("", "/a", "/a/x", "/b")] + ["s", "t/u"]


class Sequence:
    """A seeded random sequence of operations on the window's registry and on a second one
    opened on the same folder (the command line), with the window's catch-up."""

    def __init__(self, first: Any, other: Any, base: Path, rng: random.Random) -> None:
        self.first, self.other, self.base, self.rng = first, other, base, rng
        self.made = 0

    def path(self) -> str:
        return str(self.base / self.rng.choice(POOL))

    def step(self) -> str:
        rng = self.rng
        if rng.random() < 0.06:  # another process writes; the window catches up
            self.do(self.other, rng.choice(["add", "chat", "rename", "pin", "archive"]))
            if rng.random() < 0.7:
                self.first.sync()
            return "other"
        op = rng.choices(
            ["add", "remove", "move", "rename", "chat", "rename_chat", "pin", "unpin",
             "archive", "unarchive", "move_chat", "disk", "move_to_folder"],
            weights=[12, 4, 5, 3, 16, 3, 4, 2, 4, 3, 7, 2, 2])[0]
        self.do(self.first, op)
        return op

    def do(self, reg: Any, op: str) -> None:
        rng = self.rng
        workspaces = reg.workspaces()
        ws = rng.choice(workspaces) if workspaces else None
        chats = list(reg.mem.chats.values())
        chat = rng.choice(chats) if chats else None
        try:
            if op == "add":
                reg.add_workspace(self.path(), at_end=rng.random() < 0.4)
            elif op == "remove" and ws:
                reg.remove_workspace(ws.id)
            elif op == "move" and ws:
                reg.move_workspace(ws.id, index=rng.randrange(len(workspaces)))
            elif op == "rename" and ws:
                reg.rename_workspace(ws.id, f"W{rng.randrange(99)}")
            elif op == "chat":
                reg.new_chat(folder=self.path() if rng.random() < 0.85 else None,
                             title=f"c{rng.randrange(999)}")
            elif op == "rename_chat" and chat:
                reg.rename_chat(chat.id, f"r{rng.randrange(999)}")
            elif op == "pin" and chat:
                reg.pin_chat(chat.id)
            elif op == "unpin" and chat:
                reg.unpin_chat(chat.id)
            elif op == "archive" and chat:
                reg.archive_chat(chat.id)
            elif op == "unarchive" and chat:
                reg.unarchive_chat(chat.id)
            elif op == "move_chat" and (placed := [c for c in chats
                                                   if c.workspace_id and not c.archived]):
                chat = rng.choice(placed)
                reg.move_chat(chat.id, index=rng.randrange(len(reg.chats_of(chat.workspace_id))))
            elif op == "disk":  # a folder goes away or comes back
                folder = self.base / rng.choice(POOL)
                if folder.exists():
                    shutil.rmtree(folder)
                else:
                    folder.mkdir(parents=True)
                self.first.refresh_status()
            elif op == "move_to_folder":
                gone = [w for w in workspaces if w.status == MISSING_DIR]
                if gone:
                    self.made += 1
                    target = self.base / "moved" / str(self.made)
                    target.mkdir(parents=True, exist_ok=True)
                    reg.move_to_folder(rng.choice(gone).id, str(target))
        except Refused:
            pass


def run_sequence(qtbot: Any, models: list[SidebarModel], first: Any, other: Any, base: Path,
                 seed: int, steps: int, *, between: Callable[[int], None] | None = None) -> None:
    """Run the sequence; the models are compared with the core whenever they settle."""
    rng = random.Random(seed)
    run = Sequence(first, other, base, rng)
    for step in range(steps):
        what = run.step()
        if between is not None:
            between(step)  # perhaps while events are on their way
        if rng.random() < 0.3:  # sometimes several changes land before the models hear them
            for model in models:
                settled(qtbot, model)
                try:
                    agrees_so_far(model, first)
                except AssertionError as error:
                    raise AssertionError(f"seed {seed}, step {step} ({what})") from error
    first.sync()
    for model in models:
        settled(qtbot, model)
        assert shape(model) == truth(first), f"seed {seed}: a model drifted"


def drifts(caplog: Any) -> list[str]:
    """What the sidebar model found not to fit (it heals, but never should have to)."""
    return [r.getMessage() for r in caplog.records if r.name == "ui.sidebar.model"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_operations_move_rows_and_never_reset(qtbot, qtlog, caplog, registry, bridge,
                                                     open_registry, tmp_path, seed):
    """Every list read (the tester reads them all): each change arrives as inserts, removals
    and moves, a reset only when another process wrote, and the rows equal the listing."""
    base = tmp_path / "pool"
    for name in POOL:
        (base / name).mkdir(parents=True, exist_ok=True)
    other = open_registry()
    resets_emitted: list[Reset] = []
    registry.hub.subscribe(resets_emitted.append, kinds=Reset)
    model = SidebarModel(registry, bridge)
    tester = QAbstractItemModelTester(model, QAbstractItemModelTester.FailureReportingMode.Warning)
    resets: list[int] = []
    model.modelReset.connect(lambda: resets.append(1))
    moved: list[int] = []
    model.rowsMoved.connect(lambda *_: moved.append(1))
    run_sequence(qtbot, [model], registry, other, base, seed, steps=250)
    assert len(resets) == len(resets_emitted)  # only another process's writes re-read
    assert moved  # reorders and re-parenting moved rows
    assert not [r for r in qtlog.records if "FAIL" in r.message], "the model tester objected"
    assert drifts(caplog) == []
    del tester


@pytest.mark.parametrize("seed", [4, 5])
def test_random_operations_with_lists_read_as_they_are_expanded(qtbot, loop, caplog,  # noqa: F811
                                                                registry, bridge, ops,
                                                                open_registry, tmp_path, seed):
    """The lazy way: models open on a registry that already holds workspaces and chats, some
    while events are in flight, and read a list only when asked, often before the events
    of its last change arrived; nothing is counted twice and the rows equal the listing."""
    base = tmp_path / "pool"
    for name in POOL:
        (base / name).mkdir(parents=True, exist_ok=True)
    other = open_registry()
    warm = Sequence(registry, other, base, random.Random(seed))
    for _ in range(120):
        warm.step()
    registry.sync()
    sidebar = make_sidebar(qtbot, registry, bridge, ops)
    models = [sidebar.model]
    resets: list[int] = []
    sidebar.model.modelReset.connect(lambda: resets.append(1))
    rng = random.Random(seed * 7)

    def between(step: int) -> None:
        if step % 20 == 0:
            models.append(SidebarModel(registry, bridge))  # its events may be in flight
        model = rng.choice(models)
        unread = [w for w in model.workspace_ids() if not model.is_fetched(w)]
        # Often the list the last change touched, read before its event arrives.
        newest = max(registry.mem.chats.values(), key=lambda c: c.updated_at, default=None)
        if newest is not None and newest.workspace_id in unread and rng.random() < 0.7:
            ws_id = newest.workspace_id
        elif unread and rng.random() < 0.3:
            ws_id = rng.choice(unread)
        else:
            return
        index = model.workspace_index(ws_id)
        if model is sidebar.model:
            sidebar.tree.expand(index)  # the tree reads it at its next layout
        if rng.random() < 0.7:
            model.fetchMore(index)  # a view that reads at once

    run_sequence(qtbot, models, registry, other, base, seed, steps=250, between=between)
    assert len(resets) <= 25  # one per catch-up at most
    assert drifts(caplog) == []


def test_a_list_read_while_events_are_in_flight_waits_for_them(qtbot, registry, bridge, folders):
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    registry.new_chat(folder=acme, title="one")
    model = SidebarModel(registry, bridge)
    settled(qtbot, model)
    registry.new_chat(folder=acme, title="two")  # heard, not yet delivered
    assert model.fetch(ws.id) is False  # reading now would count "two" twice
    assert not model.is_fetched(ws.id) and not model.is_settled()
    settled(qtbot, model)
    assert model.is_fetched(ws.id)
    assert model.chats_in(ws.id) == [c.id for c in registry.chats_of(ws.id)]


def test_models_opened_while_another_thread_writes_count_nothing_twice(qtbot, caplog, registry,
                                                                     bridge, folders):
    """The first read, and the events that arrive around it, from a writer running meanwhile."""
    (root,) = folders("Acme")
    ws, _ = registry.add_workspace(root)
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            chat = registry.new_chat(folder=root if n % 3 else None, title=f"w{n}")
            if n % 4 == 0:
                registry.pin_chat(chat.id)
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    models = []
    try:
        for _ in range(30):
            model = SidebarModel(registry, bridge)
            model.fetch(ws.id)
            model.fetch(UNGROUPED)
            models.append(model)
            for _ in range(3):
                QApplication.processEvents()
    finally:
        stop.set()
        writer.join()
    for model in models:
        settled(qtbot, model)
        assert shape(model) == truth(registry)
    # The only thing allowed not to fit: a first read that changes kept landing during.
    assert {m.split(";")[0] for m in drifts(caplog)} <= {
        "sidebar: changes landed during every first read"}


def test_events_from_before_the_model_are_not_applied_twice(qtbot, registry, folders):
    (acme,) = folders("Acme")
    bridge = EventBridge(registry)
    ws, _ = registry.add_workspace(acme)  # queued by the bridge before the model exists
    chat = registry.new_chat(folder=acme, title="early")
    registry.pin_chat(chat.id)
    model = SidebarModel(registry, bridge)
    model.fetch(ws.id)
    settled(qtbot, model)
    assert model.folders_of(None) == [ws.id]
    assert model.chats_in(ws.id) == [chat.id] and model.chats_in(PINNED) == [chat.id]
    bridge.detach()


def test_a_change_from_another_process_resets_once_and_keeps_what_was_open(
        qtbot, sidebar, registry, open_registry, folders):
    acme, brand = folders("Acme", "Acme/Brand")
    a, _ = registry.add_workspace(acme)
    b, _ = registry.add_workspace(brand)
    registry.new_chat(folder=brand, title="Launch copy")
    settle(qtbot, sidebar)
    sidebar.set_expanded_ids([a.id, b.id, PINNED, WORKSPACES])
    settle(qtbot, sidebar)
    resets: list[int] = []
    sidebar.model.modelReset.connect(lambda: resets.append(1))
    other = open_registry()
    written = other.new_chat(folder=brand, title="written elsewhere")
    assert registry.sync() is True
    settle(qtbot, sidebar)
    assert resets == [1]
    assert set(sidebar.expanded_ids()) == {a.id, b.id, PINNED, WORKSPACES}
    assert sidebar.model.chats_in(b.id)[0] == written.id


# ================================================================= lazy and at scale


def test_a_workspaces_chats_are_read_only_when_it_is_expanded(qtbot, loop, registry, bridge,  # noqa: F811
                                                              ops, folders, monkeypatch):
    paths = folders("A", "B", "C")
    spaces = [registry.add_workspace(p)[0] for p in paths]
    for p in paths:
        for n in range(3):
            registry.new_chat(folder=p, title=f"chat {n}")
    read: list[str | None] = []
    real = registry.chat_at
    monkeypatch.setattr(registry, "chat_at", lambda ws, row: (read.append(ws), real(ws, row))[1])
    sidebar = make_sidebar(qtbot, registry, bridge, ops)  # after the data: nothing read yet
    settle(qtbot, sidebar)
    sidebar.tree.viewport().update()
    qtbot.wait(1)  # a paint: rows are shown, lists are not read
    assert read == [] and not sidebar.model.is_fetched(spaces[1].id)
    sidebar.tree.expand(sidebar.model.workspace_index(spaces[1].id))
    assert read == [spaces[1].id] * 3
    assert sidebar.model.is_fetched(spaces[1].id)
    assert not sidebar.model.is_fetched(spaces[0].id) and not sidebar.model.is_fetched(spaces[2].id)


def test_at_scale_opening_and_expanding_one_workspace_reads_nothing_else(
        qtbot, loop, isolated, tmp_path, ops_for_scale):  # noqa: F811
    registry, ops = ops_for_scale
    statements: list[str] = []
    registry.db.set_trace(statements.append)
    read: list[str | None] = []
    real = registry.chat_at
    registry.chat_at = lambda ws, row: (read.append(ws), real(ws, row))[1]  # type: ignore[method-assign]
    bridge = EventBridge(registry)
    started = time.perf_counter()
    model = SidebarModel(registry, bridge)
    built = time.perf_counter() - started
    assert read == [] and model.rowCount(model.section_index(WORKSPACES)) == 1000
    target = registry.top_level()[500]
    model.fetchMore(model.workspace_index(target.id))
    assert set(read) == {target.id} and len(read) == registry.chat_count(target.id)
    assert model.chats_in(target.id) == [c.id for c in registry.chats_of(target.id)]
    assert statements == []  # no storage read, ever
    assert built < 1.0, f"the model took {built:.2f} s to open"
    # The whole widget: the sections open by default read Pinned and Ungrouped only.
    read.clear()
    widget = Sidebar(registry, bridge, ops)
    qtbot.addWidget(widget)
    widget.resize(300, 800)
    widget.show()
    qtbot.waitExposed(widget)
    assert set(read) <= {None} and statements == []
    bridge.detach()


@pytest.fixture
def ops_for_scale(isolated: Path, tmp_path: Path) -> Iterator[tuple[Any, Operations]]:
    from app.store.registry.registry import Registry
    from tests.scale_data import build

    build(isolated, tmp_path / "folders", random.Random(1))
    cairn = Cairn(Registry.open(isolated), background_rebuilds=False)
    yield cairn.registry, Operations(cairn)
    cairn.close()


# ================================================================= menus


@pytest.fixture
def acme(registry: Any, folders: Any) -> dict[str, Any]:
    root, brand = folders("Acme Inc", "Acme Inc/Brand")
    ws, _ = registry.add_workspace(root)
    folder, _ = registry.add_workspace(brand)
    chat = registry.new_chat(folder=root, title="Q3 planning")
    return {"ws": ws, "folder": folder, "chat": chat, "path": root}


def test_rename_a_workspace_and_a_chat_from_the_menu(qtbot, sidebar, registry, acme):
    settle(qtbot, sidebar)
    asked: list[tuple[str, str, str]] = []
    sidebar.handlers.ask_text = lambda title, label, text: (
        asked.append((title, label, text)), "Acme Corporation")[1]
    trigger(sidebar.context_menu(sidebar.model.workspace_index(acme["ws"].id)), "Rename…")
    settle(qtbot, sidebar)
    assert asked == [("Rename workspace", "Title", "Acme Inc")]
    assert sidebar.model.workspace_index(acme["ws"].id).data() == "Acme Corporation"
    sidebar.select_chat(acme["chat"].id)
    settle(qtbot, sidebar)
    sidebar.handlers.ask_text = lambda title, label, text: "Q4 planning"
    trigger(sidebar.context_menu(sidebar.tree.currentIndex()), "Rename…")
    settle(qtbot, sidebar)
    assert registry.chat(acme["chat"].id).title == "Q4 planning"
    assert sidebar.tree.currentIndex().data() == "Q4 planning"


def test_pin_unpin_archive_and_unarchive_from_the_menu(qtbot, sidebar, registry, acme):
    chat_id = acme["chat"].id
    settle(qtbot, sidebar)
    sidebar.select_chat(chat_id)
    settle(qtbot, sidebar)
    menu = sidebar.context_menu(sidebar.tree.currentIndex())
    assert action_texts(menu) == ["Rename…", "Pin", "Export chat as Markdown…", "Archive",
                                  "Delete chat…"]
    trigger(menu, "Pin")
    settle(qtbot, sidebar)
    assert sidebar.model.chats_in(PINNED) == [chat_id]
    pinned = sidebar.model.chat_index(chat_id, PINNED)
    trigger(sidebar.context_menu(pinned), "Unpin")
    settle(qtbot, sidebar)
    assert sidebar.model.chats_in(PINNED) == []
    trigger(sidebar.context_menu(sidebar.model.chat_index(chat_id, acme["ws"].id)), "Archive")
    settle(qtbot, sidebar)
    assert registry.chat(chat_id).archived and chat_id not in sidebar.model.chats_in(acme["ws"].id)
    sidebar.set_show_archived(True)
    archived = find(sidebar.model, CHAT, chat_id)
    assert archived.parent() == sidebar.model.section_index(ARCHIVED)
    assert action_texts(sidebar.context_menu(archived)) == ["Rename…", "Unarchive",
                                                            "Delete chat…"]
    trigger(sidebar.context_menu(archived), "Unarchive")
    settle(qtbot, sidebar)
    assert not registry.chat(chat_id).archived
    assert sidebar.current_id() == chat_id  # selected where it came back
    assert sidebar.errors == []


def test_stop_and_archive_is_offered_while_work_runs(qtbot, sidebar, registry, acme):
    chat_id = acme["chat"].id
    stopped = threading.Event()
    work = registry.begin_work(chat_id, TURN, stopped.set)
    settle(qtbot, sidebar)
    assert sidebar.model.fetch(acme["ws"].id)
    index = sidebar.model.chat_index(chat_id, acme["ws"].id)
    assert index.data(WORKING_ROLE) is True
    menu = sidebar.context_menu(index)
    assert "Stop and archive" in action_texts(menu) and "Archive" not in action_texts(menu)
    trigger(menu, "Stop and archive")
    settle(qtbot, sidebar)
    assert registry.chat(chat_id).archived and stopped.is_set()
    registry.end_work(work)


def test_remove_asks_what_goes_and_what_stays_then_removes(qtbot, sidebar, registry, acme):
    settle(qtbot, sidebar)
    asked: list[tuple[str, str, str]] = []
    answer = False
    sidebar.handlers.confirm = lambda title, text, action: (
        asked.append((title, text, action)), answer)[1]
    index = sidebar.model.workspace_index(acme["ws"].id)
    trigger(sidebar.context_menu(index), "Remove…")
    settle(qtbot, sidebar)
    ((title, text, action),) = asked
    assert title == "Remove “Acme Inc” from Cairn?" and action == "Remove"
    assert "kept for 30 days: File › Recently removed brings it back." in text
    assert f"The folder {acme['path']} and everything in it stay untouched." in text
    assert "Its 1 chat stays, under Ungrouped." in text
    # Said before, and how it comes back.
    assert ("Its folder Brand becomes a top-level workspace, with its chats; restoring it "
            "puts it back under it.") in text
    assert registry.workspace(acme["ws"].id) is not None  # declined: nothing happened
    answer = True
    trigger(sidebar.context_menu(sidebar.model.workspace_index(acme["ws"].id)), "Remove…")
    settle(qtbot, sidebar)
    assert registry.workspace(acme["ws"].id) is None
    assert sidebar.model.folders_of(None) == [acme["folder"].id]  # the folder lifted
    sidebar.model.fetch(UNGROUPED)
    assert sidebar.model.chats_in(UNGROUPED) == [acme["chat"].id]


def test_the_removal_question_of_a_folder_names_where_its_folders_go(acme):
    from ui.sidebar.menus import removal_question

    text = removal_question(acme["folder"], chats=0, folders=["Logo", "Copy"], parent="Acme Inc")
    assert ("Its folders Logo, Copy move up into Acme Inc, with their chats; restoring it puts "
            "them back under it.") in text
    assert "Ungrouped" not in text  # no chat of its own: nothing said of chats moving there


def test_new_chat_description_status_and_move_to_folder(qtbot, sidebar, registry, acme, folders):
    ws_id = acme["ws"].id
    settle(qtbot, sidebar)
    opened: list[str] = []
    sidebar.sig_chat_selected.connect(opened.append)
    trigger(sidebar.context_menu(sidebar.model.workspace_index(ws_id)), "New chat")
    settle(qtbot, sidebar)
    (chat_id,) = opened
    assert registry.chat(chat_id).workspace_id == ws_id and sidebar.current_id() == chat_id
    sidebar.handlers.ask_details = lambda ws: ("The company", "Be brief.")
    trigger(sidebar.context_menu(sidebar.model.workspace_index(ws_id)),
            "Description and instructions…")
    trigger(sidebar.context_menu(sidebar.model.workspace_index(ws_id)), "Build status", "Building")
    settle(qtbot, sidebar)
    ws = registry.workspace(ws_id)
    assert (ws.description, ws.instructions, ws.build_status) == (
        "The company", "Be brief.", "building")
    statuses = sidebar.context_menu(sidebar.model.workspace_index(ws_id))
    building = next(a for a in statuses.actions() if a.text() == "Build status").menu()
    assert [a.text() for a in building.actions() if a.isChecked()] == ["Building"]
    shutil.rmtree(acme["path"])
    registry.refresh_status()
    (moved_to,) = folders("Acme moved")
    sidebar.handlers.ask_folder = lambda title: moved_to
    settle(qtbot, sidebar)
    trigger(sidebar.context_menu(sidebar.model.workspace_index(ws_id)), "Move to folder…")
    settle(qtbot, sidebar)
    moved = registry.workspace_for_folder(moved_to)
    assert moved is not None and moved.id == ws_id and moved.title == "Acme Inc"
    assert sidebar.current_id() == ws_id and sidebar.model.workspace(ws_id).path == moved_to
    assert not sidebar.model.workspace_index(ws_id).data(MISSING_ROLE)


def test_a_refusal_shows_the_core_sentence(qtbot, sidebar, registry, acme):
    chat_id = acme["chat"].id
    registry.archive_chat(chat_id)
    settle(qtbot, sidebar)
    sidebar.handlers.pin_chat(chat_id)  # the menu would not offer it; a stale one might
    settle(qtbot, sidebar)
    assert sidebar.errors == [f"cannot pin session '{chat_id}': the session is archived"]
    sidebar.handlers.ask_text = lambda title, label, text: "   "
    trigger(sidebar.context_menu(sidebar.model.workspace_index(acme["ws"].id)), "Rename…")
    settle(qtbot, sidebar)
    assert sidebar.errors[-1] == "cannot rename workspace 'Acme Inc': the title is empty"


def test_a_refusal_nobody_listens_to_is_shown_in_a_box(qtbot, loop, registry, bridge, ops,  # noqa: F811
                                                       acme):
    widget = Sidebar(registry, bridge, ops)
    qtbot.addWidget(widget)
    shown: list[str] = []
    widget.show_error = shown.append
    registry.archive_chat(acme["chat"].id)
    widget.handlers.pin_chat(acme["chat"].id)
    settle(qtbot, widget)
    assert shown == [f"cannot pin session '{acme['chat'].id}': the session is archived"]


# ================================================================= drag and drop


def test_reorder_chats_by_a_drop(qtbot, sidebar, registry, folders):
    (root,) = folders("Acme")
    ws, _ = registry.add_workspace(root)
    first, second, third = (registry.new_chat(folder=root, title=t) for t in ("1", "2", "3"))
    settle(qtbot, sidebar)
    model = sidebar.model
    model.fetch(ws.id)
    assert model.chats_in(ws.id) == [third.id, second.id, first.id]
    dragged = model.chat_index(third.id, ws.id)
    mime = model.mimeData([dragged])
    parent = model.workspace_index(ws.id)
    assert model.canDropMimeData(mime, Qt.DropAction.MoveAction, 3, 0, parent)
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 3, 0, parent)  # to the end
    settle(qtbot, sidebar)
    assert [c.id for c in registry.chats_of(ws.id)] == [second.id, first.id, third.id]
    assert model.chats_in(ws.id) == [second.id, first.id, third.id]
    # Onto another chat: it takes that chat's place.
    mime = model.mimeData([model.chat_index(third.id, ws.id)])
    target = model.chat_index(second.id, ws.id)
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, target)
    settle(qtbot, sidebar)
    assert model.chats_in(ws.id) == [third.id, second.id, first.id]
    # Into another workspace (it now runs in that folder), between two of its chats.
    (other,) = folders("Other")
    ws2, _ = registry.add_workspace(other)
    there = registry.new_chat(folder=other, title="there")
    settle(qtbot, sidebar)
    model.fetch(ws2.id)
    mime = model.mimeData([model.chat_index(third.id, ws.id)])
    parent = model.workspace_index(ws2.id)
    assert model.canDropMimeData(mime, Qt.DropAction.MoveAction, 1, 0, parent)
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 1, 0, parent)  # after "there"
    settle(qtbot, sidebar)
    moved = registry.chat(third.id)
    assert moved.workspace_id == ws2.id and moved.folder == ws2.path
    assert [c.id for c in registry.chats_of(ws2.id)] == [there.id, third.id]
    assert model.chats_in(ws2.id) == [there.id, third.id]
    assert model.chats_in(ws.id) == [second.id, first.id]
    # And out to Ungrouped, where chats keep their order by age.
    mime = model.mimeData([model.chat_index(third.id, ws2.id)])
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 0, 0,
                              model.section_index(UNGROUPED))
    settle(qtbot, sidebar)
    assert registry.chat(third.id).workspace_id is None
    model.fetch(UNGROUPED)
    assert third.id in model.chats_in(UNGROUPED) and model.chats_in(ws2.id) == [there.id]
    # Among Ungrouped itself there is no manual order to drop into.
    mime = model.mimeData([model.chat_index(third.id, UNGROUPED)])
    assert not model.canDropMimeData(mime, Qt.DropAction.MoveAction, 0, 0,
                                     model.section_index(UNGROUPED))


def test_dropping_a_chat_on_pinned_pins_it(qtbot, sidebar, registry, folders):
    (root,) = folders("Acme")
    ws, _ = registry.add_workspace(root)
    chat = registry.new_chat(folder=root, title="Launch copy")
    settle(qtbot, sidebar)
    model = sidebar.model
    model.fetch(ws.id)
    mime = model.mimeData([model.chat_index(chat.id, ws.id)])
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, -1, 0, model.section_index(PINNED))
    settle(qtbot, sidebar)
    assert registry.chat(chat.id).pinned and model.chats_in(PINNED) == [chat.id]


def test_reorder_workspaces_by_a_drop(qtbot, sidebar, registry, folders):
    a, b, c, inner = folders("A", "B", "C", "B/inner")
    spaces = [registry.add_workspace(p, at_end=True)[0] for p in (a, b, c)]
    nested, _ = registry.add_workspace(inner)
    settle(qtbot, sidebar)
    model = sidebar.model
    assert model.folders_of(None) == [s.id for s in spaces]
    section = model.section_index(WORKSPACES)
    mime = model.mimeData([model.workspace_index(spaces[0].id)])
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 3, 0, section)  # A to the end
    settle(qtbot, sidebar)
    assert [w.id for w in registry.top_level()] == [spaces[1].id, spaces[2].id, spaces[0].id]
    assert model.folders_of(None) == [spaces[1].id, spaces[2].id, spaces[0].id]
    mime = model.mimeData([model.workspace_index(spaces[0].id)])
    assert model.dropMimeData(mime, Qt.DropAction.MoveAction, 0, 0, section)  # back to the top
    settle(qtbot, sidebar)
    assert model.folders_of(None) == [s.id for s in spaces]
    # A folder stays inside its parent: it cannot be dropped among the top level.
    mime = model.mimeData([model.workspace_index(nested.id)])
    assert not model.canDropMimeData(mime, Qt.DropAction.MoveAction, 0, 0, section)
    assert model.folders_of(spaces[1].id) == [nested.id]


def test_a_folder_dropped_from_the_file_manager_becomes_a_workspace(qtbot, sidebar, registry,
                                                                   folders, tmp_path):
    (root,) = folders("Dropped")
    settle(qtbot, sidebar)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(root)])
    model = sidebar.model
    assert model.canDropMimeData(mime, Qt.DropAction.CopyAction, -1, 0, QModelIndex())
    assert model.dropMimeData(mime, Qt.DropAction.CopyAction, -1, 0, QModelIndex())
    settle(qtbot, sidebar)
    (ws,) = registry.top_level()
    assert ws.path == root and sidebar.current_id() == ws.id
    # A file is refused with the core's sentence.
    note = tmp_path / "note.txt"
    note.write_text("hi")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(note))])
    model.dropMimeData(mime, Qt.DropAction.CopyAction, -1, 0, QModelIndex())
    settle(qtbot, sidebar)
    assert sidebar.errors == [f"cannot create a workspace at '{note}': path is not a directory"]


def test_the_view_drags_what_the_model_drops(qtbot, sidebar, registry, folders):
    """The mime data the view makes for a drag is what the model takes on a drop."""
    (root,) = folders("Acme")
    ws, _ = registry.add_workspace(root)
    chats = [registry.new_chat(folder=root, title=t) for t in ("1", "2")]
    settle(qtbot, sidebar)
    sidebar.tree.expand(sidebar.model.workspace_index(ws.id))
    index = sidebar.model.chat_index(chats[1].id, ws.id)
    assert sidebar.model.flags(index) & Qt.ItemFlag.ItemIsDragEnabled
    sidebar.tree.setCurrentIndex(index)
    mime = sidebar.model.mimeData(sidebar.tree.selectedIndexes())
    assert sidebar.model.dropMimeData(mime, Qt.DropAction.MoveAction, 2, 0,
                                      sidebar.model.workspace_index(ws.id))
    settle(qtbot, sidebar)
    assert [c.id for c in registry.chats_of(ws.id)] == [chats[0].id, chats[1].id]


# ================================================================= keys, selection, filter


def test_keys_enter_opens_f2_renames_delete_asks(qtbot, sidebar, registry, acme):
    settle(qtbot, sidebar)
    sidebar.show()
    sidebar.select_chat(acme["chat"].id)
    settle(qtbot, sidebar)
    opened: list[str] = []
    sidebar.sig_chat_selected.connect(opened.append)
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Return)
    assert opened == [acme["chat"].id]
    sidebar.handlers.ask_text = lambda title, label, text: "Renamed by F2"
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_F2)
    settle(qtbot, sidebar)
    assert registry.chat(acme["chat"].id).title == "Renamed by F2"
    asked: list[str] = []
    sidebar.handlers.confirm = lambda title, text, action: (asked.append(action), True)[1]
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Delete)
    settle(qtbot, sidebar)
    assert asked == ["Archive"] and registry.chat(acme["chat"].id).archived
    sidebar.select_workspace(acme["ws"].id)
    picked: list[str] = []
    sidebar.sig_workspace_selected.connect(picked.append)
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Up)
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Down)
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Enter)
    assert picked == [acme["ws"].id]
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_Delete)
    assert asked[-1] == "Remove"


def test_clicking_a_chat_opens_it(qtbot, sidebar, registry, acme):
    settle(qtbot, sidebar)
    sidebar.show()
    qtbot.waitExposed(sidebar)
    sidebar.tree.expand(sidebar.model.workspace_index(acme["ws"].id))
    index = sidebar.model.chat_index(acme["chat"].id, acme["ws"].id)
    opened: list[str] = []
    sidebar.sig_chat_selected.connect(opened.append)
    qtbot.mouseClick(sidebar.tree.viewport(), Qt.MouseButton.LeftButton,
                     pos=sidebar.tree.visualRect(index).center())
    assert opened == [acme["chat"].id]


def test_select_waits_for_a_row_still_on_its_way(qtbot, sidebar, registry, folders):
    acme, brand = folders("Acme", "Acme/Brand")
    registry.add_workspace(acme)
    registry.add_workspace(brand)
    settle(qtbot, sidebar)
    chat = registry.new_chat(folder=brand, title="fresh")  # its event is still queued
    sidebar.select_chat(chat.id)
    settle(qtbot, sidebar)
    assert sidebar.current_id() == chat.id
    assert sidebar.tree.currentIndex().parent().data(ID_ROLE) == chat.workspace_id
    assert sidebar.tree.isExpanded(sidebar.model.workspace_index(registry.parent_of(
        chat.workspace_id)))


def test_expanded_ids_round_trip(qtbot, sidebar, registry, acme):
    settle(qtbot, sidebar)
    assert sidebar.expanded_ids() == [PINNED, WORKSPACES, UNGROUPED]
    sidebar.set_expanded_ids([WORKSPACES, acme["ws"].id, acme["folder"].id])
    assert sidebar.expanded_ids() == [WORKSPACES, acme["ws"].id, acme["folder"].id]
    sidebar.set_expanded_ids([acme["ws"].id])  # no section named: sections stay as they are
    assert sidebar.expanded_ids() == [WORKSPACES, acme["ws"].id]


def test_expansions_by_key_and_by_a_reset_are_saved_as_qt_shows_them(qtbot, sidebar, registry,
                                                                      acme):
    """What is saved is what the tree shows expanded, however it came to be: the `*` key
    (every level below the current row), a collapse, a reset of the rows (what was open is
    opened again)."""
    from PySide6.QtTest import QTest

    def shown() -> set[str]:  # every workspace asked, the slow way
        model = sidebar.model
        return {s for s in (PINNED, WORKSPACES, UNGROUPED, ARCHIVED)
                if sidebar.tree.isExpanded(model.section_index(s))} | {
            w.id for w in registry.workspaces()
            if sidebar.tree.isExpanded(model.workspace_index(w.id))}

    settle(qtbot, sidebar)
    sidebar.set_expanded_ids([WORKSPACES])
    sidebar.tree.setCurrentIndex(sidebar.model.workspace_index(acme["ws"].id))
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Asterisk)
    assert acme["folder"].id in shown() and set(sidebar.expanded_ids()) == shown()
    sidebar.tree.collapse(sidebar.model.workspace_index(acme["folder"].id))
    assert acme["folder"].id not in shown() and set(sidebar.expanded_ids()) == shown()
    registry.hub.emit(Reset())
    settle(qtbot, sidebar)
    assert acme["ws"].id in shown() and set(sidebar.expanded_ids()) == shown()


def test_the_filter_shows_matches_with_what_holds_them(qtbot, sidebar, registry, folders,
                                                       monkeypatch):
    acme, brand, thesis = folders("Acme", "Acme/Brand", "Thesis")
    registry.add_workspace(acme)
    registry.add_workspace(brand)
    t, _ = registry.add_workspace(thesis)
    launch = registry.new_chat(folder=brand, title="Launch copy")
    registry.new_chat(folder=brand, title="Logo ideas")
    registry.new_chat(folder=thesis, title="Chapter three")
    registry.new_chat(title="launch party")
    settle(qtbot, sidebar)
    before = sidebar.expanded_ids()
    read: list[str | None] = []
    real = registry.chat_at
    monkeypatch.setattr(registry, "chat_at", lambda ws, row: (read.append(ws), real(ws, row))[1])
    sidebar.focus_filter()
    qtbot.keyClicks(sidebar.filter, "LAUNCH")
    qtbot.waitUntil(lambda: sidebar.tree.model() is sidebar.proxy)
    settle(qtbot, sidebar)
    view = sidebar.tree.model()
    shown = {(i.data(KIND_ROLE), i.data()) for i in walk(view)}
    assert shown == {(SECTION, "Workspaces"), (WORKSPACE, "Acme"), (WORKSPACE, "Brand"),
                     (CHAT, "Launch copy"), (SECTION, "Ungrouped"), (CHAT, "launch party")}
    assert t.id not in set(read)  # lists without a match stay unread
    assert all(sidebar.tree.isExpanded(i) for i in walk(view) if view.rowCount(i))
    sidebar.set_filter("thesis")  # a workspace's title matches too
    assert {i.data() for i in walk(view)} == {"Workspaces", "Thesis"}
    sidebar.set_filter("")
    assert sidebar.tree.model() is sidebar.model and sidebar.expanded_ids() == before
    sidebar.set_filter("launch")
    sidebar.select_chat(launch.id)
    assert sidebar.current_id() == launch.id
    qtbot.keyClick(sidebar.filter, Qt.Key.Key_Escape)
    assert sidebar.tree.model() is sidebar.model and sidebar.current_id() == launch.id


def test_the_filter_shows_at_most_so_many_chats_and_follows_changes(qtbot, sidebar, registry,
                                                                    folders, monkeypatch):
    import ui.sidebar.view as view

    monkeypatch.setattr(view, "MAX_MATCHES", 3)
    paths = folders("A", "B", "C")
    for p in paths:
        registry.add_workspace(p)
        for n in range(2):
            registry.new_chat(folder=p, title=f"plan {n}")
    settle(qtbot, sidebar)
    sidebar.set_filter("plan")
    chats = [i for i in walk(sidebar.tree.model()) if i.data(KIND_ROLE) == CHAT]
    assert len(chats) == 3 and sidebar.capped_note.isVisibleTo(sidebar)
    sidebar.set_filter("plan 1")
    assert not sidebar.capped_note.isVisibleTo(sidebar)
    fresh = registry.new_chat(folder=paths[0], title="Plan 1 again")  # arrives while filtered
    settle(qtbot, sidebar)
    qtbot.waitUntil(lambda: find(sidebar.tree.model(), CHAT, fresh.id).isValid())
    assert sidebar.tree.model() is sidebar.proxy


def test_a_context_menu_pops_up_from_the_keyboard(qtbot, sidebar, registry, acme, monkeypatch):
    settle(qtbot, sidebar)
    sidebar.show()
    sidebar.select_workspace(acme["ws"].id)
    shown: list[list[str]] = []
    monkeypatch.setattr(QMenu, "popup", lambda menu, pos, at=None: shown.append(
        action_texts(menu)))
    from PySide6.QtGui import QContextMenuEvent

    event = QContextMenuEvent(QContextMenuEvent.Reason.Keyboard, QPoint(0, 0), QPoint(0, 0))
    sidebar.tree.contextMenuEvent(event)
    assert shown and shown[0][0] == "New chat"
    # Shift+F10 does what the Menu key does.
    qtbot.keyClick(sidebar.tree, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert len(shown) == 2 and shown[1][0] == "New chat"


# ================================================ what was open stays open after a change


def test_a_live_change_after_the_filter_was_used_keeps_what_was_open(
        qtbot, qtlog, sidebar, registry, open_registry, folders):
    """Ctrl+F, "zz", Esc, then a change from another process: Pinned, Workspaces, Ungrouped
    and the expanded workspaces stay open, the selection stays; and with text still in the
    filter, the text and the matches stay, with no reset warning from Qt."""
    acme, brand = folders("Acme", "Acme/Brand")
    a, _ = registry.add_workspace(acme)
    b, _ = registry.add_workspace(brand)
    launch = registry.new_chat(folder=brand, title="Launch copy")
    registry.new_chat(title="zz top notes")
    settle(qtbot, sidebar)
    sidebar.set_expanded_ids([a.id, b.id, PINNED, WORKSPACES, UNGROUPED])
    sidebar.select_chat(launch.id)
    settle(qtbot, sidebar)
    opened = set(sidebar.expanded_ids())
    assert sidebar.current_id() == launch.id
    sidebar.focus_filter()
    qtbot.keyClicks(sidebar.filter, "zz")
    qtbot.waitUntil(lambda: sidebar.tree.model() is sidebar.proxy)
    qtbot.keyClick(sidebar.filter, Qt.Key.Key_Escape)
    assert sidebar.tree.model() is sidebar.model
    assert sidebar.current_id() == launch.id  # the filter hid it; it comes back
    other = open_registry()
    other.rename_workspace(a.id, "Acme Corp")
    assert registry.sync() is True
    settle(qtbot, sidebar)
    assert set(sidebar.expanded_ids()) == opened
    assert all(sidebar.tree.isExpanded(sidebar.model.section_index(s))
               for s in (PINNED, WORKSPACES, UNGROUPED) if s in opened)
    assert sidebar.tree.isExpanded(sidebar.model.workspace_index(b.id))
    # (the selection comes back on the loop's next turn after the reset: Sidebar._after_reset)
    qtbot.waitUntil(lambda: sidebar.current_id() == launch.id, timeout=5_000)
    # With text in the filter: a live change keeps the text and the matches.
    sidebar.focus_filter()
    qtbot.keyClicks(sidebar.filter, "launch")
    qtbot.waitUntil(lambda: sidebar.tree.model() is sidebar.proxy)
    settle(qtbot, sidebar)
    other.rename_workspace(a.id, "Acme Inc")
    assert registry.sync() is True
    settle(qtbot, sidebar)
    assert sidebar.filter.text() == "launch"
    assert sidebar.tree.model() is sidebar.proxy
    assert "Launch copy" in {i.data() for i in walk(sidebar.tree.model())}
    assert not [r for r in qtlog.records if "ResetModel" in r.message]
    qtbot.keyClick(sidebar.filter, Qt.Key.Key_Escape)
    assert set(sidebar.expanded_ids()) == opened


# ================================================================ the rename dialog


def test_the_rename_dialogs_ok_is_off_while_the_title_is_empty(qtbot, sidebar):
    from ui.sidebar.actions import TitleDialog

    dialog = TitleDialog(sidebar, "Rename workspace", "Title", "Acme")
    qtbot.addWidget(dialog)
    dialog.show()
    ok = dialog.ok_button()
    assert ok is not None and ok.isEnabled()
    dialog.setTextValue("   ")
    assert not ok.isEnabled()
    dialog.setTextValue("Acme Corp")
    assert ok.isEnabled()


# ================================================= workspaces of the same title


def test_two_workspaces_of_the_same_title_show_their_folders(qtbot, sidebar, registry, folders):
    from ui.sidebar.kinds import HINT_ROLE

    work, home, thesis = folders("work/Acme", "home/Acme", "Thesis")
    a, _ = registry.add_workspace(work)
    b, _ = registry.add_workspace(home)
    t, _ = registry.add_workspace(thesis)
    settle(qtbot, sidebar)
    hint = {ws.id: sidebar.model.workspace_index(ws.id).data(HINT_ROLE) for ws in (a, b, t)}
    assert hint == {a.id: "work/Acme", b.id: "home/Acme", t.id: ""}
    repainted: list[str] = []
    sidebar.model.dataChanged.connect(lambda first, _last, _roles=(): repainted.append(
        first.data(ID_ROLE)))
    registry.rename_workspace(b.id, "Acme at home")
    settle(qtbot, sidebar)
    assert sidebar.model.workspace_index(a.id).data(HINT_ROLE) == ""
    assert a.id in repainted  # the other one of the pair is drawn again, without its hint
    registry.rename_workspace(t.id, "ACME")  # titles repeat whatever their case
    settle(qtbot, sidebar)
    assert sidebar.model.workspace_index(t.id).data(HINT_ROLE) == \
        f"{Path(thesis).parent.name}/Thesis"
    assert sidebar.model.workspace_index(a.id).data(HINT_ROLE) == "work/Acme"


def test_a_board_cards_subtitle_is_elided_in_the_middle(qapp):
    from PySide6.QtGui import QFont, QFontMetrics

    from ui.board.cards import Card
    from ui.board.delegate import detail_line

    metrics = QFontMetrics(QFont())
    card = Card(id="ws_1", title="Brand", parents=("Acme Holdings International",
                                                    "Marketing Department", "Campaigns 2027"),
                status="idea", missing=True, path="/x/Brand")
    line = detail_line(card, metrics, metrics.horizontalAdvance("⚠ Folder missing · in Acme"))
    assert line.startswith("⚠ Folder") and line.endswith("2027") and "…" in line


def test_export_chat_as_markdown_from_its_menu(qtbot, sidebar, registry, acme, tmp_path):
    """A chat's menu writes it as Markdown."""
    settle(qtbot, sidebar)
    told: list[str] = []
    sidebar.sig_told.connect(told.append)
    starts: list[str] = []
    target = tmp_path / "launch"

    def chosen(title: str, start: str) -> str:
        starts.append(start)
        return str(target)  # ".md" is added

    sidebar.handlers.ask_markdown_file = chosen
    chat_id = acme["chat"].id
    sidebar.select_chat(chat_id)
    settle(qtbot, sidebar)
    trigger(sidebar.context_menu(sidebar.tree.currentIndex()), "Export chat as Markdown…")
    qtbot.waitUntil(lambda: bool(told))
    assert (tmp_path / "launch.md").read_text(encoding="utf-8").startswith("# ")
    assert told[0].startswith("Exported “") and str(tmp_path / "launch.md") in told[0]
    assert starts and starts[0].endswith(".md")
