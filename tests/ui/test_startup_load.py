"""The window is usable before its start-up load ends: on 1,000 workspaces and
50,000 chats the sidebar shows every workspace, the expanded ones' chats and the open chat
while the other chats are still unread; every read during the load and after it is right,
with changes from the window and from another process landing while it runs.

The test holds the load's pages back (each background step waits for a permit the test
gives), so that "before the load ends" is a fact of the test, not a race against the clock.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from app.errors import Refused
from app.records import ChatListing
from app.store.registry.loader import SCAN_CHATS, Loader
from app.store.registry.registry import Registry
from tests.scale_data import WORKSPACES, build
from tests.ui.helpers import close_window, run, wait_for
from ui.app import start
from ui.sidebar.kinds import ID_ROLE, UNGROUPED
from ui.sidebar.kinds import WORKSPACES as WORKSPACES_SECTION

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.process


def listing_of(folder: Path) -> ChatListing:
    """What is stored, read whole by a registry of its own (as another process would)."""
    registry = Registry.open(folder)
    try:
        return registry.chat_listing()
    finally:
        registry.close()


def cli(folder: Path, *args: str) -> None:
    """A `cairn` command in another process."""
    env = dict(os.environ, CAIRN_DATA_DIR=str(folder))
    done = subprocess.run([sys.executable, "-m", "ui.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def off_the_gui_thread(work: Any) -> Any:
    """Run *work* on a thread of its own (a read that may wait for its page) and return its
    result, the window's loop turning meanwhile."""

    async def in_thread() -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, work)

    return run(in_thread())


def held_load(monkeypatch: pytest.MonkeyPatch) -> threading.Semaphore:
    """The start-up load's background steps, each waiting for a permit the test gives."""
    permits = threading.Semaphore(0)
    real_step = Loader.load_step

    def held_step(self: Loader) -> bool:
        permits.acquire()
        return real_step(self)

    monkeypatch.setattr(Loader, "load_step", held_step)
    return permits


def started_as_left(qapp: Any, folder: Path, permits: threading.Semaphore, expanded: list[str],
                    chat: str | None = None) -> Any:
    """The window started on *folder* as a person left it (*expanded* rows, *chat* open),
    once it has painted filled in (the load held by *permits*)."""
    state = QSettings(str(folder / "window.ini"), QSettings.Format.IniFormat)
    state.setValue("expanded", expanded)
    if chat is not None:
        state.setValue("chat", chat)
    state.sync()
    starter = start(qapp, folder)
    ready = threading.Event()
    starter.window.sig_ready.connect(ready.set)
    starter.begin()
    try:
        wait_for(ready.is_set, timeout=60)
    except BaseException:
        permits.release(100_000)
        close_window(starter)
        raise
    return starter


