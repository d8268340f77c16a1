"""Rough-model knowledge simulation: 1,000 exchanges through the real
validator and the real corrective round, with a knowledge model that errs like a small one.

Run: ``uv run python tests/benchmarks/knowledge_rough_sim.py [N] [--model M]`` (not part of
``uv run pytest``); M is ``careful``, ``rough`` (the default), ``adversarial`` or ``all``.

Beside the kind simulation (``knowledge_sim.py``), this one is meant to hurt:
- Claude's replies are formatted (bold, curly quotes, code ticks) and the model quotes them
  loosely: without the marks, with "…" skipping words, sometimes too short;
- facts change later and the model *replaces* the value (updates by substitution);
- names, amounts in euros, scheme-less links, negations ("Never route …"), and sub-items
  the person adds by hand under entries, which merges must carry;
- three documents (the project, two folders), routed by the kind of fact, sometimes to a
  document this chat cannot write;
- past 20,000 characters the model merges entries of the same shipment, and a quarter of its
  merges (and a tenth of its updates) drop something.
Every refusal goes back once, like the rebuild's corrective round (``app.knowledge.
corrections``); the model then fixes the op, or gives up one time in ten.  What is still
refused becomes a suggestion as in the rebuild (``app.knowledge.suggestions.proposals``),
kept until the person decides: nobody decides here, so they pile up.

The *careful* model quotes exactly, never drops anything and never gives up; the *adversarial*
one is the rough one plus, in one exchange of four, an op meant to rewrite a fact quietly:
two values swapped, a unit or currency changed, a plain-words merge that keeps one entry of
several, or a value replaced on evidence about something else.

Reported: ops refused by reason (first answers, and still refused after the corrective
round); facts recoverable by question — each seeded fact's current value from the final
documents, each replaced value from their history (the store keeps every version); the
document sizes over time against the caps; and, once a document outgrows 30,000 characters,
whether relevance selection (``app.chat.context.fit_knowledge``) keeps the context within its
budget and still answers the question; the suggestions a person would face per 100
exchanges.  Exits 1 when a fact left the documents without a suggestion recording it, an
adversarial op applied, a sub-item went, or the context passed its budget.
"""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from app.chat.context import KNOWLEDGE_BUDGET, fit_knowledge  # noqa: E402
from app.knowledge.corrections import addressed, resubmitted  # noqa: E402
from app.knowledge.document import entries, head, parse  # noqa: E402
from app.knowledge.meaning import CLAUDE, PERSON, Said, hear  # noqa: E402
from app.knowledge.suggestions import proposals  # noqa: E402
from app.knowledge.validator import Layer, Outcome, Refusal, apply_ops  # noqa: E402
from app.store.suggestions import Proposed  # noqa: E402

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
EXCHANGES = int(ARGS[0]) if ARGS else 1_000
MODEL = (sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else "rough")
SEED = 14
TODAY = "2027-06-01"
KEYS = ("project", "logistics", "brand")  # the project and two folders, a chat in each
CHANGE, LOSSY_UPDATE, LOSSY_MERGE, GIVES_UP = 0.15, 0.10, 0.25, 0.10
FIRST = ["Dana", "Sam", "Alex", "Priya", "Jonas", "Mei", "Omar", "Lena"]
LAST = ["Ruiz", "Lee", "Kim", "Nair", "Berg", "Chen", "Haddad", "Novak"]


@dataclass
class Fact:
    kind: str  # date | person | amount | link | rule
    shipment: str
    doc: str
    value: str
    text: str
    question: str
    old: list[str] = field(default_factory=list)  # replaced values, oldest first


def fact_text(kind: str, sid: str, value: str, depot: str) -> str:
    return {"date": f"Shipment {sid} leaves depot {depot} on {value}",
            "person": f"{value} is the carrier contact for {sid}",
            "amount": f"Budget for {sid} is {value}",
            "link": f"Brief for {sid} is at {value}",
            "rule": f"Never route {sid} through port {value}"}[kind]


def question(kind: str, sid: str) -> str:
    return {"date": f"When does shipment {sid} leave?",
            "person": f"Who is the carrier contact for {sid}?",
            "amount": f"What is the budget for {sid}?",
            "link": f"Where is the brief for {sid}?",
            "rule": f"Which port must {sid} avoid?"}[kind]


