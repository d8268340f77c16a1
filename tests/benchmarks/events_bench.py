"""Events and model-shaped reads benchmark: 1,000 workspaces, 50,000 chats.

Run: ``uv run python tests/benchmarks/events_bench.py`` (not part of ``uv run pytest``).

It builds the registry benchmark's data folder in a temporary directory, then measures, each
against a baseline measured in the same run:

a. event fan-out: 1,000 events through ``Hub.emit`` to N subscribers (N = 1, 10, 100),
   against calling the same N no-op callbacks directly in a loop (the floor any delivery
   costs) — the ratio is what the hub adds (kinds filter, error isolation, re-entrancy);
b. events on real writes: 1,000 ``rename_chat`` with 10 subscribers against 1,000 with none,
   interleaved — what emitting costs a committed change (target: within 10%);
c. the tree as rows: 1,000 ``child_at`` + ``row_of`` calls against 1,000 calls of the plain
   scan ``children()`` used to do (every workspace, filtered by parent);
d. the chat lists as rows: ``chat_listing()`` against the plain listing it used to compute
   (filter and sort all 50,000 chats), and 1,000 ``chat_at`` + ``chat_row`` calls against
   1,000 plain ``chats_of()`` filters (a workspace's chats, archived ones dropped).

Prints a table, then the same as Markdown for docs/performance.md; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.events import ChatChanged, Event, Hub, KnowledgeSaved, WorkspaceMoved  # noqa: E402
from app.records import Chat, ChatListing  # noqa: E402
from app.store.registry.registry import Registry  # noqa: E402
from tests.scale_data import CHATS, WORKSPACES, build  # noqa: E402

CHANGES = 1_000
RUNS = 7
WRITES = 300  # renames with and without subscribers, interleaved
WRITE_TARGET = 1.10


def median_time(action: Callable[[], object], runs: int = RUNS) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def plain_children(registry: Registry, parent: str | None) -> list[object]:
    """What ``children()`` did before the tree was kept as rows."""
    return [ws for ws in registry.workspaces() if registry.parent_of(ws.id) == parent]


def plain_chats_of(registry: Registry, ws_id: str) -> list[Chat]:
    """What ``chats_of()`` did: a workspace's chats, archived ones filtered out, per call."""
    get = registry.mem.chats.__getitem__
    return [c for c in map(get, registry.mem.members[ws_id]) if not c.archived]


