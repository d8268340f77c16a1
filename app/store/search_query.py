"""What a person types into the search box, read as a query.

Any text is a query.  Words match as prefixes (as-you-type), ``"an exact phrase"`` as a
phrase (an unclosed quote: the phrase being typed, its last word a prefix), and a few filters:
``workspace:NAME`` (``workspace:"Two words"``), ``in:chats|knowledge|files``,
``before:YYYY-MM-DD``, ``after:YYYY-MM-DD``, ``is:archived``.  Nothing typed ever reaches
FTS5 as syntax: every word and phrase is quoted here, so ``NEAR(``, ``*``, ``AND``, a stray
quote or a control character are only text.  What cannot be a query (a filter that cannot be
read, a query too long) is refused in one sentence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from app.errors import Refused

MAX_QUERY = 1000  # characters; a search box never needs more, and FTS work grows with it
MAX_TERMS = 32
KINDS = {"chats": "chats", "chat": "chats", "messages": "chats", "knowledge": "knowledge",
         "files": "files", "file": "files"}

_TOKEN = re.compile(
    r'(?P<filter>(?<![^\s])(?i:workspace|in|before|after|is):(?:"[^"]*"?|[^\s"]*))'
    r'|(?P<phrase>"[^"]*"?)'
    r'|(?P<word>[^\s"]+)')
_PIECE = re.compile(r"[^\W_]+")  # what FTS5's unicode61 keeps as a token's characters


@dataclass(frozen=True, slots=True)
class Query:
    terms: tuple[tuple[tuple[str, ...], bool], ...] = ()  # (a phrase's words, last is a prefix)
    workspace: str | None = None
    kinds: frozenset[str] = field(default_factory=frozenset)  # empty: every kind
    before: str | None = None  # ISO date: before this day
    after: str | None = None  # ISO date: from the day after it
    archived: bool = False

    @property
    def empty(self) -> bool:
        return not self.terms

    def match(self) -> str:
        """The FTS5 expression: every term quoted, all of them required."""
        parts = []
        for words, prefix in self.terms:
            quoted = '"' + " ".join(words) + '"'
            # A one-letter prefix would walk every term with that letter: matched whole.
            parts.append(quoted + ("*" if prefix and len(words[-1]) > 1 else ""))
        return " ".join(parts)

    def words(self) -> tuple[str, ...]:
        """Every word typed, for highlighting what matched where the index is not asked."""
        return tuple(w for words, _ in self.terms for w in words)


def parse(text: str, *, in_: str | None = None, workspace: str | None = None,
          archived: bool = False) -> Query:
    """*text* as a :class:`Query`; the keyword arguments are the command line's options and
    add to what is typed.  :class:`Refused` in one sentence for what cannot be read."""
    if len(text) > MAX_QUERY:
        raise Refused(f"cannot search for this: a search can be at most {MAX_QUERY:,} "
                      f"characters long, and this one is {len(text):,}")
    text = "".join(c if c.isprintable() else " " for c in text)  # control characters: spaces
    terms: list[tuple[tuple[str, ...], bool]] = []
    kinds: set[str] = set()
    before = after = None
    for found in _TOKEN.finditer(text):
        if found["filter"]:
            key, _, value = found["filter"].partition(":")
            key = key.lower()
            value = value.strip('"').strip()
            if key == "workspace":
                workspace = value or workspace
            elif key == "in":
                kinds.add(_kind(value))
            elif key == "is":
                if value.lower() != "archived":
                    raise Refused(f"cannot search with 'is:{value}': the one 'is:' filter is "
                                  "'is:archived'")
                archived = True
            elif key == "before":
                before = _day(key, value)
            else:
                after = (date.fromisoformat(_day(key, value)) + timedelta(days=1)).isoformat()
        elif found["phrase"]:
            raw = found["phrase"]
            words = tuple(_PIECE.findall(raw))
            if words:
                closed = len(raw) > 1 and raw.endswith('"')
                terms.append((words, not closed))
        else:
            words = tuple(_PIECE.findall(found["word"]))
            if words:
                terms.append((words, True))
    if in_ is not None:
        kinds.add(_kind(in_))
    if len(terms) > MAX_TERMS:
        raise Refused(f"cannot search for this: a search can hold at most {MAX_TERMS} words "
                      f"and phrases, and this one holds {len(terms)}")
    return Query(tuple(terms), workspace, frozenset(kinds), before, after, archived)


def _kind(value: str) -> str:
    kind = KINDS.get(value.lower())
    if kind is None:
        raise Refused(f"cannot search in '{value[:40]}': write in:chats, in:knowledge or "
                      "in:files")
    return kind


def _day(key: str, value: str) -> str:
    try:
        return date.fromisoformat(value).isoformat() if len(value) == 10 else _bad(key, value)
    except ValueError:
        return _bad(key, value)


def _bad(key: str, value: str) -> str:
    raise Refused(f"cannot read '{key}:{value[:40]}' as a date: write it as {key}:YYYY-MM-DD, "
                  "for example before:2026-03-31")
