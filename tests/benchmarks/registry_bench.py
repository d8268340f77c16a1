"""Registry benchmark (DESIGN.md §10): 1,000 workspaces, 50,000 chats.

Run: ``uv run python tests/benchmarks/registry_bench.py`` (not part of ``uv run pytest``).

It builds a data folder in a temporary directory (on the system's temp volume; ``--dir``
picks another volume — use a real disk, not tmpfs, or fsync costs nothing and the ratios say
little), then measures:

a. ``Registry.open`` time;
b. listing: ``workspaces()`` and ``chat_listing()`` times, and the SQL statements run while
   listing (counted with the sqlite3 trace callback) — the target is none;
c. ``add_workspace`` and ``archive_chat`` latency, each as a ratio to a bare SQLite write
   transaction of the same durability (WAL, ``synchronous=FULL``, ``BEGIN IMMEDIATE``, one
   INSERT, ``COMMIT``) on a copy of the same database, measured interleaved in the same run
   (bare, add, bare, archive, …) so that machine noise hits both alike — the target is 2×.

Prints a table, then the same results as Markdown for docs/performance.md; exits 1 when a target is
missed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.base.db import DB_NAME  # noqa: E402
from app.store.registry.registry import Registry  # noqa: E402
from tests.scale_data import CHATS, WORKSPACES, build  # noqa: E402  (the data, shared with tests)

SAMPLES = 100  # adds, archives, and twice as many bare transactions
WARMUP = 5
LISTING_RUNS = 200
OPEN_RUNS = 5
TARGET_RATIO = 2.0

Timer = Callable[[], float]


def median_time(action: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, help="where to build the data (default: system temp)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the built folder")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="cairn-bench-", dir=args.dir))
    try:
        return run(tmp, rng)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(tmp: Path, rng: random.Random) -> int:
    data, folders = tmp / "data", tmp / "folders"
    os.environ["CAIRN_DATA_DIR"] = str(data)
    os.environ["CAIRN_FIRST_USE_DIR"] = str(tmp / "first-use")
    fresh = []
    for i in range(SAMPLES + WARMUP):
        folder = folders / "fresh" / f"added-{i:03d}"
        folder.mkdir(parents=True)
        fresh.append(str(Path(os.path.realpath(folder))))

    started = time.perf_counter()
    counts = build(data, folders, rng)
    build_time = time.perf_counter() - started
    size_mb = (data / DB_NAME).stat().st_size / 1e6

    # The bare database: a copy of the same size, the same pragmas, one INSERT per transaction.
    bare_path = tmp / "bare" / "bare.db"
    bare_path.parent.mkdir()
    shutil.copyfile(data / DB_NAME, bare_path)

    # ---------------------------------------------------------------- (a) opening
    def open_and_close() -> None:
        Registry.open(data).close()

    open_time = median_time(open_and_close, OPEN_RUNS)

    # ---------------------------------------------------------------- (b) listing
    registry = Registry.open(data)
    assert len(registry.workspaces()) == WORKSPACES
    listing = registry.chat_listing()
    assert sum(len(c) for _, c in listing.workspaces) + len(listing.ungrouped) + len(
        listing.archived
    ) == CHATS
    statements: list[str] = []
    registry.db.set_trace(statements.append)
    list_ws = median_time(registry.workspaces, LISTING_RUNS)
    list_chats = median_time(registry.chat_listing, LISTING_RUNS // 10)
    listing_statements = len(statements)
    registry.db.query("SELECT 1")  # proves the trace counts: this one must show up
    trace_works = len(statements) == listing_statements + 1
    registry.db.set_trace(None)

    # ---------------------------------------------------------------- (c) writes
    bare = sqlite3.connect(bare_path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=10000"):
        bare.execute(f"PRAGMA {pragma}")
    bare_counter = iter(range(10**9))

    def bare_write() -> None:
        i = next(bare_counter)
        bare.execute("BEGIN IMMEDIATE")
        bare.execute(
            "INSERT INTO chat (id, title, folder, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (f"ch_bare{i:07d}", f"Bare {i}", None, "2025-06-01T00:00:00.000Z",
             "2025-06-01T00:00:00.000Z"),
        )
        bare.execute("COMMIT")

    targets = [c.id for _, cs in listing.workspaces for c in cs] + [c.id for c in listing.ungrouped]
    to_archive = iter(rng.sample(targets, SAMPLES + WARMUP))
    to_add = iter(fresh)

    def add() -> None:
        _, created = registry.add_workspace(next(to_add))
        assert created

    def archive() -> None:
        registry.archive_chat(next(to_archive))

    samples: dict[str, list[float]] = {"bare": [], "add": [], "archive": []}

    def timed(name: str, action: Callable[[], None], keep: bool) -> None:
        start = time.perf_counter()
        action()
        elapsed = time.perf_counter() - start
        if keep:
            samples[name].append(elapsed)

    for i in range(SAMPLES + WARMUP):
        keep = i >= WARMUP
        timed("bare", bare_write, keep)
        timed("add", add, keep)
        timed("bare", bare_write, keep)
        timed("archive", archive, keep)
    bare.close()
    registry.close()

    bare_median = statistics.median(samples["bare"])
    add_median = statistics.median(samples["add"])
    archive_median = statistics.median(samples["archive"])
    add_ratio = add_median / bare_median
    archive_ratio = archive_median / bare_median

    # ---------------------------------------------------------------- report
    reads_ok = listing_statements == 0 and trace_works
    add_ok = add_ratio <= TARGET_RATIO
    archive_ok = archive_ratio <= TARGET_RATIO

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    rows = [
        ("Registry.open", ms(open_time), f"median of {OPEN_RUNS}", ""),
        ("workspaces()", ms(list_ws), f"median of {LISTING_RUNS}", ""),
        ("chat_listing()", ms(list_chats), f"median of {LISTING_RUNS // 10}", ""),
        ("SQL statements while listing", str(listing_statements), "target 0",
         verdict(reads_ok) + ("" if trace_works else " (trace callback did not fire)")),
        ("bare SQLite write transaction", ms(bare_median), f"median of {2 * SAMPLES}", ""),
        ("add_workspace", ms(add_median), f"{add_ratio:.2f}× bare (target ≤ {TARGET_RATIO:g}×)",
         verdict(add_ok)),
        ("archive_chat", ms(archive_median),
         f"{archive_ratio:.2f}× bare (target ≤ {TARGET_RATIO:g}×)", verdict(archive_ok)),
    ]
    setup = (
        f"{WORKSPACES:,} workspaces, {CHATS:,} chats ({counts['ungrouped']:,} ungrouped, "
        f"{counts['archived']:,} archived, {counts['pinned']} pinned); database {size_mb:.1f} MB, "
        f"built in {build_time:.1f} s"
    )
    machine = (
        f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )

    width = [max(len(r[i]) for r in rows) for i in range(4)]
    print(setup)
    print(machine)
    print()
    for row in rows:
        print("  ".join(cell.ljust(width[i]) for i, cell in enumerate(row)).rstrip())

    print()
    print("Markdown (for docs/performance.md):")
    print()
    print("`uv run python tests/benchmarks/registry_bench.py` — " + setup + ".")
    print(f"Measured on {machine}.")
    print()
    print("| measure | result | note | target |")
    print("| --- | ---: | --- | --- |")
    for name, value, note, ok in rows:
        print(f"| {name} | {value} | {note} | {ok} |")

    return 0 if reads_ok and add_ok and archive_ok else 1


if __name__ == "__main__":
    sys.exit(main())
