"""Whether an op keeps the meaning of what it changes, and whether its evidence grounds it
(README, "Knowledge that maintains itself"): the rules the validator (:mod:`ops`) applies beyond structure.

- evidence is a quote of the new exchanges, read loosely (emphasis, ticks and typographic
  variants aside; an ellipsis skips words), at least 3 words or 12 characters, and it states
  every new value of the op's text;
- an update drops a value only for a new one of its kind that the evidence states, a name
  only for a name it states, a negation only on evidence about the entry, and never moves
  a value to another label;
- a merge keeps every value, name and negation of each merged entry, each value by its label.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from app.knowledge import tokens as tk

# Quoting a formatted reply loosely is still quoting it: emphasis and code ticks go, and
# typographic quotes, dashes, ellipses and spaces read as their plain forms.
_PLAIN = str.maketrans({
    **dict.fromkeys("‘’‚‛′", "'"), **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"), "…": "...", **dict.fromkeys("*_`~", ""),
})


def squash(text: str) -> str:
    """Case, whitespace, markdown emphasis, code ticks and typographic variants ignored:
    evidence may be re-wrapped, re-cased or quoted from a formatted reply."""
    return "".join(text.translate(_PLAIN).casefold().split())


def values_of(text: str) -> list[str]:
    """The hard tokens of *text* as written (names aside), with repeats."""
    return [t.value for t in tk.tokens(text) if t.kind != "name"]


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_ELISION = re.compile(r"\[\.\.\.\]|\.\.\.")  # "…" reads as "..." once squashed
MIN_EVIDENCE_WORDS = 3
MIN_EVIDENCE_CHARS = 12


def evidence_problem(pool: str, evidence: str, values: Sequence[str] = ()) -> str:
    """Why *evidence* does not ground the op ('' when it does): a quote of at least 3 words
    or 12 characters from the new exchanges (*pool*, squashed; an ellipsis may skip words
    between parts), that holds every new value of the op's text."""
    if not encodable(evidence):
        return "The evidence holds characters that cannot be stored (a lone surrogate)."
    quote = squash(evidence)
    if not any(c.isalnum() for c in quote):
        return "The evidence is empty."
    words = len(re.findall(r"[^\W_]+", evidence))
    if words < MIN_EVIDENCE_WORDS and len(quote.replace(".", "")) < MIN_EVIDENCE_CHARS:
        return (f"The evidence is too short: quote at least {MIN_EVIDENCE_WORDS} words or "
                f"{MIN_EVIDENCE_CHARS} characters.")
    at = 0
    for part in filter(None, _ELISION.split(quote)):
        found = pool.find(part, at)
        if found < 0:
            return "The evidence does not occur in the new exchanges."
        at = found + len(part)
    unstated = [v for v in dict.fromkeys(values) if squash(v) not in quote]
    if unstated:
        return (f"The evidence does not state {listing(unstated)}; quote where the "
                "exchanges say it.")
    return ""


def update_problem(label: str, old: str, new: str, evidence: str) -> str:
    """Why *new* may not replace *old* ('' when it may): a value leaves only by substitution —
    a new one of its kind that the evidence states — and a negation only when the evidence
    is about the entry; values must not trade places."""
    said = squash(evidence)
    grounded = {kind: [v for v in values if squash(v) in said]
                for kind, values in tk.gained_by_kind(old, new).items()}
    for kind, gone in sorted(tk.lost_by_kind(old, new).items()):
        if len(gone) > len(grounded.get(kind, [])):
            what = "name" if kind == "name" else "value of the same kind"
            return (f"The new text of {label} drops {listing(gone)} with no new {what} from "
                    "the evidence in its place; keep it, or quote the new value as evidence.")
    if tk.negations(new) < tk.negations(old) and not _about(evidence, old):
        return (f"The new text of {label} drops a negation (never, not, no …) that the "
                "evidence does not take back.")
    moved = [pair for pair in tk.swapped(old, new) if squash(pair) not in said]
    if moved:
        return f"The new text of {label} puts values next to other labels ({listing(moved)})."
    return ""


def _about(evidence: str, old: str) -> bool:
    """Whether *evidence* speaks of the entry: it shares one of its names, values or longer
    words (not the common ones)."""
    def words(text: str) -> set[str]:
        return {w.casefold() for w in re.findall(r"[^\W_]{4,}", text)} - tk.OPENERS
    return bool(words(evidence) & (words(old) | tk.names(old)))


def merge_problem(heads: list[tuple[str, str]], text: str) -> str:
    """Why *text* cannot stand for the merged entries ('' when it can): a merge compresses,
    it never forgets a value, a name or a negation, and never moves a value to another
    label.  Sub-items are carried under the merged entry by code."""
    for label, old in heads:
        lost = tk.missing_tokens(old, text)
        if lost:
            return (f"The merged text drops {listing(lost)} of {label}, so the merge was "
                    "refused.")
    if tk.negations(text) < sum(tk.negations(old) for _, old in heads):
        return ("The merged text has fewer negations (never, not, no …) than the entries it "
                "merges, so the merge was refused.")
    moved = tk.swapped("\n".join(old for _, old in heads), text)
    if moved:
        return (f"The merged text puts values next to other labels ({listing(moved)}), so "
                "the merge was refused.")
    return ""


def listing(tokens: list[str]) -> str:
    shown = ", ".join(tokens[:5])
    return shown + (f" and {len(tokens) - 5} more" if len(tokens) > 5 else "")
