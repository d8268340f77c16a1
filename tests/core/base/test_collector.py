"""The cyclic collector around the SDK's import (``app.base.live.collector_held``): held while
the import's objects are made, and those objects frozen before it is back, so its next pass
does not walk them while the event loop waits (55 ms in the window, measured)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.base.live import collector_held


@pytest.fixture
def collector() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.collect()
    yield
    gc.unfreeze()  # (this test's objects back in the collector's sight)
    if collecting:
        gc.enable()
    else:
        gc.disable()


def test_what_is_made_while_held_is_frozen_before_the_collector_is_back(collector):
    gc.enable()
    frozen = gc.get_freeze_count()
    with collector_held():
        assert not gc.isenabled()
        made = [[n] for n in range(5_000)]  # containers: tracked by the collector
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made)
    assert gc.get_count()[0] < len(made)  # the young generation does not hold them


def test_a_collector_held_by_someone_else_stays_held(collector):
    gc.disable()
    with collector_held():
        pass
    assert not gc.isenabled()


def test_the_collector_is_back_even_when_the_import_fails(collector):
    gc.enable()
    with pytest.raises(ImportError), collector_held():
        raise ImportError("no SDK")
    assert gc.isenabled()
