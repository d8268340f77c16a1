"""Whether an op keeps the meaning of what it changes, and whether its evidence grounds it
(docs/knowledge.md): the rules the validator applies beyond structure.

The safety rule: a change is judged by what leaves the entry, word by word (:mod:`words`).

- *Evidence* is a quote of one message of the new exchanges, matched word for word on word
  boundaries ("4" is not found in "40", nor "€5" in "€50,000"), read loosely only in its
  formatting (emphasis, ticks, typographic quotes and dashes, case); at least 3 words or 12
  characters, and an ellipsis may skip words between parts of at least 3 words each, all from
  the same message.  It states every new value of the op's text.
- An *update* applies only when every content word that leaves the entry is replaced by a
  word of its kind (a value for a value of its family, a name for a name, a word for a word)
  that the evidence states, in the same role — next to a word the entry keeps, in the same
  sentence of the message — and nothing else moves: the order of the words, the qualifiers
  (not, never, only, except, at most, before, over …) and the units and currencies stay as
  they are.  Replacing what an entry says needs the person's words: Claude's own statement
  cannot do it.  New words may join the entry (new values stated by the evidence), but no
  qualifier.
- A *merge* applies only when it is lossless: the merged text is the merged entries' words,
  each entry's in its own order, joined (a subject the previous entry opens with may be
  shared: "Deploy with make, needs VPN"), with nothing added but joining words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache

from app.knowledge import tokens as tk
from app.knowledge import words as wd
from app.knowledge.words import Word

PERSON, CLAUDE = "person", "claude"
MIN_EVIDENCE_WORDS = 3
MIN_EVIDENCE_CHARS = 12
MIN_PART_WORDS = 3  # each part of an elided quote
ANCHOR_WINDOW = 3  # words of a message a replacement may sit from what it is about
MAX_MERGED = 12

_ELISION = re.compile(r"\[\.\.\.\]|\.\.\.")  # "…" reads as "..." once plain
_PLAIN = str.maketrans({
    **dict.fromkeys("‘’‚‛′", "'"), **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"), "…": "...", **dict.fromkeys("*_`~", ""),
})


@dataclass(frozen=True, slots=True)
class Said:
    """One message of the new exchanges."""

    role: str  # PERSON, CLAUDE, or "" when not known
    text: str


@dataclass(frozen=True, slots=True)
class Heard:
    """A message as words, for finding quotes in it."""

    role: str
    words: tuple[Word, ...]
    keys: tuple[str, ...]
    text: str = ""  # the message as its words were read (plain): where their offsets point


@dataclass(frozen=True, slots=True)
class Quote:
    """Where evidence was found: the message, and the words each part quotes."""

    heard: Heard
    spans: tuple[tuple[int, int], ...]  # word indices [start, end) in the message, per part

    @property
    def role(self) -> str:
        return self.heard.role

    def keys(self) -> list[list[str]]:
        """The content words of each part, as a quote reads them."""
        return [[w.key for w in self.heard.words[a:b] if w.kind != "stop"]
                for a, b in self.spans]


def squash(text: str) -> str:
    """Case, whitespace, markdown emphasis, code ticks and typographic variants ignored."""
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


def hear(exchanges: str | Sequence[Said]) -> tuple[Heard, ...]:
    """The new exchanges as messages of words (a plain string: one message, its speaker not
    known)."""
    said = [Said("", exchanges)] if isinstance(exchanges, str) else list(exchanges)
    heard = []
    for message in said:
        text = wd.plain(message.text)
        found = tuple(wd.words(text, quoted=True))
        heard.append(Heard(message.role, found, tuple(w.key for w in found), text))
    return tuple(heard)


# =============================================================================== evidence


def quote(heard: Sequence[Heard], evidence: str, values: Sequence[str] = ()) -> Quote | str:
    """Where *evidence* is in the new exchanges, or why it does not ground the op: a quote of
    at least 3 words or 12 characters, from one message, word for word (an ellipsis may skip
    words between parts of 3 words or more), that states every new value of the op's text."""
    if not encodable(evidence):
        return "The evidence holds characters that cannot be stored (a lone surrogate)."
    squashed = squash(evidence)
    if not any(c.isalnum() for c in squashed):
        return "The evidence is empty."
    count = max(len(re.findall(r"[^\W_]+", evidence)), len(wd.words(evidence, quoted=True)))
    if count < MIN_EVIDENCE_WORDS and len(squashed.replace(".", "")) < MIN_EVIDENCE_CHARS:
        return (f"The evidence is too short: quote at least {MIN_EVIDENCE_WORDS} words or "
                f"{MIN_EVIDENCE_CHARS} characters.")
    whole = [w.key for w in wd.words(evidence, quoted=True)]
    found = _find(heard, [whole])  # an ellipsis the message itself has is punctuation
    if found is None:
        parts = [keys for part in _ELISION.split(wd.loose(evidence))
                 if (keys := [w.key for w in wd.words(part, quoted=True)])]
        if len(parts) > 1 and any(len(p) < MIN_PART_WORDS for p in parts):
            return (f"Each part of an elided quote must be at least {MIN_PART_WORDS} words; "
                    "quote more of what the exchanges say.")
        found = _find(heard, parts)
        if found is None:
            if len(parts) > 1 and all(_find(heard, [p]) for p in parts) and not any(
                    all(_index(m.keys, p) >= 0 for p in parts) for m in heard):
                return ("The parts of the evidence come from different messages; quote one "
                        "message.")
            return "The evidence does not occur in the new exchanges."
    unstated = [v for v in dict.fromkeys(values) if not _states(found, wd.keys(v))]
    if unstated:
        return (f"The evidence does not state {listing(unstated)}; quote where the "
                "exchanges say it.")
    return found