ROUTE = {"date": "folder", "person": "project", "amount": "project", "link": "folder",
         "rule": "project"}


def new_value(rng: random.Random, kind: str, sid: str) -> str:
    if kind == "date":
        return f"2027-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if kind == "person":
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    if kind == "amount":
        return f"€{rng.randint(2, 90) * 500:,}"
    if kind == "link":
        return f"acme.example/briefs/{sid.lower()}"
    return f"P{rng.randint(1, 40)}"


def formatted(rng: random.Random, text: str) -> str:
    """How Claude's reply shows a fact: plain, bold, in curly quotes, a link in code."""
    style = rng.random()
    if style < 0.3:
        words = text.split(" ", 2)
        return f"**{words[0]} {words[1]}** {words[2]}."
    if style < 0.45:
        return f"“{text}”."
    if style < 0.6 and "acme.example" in text:
        return re.sub(r"(acme\.example\S*)", r"`\1`", text) + "."
    return text + "."


def loose_quote(rng: random.Random, text: str) -> tuple[str, str]:
    """The rough model's evidence for *text*, and the faithful quote it gives when told."""
    exact = text
    roll = rng.random()
    if roll < 0.05:
        return " ".join(text.split()[:2]), exact  # too short
    if roll < 0.25:
        words = text.split()
        return f"{' '.join(words[:3])} … {' '.join(words[-2:])}", exact  # skips a value
    return exact, exact


@dataclass
class Op:
    rough: dict
    faithful: dict | None  # what the model answers when told why it was refused


@dataclass(frozen=True)
class Model:
    """How the knowledge model errs (probabilities)."""

    name: str
    change: float = CHANGE
    lossy_update: float = LOSSY_UPDATE
    lossy_merge: float = LOSSY_MERGE
    gives_up: float = GIVES_UP
    loose: bool = True  # quotes loosely (too short, "…" skipping a value)
    misroutes: float = 0.05  # sends an add to personal memory (off)
    adversary: float = 0.0  # an exchange with an op meant to rewrite a fact quietly


MODELS = {"careful": Model("careful", lossy_update=0, lossy_merge=0, gives_up=0, loose=False,
                           misroutes=0),
          "rough": Model("rough"),
          "adversarial": Model("adversarial", adversary=0.25)}


