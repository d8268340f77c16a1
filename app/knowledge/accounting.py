"""Whether code can account for a change token by token (DESIGN §6, the safety rule).

A change applies by itself only when every token that enters an entry comes from the
evidence quote, every token that leaves is replaced by a token of the same kind that the
evidence states, and the evidence says it of the same thing, as an assertion: the clause of
the message that holds the quote names the entry's subject (the words the entry keeps next
to what changes), is not a question, a condition, a guess or words quoted back, and carries
no negation, contrast, condition or guess that the new text drops.  A merge applies by
itself only when its text is the merged entries' texts joined by punctuation.  Whatever
this module cannot account for is refused with a reason, and the rebuild keeps it as a
suggestion for the person.

Tokens are words (any script; scripts written without spaces one character at a time),
values (a date, an amount …, one token each), single letters ("Plan A") and every symbol
that carries meaning (any Unicode symbol, ``?``, ``~~``, a minus before a number);
sentence punctuation, brackets and emphasis are not tokens.  Articles and the present of
"to be" are free (they carry nothing of their own), except a capital letter that names
something.  Everything is normalised first (:func:`words.normalise`: NFKC, look-alike
letters of other scripts folded inside a Latin word, zero-width characters dropped), so a
homoglyph "nоt" is "not".  Parenthetical notes are content; only Cairn's own
"(updated YYYY-MM-DD)" is not.

The negations, contrasts, conditions and guesses are known for English, German, French,
Spanish, Italian, Dutch, Portuguese, Japanese, Chinese and Korean.  A change whose texts
hold letters of another script, or the negation words of another language, cannot be
checked: it waits for the person.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache, lru_cache

from app.knowledge import tokens as tk
from app.knowledge import words as wd
from app.knowledge.meaning import CLAUDE, Quote, listing

# ================================================================================= tokens

# Punctuation that only separates or frames: never a token.  Everything else that is not a
# letter, a digit or a space is a symbol and counts.
_FRAMING = set(",.;:'\"()[]{}…-‐‑–—_*`/\\|·•、。，；：！（）「」『』【】〈〉《》“”‘’„«»!¡¿")
_MINUS = re.compile(r"(?<![\w.])-(?=[0-9])")
_STRIKE = re.compile(r"~~")


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # value:<family> | name | word | letter | symbol | negation | qualifier | role | unit | free
    key: str  # what two tokens compare by (case folded)
    start: int
    end: int
    sentence: int

    @property
    def free(self) -> bool:
        return self.kind == "free"

    @property
    def subject(self) -> bool:
        """Whether it can name what an entry is about (a word or a name)."""
        return self.kind in ("word", "name")


def text_of(text: str) -> str:
    """*text* as every compare here reads it: normalised, plain, typographic quotation marks
    as spaces (framing: a URL must not take one in), Cairn's marks and list markers
    blanked."""
    return tk._content(wd.plain(text).translate(_CURLY))


_CURLY = str.maketrans(dict.fromkeys("“”„‟«»", " "))


def toks(text: str) -> list[Tok]:
    """Every token of *text* in order (see the module's docstring)."""
    plain = text_of(text)
    found: list[Tok] = []
    covered: list[tuple[int, int]] = []
    for word in wd.words(plain):
        covered.append((word.start, word.end))
        found.append(Tok(_kind(word, plain), word.key.casefold(), word.start, word.end,
                         word.sentence))
    for match in _symbols(plain):
        if any(a <= match[0] < b for a, b in covered):
            continue  # part of a value ("€5", "1%", "#FF5500")
        found.append(Tok("symbol", match[1], match[0], match[0] + len(match[1]),
                         _sentence_at(found, match[0])))
    found.sort(key=lambda t: t.start)
    return found


def _symbols(text: str) -> list[tuple[int, str]]:
    found = [(m.start(), "~~") for m in _STRIKE.finditer(text)]
    found += [(m.start(), "-") for m in _MINUS.finditer(text)]
    taken = {n for at, sym in found for n in range(at, at + len(sym))}
    found += [(at, char) for at, char in enumerate(text)
              if at not in taken and not (char.isalnum() or char.isspace()
                                          or char in _FRAMING or char == "~")]
    return found


def _sentence_at(found: list[Tok], at: int) -> int:
    before = [t.sentence for t in found if t.start < at]
    return before[-1] if before else 0


def _kind(word: wd.Word, text: str) -> str:
    folded = word.key.casefold()
    if word.kind == "value":
        return "value:" + word.family
    if len(word.text) == 1 and word.text.isalpha() and word.text.isupper() and not (
            word.text in "AI" and _article(word, text)):
        return "letter"  # "Plan A", "Building B": a letter that names something
    if word.kind == "stop":
        return "free"
    if _NEGATION_WORDS.fullmatch(folded):
        return "negation"
    if word.kind in ("qualifier", "role", "unit"):
        return word.kind
    if word.kind == "name":
        return "name"
    return "word"


def _article(word: wd.Word, text: str) -> bool:
    """Whether a capital "A" or "I" is the article or the pronoun: it opens a sentence and
    a word follows."""
    before = text[:word.start].rstrip(" \t\"'*_(")
    opens = not before or before.endswith(("\n", ".", "!", "?", ":", ";"))
    return opens and bool(re.match(r"\s+[^\W\d_]", text[word.end:]))


# ===================================================================== what the words say

# Negations and contrasts: a clause that holds one says something else than its words alone.
_NEGATION_WORDS = re.compile(r"""(?x)
    not|no|never|none|nobody|nothing|neither|nor|without|cannot|against|instead|but|however
  | although|though|whereas|except|excluding|rather|anymore|longer|.+n['’]t
  | nicht|nie|niemals|kein|keine|keinen|keinem|keiner|keines|nichts|niemand|weder|ohne
  | statt|anstatt|aber|sondern|gegen|doch|jedoch
  | ne|n|pas|jamais|aucun|aucune|rien|ni|sans|non|mais|contre|plutôt|cependant
  | nunca|jamás|ningún|ninguno|ninguna|nada|nadie|sin|pero|sino|contra|tampoco
  | mai|nessun|nessuno|nessuna|niente|nulla|né|senza|ma|invece|però
  | niet|nooit|geen|niets|niemand|noch|zonder|maar|tegen
  | não|jamais|nenhum|nenhuma|ninguém|nem|sem|mas|porém
""")
# Scripts written without spaces: markers found inside words.
_NEGATION_MARKS = ("ない", "なかっ", "ません", "ず", "ぬ", "禁止", "ではな", "じゃな", "しかし",
                   "けど", "ただし", "不", "没", "沒", "无", "無", "非", "别", "別", "勿",
                   "未", "莫", "但", "却", "卻", "않", "없", "아니", "못", "말고", "금지",
                   "하지만", "그러나", "대신")
_NEGATION_KO_WORD = re.compile(r"(?<![\w])안(?![\w])")
# Conditions and guesses: a sentence that holds one is no assertion.
_HEDGE_WORDS = re.compile(r"""(?x)
    if|unless|until|till|provided|assuming|suppose|supposing|maybe|perhaps|probably
  | possibly|might|could|would|should|may|likely|unlikely|guess|think|wonder|whether
  | wenn|falls|sofern|bis|vielleicht|wahrscheinlich|vermutlich|eventuell|ob|sollte|könnte
  | si|s|sauf|jusqu|peut|probablement|sûrement
  | quizás|quizá|tal|probablemente|acaso|hasta|caso
  | se|meno|fino|forse|probabilmente
  | als|indien|tenzij|tot|misschien|waarschijnlijk
  | talvez|provavelmente|até
""")
_HEDGE_MARKS = ("もし", "なら", "たら", "かも", "だろう", "でしょう", "まで", "如果", "要是",
                "假如", "除非", "直到", "也许", "也許", "或许", "或許", "可能", "大概", "吗",
                "嗎", "만약", "만일", "아마", "까지", "것 같", "면", "까요")
_QUESTION = re.compile(r"[?？]")
# Quotation marks around words the person repeats (Claude's, a page's): not their assertion.
_QUOTED = re.compile(r"(?<![\w])'[^'\n]{2,}'(?![\w])|\"[^\"\n]+\"|“[^”\n]+”|„[^“”\n]+[“”]"
                     r"|«[^»\n]+»|「[^」\n]+」|『[^』\n]+』|‘[^’\n]{2,}’")
_LATIN_WORD = re.compile(r"[^\W\d_]+")


def _words_of(text: str) -> list[str]:
    return [w.casefold() for w in _LATIN_WORD.findall(text)]


def negations(text: str) -> Counter[str]:
    """The negations and contrasts *text* holds, in any of the known languages."""
    plain = text_of(text)
    found: Counter[str] = Counter(w for w in _split_apostrophes(plain)
                                  if _NEGATION_WORDS.fullmatch(w))
    for mark in _NEGATION_MARKS:
        found[mark] += plain.count(mark)
    found["안"] += len(_NEGATION_KO_WORD.findall(plain))
    return +found


def hedges(text: str) -> Counter[str]:
    """The conditions and guesses *text* holds, in any of the known languages."""
    plain = text_of(text)
    months = len(re.findall(r"(?<![\w])May(?![\w])", plain))  # the month, not a guess
    found: Counter[str] = Counter(w for w in _split_apostrophes(plain)
                                  if _HEDGE_WORDS.fullmatch(w))
    found["may"] -= months
    for mark in _HEDGE_MARKS:
        found[mark] += plain.count(mark)
    return +found


def _split_apostrophes(text: str) -> list[str]:
    """Words, with French elisions ("n'", "s'", "jusqu'") as words of their own; English
    contractions ("don't") stay whole."""
    found: list[str] = []
    for word in re.findall(r"[^\W_]+(?:['’][^\W_]+)?", text):
        folded = word.casefold()
        head, _, tail = folded.replace("’", "'").partition("'")
        if tail and head in ("n", "s", "jusqu", "qu", "l", "d"):
            found += [head, tail]
        else:
            found.append(folded)
    return found


# Letters of the known languages' scripts (Latin with their accents, kana, CJK, Hangul).
_KNOWN_LETTER = re.compile(r"[A-Za-zÀ-ÖØ-öø-ÿŒœ\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
                           r"\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f]")
# Accented Latin letters of other languages (Danish, Swedish …) within that range.
_OTHER_LATIN = set("åÅøØæÆðÐþÞýÝ")
# Negations of other languages written in Latin letters.
_OTHER_NEGATIONS = frozenset("""
ikke inte icke ej aldrig ingen ikkje nie nigdy nikdy nic nu niciodata nem soha sosem tidak
bukan jangan belum hindi hayir hic asla ei eika koskaan ekki aldri
""".split())


def language_known(text: str) -> bool:
    """Whether *text* is written in a language whose negations Cairn knows."""
    plain = text_of(text)
    for char in plain:
        if char.isalpha() and (char in _OTHER_LATIN or not _KNOWN_LETTER.match(char)):
            return False
    return not any(w in _OTHER_NEGATIONS for w in _words_of(plain))


# ============================================================================== evidence


@dataclass(frozen=True, slots=True)
class Clause:
    text: str  # the clause as the message has it
    sentence: str  # the whole sentence around it
    start: int
    end: int


_SENTENCE_BREAK = re.compile(r"[.!?;。！？；\n\r\u2028\u2029]+")
_CLAUSE_BREAK = re.compile(r"[,，、]")
MIN_CLAUSE_ANCHORS = 2  # a comma piece with fewer names no subject of its own


def _region(found: Quote, *, glued: bool = True) -> list[tuple[int, int]]:
    """Where in the message each quoted part stands (character offsets), with the symbols
    glued to its ends ("approves?", "~~old~~") unless not *glued*."""
    words, text = found.heard.words, found.heard.text
    region = []
    for a, b in found.spans:
        if b <= a:
            continue
        start, end = words[a].start, words[b - 1].end
        while glued and start > 0 and not text[start - 1].isspace():
            start -= 1
        while glued and end < len(text) and not text[end].isspace():
            end += 1
        region.append((start, end))
    return region


def _breaks(text: str, pattern: re.Pattern[str]) -> list[int]:
    """Offsets where *pattern* breaks *text*, not inside a value ("2.5", "1,000", a URL)."""
    values = _values(text)
    return [m.start() for m in pattern.finditer(text)
            if not any(a <= m.start() < b for a, b in values)]


@lru_cache(maxsize=64)
def _values(text: str) -> tuple[tuple[int, int], ...]:
    return tuple((w.start, w.end) for w in wd.words(text) if w.kind == "value")


@lru_cache(maxsize=64)
def clauses(text: str) -> tuple[Clause, ...]:
    """The clauses of a message: its sentences, split at commas where the piece after the
    comma names something of its own ("…payroll, invoices still go to Dana")."""
    found: list[Clause] = []
    edges = [-1, *_breaks(text, _SENTENCE_BREAK), len(text)]
    commas = _breaks(text, _CLAUSE_BREAK)
    for a, b in zip(edges, edges[1:]):
        start, end = a + 1, b
        if not text[start:end].strip():
            continue
        # the sentence runs to its stop, so "?" belongs to it
        stop = end
        while stop < len(text) and _SENTENCE_BREAK.match(text[stop]):
            stop += 1
        sentence = text[start:stop]
        cuts = [c for c in commas if start <= c < end]
        pieces: list[tuple[int, int]] = []
        at = start
        for cut in [*cuts, end]:
            piece = (at, cut)
            anchors = [w for w in wd.words(text[at:cut]) if w.anchor and w.kind != "unit"]
            if pieces and len(anchors) < MIN_CLAUSE_ANCHORS:
                pieces[-1] = (pieces[-1][0], cut)  # "…slips again, to 2027-05-20"
            else:
                pieces.append(piece)
            at = cut + 1
        found += [Clause(text[p:q], sentence, p, q) for p, q in pieces]
    return tuple(found)


def _quoted_back(text: str, region: list[tuple[int, int]]) -> bool:
    spans = [(m.start(), m.end()) for m in _QUOTED.finditer(text)]
    return any(a <= p and q <= b for a, b in spans for p, q in region)


def _said_problem(found: Quote, new: str) -> tuple[list[Clause], str]:
    """The clauses the evidence stands in, and why they do not say *new* as an assertion
    ('' when they do)."""
    text = found.heard.text
    region = _region(found)
    if not text or not region:
        return [], "The evidence cannot be placed in the exchanges, so the person decides."
    held = [c for c in clauses(text) if any(c.start < q and p < c.end for p, q in region)]
    # the person repeating words in quotation marks (Claude's, a page's); Claude's own
    # quotation marks are its formatting
    if found.role != CLAUDE and _quoted_back(text, _region(found, glued=False)):
        return held, ("The evidence is words quoted back in quotation marks, not a statement "
                      "of the person's, so the person decides.")
    kept_neg, kept_hedge = negations(new), hedges(new)
    for clause in held:
        if _QUESTION.search(clause.sentence) and not _QUESTION.search(new):
            return held, ("The evidence is a question, not a statement, so the person "
                          "decides.")
        hedge = hedges(clause.sentence) - kept_hedge
        if hedge:
            return held, (f"The evidence is a condition or a guess ({listing(sorted(hedge))}), "
                          "not a statement, so the person decides.")
    # every negation of the clauses the quote stands in, together: one clause's "not" is
    # not covered by another's
    dropped = sum((negations(c.text) for c in held), Counter()) - kept_neg
    if dropped:
        return held, (f"The evidence says {listing(sorted(dropped))}, which the new text "
                      "drops, so the person decides.")
    return held, ""


def _evidence_keys(found: Quote) -> Counter[str]:
    text = found.heard.text
    keys: Counter[str] = Counter()
    for p, q in _region(found):
        keys.update(t.key for t in toks(text[p:q]) if not t.free)
    return keys


# =============================================================================== changes


def add_problem(text: str, found: Quote) -> str:
    """Why the add of *text* on the evidence *found* cannot apply by itself ('' when it can)."""
    if not language_known(text) or not language_known(found.heard.text):
        return ("The entry is in a language whose negations Cairn cannot check, so the person "
                "decides.")
    evidence = _evidence_keys(found)
    entering = Counter(t.key for t in toks(text) if not t.free)
    stray = sorted((entering - evidence).elements())
    if stray:
        return (f"The text adds {listing(stray)}, which the evidence does not say, so the "
                "person decides.")
    _, problem = _said_problem(found, text)
    return problem


def update_problem(label: str, old: str, new: str, found: Quote) -> str:
    """Why *new* cannot replace *old* by itself on the evidence *found* ('' when it can)."""
    if found.role == CLAUDE:
        return (f"{label} changes only on the person's own words, not on Claude's; quote what "
                "the person said.")
    if not all(language_known(t) for t in (old, new, found.heard.text)):
        return (f"{label} is in a language whose negations Cairn cannot check, so the person "
                "decides.")
    before, after = [t for t in toks(old) if not t.free], [t for t in toks(new) if not t.free]
    entering = Counter(t.key for t in after) - Counter(t.key for t in before)
    leaving = Counter(t.key for t in before) - Counter(t.key for t in after)
    evidence = _evidence_keys(found)
    stray = sorted((entering - evidence).elements())
    if stray:
        return (f"The new text of {label} brings {listing(stray)}, which the evidence does "
                "not say, so the person decides.")
    kinds_in = Counter(_family(t) for t in after if entering[t.key] and _take(entering, t))
    gone = [t for t in before if leaving[t.key] and _take(leaving, t)]
    fixed = [t.key for t in gone if t.kind in ("negation", "qualifier", "role", "unit")]
    if fixed:
        return (f"The new text of {label} drops {listing(fixed)}, so the person decides: a "
                "word that bounds or ties an entry never leaves by itself.")
    short = Counter(_family(t) for t in gone) - kinds_in
    if short:
        lost = [t.key for t in gone if short[_family(t)]]
        return (f"The new text of {label} drops {listing(lost)} with no new token of the same "
                "kind from the evidence in its place, so the person decides.")
    # the subject in the changed clause of the entry, else in its sentence ("Contact: Dana")
    subject = (_subject(before, after, _clause_ids(old, before))
               or _subject(before, after, [t.sentence for t in before]))
    if not subject:
        return (f"The new text of {label} keeps nothing that says what it is about, so the "
                "person decides.")
    held, problem = _said_problem(found, new)
    if problem:
        return problem
    wanted = Counter(entering)
    for clause in held:
        keys = Counter(t.key for t in toks(clause.text))
        if not (wanted - keys) and all(keys[s] for s in subject):
            return ""
    return (f"The evidence does not say it of what {label} is about ({listing(sorted(subject))}"
            " in the same clause as the new words), so the person decides.")


def _take(counts: Counter[str], tok: Tok) -> bool:
    """Consume one of *tok*'s key from *counts* (to walk a multiset difference in order)."""
    if counts[tok.key] <= 0:
        return False
    counts[tok.key] -= 1
    return True


def _family(tok: Tok) -> str:
    """What may replace a token: a value of its family, a word or a name for a word or a
    name, a letter for a letter, a symbol for a symbol."""
    return "word" if tok.kind in ("word", "name") else tok.kind


def _clause_ids(old: str, before: list[Tok]) -> list[int]:
    """Which clause of the entry each token is in (split at , ; : and sentence ends)."""
    plain = text_of(old)
    cuts = sorted(_breaks(plain, _SENTENCE_BREAK) + _breaks(plain, _ENTRY_BREAK))
    return [sum(c < t.start for c in cuts) for t in before]


_ENTRY_BREAK = re.compile(r"[,，、:：]")


def _subject(before: list[Tok], after: list[Tok], clause: list[int]) -> set[str]:
    """The words the entry keeps next to what changes (up to two on each side, in the same
    clause of the entry): what the evidence must name in the clause of the new words."""
    matcher = SequenceMatcher(None, [t.key for t in before], [t.key for t in after],
                              autojunk=False)
    kept = {i for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal"
            for i in range(i1, i2)}
    found: set[str] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag == "equal":
            continue
        for step, edge in ((-1, i1 - 1), (1, i2)):
            # the clause of the changed words (of the word before an insertion at the end)
            here = clause[min(max(i1 if i2 > i1 else edge, 0), len(before) - 1)] if before else 0
            seen, n = 0, edge
            while 0 <= n < len(before) and seen < 2 and clause[n] == here:
                if n in kept and before[n].subject:
                    found.add(before[n].key)
                    seen += 1
                n += step
    return found


# ================================================================================= merges


@dataclass(frozen=True, slots=True)
class Join:
    """How a merged text joins its entries: their order, and where each one's words end."""

    order: tuple[int, ...]
    ends: tuple[int, ...]  # in the merged text (as written), after each part's last token


def merge_join(heads: Sequence[str], text: str) -> Join | str:
    """How *text* joins *heads* by punctuation alone, or why it does not."""
    parts = [tuple(t.key for t in toks(h)) for h in heads]
    merged = toks(text)
    keys = tuple(t.key for t in merged)
    everyone = (1 << len(parts)) - 1

    @cache
    def walk(at: int, used: int) -> tuple[int, ...] | None:
        if used == everyone:
            return () if at == len(keys) else None
        for n, part in enumerate(parts):
            if not used >> n & 1 and keys[at:at + len(part)] == part:
                rest = walk(at + len(part), used | 1 << n)
                if rest is not None:
                    return (n, *rest)
        return None

    order = walk(0, 0)
    if order is None:
        return ("The merged text is not the entries' own words joined by punctuation (a merge "
                "adds and drops no word, no symbol), so the person decides.")
    ends, at = [], 0
    for n in order:
        at += len(parts[n])
        ends.append(merged[at - 1].end if at else 0)
    return Join(tuple(order), tuple(_offset(text, e) for e in ends))


def _offset(text: str, at: int) -> int:
    """An offset of :func:`text_of` *text* as an offset of *text* (they differ only where
    plain() widened "…" to "...")."""
    widened = 0
    for n, char in enumerate(text):
        if n + widened >= at:
            return n
        if char == "…":
            widened += 2
    return len(text)


def marked_merge(text: str, join: Join, marks: Sequence[str]) -> str:
    """*text* with each merged entry's own ``(updated …)`` mark after its part, so no other
    fact looks updated that day (*marks*: each entry's, '' when none)."""
    out, at = [], 0
    for n, end in zip(join.order, join.ends):
        out.append(text[at:end])
        if marks[n]:
            out.append(f" {marks[n]}")
        at = end
    out.append(text[at:])
    return "".join(out)
