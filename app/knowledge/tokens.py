"""The values an entry must never lose, and what else carries its meaning (docs/knowledge.md).

A *hard token* is a value a person would be hurt to see change silently: a number, a date or
time, an amount with its currency, a percentage, a URL or bare domain, an e-mail address, a
path or file name, a hex colour, an @handle, an identifier (a word with digits or ``_``,
inner capitals, an ALL-CAPS code, in any script), a code span or a quoted path.  Besides
those, an entry's *names* (capitalised words that are not ordinary sentence openers) and its
*negations* ("never", "not", "don't" …) carry its meaning.

Tokens are compared as a multiset of whole tokens, extracted the same way on both sides: a
value that appeared twice must appear twice, and a standalone number is not kept by a URL
or a longer number that contains it.  URLs and identifiers compare exactly; e-mail addresses
and names ignoring case; code spans and quoted paths by their exact content, ticks or quotes
aside.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

# Only ``(updated …)`` is written by code; it is bookkeeping, not a fact to protect.
UPDATE_MARK = re.compile(r"\(updated \d{4}-\d{2}-\d{2}\)")

_A = r"[^\W_]"  # a letter or digit, in any script
# A token is whole: not glued to a letter or digit, nor to one through ``.``, ``-`` or ``_``
# (2.14 is not kept by 2.14.0, v2 not by v2_beta), nor a digit to a digit through ``,``
# (1,000). The same rule decides extraction on both sides, so a token always finds itself.
# ``_`` is a joiner rather than a letter so that ``_v2_`` (emphasis) holds the token v2.
_BEFORE = rf"(?<!{_A})(?<!{_A}[._-])(?:(?<![0-9],)|(?![0-9]))"
_AFTER = rf"(?!{_A})(?![._-]{_A})(?:(?<![0-9])|(?!,[0-9]))"
_SPAN = r"[^\s<>\"`]"  # what a URL or path runs over; any space (incl. folded breaks) ends it
_NUM = r"[0-9]+(?:[.,][0-9]+)*"
_CURRENCY = r"[$€£¥₹₩₽¢₺₪₫฿]"
# "5k", "2bn", "3 million": the magnitude is part of the value.
_MAGNITUDE = r"(?:[kKmMbB]|bn|mn|\s?(?:thousand|million|billion|trillion))(?![\w])"
_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
          r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_DAY = r"[0-9]{1,2}(?:st|nd|rd|th)?"
# Top-level domains a bare domain is recognised by; other ``name.ext`` words are file names.
_TLD = (r"(?:com|org|net|io|dev|app|ai|co|uk|de|fr|eu|es|it|nl|ch|se|no|dk|fi|pl|at|be|jp|cn"
        r"|ru|us|ca|au|nz|in|br|gov|edu|info|biz|me|tv|xyz|site|cloud|tech|example|test)")
# A folder whose name has spaces ("My Documents", "Program Files": each word capitalised or
# a number), in a path that ends with a file name; other spaces end a path.
_FOLDER = r"[\w.-]+(?:[ ][A-Z0-9][\w.-]*)*"
_FILE = r"[\w.-]+\.[A-Za-z0-9]{1,10}"
_TOKEN = re.compile(rf"""
    (?P<code>`+)(?P<code_body>[^`\n]+?)(?P=code)
  | "(?P<qpath>[^"\n]*[/\\][^"\n]*)"
  | {_BEFORE}(?:
    (?P<url>(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.){_SPAN}+
        |(?:[A-Za-z0-9-]+\.)+{_TLD}(?![A-Za-z0-9-])(?:[/:?#]{_SPAN}*)?)
  | (?P<email>[\w.%+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{{2,}})
  | (?P<spaced>(?:~|[A-Za-z]:)?/(?:{_FOLDER}/)+{_FILE}|[A-Za-z]:\\(?:{_FOLDER}\\)+{_FILE})
  | (?P<path>~/{_SPAN}*|[A-Za-z]:\\{_SPAN}*|/[\w.~-]{_SPAN}*
        |[\w.-]+(?:/[\w.-]+)+\.[A-Za-z0-9]{{1,10}})
  | (?P<amount>{_CURRENCY}\s?{_NUM}(?:{_MAGNITUDE})?|{_NUM}\s?{_CURRENCY}|{_NUM}{_MAGNITUDE})
  | (?P<percent>{_NUM}\s?(?:%|percent(?![\w])))
  | (?P<date>[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}|[0-9]{{1,2}}[/.][0-9]{{1,2}}[/.][0-9]{{2,4}}
        |{_MONTH}\.?\s+{_DAY}(?:,?\s+[0-9]{{4}})?(?![\w])|{_DAY}\s+{_MONTH}(?:,?\s+[0-9]{{4}})?
        |{_MONTH}\s+[0-9]{{4}})
  | (?P<time>[0-9]{{1,2}}:[0-9]{{2}}(?::[0-9]{{2}})?(?:\s?[AaPp][Mm])?)
  | (?P<hex>\#(?:[0-9A-Fa-f]{{8}}|[0-9A-Fa-f]{{6}}|[0-9A-Fa-f]{{3}}))
  | (?P<channel>\#{_A}[\w-]*)
  | (?P<handle>@{_A}(?:[\w.-]*{_A})?)
  | (?P<file>[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{{1,9}})
  | (?P<word>{_A}+(?:(?:[._-]|(?<=[0-9]),(?=[0-9]))[^\W_]+)*(?:['’][A-Za-z]+)?)
){_AFTER}""", re.X)
_TRAILING = ".,;:!?'*_~"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
# Line-leading list markers are structure, not facts (``3.`` of a numbered list is no value).
_LINE_MARKER = re.compile(r"(?<![^\r\n])[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?=[ \t\r\n]|\Z)")
# Capitalised words that open ordinary sentences: not names.
OPENERS = frozenset("""
a an the this that these those it its we i you they he she our their his her my your us them
and or but if when where while who what which how why whether because so then than also
is are was were be been being has have had do does did will would shall should must may might
can could use uses used using never always not no none all any some each every both either
for in on at to from with by of as into onto about after before over under between per via
please note see keep avoid prefer prefers preferred decided decide agreed chosen ruled
only just still yet now today tomorrow yesterday here there new old next last first second
yes ok okay done open ask asked who's let let's ensure make write send check add update
""".split())
_NEGATION = re.compile(r"(?<![\w'’])(?:never|not|no|none|nobody|nothing|neither|nor|without"
                       r"|cannot|avoid(?:s|ed|ing)?|\w+n['’]t)(?![\w'’])", re.IGNORECASE)
_VALUE_KINDS = ("url", "email", "path", "amount", "percent", "date", "time", "hex", "channel", "handle",
                "file", "code", "qpath", "number", "id")


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # one of _VALUE_KINDS, or "name"
    value: str  # as written (a code span or quoted path: its content)
    start: int  # where it sits in the text examined (marks and markers blanked)
    end: int = -1  # where it ends there (set by :func:`spans`)

    @property
    def key(self) -> str:
        """What two tokens are compared by: case is ignored only where it carries nothing."""
        return self.value.casefold() if self.kind in ("email", "name") else self.value


def _content(text: str) -> str:
    """Marks and line-leading markers blanked out, every other character where it was."""
    blank = lambda m: " " * len(m[0])  # noqa: E731 - same length keeps offsets aligned
    return _LINE_MARKER.sub(blank, UPDATE_MARK.sub(blank, text))


def tokens(text: str) -> list[Token]:
    """Every hard token and name of *text*, in order (marks and list markers are not values)."""
    return [t for t in spans(text, whole=True) if t.kind != "word"]


def spans(text: str, *, whole: bool = False) -> list[Token]:
    """Every token of *text* in order, ordinary words too (kind ``word``), each with where it
    ends (marks and list markers are not tokens).  The words of scripts written without
    spaces (Chinese, Japanese, Thai …) are one character each unless *whole*: a run of them
    is a phrase, not a word."""
    found: list[Token] = []
    content = _content(text)
    for match in _TOKEN.finditer(content):
        kind = match.lastgroup or ""
        if kind == "code_body" or match["code"]:
            body = match["code_body"].rstrip(".,;")  # a sentence's stop is not code
            if any(c.isalnum() for c in body):  # `.` is no value
                found.append(Token("code", body, match.start(), match.end()))
            continue
        value = match[kind]
        if kind == "spaced":  # folders with spaces in their names, up to a file name
            kind = "path"
        if kind in ("url", "path"):
            value = _trim(value)
        elif kind == "word":
            if not whole and _UNSPACED.search(value):
                found += _pieces(value, content, match.start())
                continue
            kind = _word_kind(value, content, match.start(), match.end()) or "word"
        if value:
            found.append(Token(kind, value, match.start(), match.start() + len(value)))
    return found


# Scripts written without spaces between words: each character is a token of its own.
_UNSPACED = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff"
                       "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f]")
_PIECE = re.compile(f"{_UNSPACED.pattern}|(?:(?!{_UNSPACED.pattern})[^\\W_])+")


def _pieces(word: str, content: str, at: int) -> list[Token]:
    found = []
    for piece in _PIECE.finditer(word):
        start, end = at + piece.start(), at + piece.end()
        kind = ("word" if _UNSPACED.match(piece[0]) else
                _word_kind(piece[0], content, start, end) or "word")
        found.append(Token(kind, piece[0], start, end))
    return found


def _word_kind(word: str, content: str, at: int, end: int) -> str:
    """``number``, ``id``, ``name`` or '' (an ordinary word)."""
    if word.replace(",", "").replace(".", "").isdigit():
        return "number"
    letters = [c for c in word if c.isalpha()]
    if (any(c.isdigit() for c in word) or "_" in word
            or any(a.islower() and b.isupper() for a, b in zip(word, word[1:]))
            or (len(letters) >= 2 and all(c.isupper() for c in letters))):
        return "id"
    if not word[0].isupper() or word.casefold() in OPENERS or "'" in word or "’" in word:
        return ""
    if not _opens_sentence(content, at):
        return "name"
    # A sentence's first word is capitalised anyway ("Tracking page …"): a name only when
    # another capitalised word follows ("Dana Ruiz") or it is capitalised elsewhere too.
    after = re.match(r"[ \t]+([^\W\d_])[^\W\d_]*[a-z]", content[end:])
    if after and after[1].isupper():
        return "name"
    elsewhere = re.finditer(rf"(?<![\w'’]){re.escape(word)}(?![\w'’])", content)
    return "name" if any(not _opens_sentence(content, m.start()) for m in elsewhere) else ""


def _opens_sentence(content: str, at: int) -> bool:
    before = content[max(0, at - 80):at].rstrip(" \t\"'“‘*_(")
    return not before or before.endswith(("\n", "\r", ".", "!", "?", ":", ";"))


def _trim(token: str) -> str:
    """Sentence punctuation and unbalanced closing brackets are not part of a URL or path."""
    while token and (token[-1] in _TRAILING or
                     (token[-1] in _CLOSERS and
                      token.count(token[-1]) > token.count(_CLOSERS[token[-1]]))):
        token = token[:-1]
    return token


def values(text: str) -> Counter[tuple[str, str]]:
    """The hard tokens of *text* (names aside) as a multiset of (kind, key)."""
    return Counter((t.kind, t.key) for t in tokens(text) if t.kind != "name")


def names(text: str) -> set[str]:
    """The names of *text*, case folded."""
    return {t.key for t in tokens(text) if t.kind == "name"}


def negations(text: str) -> int:
    return len(_NEGATION.findall(_content(text)))


def hard_tokens(text: str) -> set[str]:
    """The hard tokens of *text* as written (names aside)."""
    return {t.value for t in tokens(text) if t.kind != "name"}


def _present_names(text: str) -> set[str]:
    """Every word of *text*, case folded: a name is kept wherever it stands in a sentence."""
    return {w.casefold() for w in re.findall(r"[^\W_]+(?:[.-][^\W_]+)*", _content(text))}


def missing_tokens(old: str, new: str) -> list[str]:
    """The hard tokens of *old* that *new* does not have as often, sorted; names too."""
    lost = values(old) - values(new)
    shown = [key for (_, key), count in lost.items() for _ in range(count)]
    kept_names = _present_names(new)
    return sorted(shown + [n for n in names(old) if n not in kept_names])


def lost_by_kind(old: str, new: str) -> dict[str, list[str]]:
    """What *new* lost of *old*, by kind (names as the kind ``name``)."""
    found: dict[str, list[str]] = {}
    for (kind, key), count in (values(old) - values(new)).items():
        found.setdefault(kind, []).extend([key] * count)
    kept_names = _present_names(new)
    gone = sorted(n for n in names(old) if n not in kept_names)
    if gone:
        found["name"] = gone
    return found


def gained_by_kind(old: str, new: str) -> dict[str, list[str]]:
    """What *new* has that *old* did not, by kind (names as the kind ``name``)."""
    found: dict[str, list[str]] = {}
    for (kind, key), count in (values(new) - values(old)).items():
        found.setdefault(kind, []).extend([key] * count)
    before = _present_names(old)
    fresh = sorted(n for n in names(new) if n not in before)
    if fresh:
        found["name"] = fresh
    return found


def pairs(text: str) -> set[tuple[str, str]]:
    """Each value with the word just before it ("web 8080" → ("web", "8080")): a value that
    moves to another label has changed meaning even when the set of values has not."""
    found: set[tuple[str, str]] = set()
    content = _content(text)
    for token in tokens(text):
        if token.kind == "name":
            continue
        before = re.search(r"([^\W\d_]+)[\s:=]{1,3}$", content[max(0, token.start - 40):token.start])
        if before and before[1].casefold() not in OPENERS:  # "on", "at": no label
            found.add((before[1].casefold(), token.key))
    return found


def swapped(old: str, new: str) -> list[str]:
    """Values of *old* that *new* puts next to another of *old*'s labels."""
    was = pairs(old)
    labels = {label for label, _ in was}
    held = {value for _, value in was}
    return sorted(f"{label} {value}" for label, value in pairs(new) - was
                  if label in labels and value in held)