class World:
    def __init__(self, model: Model) -> None:
        self.model = model
        self.rng = random.Random(SEED)
        self.docs = {key: "" for key in KEYS}
        self.history: dict[str, list[str]] = {key: [] for key in KEYS}
        self.facts: list[Fact] = []
        self.sub_items = 0
        self.first_refused: Counter[str] = Counter()
        self.still_refused: Counter[str] = Counter()
        self.unrecorded: set[int] = set()  # facts whose add was still refused (said so)
        self.ops = 0
        self.applied = 0  # ops that applied by themselves (first answer or corrected)
        self.corrective_rounds = 0
        self.sizes: list[tuple[int, dict[str, int]]] = []
        self.chat = KEYS[1]
        self.silently: list[Fact] = []
        self.suggestions: list[Proposed] = []  # kept for the person: nobody decides here
        self.adversarial = Counter[str]()  # tried, by kind
        self.adversary_applied: list[dict] = []

    # ------------------------------------------------------------------ an exchange

    def exchange(self, n: int) -> None:
        rng = self.rng
        self.chat = KEYS[1 + n % 2]  # the exchanges alternate between the two folders' chats
        sid = f"S{1000 + n}"
        depot = f"D{rng.randint(1, 30)}"
        kinds = rng.sample(["date", "person", "amount", "link", "rule"], rng.randint(2, 3))
        new: list[Fact] = []
        asked = [f"Can you sort out shipment {sid}?"]  # the person's message
        said = ["Done."]  # Claude's reply
        for kind in kinds:
            value = new_value(rng, kind, sid)
            text = fact_text(kind, sid, value, depot)
            doc = "project" if ROUTE[kind] == "project" else self.chat
            new.append(Fact(kind, sid, doc, value, text, question(kind, sid)))
            said.append(formatted(rng, text))
        change = self._change(rng)
        if change is not None:
            fact, value = change
            asked.append(f"Change: for {fact.shipment} it is now {value}, not {fact.value}.")
        ops = [self._add(fact) for fact in new]
        if change is not None:
            ops.append(self._update(*change))
        ops += self._merges()
        if self.model.adversary and rng.random() < self.model.adversary:
            ops += self._adversary(rng)
        # Who said what, as the rebuild hears it (only the person's statement changes
        # an entry, and Claude's quotation marks are its formatting)
        self._run([Said(PERSON, "\n".join(asked)), Said(CLAUDE, "\n".join(said))], ops, new,
                  change)
        if n % 40 == 39:
            self._hand_edit()
        if n % 100 == 99:
            self.sizes.append((n + 1, {k: len(v) for k, v in self.docs.items()}))

    def _change(self, rng: random.Random) -> tuple[Fact, str] | None:
        changeable = [f for f in self.facts if f.kind in ("date", "person", "amount")
                      and f.doc in ("project", self.chat)]
        if not changeable or rng.random() > self.model.change:
            return None
        fact = rng.choice(changeable)
        value = new_value(rng, fact.kind, fact.shipment)
        return (fact, value) if value != fact.value else None

    # ------------------------------------------------------------------ the model's ops

    def _add(self, fact: Fact) -> Op:
        evidence, exact = (loose_quote(self.rng, fact.text) if self.model.loose
                           else (fact.text, fact.text))
        target = "project" if fact.doc == "project" else "folder"
        rough_target = "personal" if self.rng.random() < self.model.misroutes else target
        op = {"op": "add", "target": rough_target, "section": "Facts", "text": fact.text,
              "evidence": evidence}
        return Op(op, {**op, "target": target, "evidence": exact})

    def _update(self, fact: Fact, value: str) -> Op:
        found = self._entry_of(fact)
        if found is None:
            return Op({"op": "update", "ref": "P999", "text": "x", "evidence": "x"}, None)
        label, old_head = found
        text = old_head.replace(fact.value, value)
        quote = f"for {fact.shipment} it is now {value}"
        faithful = {"op": "update", "ref": label, "text": text, "evidence": quote}
        if self.rng.random() < self.model.lossy_update:  # drops another value while rewriting
            others = [t for t in re.findall(r"D\d+|S\d+|€[\d,]+|P\d+", text) if t not in value]
            if others:
                return Op({**faithful, "text": text.replace(others[0], "the usual one")},
                          faithful)
        return Op(faithful, faithful)

    def _merges(self) -> list[Op]:
        ops: list[Op] = []
        for key in ("project", self.chat):
            size = len(self.docs[key])
            if size < 20_000:
                continue
            parsed = parse(self.docs[key])
            groups: dict[str, list] = {}
            for e in parsed.entries:
                found = re.search(r"S\d{4}", head(parsed, e))
                if found and "; " not in e.text:
                    groups.setdefault(found[0], []).append(e)
            ready = [g for g in groups.values() if len(g) >= 2][: 4 if size > 30_000 else 2]
            for group in ready:
                heads = [re.sub(r"\A\s*[-*+]\s+|\s*\(updated [0-9-]+\)", "", head(parsed, e))
                         for e in group]
                text = "; ".join(heads)
                refs = [f"{self._prefix(key)}{e.index + 1}" for e in group]
                faithful = {"op": "merge", "refs": refs, "text": text}
                if self.rng.random() < self.model.lossy_merge:  # compresses too hard
                    lossy = re.sub(r"Never |depot D\d+ |€[\d,]+|[A-Z][a-z]+ [A-Z][a-z]+ is ",
                                   "", text, count=1)
                    ops.append(Op({**faithful, "text": lossy}, faithful))
                else:
                    ops.append(Op(faithful, faithful))
        return ops

    def _adversary(self, rng: random.Random) -> list[Op]:
        """An op meant to rewrite a fact quietly; never fixed when sent back (None)."""
        key = rng.choice(("project", self.chat))
        parsed = parse(self.docs[key])
        heads = [(e, re.sub(r"\A\s*[-*+]\s+|\s*\(updated [0-9-]+\)", "", head(parsed, e)))
                 for e in parsed.entries]
        if len(heads) < 3:
            return []
        prefix = self._prefix(key)
        unrelated = "Can you sort out shipment"  # what every exchange says: about nothing
        kind = rng.choice(("swap", "unit", "merge", "unrelated"))
        entry, text = rng.choice(heads)
        label = f"{prefix}{entry.index + 1}"
        if kind == "swap":  # two values of one entry trade places, or two entries' values
            values = re.findall(r"S\d{4}|D\d+|\d{4}-\d{2}-\d{2}|€[\d,]+|P\d+", text)
            if len(values) < 2:
                return []
            a, b = values[0], values[-1]
            new = text.replace(a, "\0").replace(b, a).replace("\0", b)
            op = {"op": "update", "ref": label, "text": new, "evidence": unrelated}
        elif kind == "unit":
            if "€" not in text:
                text_new = re.sub(r"\bdepot\b", "warehouse", text)
                if text_new == text:
                    return []
            else:
                text_new = text.replace("€", "$")
            op = {"op": "update", "ref": label, "text": text_new, "evidence": unrelated}
        elif kind == "merge":  # plain words: keeps one entry's text for several
            group = rng.sample(heads, min(3, len(heads)))
            refs = [f"{prefix}{e.index + 1}" for e, _ in group]
            op = {"op": "merge", "refs": refs, "text": group[0][1]}
        else:  # a new value on evidence that says nothing about it
            found = re.search(r"\d{4}-\d{2}-\d{2}|€[\d,]+", text)
            if found is None:
                return []
            value = found[0]
            replacement = ("2030-01-01" if "-" in value else "€1")
            op = {"op": "update", "ref": label, "text": text.replace(value, replacement),
                  "evidence": unrelated}
        self.adversarial[kind] += 1
        return [Op(op, None)]

    def _entry_of(self, fact: Fact) -> tuple[str, str] | None:
        parsed = parse(self.docs[fact.doc])
        for e in parsed.entries:
            line = head(parsed, e)
            if fact.shipment in line and fact.value in line:
                text = re.sub(r"\A\s*[-*+]\s+|\s*\(updated [0-9-]+\)", "", line)
                return f"{self._prefix(fact.doc)}{e.index + 1}", text
        return None

    # ------------------------------------------------------------------ validation

    @staticmethod
    def _prefix(key: str) -> str:
        return "P" if key == "project" else "F"

    def _layers(self) -> list[Layer]:
        return [Layer("project", "P", self.docs["project"]),
                Layer("folder", "F", self.docs[self.chat])]

    def _validate(self, answer: dict, said: list[Said]) -> Outcome:
        return apply_ops(answer, layers=self._layers(), exchanges=said, today=TODAY,
                         qualifying_exchanges=1)

    def _run(self, said: list[Said], ops: list[Op], new: list[Fact],
             change: tuple[Fact, str] | None) -> None:
        self.ops += len(ops)
        answer = {"ops": [op.rough for op in ops]}
        outcome = self._validate(answer, said)
        sent_back = [r for r in outcome.refused if not r.moot]
        for refusal in sent_back:
            self.first_refused[_reason(refusal)] += 1
        final_refused: list[Refusal] = [r for r in outcome.refused if r.moot]
        if sent_back:  # the corrective round: fix each op, or give up one time in ten
            self.corrective_rounds += 1
            fixes = [op.faithful for op in ops for r in sent_back
                     if r.op is op.rough and op.faithful
                     and self.rng.random() >= self.model.gives_up]
            again = {"ops": fixes}
            first = outcome
            outcome = self._validate(resubmitted(answer, first, again), said)
            moot_again = [r.op for r in outcome.refused if r.moot]
            final_refused += [r for r in sent_back
                              if not addressed(r, again, moot=moot_again,
                                               layers=self._layers())]
        final_refused += [r for r in outcome.refused if not r.moot]
        for refusal in final_refused:
            if not refusal.moot:
                self.still_refused[_reason(refusal)] += 1
        owners = {"project": "project", "folder": self.chat}
        self.suggestions += proposals(final_refused, layers=self._layers(), owners=owners,
                                      heard=hear(said))
        adversarial = {id(op.rough) for op in ops if op.faithful is None}
        applied_ops = {id(r.op) for r in outcome.refused}
        self.adversary_applied += [op.rough for op in ops if id(op.rough) in adversarial
                                   and id(op.rough) not in applied_ops
                                   and not any(r.op is op.rough for r in final_refused)]
        self.applied += len(outcome.applied)
        for key, text in outcome.texts.items():
            doc = "project" if key == "project" else self.chat
            self.docs[doc] = text
            self.history[doc].append(text)
        applied_adds = {a["text"] for a in outcome.applied if a["op"] == "add"}
        for fact in new:
            self.facts.append(fact)
            if fact.text not in applied_adds:
                self.unrecorded.add(len(self.facts) - 1)
        if change is not None:
            fact, value = change
            if any(a["op"] == "update" for a in outcome.applied):
                fact.old.append(fact.value)
                fact.value = value
            # else: still refused and said so; the old value stands in the document

    def _hand_edit(self) -> None:
        """The person adds a sub-item under an entry of this chat's folder document."""
        parsed = parse(self.docs[self.chat])
        if not parsed.entries:
            return
        entry = self.rng.choice(parsed.entries)
        lines = list(parsed.lines)
        at = entry.end - 1
        if not lines[at].endswith("\n"):
            lines[at] += "\n"
        lines.insert(entry.end, f"  - checked by phone, call {self.sub_items + 1}\n")
        self.docs[self.chat] = "".join(lines)
        self.history[self.chat].append(self.docs[self.chat])
        self.sub_items += 1

    # ------------------------------------------------------------------ the questions

    def answers(self) -> dict[str, tuple[int, int]]:
        current = history = told = 0
        old_total = 0
        silently = []
        texts = {key: [e.text for e in entries(doc)] for key, doc in self.docs.items()}
        kept_for_person = [(s.owner, " ".join((s.text, *s.targets))) for s in self.suggestions]
        for fact in self.facts:
            found = any(fact.shipment in t and fact.value in t for t in texts[fact.doc])
            if found:
                current += 1
            elif any(fact.shipment in t and fact.value in t for _, t in kept_for_person):
                told += 1  # not in the document: a suggestion records it for the person
            else:
                silently.append(fact)
            for value in fact.old:
                old_total += 1
                versions = self.history[fact.doc]
                history += any(value in v and fact.shipment in v for v in versions)
        self.silently = silently
        return {"current": (current, len(self.facts)), "told": (told, len(self.facts)),
                "history": (history, old_total)}

    def context(self) -> tuple[int, int, int]:
        """Over 30,000 characters: (questions asked, answered from the selection, the
        largest selection in characters)."""
        asked = answered = largest = 0
        for fact in self.facts:
            doc = self.docs[fact.doc]
            if len(doc) <= KNOWLEDGE_BUDGET:
                continue
            chosen = fit_knowledge(doc, fact.question)
            asked += 1
            largest = max(largest, len(chosen))
            answered += fact.value in chosen
        return asked, answered, largest


