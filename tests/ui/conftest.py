"""Fixtures of the widget tests (pytest-qt, offscreen): the qasync event loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from tests.ui import helpers
from tests.ui.helpers import close_window, configure, open_window
from ui.app import Starter

# Closed loops stay referenced: qasync's timer object may still hold Qt timers, and a garbage
# collection on another thread (the storage thread's) would destroy it there and crash Qt.
_CLOSED_LOOPS: list[asyncio.AbstractEventLoop] = []


@pytest.fixture
def loop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """The window's qasync loop, counted as running, so that tasks advance whenever Qt
    processes events (qtbot's waits)."""
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    yield loop
    for task in asyncio.all_tasks(loop):
        task.cancel()
    qapp.processEvents()
    asyncio.events._set_running_loop(None)
    loop._QEventLoop__is_running = False  # type: ignore[attr-defined]  # (stop() quits Qt)
    loop.close()
    asyncio.set_event_loop(None)
    _CLOSED_LOOPS.append(loop)


@pytest.fixture(autouse=True)
def _no_window_outlives_its_test(qapp: QApplication) -> Iterator[None]:
    """Every top-level widget a test leaves (a closed window, its board, a dialog) is
    deleted when the test ends.  A closed window is only hidden: without this it lived on
    with its core closed, so a later test walking ``QApplication.allWidgets()`` read a
    sidebar whose registry was gone (KeyError), and every theme change restyled the
    windows of all the earlier tests."""
    yield
    for widget in QApplication.topLevelWidgets():
        widget.close()
        widget.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    qapp.processEvents()


@pytest.fixture(autouse=True)
def _no_modal_loop_inside_a_task(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dialog's ``exec`` runs an event loop of its own; inside a task's step, asyncio then
    refuses every other task that comes due, and those never run again.  A question asked
    inside a task awaits ``ui.text.answered`` instead: any ``exec`` there fails the test, and
    so does every other way into a modal loop (Qt's static dialogs, a menu's ``exec``), which
    bypass Python's ``exec``.  tests/ui/test_questions_in_tasks.py reads the code for the
    questions no test answers for real."""
    from PySide6.QtWidgets import QDialog, QFileDialog, QInputDialog, QMenu, QMessageBox

    def outside_tasks(real: Callable[..., Any], name: str) -> Callable[..., Any]:
        def guarded(*args: Any, **kwargs: Any) -> Any:
            loop = asyncio.events._get_running_loop()
            task = asyncio.current_task(loop) if loop is not None else None
            assert task is None, f"{name} inside the task {task!r}"
            return real(*args, **kwargs)

        return guarded

    for kind in (QDialog, QMessageBox, QFileDialog, QInputDialog, QMenu):
        monkeypatch.setattr(kind, "exec", outside_tasks(kind.exec, f"{kind.__name__}.exec()"))
    for kind, names in ((QFileDialog, MODAL_FILE_DIALOGS), (QInputDialog, MODAL_INPUTS),
                        (QMessageBox, MODAL_MESSAGES)):
        for name in names:
            monkeypatch.setattr(kind, name, staticmethod(
                outside_tasks(getattr(kind, name), f"{kind.__name__}.{name}()")))


MODAL_FILE_DIALOGS = ("getOpenFileName", "getOpenFileNames", "getSaveFileName",
                      "getExistingDirectory")
MODAL_INPUTS = ("getText", "getMultiLineText", "getItem", "getInt", "getDouble")
MODAL_MESSAGES = ("question", "warning", "information", "critical", "about")


@pytest.fixture(autouse=True)
def _waits(request: pytest.FixtureRequest) -> Iterator[None]:
    """``helpers.wait_for`` and ``helpers.run`` wait through this test's qtbot."""
    helpers.QTBOT = request.getfixturevalue("qtbot")
    yield
    helpers.QTBOT = None


@pytest.fixture
def opened(qapp, loop, isolated, fake, folders) -> Iterator[Starter]:
    """The window on a data folder that talks to the fake server (tests that need another
    set-up define their own ``opened``)."""
    configure(isolated, fake)
    starter = open_window(qapp, isolated)
    yield starter
    close_window(starter)


@pytest.fixture
def offline_window(qapp, loop, isolated) -> Iterator[Starter]:
    """The window at 1200x800 on a data folder with no server set: the knowledge panel's
    tests and those of the strips and names in it.  Anything the panel asks while the test
    ends is answered Discard."""
    from ui.knowledge.panel import DISCARD

    starter = open_window(qapp, isolated, size=(1200, 800))
    yield starter
    panel = starter.window.knowledge
    if panel is not None:  # nothing asks while the test ends
        panel.ask_unsaved = helpers.replies(lambda: DISCARD)
    close_window(starter)
