"""Reads while a writer commits: the window's reads must not wait behind a commit and fsync.

    uv run python tests/benchmarks/read_bench.py [--dir FOLDER]

Two kinds of read, each timed with no writer and then while another thread commits chats one
after another (WAL, ``synchronous=FULL``, through the one writer), interleaved in rounds:

- the registry's memory (``workspaces()``, ``chat_at``/``chat_row``): no storage read at all;
- a page of 50 messages from SQLite (``ChatStore.messages(chat, limit=50)``), on the thread's
  own read connection.

Target: unaffected by the commits (ratio near 1; the second core is busy with the writer,
so a little CPU contention shows).  Before reads had their own connections they waited for
the writer's lock: 280-383 ms after an external write.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def timings(read: object, n: int) -> list[float]:
    out = []
    for _ in range(n):
        started = time.perf_counter()
        read()  # type: ignore[operator]
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", type=Path, default=None, help="a folder on a real disk")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cairn-reads-", dir=args.dir))
    os.environ["CAIRN_DATA_DIR"] = str(root / "data")
    os.environ["CAIRN_FIRST_USE_DIR"] = str(root / "first-use")

    from app.cairn import Cairn

    cairn = Cairn.open(root / "data", background_rebuilds=False)
    registry = cairn.registry
    for i in range(50):
        (root / f"ws{i}").mkdir()
        registry.add_workspace(str(root / f"ws{i}"))
    chat = registry.new_chat(title="long")
    from tests.benchmarks.tree_rows import insert_paths

    with registry.db.write() as conn:
        insert_paths(
            conn, "chat_id, role, content, status, created_at",
            "?, ?, ?, 'complete', '2026-11-30T00:00:00.000Z'",
            [(chat.id, "user" if n % 2 == 0 else "assistant",
              f'[{{"type": "text", "text": "message {n} ' + "x" * 400 + '"}]')
             for n in range(5_000)])
    ws_id = registry.top_level()[0].id

    def memory_read() -> None:
        registry.workspaces()
        for row in range(min(20, registry.chat_count(None))):
            registry.chat_row(registry.chat_at(None, row).id)

    def page_read() -> None:
        cairn.chats.messages(chat.id, limit=50)

    stop = threading.Event()
    commits = [0]

    def writer() -> None:
        n = 0
        while not stop.is_set():
            registry.new_chat(folder=registry.workspace(ws_id).path, title=f"w{n}")
            n += 1
        commits[0] += n

    results: dict[str, list[float]] = {"memory idle": [], "memory writing": [],
                                       "page idle": [], "page writing": []}
    for _ in range(args.rounds):
        results["memory idle"] += timings(memory_read, 200)
        results["page idle"] += timings(page_read, 50)
        stop.clear()
        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(0.05)  # the writer is mid-commit from here on
        results["memory writing"] += timings(memory_read, 200)
        results["page writing"] += timings(page_read, 50)
        stop.set()
        thread.join()
    print(f"writer committed {commits[0]:,} chats meanwhile (WAL, synchronous=FULL), "
          f"folder {root}")
    print("\nMarkdown (for docs/performance.md):\n")
    print(table(results, commits[0]))
    cairn.close()


LABELS = {"memory": "registry memory (`workspaces()`, 20 × `chat_at` + `chat_row`)",
          "page": "page of 50 from SQLite (5,000-message chat)"}


def table(results: dict[str, list[float]], commits: int) -> str:
    """The page's table: each kind of read idle and while committing, in ms."""
    lines = ["| read | idle (median / p99) | while committing (median / p99) | ratio of medians |",
             "| --- | ---: | ---: | ---: |"]
    for kind, label in LABELS.items():
        idle, busy = results[f"{kind} idle"], results[f"{kind} writing"]
        p99 = [statistics.quantiles(idle, n=100)[98], statistics.quantiles(busy, n=100)[98]]
        lines.append(f"| {label} | {statistics.median(idle):.3f} / {p99[0]:.3f} ms "
                     f"| {statistics.median(busy):.3f} / {p99[1]:.3f} ms "
                     f"| {statistics.median(busy) / statistics.median(idle):.2f}× |")
    return "\n".join(lines) + f"\n\n({commits:,} commits during the run.)"


if __name__ == "__main__":
    main()