def _find(heard: Sequence[Heard], parts: list[list[str]]) -> Quote | None:
    """The first message holding every part, in order, word for word (the person's first:
    what Claude repeats, the person said)."""
    for message in sorted(heard, key=lambda m: m.role != PERSON):
        spans: list[tuple[int, int]] = []
        at = 0
        for part in parts:
            start = _index(message.keys, part, at)
            if start < 0:
                break
            spans.append((start, start + len(part)))
            at = start + len(part)
        else:
            return Quote(message, tuple(spans))
    return None


def _index(keys: Sequence[str], part: Sequence[str], at: int = 0) -> int:
    """Where *part* first occurs in *keys* whole, from *at*; -1 when it does not."""
    if not part:
        return -1
    first, size = part[0], len(part)
    for start in range(at, len(keys) - size + 1):
        if keys[start] == first and list(keys[start:start + size]) == list(part):
            return start
    return -1


def _states(found: Quote, wanted: list[str]) -> bool:
    return bool(wanted) and any(_index(part, wanted) >= 0 for part in found.keys())


# ================================================================================ updates


def update_problem(label: str, old: str, new: str, found: Quote) -> str:
    """Why *new* may not replace *old* ('' when it may), by the safety rule above."""
    problem = _hard_tokens_problem(label, old, new, found)
    if problem:
        return problem
    before, after = wd.words(old), wd.words(new)
    known = {w.key for w in before}
    strange = [w.text for w in after if w.aside and w.anchor and w.key not in known]
    if strange:
        return (f"The (was …) note of {label} holds {listing(strange)}, which the entry did "
                "not say; it may hold only the values the update replaces.")
    old_words = [w for w in before if w.content]
    new_words = [w for w in after if w.content]
    problem = _qualifiers_problem(label, old_words, new_words) or _units_problem(
        label, old_words, new_words)
    if problem:
        return problem
    blocks = _aligned(old_words, new_words)
    anchors = {key for tag, i1, i2, _, _ in blocks if tag == "equal"
               for w in old_words[i1:i2] if w.anchor for key in wd.keys(w.text)}
    old_values = Counter(w.key for w in old_words if w.kind == "value")
    for tag, i1, i2, j1, j2 in blocks:
        gone, come = old_words[i1:i2], new_words[j1:j2]
        if tag == "equal":
            continue
        if tag == "insert":
            fresh = [w.text for w in come if w.kind == "value" and not old_values[w.key]
                     and not _states(found, wd.keys(w.text))]
            if fresh:
                return (f"The evidence does not state {listing(fresh)}; quote where the "
                        "exchanges say it.")
            continue
        problem = _replacement_problem(label, gone, come, found, anchors)
        if problem:
            return problem
    return ""