def test_ungrouped_left_expanded_fills_in_first(qapp, loop, isolated, tmp_path, monkeypatch):
    """Ungrouped shown expanded is the load's first page (a scan of every chat, in steps),
    before any workspace's: it fills in right after the paint, not once every chat is read."""
    build(isolated, tmp_path / "folders", random.Random(12))
    truth = listing_of(isolated)
    permits = held_load(monkeypatch)
    starter = started_as_left(qapp, isolated, permits, [UNGROUPED])
    try:
        registry, model = starter.cairn.registry, starter.window.sidebar.model
        section = model.section_index(UNGROUPED)
        assert starter.window.sidebar.tree.isExpanded(section)
        assert not model.is_fetched(UNGROUPED)
        scan_steps = -(-len(truth.ungrouped + truth.archived
                           + [c for _, cs in truth.workspaces for c in cs]) // SCAN_CHATS)
        permits.release(scan_steps)
        wait_for(lambda: model.is_fetched(UNGROUPED))
        assert [model.index(r, 0, section).data(ID_ROLE) for r in range(model.rowCount(section))] \
            == [c.id for c in truth.ungrouped]
        assert not any(registry.loaded(ws.id) for ws, _ in truth.workspaces)
    finally:
        permits.release(100_000)
        close_window(starter)


def test_the_window_is_usable_before_the_load_ends_and_every_read_is_right(
        qapp, loop, isolated, tmp_path, monkeypatch):
    rng = random.Random(24)
    build(isolated, tmp_path / "folders", random.Random(11))
    truth = listing_of(isolated)  # (also the first whole check, once, as after an update)
    chats_of = {ws.id: [c.id for c in chats] for ws, chats in truth.workspaces}
    order = [ws.id for ws, _ in truth.workspaces]
    expanded = [ws_id for ws_id in order if chats_of[ws_id]][:2]
    open_chat = chats_of[expanded[1]][0]
    permits = held_load(monkeypatch)
    starter = started_as_left(qapp, isolated, permits, expanded, open_chat)
    try:
        registry = starter.cairn.registry
        sidebar = starter.window.sidebar
        model = sidebar.model

        # Usable: every workspace row is there, the expanded ones list their chats, the open
        # chat is selected; and the load has not ended (no page was let in).
        assert not registry.loaded(None)
        assert model.rowCount(model.section_index(WORKSPACES_SECTION)) == WORKSPACES
        for ws_id in expanded:
            assert sidebar.tree.isExpanded(model.workspace_index(ws_id))
            index = model.workspace_index(ws_id)
            assert [model.index(r, 0, index).data(ID_ROLE)
                    for r in range(model.rowCount(index))] == chats_of[ws_id]
        assert starter.window.chat_panel.chat_id == open_chat
        assert sidebar.current_id() == open_chat

        # Reads while the load is held: each waits for its own page only (read by `_need`
        # on the reading thread) and answers what is stored.
        for ws_id in rng.sample(order, 12):
            assert off_the_gui_thread(lambda w=ws_id: [c.id for c in registry.chats_of(w)]) \
                == chats_of[ws_id]
            assert registry.chat_count(ws_id) == len(chats_of[ws_id])  # (a count never waits)
        for chat in rng.sample([c for _, cs in truth.workspaces for c in cs]
                               + truth.ungrouped + truth.archived, 20):
            assert registry.chat(chat.id) == chat
        assert registry.chat_count(None) == len(truth.ungrouped)
        assert registry.archived_count() == len(truth.archived)
        # The sidebar asks for a page it lacks without waiting; it lists it once it is in.
        asked = rng.choice([w for w in order if chats_of[w] and not registry.loaded(w)])
        sidebar.tree.expand(model.workspace_index(asked))
        assert not model.is_fetched(asked)
        permits.release(1)  # the next page the load reads is the one asked for
        wait_for(lambda: model.is_fetched(asked) and model.rowCount(
            model.workspace_index(asked)) == len(chats_of[asked]))
        assert not registry.loaded(None)

        # Random changes from the window and from another process while the load goes on,
        # a few pages at a time; reads in between.
        ids = [c.id for c in truth.ungrouped[:40]] + [chats_of[w][0] for w in order[:40]
                                                      if chats_of[w]]
        for step in range(16):
            permits.release(rng.randrange(1, 4))
            action = rng.randrange(5)
            chat_id = rng.choice(ids)
            if action in (0, 1):
                try:
                    if action == 0:
                        run(starter.ops.pin_chat(chat_id))
                    else:
                        run(starter.ops.rename_chat(chat_id, f"Renamed {step}"))
                except Refused:  # (archived meanwhile: a right answer too)
                    assert registry.chat(chat_id).archived
            elif action == 2:
                cli(isolated, "chat", "archive", chat_id)
            elif action == 3:
                cli(isolated, "chat", "new", "--title", f"Elsewhere {step}")
            else:
                ws_id = rng.choice(order)
                sidebar.tree.expand(model.workspace_index(ws_id))
            ws_id = rng.choice(order)
            shown = off_the_gui_thread(lambda w=ws_id: [c.id for c in registry.chats_of(w)])
            assert shown == [c.id for c in registry.chats_of(ws_id)]

        permits.release(100_000)  # the rest of the load
        wait_for(lambda: registry.loaded(None), timeout=120)
        # Caught up with the command line (on a thread of its own, as the window's catch-up
        # runs on the storage thread: never a change on the GUI thread).
        while off_the_gui_thread(registry.sync):
            pass
        wait_for(model.is_settled, timeout=60)
        # The end: the window's memory equals what is stored, and the sidebar equals it.
        final = registry.chat_listing()
        assert final == listing_of(isolated)
        assert model._rows.matches(registry.tree(), final)
    finally:
        permits.release(100_000)
        close_window(starter)