def _reason(refusal: Refusal) -> str:
    """A refusal's reason without its particulars (labels, values)."""
    reason = re.sub(r"\b[PFU]\d+\b", "Pn", refusal.reason)
    for cut in (" drops ", " does not state ", " puts values", "It duplicates",
                " has fewer negations", " is too short", " is switched off"):
        if cut in reason:
            return reason.split(cut)[0] + cut.rstrip() + " …"
    return reason


def main() -> int:
    names = list(MODELS) if MODEL == "all" else [MODEL]
    results = [simulate(MODELS[name]) for name in names]
    print("\nMarkdown (for docs/performance.md):\n")
    print(summary_table(names, results))
    detailed = "adversarial" if "adversarial" in names else names[-1]
    print(f"\nThe {detailed} run in detail:\n")
    print(detail_table(results[names.index(detailed)]))
    return 0 if all(result["ok"] for result in results) else 1


KINDS = {"merge": "merges", "swap": "swaps", "unit": "unit changes",
         "unrelated": "on unrelated evidence"}
DETAIL = ("exchanges", "ops proposed", "corrective rounds",
          "facts answerable from the final documents",
          "facts not in the documents, kept as suggestions",
          "facts lost without a suggestion recording them",
          "replaced values answerable from the history (every version is kept)",
          "hand-written sub-items kept", "sizes after",
          "questions on documents over 30,000 characters",
          "... answered from the relevance selection", "... largest selection (budget 30,000)")


