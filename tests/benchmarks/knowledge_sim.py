"""Knowledge simulation: 200 exchanges through the real validator.

Run: ``uv run python tests/benchmarks/knowledge_sim.py`` (not part of ``uv run pytest``).

A scripted knowledge model reads the labelled document like the real one would and answers
``update_knowledge`` ops: it adds each exchange's new fact (with its evidence), updates facts
that changed (keeping the old value as "(was …)"), and — following the length guidance —
merges related entries once the document passes 20,000 characters.  Every op goes through
``app.knowledge.validator.apply_ops``.  Reported: the document's size over time, whether every hard
token ever recorded is still there, and output tokens per rebuild against what re-typing the
whole document would emit (target: at most 10%).  Exits 1 when a target is missed.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.knowledge.document import entries, hard_tokens, labelled  # noqa: E402
from app.knowledge.validator import Layer, apply_ops  # noqa: E402

EXCHANGES = 200
SOFT_CAP = 20_000
TARGET_SIZE = 30_000
TARGET_RATIO = 0.10
CHARS_PER_TOKEN = 4  # the usual rough figure for English text and JSON


def change_of(document: str, n: int) -> tuple[str, str, str, str] | None:
    """Now and then an earlier fact changes: (its label, shipment, old date, new date)."""
    items = entries(document)
    if n % 10 != 9 or not items:
        return None
    target = items[n % len(items)]
    old = re.findall(r"\d{4}-\d{2}-\d{2}", target.text.split(" (updated")[0])
    shipment = re.search(r"S\d{4}", target.text)
    if not old or not shipment or "Depot" in target.text:
        return None
    return f"P{target.index + 1}", shipment[0], old[0], f"2028-01-{n % 28 + 1:02d}"


def exchange(n: int, change: tuple[str, str, str, str] | None = None) -> tuple[str, list[str]]:
    """An exchange and the three facts it teaches (each quoted in it, as evidence), and the
    change of an earlier fact when there is one."""
    depot = f"D{n % 23}"
    day = f"2027-{n % 12 + 1:02d}-{n % 28 + 1:02d}"
    facts = [
        f"Shipment S{1000 + n} leaves depot {depot} on {day} with {40 + n % 60} pallets",
        f"Carrier contact for S{1000 + n} at depot {depot} is ops{n % 7}@acme.example",
        f"Tracking page for S{1000 + n} from depot {depot} is https://track.acme.example/S{1000 + n}",
    ]
    user = f"Can you confirm the plan for shipment S{1000 + n}?"
    reply = "Confirmed. " + ". ".join(facts) + "."
    if change:
        reply += f" Also, {change[1]} now leaves on {change[3]} instead of {change[2]}."
    return user + "\n" + reply + " Anything else?", facts


def scripted_model(document: str, exchange_text: str, facts: list[str], n: int,
                   change: tuple[str, str, str, str] | None = None) -> dict:
    """What a well-behaved knowledge model answers for one exchange."""
    ops: list[dict] = []
    items = entries(document)
    if change:  # the changed fact: its value replaced (the old one stays in the history)
        ref, shipment, old, new = change
        head = items[int(ref[1:]) - 1].text.lstrip("- ").split(" (updated")[0]
        ops.append({"op": "update", "ref": ref, "text": head.replace(old, new),
                    "evidence": f"{shipment} now leaves on {new}"})
    ops += [{"op": "add", "target": "project", "section": "Facts", "text": fact,
             "evidence": fact} for fact in facts[: 3 - len(ops)]]
    if len(document) > SOFT_CAP:  # merge entries of the same depot, as the guidance asks
        by_depot: dict[str, list] = defaultdict(list)
        for item in items:
            depot = re.search(r"depot (D\d+)", item.text)
            if depot and item.index not in {int(o["ref"][1:]) - 1 for o in ops if "ref" in o}:
                by_depot[depot.group(1)].append(item)
        for depot, group in sorted(by_depot.items(), key=lambda kv: -len(kv[1]))[:2]:
            if len(group) < 3:
                continue
            tokens = sorted(set().union(*(hard_tokens(i.text) for i in group)))
            ops.append({"op": "merge", "refs": [f"P{i.index + 1}" for i in group],
                        "text": f"Depot {depot} shipments (ids, dates, pallets, contacts, links): "
                                + ", ".join(tokens)})
    return {"ops": ops}


def main() -> int:
    document = ""
    recorded: set[str] = set()
    ratios: list[float] = []
    output_tokens: list[int] = []
    sizes: list[int] = []
    refused = 0
    for n in range(EXCHANGES):
        change = change_of(document, n)
        text, facts = exchange(n, change)
        prompt_view = labelled(document, "P")  # what the model would read
        assert prompt_view.count("P1: ") <= 1
        tool_input = scripted_model(document, text, facts, n, change)
        before_tokens = hard_tokens(document)
        outcome = apply_ops(tool_input, layers=[Layer("project", "P", document)], exchanges=text,
                            today="2026-11-30", qualifying_exchanges=1)
        refused += len(outcome.refused)
        document = outcome.texts.get("project", document)
        replaced = {change[2]} if change and any(
            op["op"] == "update" for op in outcome.applied) else set()
        recorded -= replaced
        missing = before_tokens - hard_tokens(document) - replaced  # replaced: in the history
        if missing:
            print(f"exchange {n}: hard tokens lost: {sorted(missing)[:5]}")
            return 1
        for op in tool_input["ops"]:  # every token an applied add recorded must survive
            if op["op"] == "add" and op in outcome.applied:
                recorded |= hard_tokens(op["text"])
        emitted = len(json.dumps(tool_input)) / CHARS_PER_TOKEN
        rewrite = len(document) / CHARS_PER_TOKEN
        output_tokens.append(round(emitted))
        ratios.append(emitted / rewrite)
        sizes.append(len(document))
    kept = all(token in document for token in recorded)
    tail = sizes[-50:]
    ratio = statistics.mean(ratios[20:])  # past the first, tiny documents
    ok = kept and max(tail) <= TARGET_SIZE and ratio <= TARGET_RATIO
    rows = [
        ("exchanges", f"{EXCHANGES}"),
        ("final document", f"{len(document):,} characters, {len(entries(document))} entries"),
        ("largest size over the last 50", f"{max(tail):,} characters (target about {TARGET_SIZE:,})"),
        ("hard tokens recorded / still present", f"{len(recorded)} / {sum(t in document for t in recorded)}"),
        ("ops refused by the validator", f"{refused}"),
        ("output tokens per rebuild (median)", f"{statistics.median(output_tokens):.0f}"),
        ("output tokens as a share of a full rewrite (mean)", f"{ratio:.1%} (target ≤ 10%)"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("\nok" if ok else "\nMISSED")
    print("\nMarkdown (for docs/performance.md):\n")
    print("| measure | result |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
