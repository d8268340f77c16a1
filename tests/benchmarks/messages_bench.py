"""Messages benchmark (DESIGN.md §9–10): paging a long chat.

Run: ``uv run python tests/benchmarks/messages_bench.py`` (not part of ``uv run pytest``).

It builds, in a temporary data folder, a chat of 5,000 messages (user questions and
assistant replies of a few hundred to a couple of thousand characters, with usage) among 99
other chats whose 45,000 messages interleave with it, then measures, interleaved in one run
so that machine noise hits all alike:

a. the baseline: reading the whole chat, ``ChatStore.messages(chat)``;
b. the page a long chat opens with, ``messages(chat, limit=50)`` — target < 5 ms;
c. a page from the middle and the oldest page, ``messages(chat, before=…, limit=50)``;
d. ``message_count`` and ``last_message_id``.

Pages are reported as a ratio to the baseline.  Prints a table, then the same results as
Markdown for docs/performance.md; exits 1 when the target is missed.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.base.db import utc_now  # noqa: E402
from app.store.messages import ChatStore  # noqa: E402
from app.store.registry.registry import Registry  # noqa: E402

CHAT_MESSAGES = 5_000
OTHER_CHATS = 99
OTHER_MESSAGES = 45_000
PAGE = 50
RUNS = 200
WHOLE_RUNS = 20


def reply(n: int) -> str:
    """An assistant reply with some markdown, 300 to 2,100 characters."""
    paragraph = (f"For step {n}, the vendor we agreed on ships on 2027-04-15; the accent stays "
                 "orange #FF5500 and the budget is 45,000 EUR. ")
    code = f"```python\nprint('step {n}')\n```\n"
    return (paragraph * (2 + n % 13)) + "\n\n" + code


def build(registry: Registry) -> str:
    """The long chat's id; its messages interleave with other chats' in id order."""
    chat = registry.new_chat(title="Long chat").id
    others = [registry.new_chat(title=f"Other {i}").id for i in range(OTHER_CHATS)]
    now = utc_now()
    rows: list[tuple[Any, ...]] = []
    per_turn = OTHER_MESSAGES // CHAT_MESSAGES  # other chats' messages between two of ours
    for n in range(CHAT_MESSAGES):
        for k in range(per_turn):
            other = others[(n * per_turn + k) % OTHER_CHATS]
            rows.append(message_row(other, n + k, now))
        rows.append(message_row(chat, n, now))
    from tests.benchmarks.tree_rows import insert_paths

    with registry.db.write() as conn:
        insert_paths(conn, "chat_id, role, content, status, error, model, input_tokens,"
                     " cache_write_tokens, cache_read_tokens, output_tokens, cost_usd,"
                     " created_at", "?, ?, ?, 'complete', NULL, ?, ?, ?, ?, ?, ?, ?", rows)
    return chat


def message_row(chat_id: str, n: int, now: str) -> tuple[Any, ...]:
    if n % 2 == 0:
        content = [{"type": "text", "text": f"Question {n}: what did we decide about step {n}?"}]
        return (chat_id, "user", json.dumps(content), None, None, None, None, None, None, now)
    content = [{"type": "text", "text": reply(n)}]
    return (chat_id, "assistant", json.dumps(content), "claude-sonnet-5-5",
            1_200 + n, 0, 3_900, 212 + n % 300, 0.0123, now)


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main() -> int:
    base = Path(tempfile.mkdtemp(prefix="cairn-messages-bench-"))
    os.environ["CAIRN_DATA_DIR"] = str(base / "data")
    os.environ["CAIRN_FIRST_USE_DIR"] = str(base / "Documents" / "Cairn")
    registry = Registry.open(base / "data")
    started = time.perf_counter()
    chat = build(registry)
    built_s = time.perf_counter() - started
    chats = ChatStore(registry.db)
    whole = chats.messages(chat)
    assert len(whole) == CHAT_MESSAGES
    middle_id = whole[CHAT_MESSAGES // 2].id
    oldest_before = whole[PAGE].id
    checks: dict[str, Callable[[], object]] = {
        "whole": lambda: chats.messages(chat),
        "newest": lambda: chats.messages(chat, limit=PAGE),
        "middle": lambda: chats.messages(chat, before=middle_id, limit=PAGE),
        "oldest": lambda: chats.messages(chat, before=oldest_before, limit=PAGE),
        "count": lambda: chats.message_count(chat),
        "last": lambda: chats.last_message_id(chat),
    }
    assert [m.id for m in chats.messages(chat, limit=PAGE)] == [m.id for m in whole[-PAGE:]]
    assert chats.message_count(chat) == CHAT_MESSAGES
    samples: dict[str, list[float]] = {name: [] for name in checks}
    for _ in range(5):  # warm-up: page cache, statement cache
        for fn in checks.values():
            fn()
    # Interleaved: one whole read every RUNS // WHOLE_RUNS rounds of the cheap reads.
    for i in range(RUNS):
        for name, fn in checks.items():
            if name == "whole" and i % (RUNS // WHOLE_RUNS):
                continue
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
    registry.close()
    shutil.rmtree(base, ignore_errors=True)

    whole_ms = median_ms(samples["whole"])
    newest_ms = median_ms(samples["newest"])
    ok = newest_ms < 5

    def ratio(name: str) -> str:
        return f"{median_ms(samples[name]) / whole_ms:.4f}× the whole chat"

    rows = [
        ("whole chat, messages(chat) (baseline)", f"{whole_ms:.2f} ms",
         f"median of {len(samples['whole'])}; {CHAT_MESSAGES:,} messages", ""),
        (f"newest page, messages(chat, limit={PAGE})", f"{newest_ms:.3f} ms",
         f"median of {RUNS}; {ratio('newest')}", "< 5 ms " + ("ok" if ok else "MISSED")),
        (f"page from the middle, messages(chat, before=id, limit={PAGE})",
         f"{median_ms(samples['middle']):.3f} ms",
         f"median of {RUNS}; {ratio('middle')}", ""),
        (f"oldest page, messages(chat, before=id, limit={PAGE})",
         f"{median_ms(samples['oldest']):.3f} ms",
         f"median of {RUNS}; {ratio('oldest')}", ""),
        ("message_count(chat)", f"{median_ms(samples['count']):.3f} ms", f"median of {RUNS}", ""),
        ("last_message_id(chat)", f"{median_ms(samples['last']):.3f} ms", f"median of {RUNS}", ""),
    ]
    setup = (f"a chat of {CHAT_MESSAGES:,} messages among {OTHER_CHATS} other chats "
             f"({CHAT_MESSAGES + OTHER_MESSAGES:,} messages in all); built in {built_s:.1f} s")
    machine = (f"{platform.system()} {platform.release()} {platform.machine()}, "
               f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
               f"SQLite {sqlite3.sqlite_version}")
    print(setup)
    print(machine)
    print()
    for name, value, note, target in rows:
        print(f"{name:58} {value:>10}  {note:45} {target}".rstrip())
    print("\nMarkdown (for docs/performance.md):\n")
    print("`uv run python tests/benchmarks/messages_bench.py` — " + setup + ".")
    print(f"Measured on {machine}.\n")
    print("| measure | result | note | target |")
    print("| --- | ---: | --- | --- |")
    for name, value, note, target in rows:
        print(f"| {name} | {value} | {note} | {target} |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