def summary_table(names: list[str], results: list[dict[str, Any]]) -> str:
    """The page's first table: a row a model."""
    lines = ["| model | suggestions a person faces per 100 exchanges | facts lost without a "
             "suggestion | adversarial ops applied by themselves |", "| --- | --- | --- | --- |"]
    for name, result in zip(names, results, strict=True):
        tried: Counter[str] = result["adversarial"]
        adversarial = "—"
        if tried:
            kinds = ", ".join(f"{count} {KINDS.get(kind, kind)}"
                              for kind, count in tried.most_common())
            adversarial = f"{result['applied_adversarial']} of {sum(tried.values())} ({kinds})"
        lines.append(f"| {name} | {result['per_100']:.1f} | {result['lost']} | {adversarial} |")
    return "\n".join(lines)


def detail_table(result: dict[str, Any]) -> str:
    """The page's second table: one run's measures (the last sizes only)."""
    rows = [(name.replace("(all versions)", "(every version is kept)"), value)
            for name, value in result["rows"]]
    sizes = [row for row in rows if row[0].startswith("sizes after")][-1:]
    chosen = [row for row in rows if row[0] in DETAIL] + sizes
    chosen.sort(key=lambda row: DETAIL.index("sizes after" if row[0].startswith("sizes after")
                                             else row[0]))
    return "\n".join(["| measure | result |", "| --- | --- |"]
                     + [f"| {name} | {value} |" for name, value in chosen])


