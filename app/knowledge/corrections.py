"""The corrective round of a rebuild: refused ops go back once, with their reasons.

The knowledge model answered; some ops were refused.  Those it can fix (not the moot ones:
duplicates, updates that change nothing) go back in the same rebuild with a one-sentence
reason each, and it answers again — once, never a loop.  Its second answer is validated
together with the ops of the first that were accepted, against the same documents and
labels.  What is still refused is said in one sentence ("2 suggestions could not be
applied: …"), kept in the status of the documents it concerned, and the watermark moves.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from app.knowledge import accounting as ac
from app.knowledge import document as doc
from app.knowledge import tokens as tk
from app.knowledge.document import canonical_section, normalise
from app.knowledge.meaning import encodable
from app.knowledge.validator import TARGETS, Layer, Outcome, Refusal

SHOWN_REASONS = 3  # in the sentence; `cairn knowledge rebuild` lists every one


def correction(answer: object, refused: Sequence[Refusal]) -> str:
    """What the model reads the second time, after the documents and exchanges."""
    lines = [f"{n}. {_shown(r.op)}\n   Refused: {r.reason}" for n, r in enumerate(refused, 1)]
    return ("CORRECTIONS: your answer was checked; the ops below were refused, each with "
            "why. Your other ops will be applied as they were: do not repeat them. Answer "
            "with corrected versions of the refused ops only, using the same labels, or an "
            "empty list to give them up.\n" + "\n".join(lines))


def _shown(op: object) -> str:
    """An op as JSON, readable; escaped when it holds what UTF-8 cannot carry (a lone
    surrogate would otherwise fail the whole request)."""
    text = json.dumps(op, ensure_ascii=False)
    return text if encodable(text) else json.dumps(op)


def resubmitted(first: object, outcome: Outcome, again: object) -> dict[str, list[object]]:
    """The first answer's accepted ops followed by the second answer's ops."""
    ops = first.get("ops") if isinstance(first, dict) else None
    more = again.get("ops") if isinstance(again, dict) else None
    refused = [id(r.op) for r in outcome.refused]
    kept = [op for op in ops or [] if id(op) not in refused]
    return {"ops": kept + (more if isinstance(more, list) else [])}


def addressed(refusal: Refusal, again: object, *, moot: Sequence[object] = (),
              layers: Sequence[Layer] = ()) -> bool:
    """Whether the second answer holds an op for what *refusal* tried (the same kind of op
    on the same entries or section, or an add of the same text, wherever it now goes) that
    is not one of the *moot* ops (refused as saying nothing new: repeating the unchanged
    entry answers nothing) and, for an update or a merge, carries the tokens the refused
    op would have brought into the entries of *layers* (another update of the same entry
    answers nothing: the refused date change would vanish); if not, the first refusal
    still stands."""
    more = again.get("ops") if isinstance(again, dict) else None
    idle = {id(op) for op in moot}
    wanted = _brought(refusal.op, layers)
    return any(_answers(op, refusal.op) and id(op) not in idle and _carries(op, wanted)
               for op in more or [] if isinstance(op, dict))


def _brought(op: object, layers: Sequence[Layer]) -> Counter[str]:
    """The tokens an update or merge would bring into its entries (none for an add)."""
    if not isinstance(op, dict) or op.get("op") not in ("update", "merge") \
            or not isinstance(op.get("text"), str):
        return Counter()
    refs = [op.get("ref")] if op.get("op") == "update" else op.get("refs")
    old = " ".join(_entry_text(ref, layers) for ref in refs or [] if isinstance(ref, str))
    return (Counter(t.key for t in ac.toks(op["text"]) if not t.free)
            - Counter(t.key for t in ac.toks(old) if not t.free))


def _entry_text(ref: str, layers: Sequence[Layer]) -> str:
    ref = ref.strip()
    for layer in layers:
        if ref[:1] == layer.prefix and ref[1:].isdigit():
            found = doc.entries(layer.text)
            if 1 <= int(ref[1:]) <= len(found):
                return found[int(ref[1:]) - 1].text
    return ""


def _carries(op: dict, wanted: Counter[str]) -> bool:
    text = op.get("text")
    if not wanted:
        return True
    if not isinstance(text, str):
        return False
    return not wanted - Counter(t.key for t in ac.toks(text) if not t.free)


def _answers(op: dict, refused: object) -> bool:
    """Whether *op* is the corrected form of *refused*: an add of the same text, or to the
    same place saying every value the refused one said (another add to the same section
    answers nothing); an update or merge of the same entries."""
    if _same_add(op, refused):
        return True
    if _aim(op) != _aim(refused):
        return False
    if op.get("op") != "add" or not isinstance(refused, dict):
        return True
    text, old = op.get("text"), refused.get("text")
    if not isinstance(text, str) or not isinstance(old, str):
        return False
    wanted = [t.value for t in tk.tokens(old)]  # values and names
    found = {t.value for t in tk.tokens(text)}
    return bool(wanted) and all(value in found for value in wanted)


def _same_add(op: dict, refused: object) -> bool:
    text = op.get("text")
    return (op.get("op") == "add" and isinstance(refused, dict) and refused.get("op") == "add"
            and isinstance(text, str) and isinstance(refused.get("text"), str)
            and normalise(text) == normalise(refused["text"]))


def _aim(op: object) -> tuple[object, ...]:
    if not isinstance(op, dict):
        return (None,)
    kind = op.get("op")
    if kind == "add":
        section = op.get("section")
        return (kind, op.get("target"),
                canonical_section(section) if isinstance(section, str) else None)
    if kind == "merge":
        refs = op.get("refs")
        return (kind, tuple(sorted(map(str, refs))) if isinstance(refs, list) else None)
    return (kind, op.get("ref"))


def refusals_of(refused: Sequence[Refusal], key: str, layers: Sequence[Layer]
                ) -> list[Refusal]:
    """The refusals that concern the document *key*: by an add's target or a ref's prefix
    (an op naming neither concerns every document)."""
    prefixes = {layer.key: layer.prefix for layer in layers}
    return [r for r in refused if _layer_of(r.op, prefixes) in (key, None)]


def _layer_of(op: object, prefixes: dict[str, str]) -> str | None:
    if not isinstance(op, dict):
        return None
    if op.get("op") == "add":
        target = op.get("target")
        return target if target in TARGETS else None
    ref = op.get("ref")
    refs = op.get("refs")
    first = ref if isinstance(ref, str) else refs[0] if isinstance(refs, list) and refs else None
    if isinstance(first, str):
        prefix = first.strip()[:1]
        return next((key for key, p in prefixes.items() if p == prefix), None)
    return None


def unapplied(refused: Sequence[Refusal]) -> str | None:
    """"2 suggestions could not be applied: …", or None when nothing was lost."""
    real = [r for r in refused if not r.moot]
    if not real:
        return None
    shown = "; ".join(r.reason.rstrip(".") for r in real[:SHOWN_REASONS])
    more = f"; and {len(real) - SHOWN_REASONS} more" if len(real) > SHOWN_REASONS else ""
    noun = "suggestion" if len(real) == 1 else "suggestions"
    return f"{len(real)} {noun} could not be applied: {shown}{more}."
