"""The real window, driven offscreen: start-up, adding folders (dialog, drop, a later
`cairn PATH`), refusals, another process's writes, the start-up problem dialog, quitting."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication, QMessageBox

from tests.ui.drivers import draft_of, workspace_clicked
from ui.app import Starter, start

ROOT = Path(__file__).resolve().parents[2]


# Closed loops stay referenced: freed later by the collector on another thread, qasync's Qt
# timers would be stopped from the wrong thread and the run could crash.
_CLOSED_LOOPS: list[asyncio.AbstractEventLoop] = []


@pytest.fixture
def loop(qapp) -> Iterator[asyncio.AbstractEventLoop]:
    import qasync

    event_loop = qasync.QEventLoop(qapp, already_running=False)
    asyncio.set_event_loop(event_loop)
    yield event_loop
    event_loop.close()
    asyncio.set_event_loop(None)
    _CLOSED_LOOPS.append(event_loop)


def wait_for(loop: asyncio.AbstractEventLoop, condition: Callable[[], object],
             timeout: float = 20.0) -> None:
    """Run the loop until *condition* holds (polling it; never a fixed sleep)."""

    async def until() -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError("the condition never held")
            await asyncio.sleep(0.02)

    loop.run_until_complete(until())


@pytest.fixture
def opened(qapp, loop, isolated) -> Iterator[Starter]:
    starter = start(qapp, isolated)
    starter.begin()
    wait_for(loop, lambda: starter.ops is not None)
    yield starter
    starter.window.close()
    loop.run_until_complete(starter.finish())


def test_the_window_paints_first_and_fills_in(qapp, loop, isolated, qtbot):
    starter = start(qapp, isolated)
    window = starter.window
    assert window.sidebar is None and not window.add_action.isEnabled()  # the skeleton
    with qtbot.waitSignal(window.sig_first_paint, timeout=10_000):
        window.repaint()
    starter.begin()
    wait_for(loop, lambda: window.sidebar is not None)
    assert window.add_action.isEnabled()
    for name in ("Add workspace", "New chat", "Board", "Settings"):
        assert window.findChild(object, name) is not None, name
    window.close()
    loop.run_until_complete(starter.finish())


def test_add_by_dialog_and_by_drop(opened, loop, folders):
    window = opened.window
    acme, thesis = folders("Acme", "Thesis")
    window.ask_folder = lambda: acme
    window.choose_folder()
    registry = opened.cairn.registry
    wait_for(loop, lambda: any(w.path == acme for w in registry.top_level()))
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(thesis)])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(drop)
    wait_for(loop, lambda: any(w.path == thesis for w in registry.top_level()))


def test_a_refused_folder_shows_the_spec_sentence(opened, loop, tmp_path):
    window = opened.window
    missing = str(tmp_path / "nowhere")
    window.ask_folder = lambda: missing
    window.choose_folder()
    wait_for(loop, lambda: window.notice.isVisible())
    assert window.notice.label.text() == (  # (the window's sentences start with a capital)
        f"Cannot create a workspace at '{missing}': path does not exist")


def run_second(args: list[str], env_data: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", CAIRN_DATA_DIR=str(env_data))
    return subprocess.Popen([sys.executable, "-m", "ui.main", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_later_cairn_path_hands_it_to_the_running_window(opened, loop, folders, isolated,
                                                           tmp_path):
    (brand,) = folders("Brand")
    second = run_second([brand], isolated)
    wait_for(loop, lambda: second.poll() is not None, timeout=60)
    assert second.returncode == 0, second.stderr.read()
    assert any(w.path == brand for w in opened.cairn.registry.top_level())
    # Said on the terminal, not silent.
    assert second.stdout.read().strip() == f"Opened {brand} in the Cairn window already running."
    missing = str(tmp_path / "gone")
    third = run_second([missing], isolated)
    wait_for(loop, lambda: third.poll() is not None, timeout=60)
    sentence = f"cannot create a workspace at '{missing}': path does not exist"
    assert third.returncode == 1 and third.stderr.read().strip().endswith(sentence)
    assert opened.window.notice.label.text() == "C" + sentence[1:]  # the window's capital


def test_a_change_from_the_command_line_shows_without_a_restart(opened, loop, folders):
    from app.store.registry.registry import Registry

    (other,) = folders("Made elsewhere")
    elsewhere = Registry.open(opened.folder)  # another process, as far as SQLite can tell
    elsewhere.add_workspace(other)
    elsewhere.close()
    registry = opened.cairn.registry
    wait_for(loop, lambda: any(w.path == other for w in registry.top_level()))


def test_a_start_up_problem_shows_a_dialog_and_opens_nothing(qapp, loop, isolated):
    isolated.mkdir(parents=True)
    conn = sqlite3.connect(isolated / "cairn.db")
    conn.execute("PRAGMA user_version = 99")  # written by a newer Cairn
    conn.execute("CREATE TABLE later (x)")
    conn.commit()
    conn.close()
    starter = start(qapp, isolated)
    starter.begin()
    wait_for(loop, lambda: starter.exit_code == 1)
    box = starter.window.findChild(QMessageBox, "startup-problem")
    assert box is not None and "newer version of Cairn" in box.text()
    assert str(isolated) in box.text() and starter.cairn is None
    box.close()
    starter.window.close()
    loop.run_until_complete(starter.finish())


def test_quit_parks_a_pending_rebuild_and_exits_in_bounded_time(opened, loop, qtbot,
                                                                 monkeypatch):
    import ui.app as app_module

    scheduler = opened.cairn.scheduler
    gate = asyncio.Event()

    async def hung_rebuild(chat_id: str):  # a rebuild that would never end
        await gate.wait()

    monkeypatch.setattr(app_module, "QUIT_WAIT_SECONDS", 0.2)
    task = asyncio.ensure_future(hung_rebuild("ch_x"), loop=loop)
    scheduler._tasks["ch_x"] = task
    qtbot.keyClick(opened.window, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert not opened.window.isVisible()  # Ctrl+Q closed the window
    started = time.monotonic()
    loop.run_until_complete(opened.finish())
    assert time.monotonic() - started < 10 and opened.exit_code == 0
    assert task.done()


def test_exit_after_first_paint(isolated):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-m", "ui.main", "--exit-after-first-paint"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_open_resolves_a_relative_path_against_the_current_folder(isolated, tmp_path, capsys):
    from app import cli

    (tmp_path / "projects" / "Thesis").mkdir(parents=True)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-m", "ui.main", "open", "Thesis", "--exit-after-first-paint"],
        cwd=tmp_path / "projects", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert cli.main(["workspace", "list", "--json"]) == 0
    assert str(tmp_path / "projects" / "Thesis") in capsys.readouterr().out


def test_no_display_is_one_sentence_and_a_typo_is_a_usage_error(isolated):
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run([sys.executable, "-m", "ui.main"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    if sys.platform.startswith("linux"):
        assert done.returncode == 1
        assert done.stderr.strip().startswith("Cairn's window needs a display")
        assert len(done.stderr.strip().splitlines()) == 1
    typo = subprocess.run([sys.executable, "-m", "ui.main", "wokspace"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert typo.returncode == 2 and "'wokspace' is not a command" in typo.stderr


def test_geometry_and_selection_come_back(qapp, loop, isolated, folders):
    starter = start(qapp, isolated)
    starter.begin()
    wait_for(loop, lambda: starter.ops is not None)
    (acme,) = folders("Acme")
    ws, _ = starter.cairn.registry.add_workspace(acme)
    starter.window.resize(760, 520)  # within the offscreen screen (800 × 600)
    workspace_clicked(starter.window, ws.id)
    starter.window.close()
    loop.run_until_complete(starter.finish())
    again = start(qapp, isolated)
    again.begin()
    wait_for(loop, lambda: again.ops is not None)
    assert again.window.size().width() == 760 and again.window._workspace_id == ws.id
    again.window.close()
    loop.run_until_complete(again.finish())
    QApplication.processEvents()


def test_quit_from_the_status_board_quits_cairn(opened, loop, qtbot):
    """Ctrl+Q with the board in front closes every window of Cairn and
    the process ends, exit 0 (it used to hide the main window and leave the board)."""
    opened.window.sig_board_requested.emit()
    board = opened._board
    assert board is not None
    qtbot.waitUntil(board.isVisible)
    board.activateWindow()
    board.setFocus()
    qtbot.keyClick(board, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not opened.window.isVisible() and not board.isVisible())
    loop.run_until_complete(opened.finish())
    assert opened.exit_code == 0


def test_closing_the_main_window_closes_the_board_too(opened, loop, qtbot):
    opened.window.sig_board_requested.emit()
    board = opened._board
    qtbot.waitUntil(board.isVisible)
    opened.window.close()
    qtbot.waitUntil(lambda: not board.isVisible())



def test_a_quit_leaves_no_window_task_to_resume_after_the_loop(qapp, loop, isolated, folders,
                                                              monkeypatch):
    """A chat still opening when the person quits: its task ends within the quit, while the
    loop runs (resumed after the loop has stopped, it failed asking for one and logged an
    error at every quick quit)."""
    starter = start(qapp, isolated)
    starter.begin()
    window = starter.window
    wait_for(loop, lambda: starter.ops is not None and window.chat_panel is not None)
    ops = starter.ops
    (acme,) = folders("Acme")
    loop.run_until_complete(ops.add_workspace(acme))
    first, _ = loop.run_until_complete(ops.new_chat(folder=acme))
    second, _ = loop.run_until_complete(ops.new_chat(folder=acme))
    window.select_chat(second.id)
    wait_for(loop, lambda: draft_of(window.chat_panel) == second.id)
    page = ops.page

    async def slow_page(*args, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(1.0)
        return await page(*args, **kwargs)

    monkeypatch.setattr(ops, "page", slow_page)
    window.select_chat(first.id)  # its opening is under way ...
    assert draft_of(window.chat_panel) is None
    window.close()  # ... when the person quits
    loop.run_until_complete(starter.finish())
    assert not window._tasks.tasks()