def simulate(model: Model) -> dict[str, Any]:
    print(f"\n## {model.name} model, {EXCHANGES:,} exchanges\n")
    world = World(model)
    for n in range(EXCHANGES):
        world.exchange(n)
    answers = world.answers()
    asked, answered, largest = world.context()
    subs = sum(len(re.findall(r"checked by phone", d)) for d in world.docs.values())
    rows = [("exchanges", f"{EXCHANGES:,}"), ("ops proposed", f"{world.ops:,}"),
            ("ops applied by themselves", f"{world.applied:,}"),
            ("corrective rounds", f"{world.corrective_rounds:,}")]
    rows += [(f"refused at first: {reason}", f"{count}")
             for reason, count in world.first_refused.most_common()]
    rows += [(f"still refused (recorded): {reason}", f"{count}")
             for reason, count in world.still_refused.most_common()]
    rows += [
        ("facts answerable from the final documents",
         "{} / {}".format(*answers["current"])),
        ("facts not in the documents, kept as suggestions", "{} / {}".format(*answers["told"])),
        ("facts lost without a suggestion recording them", f"{len(world.silently)}"),
        ("suggestions a person faces", f"{len(world.suggestions):,}"),
        ("... per 100 exchanges", f"{100 * len(world.suggestions) / EXCHANGES:.1f}"),
        ("adversarial ops tried", ", ".join(f"{k} {v}" for k, v in
                                             sorted(world.adversarial.items())) or "none"),
        ("... applied by themselves", f"{len(world.adversary_applied)}"),
        ("replaced values answerable from the history (all versions)",
         "{} / {}".format(*answers["history"])),
        ("hand-written sub-items kept", f"{subs} / {world.sub_items}"),
    ]
    rows += [(f"sizes after {n:,} exchanges (project / Logistics / Brand)",
              " / ".join(f"{sizes[k]:,}" for k in KEYS)) for n, sizes in world.sizes]
    rows += [("questions on documents over 30,000 characters", f"{asked:,}"),
             ("... answered from the relevance selection", f"{answered:,}"),
             ("... largest selection (budget 30,000)", f"{largest:,} characters")]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print("\n| measure | result |\n| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    ok = (not world.silently and subs == world.sub_items and largest <= KNOWLEDGE_BUDGET
          and not world.adversary_applied)
    for fact in world.silently[:5]:
        print("lost:", fact)
    for op in world.adversary_applied[:5]:
        print("applied by itself:", op)
    print("\nok" if ok else "\nMISSED")
    return {"ok": ok, "per_100": 100 * len(world.suggestions) / EXCHANGES,
            "lost": len(world.silently), "adversarial": world.adversarial,
            "applied_adversarial": len(world.adversary_applied), "rows": rows}


if __name__ == "__main__":
    raise SystemExit(main())
