"""Helpers for widget tests: walking an item model, waiting on the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from PySide6.QtCore import QAbstractItemModel, QModelIndex

from tests.memory_keyring import TEST_KEY
from ui.app import Starter, start

T = TypeVar("T")


def replies(answer: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """A question's hook (one asked inside a task, awaited) that answers as *answer* does."""

    async def ask(*args: Any) -> T:
        return answer(*args)

    return ask


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


# The qtbot of the running test (set by the autouse fixture in tests/ui/conftest.py): the loop
# is the shared qasync one counted as running, so tasks advance whenever qtbot waits.
QTBOT: Any = None


def wait_for(condition: Callable[[], object], timeout: float = 20.0) -> None:
    """Process events until *condition* holds (qtbot polls it; never a fixed sleep)."""
    QTBOT.waitUntil(lambda: bool(condition()), timeout=int(timeout * 1000))


def run(coroutine: Any) -> Any:
    """Run *coroutine* on the window's loop until it ends; its result."""
    task = asyncio.ensure_future(coroutine)
    QTBOT.waitUntil(task.done, timeout=30_000)
    return task.result()


def open_window(qapp: Any, isolated: Path, *, size: tuple[int, int] = (1100, 800)) -> Starter:
    """The real window on the test's data folder, filled in (operations, chat panel and
    knowledge panel ready), shown at *size*."""
    starter = start(qapp, isolated)
    starter.begin()
    wait_for(lambda: starter.ops is not None and starter.window.chat_panel is not None
             and starter.window.knowledge is not None)
    starter.window.resize(*size)
    starter.window.show()
    return starter


def close_window(starter: Starter) -> None:
    """Close the window and wait until Cairn finished (rebuilds parked, services closed)."""
    starter.window.close()
    run(starter.finish())


def configure(isolated: Path, fake: Any) -> None:
    """Point the data folder at the fake server, with the test key in the keyring."""
    from app.cairn import Cairn

    cairn = Cairn.open(isolated)
    cairn.settings.set("api.base_url", fake.base_url)
    cairn.settings.set_api_key(TEST_KEY)
    cairn.close()
