"""The loop-stall probe (DESIGN §2 and §10: nothing on the GUI thread waits): a timer every 5 ms on the
event loop records how late it runs while Cairn does its heaviest work at once —

- a turn streams a 20,000-token reply in a chat of 5,000 stored messages (the request carries
  all of them, about 3 MB of JSON) with 30,000-character project, folder and personal
  documents;
- background rebuilds of other chats of the project run one after another, each labelling,
  validating against and saving those documents;
- three times during the stream, the command line adds a workspace from another process
  (``cairn workspace add``) and the window's catch-up (``registry.sync``) follows.

The worst lateness must stay under 50 ms, over the whole turn and during the command-line
writes.  The reply is asked for at 2,000 tokens/s, twice the design's 1,000 (the fake's pauses
run long: about 1,500 arrive per second; the benchmark, ``tests/benchmarks/stall_bench.py``,
asks for 1,000): each second brings more deltas to parse and publish than at the design's
rate, so the bar is no easier to meet, and the test takes about 13 s instead of 23.  The
measure starts after the process's first exchange, as in a window that has answered once
(those figures are reported, outside the bar).  The fake server runs in a process of its own,
as a real one does: parsing a 3 MB request in this process would hold its interpreter lock
and be counted against Cairn.

These machines are shared and noisy, so one attempt may lose to the machine: a second one
runs (on fresh data) and must pass the same bar, and the first attempt's figures are reported
as a warning.  The bar is never widened.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmarks.stall_bench import (
    BAR_MS,
    TOKENS,
    FakeProcess,
    Result,
    build,
    open_cairn,
    probe,
)

pytestmark = pytest.mark.alone  # no other worker's test beside it (tests/conftest.py)

RATE = 2_000  # tokens per second: twice the design's bar (see the module's docstring)
ATTEMPTS = 2


@pytest.fixture
def fresh_heap() -> Iterator[None]:
    """The heap of a process that has just started.

    A window's process holds its own start-up, which Cairn takes out of the collector's sight
    once its first client exists (``app.base.live.settle_interpreter``).  The suite's process holds
    what every earlier test left behind, made after that moment: a full collection walking it
    would be the suite's pause, not Cairn's.  So it is collected and frozen first, and thawed
    after."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


async def attempt(folder: Path) -> Result:
    with FakeProcess() as fake:
        cairn = open_cairn(folder / "data", fake.base_url)
        try:
            return await probe(build(cairn, folder / "disk"), fake, tokens_per_second=RATE,
                               cli_writes=3)
        finally:
            cairn.close()


async def test_the_loop_never_stalls_while_a_long_chat_streams_beside_a_rebuild_and_the_cli(
        tmp_path, fresh_heap):
    tried: list[Result] = []
    for number in range(1, ATTEMPTS + 1):
        result = await attempt(tmp_path / f"attempt-{number}")
        tried.append(result)
        print(f"attempt {number}: {result.summary()}")
        assert result.status == "complete", result.summary()
        assert result.reply_chars == TOKENS * 4 and result.cli_writes == 3, result.summary()
        assert result.rebuilds.get("applied", 0) >= 1, result.summary()  # they ran meanwhile
        if result.passed:
            break
    report = "\n".join(f"attempt {n}: {r.summary()}" for n, r in enumerate(tried, 1))
    assert tried[-1].passed, f"the event loop stalled over {BAR_MS:.0f} ms:\n{report}"
    if len(tried) > 1:
        warnings.warn(f"the first loop-stall attempt missed the bar (a noisy machine?):\n"
                      f"{report}", stacklevel=1)