def plain_listing(registry: Registry) -> ChatListing:
    """What ``chat_listing()`` did before the chat lists were kept as rows."""
    chats = registry.mem.chats.values()
    pinned = sorted((c for c in chats if c.pinned), key=lambda c: c.pin_seq or 0, reverse=True)
    ungrouped = [c for c in chats if c.workspace_id is None and not c.archived]
    ungrouped.reverse()
    archived = sorted((c for c in chats if c.archived), key=lambda c: c.archived_at or "",
                      reverse=True)
    members, get = registry.mem.members, registry.mem.chats.__getitem__
    return ChatListing(
        pinned=pinned,
        workspaces=[(ws, [c for c in map(get, members[ws.id]) if not c.archived])
                    for ws in registry.workspaces()],
        ungrouped=ungrouped,
        archived=archived,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="where to build the data (default: system temp)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cairn-events-bench-", dir=args.dir))
    try:
        return run(tmp, random.Random(args.seed))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, rng: random.Random) -> int:
    data = tmp / "data"
    os.environ["CAIRN_DATA_DIR"] = str(data)
    os.environ["CAIRN_FIRST_USE_DIR"] = str(tmp / "first-use")
    counts = build(data, tmp / "folders", rng)
    registry = Registry.open(data)
    rows: list[tuple[str, str, str, str]] = []
    ok = True

    # ---------------------------------------------------------------- (a) fan-out
    events: list[Event] = [
        rng.choice([ChatChanged("ch_x", registry.chat_at(None, 0)),
                    WorkspaceMoved("ws_x", None, None, 1, 2), KnowledgeSaved("ws_x", 3, "user")])
        for _ in range(CHANGES)
    ]
    for n in (1, 10, 100):
        hub = Hub()
        heard = [0]

        def listener(event: Event) -> None:
            heard[0] += 1

        callbacks = [listener] * n
        for _ in range(n):
            hub.subscribe(listener)

        def direct() -> None:
            for event in events:
                for callback in callbacks:
                    callback(event)

        def through_hub() -> None:
            for event in events:
                hub.emit(event)

        base, hubbed = median_time(direct), median_time(through_hub)
        rows.append((f"fan-out: {CHANGES:,} events to {n} subscriber{'s' * (n > 1)}",
                     ms(hubbed), f"{hubbed / base:.2f}× direct calls ({ms(base)})", ""))

    # ---------------------------------------------------------------- (b) on real writes
    chat_ids = [c.id for c in registry.chat_listing().ungrouped]
    samples: dict[bool, list[float]] = {False: [], True: []}
    heard_writes: list[Event] = []
    subscriptions = []
    for i in range(2 * WRITES):
        listening = i % 2 == 1
        if listening:
            subscriptions = [registry.hub.subscribe(heard_writes.append) for _ in range(10)]
        start = time.perf_counter()
        registry.rename_chat(rng.choice(chat_ids), f"Renamed {i}")
        samples[listening].append(time.perf_counter() - start)
        for subscription in subscriptions:
            subscription.close()
        subscriptions = []
    quiet, loud = statistics.median(samples[False]), statistics.median(samples[True])
    write_ok = loud / quiet <= WRITE_TARGET
    ok &= write_ok
    rows.append(("rename_chat with 10 subscribers", ms(loud),
                 f"{loud / quiet:.2f}× with none ({ms(quiet)})",
                 f"≤ {WRITE_TARGET:g}× {'ok' if write_ok else 'MISSED'}"))

    # ---------------------------------------------------------------- (c) the tree
    top = registry.child_count(None)
    picks = [rng.randrange(top) for _ in range(CHANGES)]

    def scans() -> None:
        for _ in range(CHANGES):
            plain_children(registry, None)

    def tree_rows() -> None:
        for row in picks:
            registry.row_of(registry.child_at(None, row).id)

    base, fast = median_time(scans, 3), median_time(tree_rows)
    rows.append((f"{CHANGES:,} × child_at + row_of", ms(fast),
                 f"{fast / base:.4f}× {CHANGES:,} plain children() scans ({ms(base)})", ""))
    listed = median_time(lambda: registry.children(None))
    rows.append(("children(None), 1,000 top-level", ms(listed), "from rows", ""))

    # ---------------------------------------------------------------- (d) the chat lists
    assert plain_listing(registry) == registry.chat_listing()
    base, fast = median_time(lambda: plain_listing(registry)), median_time(registry.chat_listing)
    rows.append(("chat_listing()", ms(fast),
                 f"{fast / base:.2f}× the plain listing ({ms(base)})", ""))
    ws_ids = [ws.id for ws in registry.workspaces() if registry.chat_count(ws.id)]
    chat_picks = [(ws, rng.randrange(registry.chat_count(ws)))
                  for ws in rng.choices(ws_ids, k=CHANGES)]

    def plain_chat_rows() -> None:
        for ws_id, row in chat_picks:
            chats = plain_chats_of(registry, ws_id)
            chats.index(chats[row])

    def chat_rows() -> None:
        for ws_id, row in chat_picks:
            registry.chat_row(registry.chat_at(ws_id, row).id)

    base, fast = median_time(plain_chat_rows), median_time(chat_rows)
    rows.append((f"{CHANGES:,} × chat_at + chat_row", ms(fast),
                 f"{fast / base:.2f}× as many plain chats_of() filters ({ms(base)})", ""))
    registry.close()

    # ---------------------------------------------------------------- report
    setup = (f"{WORKSPACES:,} workspaces, {CHATS:,} chats ({counts['ungrouped']:,} ungrouped, "
             f"{counts['archived']:,} archived, {counts['pinned']} pinned)")
    machine = (f"{platform.system()} {platform.release()} {platform.machine()}, "
               f"{os.cpu_count()} CPUs, Python {platform.python_version()}")
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    print(setup)
    print(machine)
    print()
    for row in rows:
        print("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row)).rstrip())
    print()
    print("Markdown (for docs/performance.md):")
    print()
    print("`uv run python tests/benchmarks/events_bench.py` — " + setup + ".")
    print(f"Measured on {machine}.")
    print()
    print("| measure | result | against the baseline in the same run | target |")
    print("| --- | ---: | --- | --- |")
    for name, value, note, target in rows:
        print(f"| {name} | {value} | {note} | {target} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