def _aligned(old: list[Word], new: list[Word]) -> list[tuple[str, int, int, int, int]]:
    """The two texts' words aligned: what stays, what replaces what, what goes or comes.
    Values are aligned by their family first, so a value that takes another's place is
    seen as replacing it (not as one going here and another coming there)."""
    def shape(word: Word) -> str:
        return "\x00" + word.family if word.kind == "value" else word.key

    matcher = SequenceMatcher(None, [shape(w) for w in old], [shape(w) for w in new],
                              autojunk=False)
    blocks: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            blocks.append((tag, i1, i2, j1, j2))
            continue
        run = i1  # within values of one family, the ones whose value changed are replaced
        for n in range(i1, i2 + 1):
            same = n < i2 and old[n].key == new[j1 + n - i1].key
            if n == i2 or same != (old[run].key == new[j1 + run - i1].key):
                if n > run:
                    tag = "equal" if old[run].key == new[j1 + run - i1].key else "replace"
                    blocks.append((tag, run, n, j1 + run - i1, j1 + n - i1))
                run = n
    return blocks


def _hard_tokens_problem(label: str, old: str, new: str, found: Quote) -> str:
    """The hard tokens first, for the clearest reason: a value leaves only for a new one of
    its kind that the evidence states, and values must not trade places."""
    grounded = {kind: [v for v in values if _states(found, wd.keys(v))]
                for kind, values in tk.gained_by_kind(old, new).items()}
    for kind, gone in sorted(tk.lost_by_kind(old, new).items()):
        if len(gone) > len(grounded.get(kind, [])):
            what = "name" if kind == "name" else "value of the same kind"
            return (f"The new text of {label} drops {listing(gone)} with no new {what} from "
                    "the evidence in its place; keep it, or quote the new value as evidence.")
    moved = [pair for pair in tk.swapped(old, new) if not _states(found, wd.keys(pair))]
    if moved:
        return f"The new text of {label} puts values next to other labels ({listing(moved)})."
    return ""


def _qualifiers_problem(label: str, old: list[Word], new: list[Word]) -> str:
    was = [w.key for w in old if w.kind == "qualifier"]
    now = [w.key for w in new if w.kind == "qualifier"]
    if was == now:
        return ""
    lost, gained = Counter(was) - Counter(now), Counter(now) - Counter(was)
    rule = ("words that bound or turn a statement (not, never, only, except, at most, "
            "before, over …) stay as they are; changing them is the person's decision.")
    if lost:
        shown = sorted(lost.elements())
        negation = any(w in _NEGATIONS or w.endswith(("n't", "n’t")) for w in shown)
        what = "a negation" if negation else "a qualifier"
        return f"The new text of {label} drops {what} ({listing(shown)}): {rule}"
    if gained:
        return f"The new text of {label} adds {listing(sorted(gained.elements()))}: {rule}"
    return f"The new text of {label} moves {listing(was)}: {rule}"


_NEGATIONS = frozenset("not no never none nobody nothing neither nor without cannot".split())


def _units_problem(label: str, old: list[Word], new: list[Word]) -> str:
    was, now = wd.units(old), wd.units(new)
    walk = iter(now)
    if all(unit in walk for unit in was):
        return ""
    return (f"The new text of {label} changes its units or currency ({listing(was)} to "
            f"{listing(now) or 'none'}); they stay as they are.")


def _replacement_problem(label: str, gone: list[Word], come: list[Word], found: Quote,
                         anchors: set[str]) -> str:
    """Words leave (*gone*) where others come: each must be replaced by one of its kind, in
    order, that the evidence states next to what the entry keeps."""
    fixed = [w.text for w in gone if w.kind in ("role", "qualifier", "unit")]
    if fixed:
        return (f"The new text of {label} moves or changes {listing(fixed)}: the words that "
                "bound an entry or tie it together (not, only, from, over, and …) stay where "
                "they are.")
    at = 0
    for word in gone:
        match = next((n for n in range(at, len(come)) if wd.replaceable(word, come[n])), None)
        if match is None:
            kind = {"value": "value of its kind", "name": "name"}.get(word.kind, "word")
            return (f"The new text of {label} drops {word.text} with no new {kind} from the "
                    "evidence in its place; keep it, or quote the new words as evidence.")
        at = match + 1
    old_text = " ".join(w.text for w in gone)
    new_text = " ".join(w.text for w in come)
    wanted = [key for w in come for key in wd.keys(w.text)]
    places = _places(found, wanted)
    if not places:
        return (f"The new text of {label} puts {new_text} where it said {old_text}, and the "
                f"evidence does not state {new_text}; quote where the exchanges say it.")
    if not anchors:
        return (f"The new text of {label} keeps nothing of the entry; add a new entry "
                "instead, or keep what it says.")
    if not any(_anchored(found.heard, place, anchors) for place in places):
        return (f"The evidence states {new_text}, but not of what {label} is about; quote "
                "where the exchanges say it of this entry.")
    if found.role == CLAUDE:
        return (f"{label} says {old_text}: a value the person stated is replaced only by the "
                "person's own words, not by Claude's; quote what the person said.")
    return ""


