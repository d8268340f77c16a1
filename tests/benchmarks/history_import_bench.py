"""History import benchmark: 10,000 chats / 500,000 messages from a
Claude.ai export, against the same messages inserted by a bare script, in one run.

Run: ``uv run python tests/benchmarks/history_import_bench.py`` (not part of ``uv run pytest``);
``CAIRN_BENCH_CHATS=1000`` for a quick try; ``--dir D`` builds in D (a real disk); ``--keep``
leaves the data, and ``--search-only DIR`` runs the searches again on an imported data folder.

1. Builds the export: a zip whose ``conversations.json`` holds the chats in Claude.ai's newer
   layout (``content[]`` duplicating ``text``, ``parent_message_uuid`` from the zero root,
   every tenth chat with an edited message: two branches), 10 to 80 words a message from a
   Zipf-like vocabulary.  Written a chat at a time (never whole in memory).
2. Imports it with ``cairn import-history`` in a process of its own (a fresh data folder): the
   wall time, and its peak memory (``ru_maxrss``).
3. The bare script, in a process of its own on another fresh data folder: the same chats and
   messages (generated again from the same seed, untimed) inserted with ``executemany`` into
   Cairn's own schema (its search triggers fire alike), a transaction per 25,000 messages, with
   their parents and leaves: no parsing, no checks, no source ids.
4. Search over the imported data: typical and rare words through ``Finder.find``, median and
   p95 over a few hundred queries.

Prints the figures and Markdown for docs/performance.md; exits 1 when a target is missed
(import ≤ 3× the bare script, peak memory < 300 MB, search median < 20 ms and p95 < 50 ms).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CHATS = int(os.environ.get("CAIRN_BENCH_CHATS", "10000"))
PER_CHAT = 50  # messages: 500,000 for 10,000 chats
VOCABULARY = 30_000
RATIO_BAR, MEMORY_BAR_MB, MEDIAN_BAR, P95_BAR = 3.0, 300.0, 20.0, 50.0
ZERO = "00000000-0000-4000-8000-000000000000"


def vocabulary(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "do", "pe", "ra", "zu", "fo",
                 "gi", "ha", "je", "bo", "cu", "ly", "wa"]
    words: set[str] = set()
    while len(words) < VOCABULARY:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    ordered = sorted(words)
    rng.shuffle(ordered)  # how common a word is owes nothing to its spelling
    return ordered


def chats(seed: int = 40) -> Iterator[dict[str, Any]]:
    """The export's chats, a chat at a time, the same for the same seed."""
    rng = random.Random(seed)
    words = vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(words))]
    cumulative: list[float] = []
    total = 0.0
    for w in weights:
        total += w
        cumulative.append(total)
    for c in range(CHATS):
        day = 1 + c % 28
        messages = []
        parent = ZERO
        for m in range(PER_CHAT):
            text = " ".join(rng.choices(words, cum_weights=cumulative, k=rng.randint(10, 80)))
            at = f"2025-{1 + c % 12:02d}-{day:02d}T10:{m // 60:02d}:{m % 60:02d}Z"
            uuid = f"c{c}-m{m}"
            sender = "human" if m % 2 == 0 else "assistant"
            if c % 10 == 0 and m == 2:  # an edit: a first version of the person's message
                messages.append(_message(f"c{c}-edit", sender, "an earlier version " + text,
                                         at, parent))
            messages.append(_message(uuid, sender, text, at, parent))
            parent = uuid
        yield {"uuid": f"chat-{c}", "name": f"Chat {c} about {words[c % 500]}",
               "created_at": f"2025-{1 + c % 12:02d}-{day:02d}T10:00:00Z",
               "updated_at": f"2025-{1 + c % 12:02d}-{day:02d}T11:00:00Z",
               "account": {"uuid": "acc"}, "chat_messages": messages}


def _message(uuid: str, sender: str, text: str, at: str, parent: str) -> dict[str, Any]:
    return {"uuid": uuid, "text": text, "content": [
        {"start_timestamp": at, "stop_timestamp": at, "type": "text", "text": text,
         "citations": []}], "sender": sender, "created_at": at, "updated_at": at,
        "attachments": [], "files": [], "parent_message_uuid": parent}


def build_export(path: Path) -> int:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("conversations.json", "w", force_zip64=True) as out:
            out.write(b"[")
            for n, chat in enumerate(chats()):
                if n:
                    out.write(b",")
                out.write(json.dumps(chat).encode())
            out.write(b"]")
        zf.writestr("users.json", json.dumps([{"uuid": "acc", "full_name": "Bench"}]))
    with zipfile.ZipFile(path) as zf:
        return zf.getinfo("conversations.json").file_size


