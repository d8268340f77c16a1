"""Tests that start other processes, kill them, or time the event loop: marked ``process``
(``uv run pytest -m "not process"`` leaves them out for a quick run; the default runs all)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.process)
