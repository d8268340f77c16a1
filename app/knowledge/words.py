"""A text as a sequence of words, each of a kind: how a change is judged by what leaves an
entry, word by word (docs/knowledge.md).

The words are the tokens of :func:`tokens.spans` (word boundaries, any script; a URL, a date,
an amount … is one token; scripts written without spaces go a character at a time), each
given a kind:

- ``value``: a hard token (number, date, time, amount, percent, URL, e-mail address, path,
  identifier, code span …) or a number written as a word ("three", "million", "third");
- ``unit``: a currency or a unit of measure ("EUR", "euros", "km", "am" after a number);
- ``qualifier``: a word that bounds or turns a statement ("not", "never", "only", "except",
  "at most", "before", "over", "unless", "was" …): kept exactly, in its place;
- ``role``: a word that ties the others ("to", "from", "with", "and", "or" …): never leaves,
  may join new words;
- ``question``: "who", "what", "when" … (the gap in an open question an answer fills);
- ``stop``: articles and the present of "to be", which carry nothing of their own;
- ``name``: a capitalised word that is not an ordinary sentence opener, mid-sentence;
- ``word``: every other word.

Words keep where they are (``start``, ``end``), which sentence of the text they are in, and
whether they sit in a ``(was …)`` note (the earlier value of a changed entry: history, not
a fact the entry states).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from app.knowledge import tokens as tk

STOP = frozenset("a an the is are am be been being".split())
QUALIFIERS = frozenset("""
not no never none nobody nothing neither nor without cannot
only except excluding unless until till if
before after over under above below beyond within since between
least most more less fewer max maximum min minimum exactly
always every all each any instead rather than but
was were
""".split())
ROLES = frozenset("""
to from for by with of in on at into onto per via about against and or as through toward
towards across around near off out up down upon vs versus while so because
""".split())
QUESTIONS = frozenset("who whom whose what which where when why how whether".split())
NUMBER_WORDS = frozenset("""
zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
hundred thousand million billion trillion dozen half quarter twice thrice
first second third fourth fifth sixth seventh eighth ninth tenth
""".split())
CURRENCIES = frozenset("""
eur usd gbp jpy chf cny rmb inr cad aud nzd sek nok dkk pln czk huf brl mxn krw rub try zar
euro euros dollar dollars pound pounds sterling yen yuan franc francs rupee rupees cent cents
pence penny krona kronor krone kroner zloty real reais peso pesos won ruble rubles lira
""".split())
UNITS = frozenset("""
km kms kilometre kilometres kilometer kilometers mile miles metre metres meter meters
cm mm kg kgs kilogram kilograms gram grams lb lbs ounce ounces oz litre litres liter liters
ml gb mb tb kb gib mib kib mph kph km/h px pt em rem dpi fps hz khz mhz ghz kw kwh mw
celsius fahrenheit °c °f
""".split())
# Units only right after a number ("5 m", "3 days", "10 am"): elsewhere ordinary words.
UNITS_AFTER_NUMBER = frozenset("""
m g h s l t mi ft yd min mins sec secs hr hrs hour hours minute minutes second seconds
day days week weeks month months year years am pm a.m p.m
""".split())
_VALUE_FAMILY = {"number": "quantity", "amount": "quantity", "percent": "percent",
                 "date": "date", "time": "time", "url": "url", "email": "email",
                 "path": "path", "file": "path", "qpath": "path", "hex": "hex",
                 "channel": "channel", "handle": "handle", "id": "id", "code": "code"}
_WAS_NOTE = re.compile(r"\((?:was|previously|formerly|before)\b[^()]*\)", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?;\n\r\u2028\u2029]")
_CURRENCY_SIGN = re.compile(r"[$€£¥₹₩₽¢₺₪₫฿]")
# Quoting a formatted reply loosely is still quoting it: typographic quotes, dashes and
# spaces read as their plain forms, emphasis and code ticks as spaces.
# (Double quotes stay in an entry, where a quoted path is one value; a quote reads them as
# spaces, whichever their style.)
_PLAIN = str.maketrans({
    **dict.fromkeys("‘’‚‛′", "'"), **dict.fromkeys("‐‑‒–—―−", "-"), "…": "...",
    **dict.fromkeys("\u00a0\u2007\u202f", " "),
})
_LOOSE = str.maketrans(dict.fromkeys("*`~\"“”„‟″«»", " "))


@dataclass(frozen=True, slots=True)
class Word:
    kind: str  # value | unit | qualifier | role | question | stop | name | word
    family: str  # what may replace it: a value's family, or its kind
    key: str  # what two words compare by
    text: str  # as written
    start: int
    end: int
    sentence: int  # which sentence of the text it is in, from 0
    aside: bool = False  # in a "(was …)" note

    @property
    def content(self) -> bool:
        """Whether it counts when words are compared (articles and "is" do not, nor notes)."""
        return self.kind != "stop" and not self.aside

    @property
    def anchor(self) -> bool:
        """Whether it says what a sentence is about (a value, a name or a word)."""
        return self.kind in ("value", "name", "word", "unit")


# Letters of other scripts that look like Latin ones: inside a Latin word, a disguise.
_LOOK_ALIKE = str.maketrans({
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l", "А": "A", "В": "B", "Е": "E",
    "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "І": "I",
    "Ј": "J", "Ѕ": "S", "ο": "o", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p",
    "τ": "t", "υ": "u", "χ": "x", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I",
    "Κ": "K", "Μ": "M", "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
})
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e"))
_MIXED = re.compile(r"[^\W\d_]+")


def normalise(text: str) -> str:
    """*text* as every compare reads it: NFKC, zero-width characters dropped, and letters of
    other scripts that look like Latin ones folded inside a word that has Latin letters
    ("nоt" with a Cyrillic о is "not"); a word wholly in another script stays as it is."""
    text = unicodedata.normalize("NFKC", text.translate(_ZERO_WIDTH))
    if text.isascii():
        return text

    def fold(match: re.Match[str]) -> str:
        word = match[0]
        if word.isascii() or not any("a" <= c.lower() <= "z" for c in word):
            return word
        return word.translate(_LOOK_ALIKE)

    return _MIXED.sub(fold, text)


def plain(text: str) -> str:
    return normalise(text).translate(_PLAIN)


def loose(text: str) -> str:
    """*text* as a quote of it is read: typographic variants plain, emphasis and ticks gone."""
    return plain(text).translate(_LOOSE)


def words(text: str, *, quoted: bool = False) -> list[Word]:
    """The words of *text* in order, each with its kind.  *quoted*: read as a quote is (see
    :func:`loose`), every key case folded."""
    text = loose(text) if quoted else plain(text)
    notes = [(m.start(), m.end()) for m in _WAS_NOTE.finditer(text)]
    found: list[Word] = []
    sentence = 0
    previous: Word | None = None
    for token in tk.spans(text):
        if previous is not None and _SENTENCE_END.search(text, previous.end, token.start):
            sentence += 1
        word = _word(token, previous, sentence, quoted,
                     any(a <= token.start < b for a, b in notes))
        found.append(word)
        previous = word
    return found


def _word(token: tk.Token, previous: Word | None, sentence: int, quoted: bool,
          aside: bool) -> Word:
    folded = token.value.casefold()
    after_number = previous is not None and previous.family == "quantity"
    if token.kind in ("word", "name", "id", "number"):
        kind = ("unit" if after_number and folded in UNITS_AFTER_NUMBER else
                "stop" if folded in STOP else
                "qualifier" if is_qualifier(folded) else
                "role" if folded in ROLES else
                "question" if folded in QUESTIONS else
                "value" if folded in NUMBER_WORDS else
                "unit" if folded in CURRENCIES or folded in UNITS else "")
        if kind == "value":
            return Word(kind, "quantity", folded, token.value, token.start, token.end,
                        sentence, aside)
        if kind:
            return Word(kind, kind, folded, token.value, token.start, token.end, sentence,
                        aside)
    if token.kind in ("word", "name"):
        return Word(token.kind, token.kind, folded, token.value, token.start, token.end,
                    sentence, aside)
    key = folded if quoted or token.kind == "email" else token.value
    return Word("value", _VALUE_FAMILY.get(token.kind, token.kind), key, token.value,
                token.start, token.end, sentence, aside)


def is_qualifier(folded: str) -> bool:
    return (folded in QUALIFIERS or folded.endswith(("n't", "n’t"))
            or folded.startswith("avoid"))


def units(found: list[Word]) -> list[str]:
    """The units and currencies of *found*, in order, a currency sign of an amount too."""
    seen: list[str] = []
    for word in found:
        if not word.content:
            continue
        if word.kind == "unit":
            seen.append(word.key)
        elif word.kind == "value" and word.family == "quantity":
            seen += _CURRENCY_SIGN.findall(word.text)
    return seen


def replaceable(gone: Word, new: Word) -> bool:
    """Whether *new* is of the kind that may stand for *gone*: a value for a value of its
    family (a currency for the same currency), a name for a name, a word for a word — a
    capitalised word where a name was, and anything but a qualifier or a unit where a
    question word was."""
    if gone.kind in ("qualifier", "role", "unit", "stop") or new.kind in (
            "qualifier", "role", "unit", "stop"):
        return False
    if gone.kind == "question":
        return True
    if gone.kind == "value" or new.kind == "value":
        return (gone.kind == new.kind and gone.family == new.family
                and _CURRENCY_SIGN.findall(gone.text) == _CURRENCY_SIGN.findall(new.text))
    if gone.kind == new.kind:
        return True
    return gone.text[:1].isupper() or new.text[:1].isupper()


def keys(text: str) -> list[str]:
    """The keys of *text*'s content words as a quote reads them."""
    return list(_keys(text))


@lru_cache(maxsize=32_768)  # every entry of every document is read at every rebuild
def _keys(text: str) -> tuple[str, ...]:
    return tuple(w.key for w in words(text, quoted=True) if w.kind != "stop")