def _places(found: Quote, wanted: list[str]) -> list[tuple[int, int]]:
    """Where the quoted parts state *wanted*: [first, last] word indices in the message."""
    places: list[tuple[int, int]] = []
    if not wanted:
        return places
    words = found.heard.words
    for start, end in found.spans:
        content = [n for n in range(start, end) if words[n].kind != "stop"]
        keys = [words[n].key for n in content]
        at = _index(keys, wanted)
        while at >= 0:
            places.append((content[at], content[at + len(wanted) - 1]))
            at = _index(keys, wanted, at + 1)
    return places


def _anchored(heard: Heard, place: tuple[int, int], anchors: set[str]) -> bool:
    """Whether a word the entry keeps stands within a few words of *place*, in its sentence."""
    words = heard.words
    sentence = words[place[0]].sentence
    for step, edge in ((-1, place[0]), (1, place[1])):
        seen, n = 0, edge + step
        while 0 <= n < len(words) and words[n].sentence == sentence and seen < ANCHOR_WINDOW:
            if words[n].anchor:
                seen += 1
                if words[n].key in anchors:
                    return True
            n += step
    return False


# ================================================================================= merges


def merge_problem(heads: list[tuple[str, str]], text: str) -> str:
    """Why *text* cannot stand for the merged entries ('' when it can): a merge joins
    entries, word for word, and forgets nothing.  Sub-items are carried by code."""
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
    if len(heads) > MAX_MERGED:
        return f"A merge joins at most {MAX_MERGED} entries; merge fewer at a time."
    entries = [[w for w in wd.words(old) if w.content] for _, old in heads]
    merged = [w for w in wd.words(text) if w.content]
    if _joined(tuple(tuple(w.key for w in e) for e in entries),
               tuple((w.key, w.kind == "role") for w in merged)):
        return ""
    merged_keys = {w.key for w in merged}
    for (label, _), words in zip(heads, entries):
        lost = [w.text for w in words if w.key not in merged_keys]
        if lost:
            return (f"The merged text drops {listing(lost)} of {label}, so the merge was "
                    "refused: a merge joins entries word for word.")
    added = [w.text for w in merged if w.kind != "role"
             and not any(w.key == o.key for e in entries for o in e)]
    if added:
        return (f"The merged text adds {listing(added)}, which none of the entries says, so "
                "the merge was refused: a merge joins entries word for word.")
    return ("The merged text does not keep each entry's words in their own order, so the "
            "merge was refused: a merge joins entries word for word.")


def _joined(entries: tuple[tuple[str, ...], ...], merged: tuple[tuple[str, bool], ...]
            ) -> bool:
    """Whether *merged* (keys, with whether each is a joining word) is the *entries* one
    after another in some order, each word for word, joining words aside; an entry may
    leave out what it opens with when the last entry written whole opens the same way."""
    everyone = (1 << len(entries)) - 1

    def match(words: tuple[str, ...], at: int) -> int:
        for key in words:
            while at < len(merged) and merged[at][0] != key:
                if not merged[at][1]:
                    return -1
                at += 1
            if at == len(merged):
                return -1
            at += 1
        return at

    @cache
    def fits(at: int, used: int, opened: int) -> bool:
        if used == everyone:
            return all(joining for _, joining in merged[at:])
        for n, words in enumerate(entries):
            if used >> n & 1:
                continue
            shared = _shared(words, entries[opened]) if opened >= 0 else 0
            for skip in range(shared + 1):
                end = match(words[skip:], at)
                if end >= 0 and fits(end, used | 1 << n, n if skip == 0 else opened):
                    return True
        return False

    return fits(0, 0, -1)


def _shared(words: tuple[str, ...], other: tuple[str, ...]) -> int:
    """How many opening words *words* shares with *other* (never a qualifier: "never"
    shared by two rules would turn the second around)."""
    count = 0
    for a, b in zip(words, other):
        if a != b or wd.is_qualifier(a):
            break
        count += 1
    return max(0, min(count, len(words) - 1))


def listing(tokens: list[str]) -> str:
    shown = ", ".join(tokens[:5])
    return shown + (f" and {len(tokens) - 5} more" if len(tokens) > 5 else "")