# ===================================================================== the two runs


IMPORT = """
import json, os, resource, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from app.cli import main
start = time.perf_counter()
code = main(["import-history", {export!r}, "--json"])
took = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"code": code, "seconds": took, "peak_mb": peak}}), file=sys.stderr)
"""

BARE = """
import json, os, sqlite3, sys, time
sys.path.insert(0, {root!r})
from app.base.db import Database
from app.store.blocks import search_text
from tests.benchmarks.history_import_bench import chats
db = Database.open(__import__("pathlib").Path({data!r}))
db.close()
conn = sqlite3.connect({data!r} + "/cairn.db", isolation_level=None)
conn.execute("PRAGMA journal_mode=WAL"); conn.execute("PRAGMA synchronous=FULL")
conn.execute("PRAGMA foreign_keys=ON")
spent = 0.0
batch_chats, batch_messages = [], []
next_id = 1
def flush():
    global spent, batch_chats, batch_messages
    start = time.perf_counter()
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO chat (id, title, created_at, updated_at, leaf_id,"
                     " knowledge_watermark) VALUES (?, ?, ?, ?, ?, ?)", batch_chats)
    conn.executemany("INSERT INTO message (id, chat_id, role, content, status, created_at,"
                     " search_text, parent_id) VALUES (?, ?, ?, ?, 'complete', ?, ?, ?)",
                     batch_messages)
    conn.execute("COMMIT")
    spent += time.perf_counter() - start
    batch_chats, batch_messages = [], []
for chat in chats():
    ids = {{}}
    for m in chat["chat_messages"]:  # untimed: what the script is handed
        content = [{{"type": "text", "text": m["text"]}}]
        parent = ids.get(m["parent_message_uuid"])
        ids[m["uuid"]] = next_id
        batch_messages.append((next_id, chat["uuid"], "user" if m["sender"] == "human"
                               else "assistant", json.dumps(content), m["created_at"],
                               search_text(content), parent))
        next_id += 1
    batch_chats.append((chat["uuid"], chat["name"], chat["created_at"], chat["updated_at"],
                        next_id - 1, next_id - 1))
    if len(batch_messages) >= 25000:
        flush()
flush()
print(json.dumps({{"seconds": spent, "messages": next_id - 1}}), file=sys.stderr)
"""


