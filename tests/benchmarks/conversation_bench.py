"""Conversation benchmark (DESIGN.md §10).

Run: ``uv run python tests/benchmarks/conversation_bench.py`` (not part of ``uv run pytest``).

a. Assembling the context (``ChatEngine.system``) for a chat in a folder whose project and
   folder documents are 30,000 characters each, with 500 knowledge files — target < 5 ms.
b. Time to first token through Cairn (``ChatEngine.send``: store the message, build the
   context, stream) against the same fake server read directly with the SDK, interleaved
   in one run — the overhead Cairn adds, target < 20 ms.

Exits 1 when a target is missed.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import keyring  # noqa: E402

from tests.fake_anthropic import FakeAnthropic  # noqa: E402
from tests.memory_keyring import MemoryKeyring  # noqa: E402

RUNS = 200
TURNS = 30


def document(size: int, label: str) -> str:
    sections = ["## Facts", "## Decisions", "## People & contacts", "## Open questions"]
    lines: list[str] = []
    i = 0
    while sum(len(x) + 1 for x in lines) < size - 120:
        if i % 40 == 0:
            lines.append(sections[(i // 40) % len(sections)])
        lines.append(f"- {label} entry {i}: decided on vendor {i % 17} for launch 2027-0{1 + i % 9}-15")
        i += 1
    return "\n".join(lines)[:size]


async def main() -> int:
    keyring.set_keyring(MemoryKeyring())
    base = Path(tempfile.mkdtemp(prefix="cairn-conv-bench-"))
    os.environ["CAIRN_DATA_DIR"] = str(base / "data")
    os.environ["CAIRN_FIRST_USE_DIR"] = str(base / "Documents" / "Cairn")
    from app.cairn import Cairn
    from app.store.settings import (
        CHAT_MODEL,  # the default the turn through Cairn uses too
    )

    (base / "Acme" / "Brand").mkdir(parents=True)
    cairn = Cairn.open()
    project, _ = cairn.registry.add_workspace(str(base / "Acme"))
    folder, _ = cairn.registry.add_workspace(str(base / "Acme" / "Brand"))
    cairn.registry.update_workspace(project.id, description="Coffee brand.", instructions="Formal.")
    cairn.knowledge.save(project.id, document(30_000, "project"), source="user")
    cairn.knowledge.save(folder.id, document(30_000, "folder"), source="user")
    sample = base / "sample.txt"
    for i in range(500):
        sample.write_text(f"file {i}")
        cairn.files.add(project.id if i % 2 else folder.id, sample.rename(base / f"f{i}.txt"),
                        description=f"Document number {i}")
    chat = cairn.registry.new_chat(folder=folder.path)
    header = cairn.registry.chat(chat.id)

    for _ in range(10):
        cairn.engine.system(header, "what vendor did we pick?")
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        blocks = cairn.engine.system(header, "what vendor did we pick?")
        samples.append(time.perf_counter() - started)
    context_ms = statistics.median(samples) * 1000
    context_chars = sum(len(b["text"]) for b in blocks)

    import anthropic

    with FakeAnthropic() as fake:
        cairn.settings.set("api.base_url", fake.base_url)
        cairn.settings.set_api_key("sk-bench")
        direct = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-bench", max_retries=0)
        bare, through = [], []
        for turn in range(TURNS + 3):
            fake.reply_text("First token, then the rest of a short reply.", chunk=5)
            started = time.perf_counter()
            first: list[float] = []
            async with direct.messages.stream(
                model=CHAT_MODEL, max_tokens=100, system=blocks,
                messages=[{"role": "user", "content": "hi"}],
            ) as stream:
                async for _text in stream.text_stream:
                    if not first:
                        first.append(time.perf_counter() - started)
            fake.reply_text("First token, then the rest of a short reply.", chunk=5)
            started = time.perf_counter()
            mine: list[float] = []
            await cairn.engine.send(chat.id, f"question {turn}", on_text=lambda _t: mine.append(
                time.perf_counter() - started) if not mine else None)
            if turn >= 3:  # warm-up: connection pools, caches
                bare.append(first[0])
                through.append(mine[0])
        await direct.close()
    bare_ms = statistics.median(bare) * 1000
    through_ms = statistics.median(through) * 1000
    overhead_ms = through_ms - bare_ms
    cairn.close()

    ok_context = context_ms < 5
    ok_ttft = overhead_ms < 20
    rows = [
        ("context assembly (2 × 30,000-char documents, 500 files)", f"{context_ms:.2f} ms",
         f"median of {RUNS}; {context_chars:,} characters", "< 5 ms", ok_context),
        ("time to first token, SDK straight to the fake server", f"{bare_ms:.2f} ms",
         f"median of {TURNS}", "", True),
        ("time to first token through Cairn (store, context, stream)", f"{through_ms:.2f} ms",
         f"median of {TURNS}", "", True),
        ("overhead Cairn adds to the first token", f"{overhead_ms:.2f} ms", "difference of medians",
         "< 20 ms", ok_ttft),
    ]
    for name, value, note, target, ok in rows:
        flag = "" if not target else ("ok" if ok else "MISSED")
        print(f"{name:60} {value:>10}  {note:38} {target:8} {flag}")
    print("\nMarkdown (for docs/performance.md):\n")
    print("`uv run python tests/benchmarks/conversation_bench.py`\n")
    print("| measure | result | note | target |")
    print("| --- | ---: | --- | --- |")
    for name, value, note, target, ok in rows:
        print(f"| {name} | {value} | {note} | {target + (' ok' if ok else ' MISSED') if target else ''} |")
    return 0 if ok_context and ok_ttft else 1


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
