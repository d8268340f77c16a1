"""Helpers for widget tests: the qasync loop, and walking an item model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import qasync
from PySide6.QtCore import QAbstractItemModel, QModelIndex
from PySide6.QtWidgets import QApplication


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


def walk(model: QAbstractItemModel, parent: QModelIndex = QModelIndex(),  # noqa: B008
         *, fetch: bool = False) -> Iterator[QModelIndex]:
    """Every index under *parent*, depth first; with *fetch*, reading lazy lists on the way."""
    if fetch and model.canFetchMore(parent):
        model.fetchMore(parent)
    for row in range(model.rowCount(parent)):
        index = model.index(row, 0, parent)
        yield index
        yield from walk(model, index, fetch=fetch)


def texts(model: QAbstractItemModel, parent: QModelIndex = QModelIndex()) -> list[Any]:  # noqa: B008
    """The display texts of *parent*'s children."""
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]