def subprocess_json(code: str, data: Path) -> dict[str, Any]:
    env = dict(os.environ, CAIRN_DATA_DIR=str(data), CAIRN_FIRST_USE_DIR=str(data / "Docs"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stderr.strip().splitlines()[-1])


def search_figures(data: Path) -> dict[str, tuple[float, float, int, float, float]]:
    """Per kind of query: median and p95 in ms (wall), how many found something, and the
    median and p95 of the CPU time the query's thread used (what a loaded machine's waiting
    for a core leaves out)."""
    from app.base.db import Database
    from app.store.search import Finder

    db = Database.open(data)
    try:
        finder = Finder(db, lambda sha: b"")
        rng = random.Random(7)
        words = vocabulary(random.Random(40))
        kinds = {
            "typical word": [words[rng.randint(2, 150)] for _ in range(60)],
            "two typical words": [f"{words[rng.randint(2, 150)]} {words[rng.randint(2, 150)]}"
                                  for _ in range(60)],
            "rare word": [words[rng.randint(5000, 29999)] for _ in range(60)],
            "prefix as typed": [words[rng.randint(2, 150)][:3] for _ in range(60)],
        }
        figures: dict[str, tuple[float, float, int, float, float]] = {}
        times: dict[str, list[float]] = {k: [] for k in kinds}
        cpu: dict[str, list[float]] = {k: [] for k in kinds}
        found: dict[str, int] = {k: 0 for k in kinds}
        for queries in kinds.values():  # warm: the first query reads the index in
            finder.find(queries[0])
        for i in range(60):  # interleaved: machine noise hits every kind alike
            for kind, queries in kinds.items():
                start, used = time.perf_counter(), time.thread_time()
                hits = finder.find(queries[i])
                times[kind].append((time.perf_counter() - start) * 1000)
                cpu[kind].append((time.thread_time() - used) * 1000)
                found[kind] += bool(hits)
        for kind, measured in times.items():
            measured.sort()
            spent = sorted(cpu[kind])
            figures[kind] = (statistics.median(measured), measured[int(len(measured) * 0.95) - 1],
                             found[kind], statistics.median(spent),
                             spent[int(len(spent) * 0.95) - 1])
        return figures
    finally:
        db.close()


def main() -> int:
    if "--search-only" in sys.argv:  # the searches again, on a data folder a --keep run left
        data = Path(sys.argv[sys.argv.index("--search-only") + 1])
        for kind, (m, p, n, cm, cp) in search_figures(data).items():
            print(f"| {kind} | {m:.1f} / {p:.1f} ms | CPU {cm:.1f} / {cp:.1f} ms | {n}/60 |")
        print(f"load average {os.getloadavg()[0]:.1f}")
        return 0
    base = Path(sys.argv[sys.argv.index("--dir") + 1]) if "--dir" in sys.argv else None
    work = Path(tempfile.mkdtemp(prefix="cairn-history-bench-", dir=base))
    try:
        export = work / "claude-export.zip"
        start = time.perf_counter()
        size = build_export(export)
        print(f"export built: {CHATS:,} chats, {CHATS * PER_CHAT:,} messages (+{CHATS // 10:,} "
              f"edits), conversations.json {size / 1e6:,.0f} MB unpacked, zip "
              f"{export.stat().st_size / 1e6:,.0f} MB, in {time.perf_counter() - start:.0f} s")
        bare = subprocess_json(BARE.format(root=str(ROOT), data=str(work / "bare")),
                               work / "bare")
        imported = subprocess_json(IMPORT.format(root=str(ROOT), export=str(export)),
                                   work / "imported")
        ratio = imported["seconds"] / bare["seconds"]
        searched = search_figures(work / "imported")
        load = os.getloadavg()[0]
        rows = [
            ("import, `cairn import-history` (survey + import)", f"{imported['seconds']:.1f} s"),
            ("the same messages, bare script (`executemany`, same schema)",
             f"{bare['seconds']:.1f} s"),
            ("ratio (target ≤ 3×)", f"{ratio:.2f}×"),
            ("peak memory of the import (target < 300 MB)", f"{imported['peak_mb']:.0f} MB"),
        ] + [(f"search afterwards, {kind}: median / p95 (targets 20 / 50 ms)",
               f"{m:.1f} / {p:.1f} ms (CPU {cm:.1f} / {cp:.1f} ms; {n} of 60 found something)")
             for kind, (m, p, n, cm, cp) in searched.items()]
        rows.append(("load average at the end (2 cores)", f"{load:.1f}"))
        for what, value in rows:
            print(f"{what}: {value}")
        ok = ratio <= RATIO_BAR and imported["peak_mb"] < MEMORY_BAR_MB and all(
            m < MEDIAN_BAR and p < P95_BAR for m, p, *_ in searched.values())
        print("\nMarkdown (for docs/performance.md):\n")
        print(table(size, export.stat().st_size, imported, bare, searched))
        return 0 if ok else 1
    finally:
        if "--keep" in sys.argv:
            print(f"kept: {work} (--search-only {work / 'imported'})")
        else:
            shutil.rmtree(work, ignore_errors=True)


def table(size: int, zipped: int, imported: dict[str, float], bare: dict[str, float],
          searched: dict[str, tuple[float, float, int, float, float]]) -> str:
    """The page's table: the import against the bare script, its memory, the searches."""
    def verdict(good: bool) -> str:
        return "ok" if good else "MISSED"

    ratio = imported["seconds"] / bare["seconds"]
    lines = [
        f"| {CHATS:,} chats / {CHATS * PER_CHAT:,} messages ({size / 1e6:,.0f} MB of JSON, a "
        f"{zipped / 1e6:,.0f} MB zip) | measured | target |",
        "| --- | --- | --- |",
        f"| import, `cairn import-history` (survey + import) | {imported['seconds']:.1f} s | |",
        f"| the same messages, bare `executemany` script | {bare['seconds']:.1f} s | |",
        f"| ratio | {ratio:.2f}× | ≤ {RATIO_BAR:g}× {verdict(ratio <= RATIO_BAR)} |",
        f"| peak memory of the import (`ru_maxrss`) | {imported['peak_mb']:.0f} MB "
        f"| < {MEMORY_BAR_MB:g} MB {verdict(imported['peak_mb'] < MEMORY_BAR_MB)} |",
    ]
    for n, (kind, (m, p, *_)) in enumerate(searched.items()):
        what = f"search afterwards: a {kind}, median / p95" if n == 0 else (
            kind if kind.startswith("two") else f"a {kind}")
        lines.append(f"| {what} | {m:.1f} / {p:.1f} ms | {MEDIAN_BAR:g} / {P95_BAR:g} ms "
                     f"{verdict(m < MEDIAN_BAR and p < P95_BAR)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
