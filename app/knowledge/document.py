"""A knowledge document as sections and entries, parsed with markdown-it-py.

Entries are the top-level list items (with their sub-items). Parsing never changes the text:
each entry keeps its exact source lines and knows where they are, so the rebuild can edit the
document at entry granularity and leave every other byte the person wrote as it was.

Also here, because the rebuild's validation rests on them: the labels the knowledge model
sees (``P1: …``), duplicate detection (:func:`normalise`) and the hard tokens a change must
never lose (:func:`hard_tokens`, :func:`missing_tokens`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from markdown_it.token import Token


SECTIONS: tuple[str, ...] = (
    "Working style & preferences",
    "Facts",
    "Decisions",
    "People & contacts",
    "Assets & links",
    "Open questions",
)

_UPDATED = re.compile(r"\((?:updated|added) (\d{4}-\d{2}-\d{2})\)")
# Only ``(updated …)`` is written by code; it is bookkeeping, not a fact to protect.
UPDATE_MARK = re.compile(r"\(updated \d{4}-\d{2}-\d{2}\)")
# markdown-it splits lines on \r\n, \r and \n only; str.splitlines() knows more breaks and
# would put the line numbers of its token maps out of step with ours.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_ITEM_START = re.compile(r"([ \t]*(?:[-*+]|[0-9]{1,9}[.)]))([ \t]*)")


@cache
def markdown() -> Any:
    """The parser, built on first use: importing markdown-it-py costs start-up time."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark")


@dataclass(frozen=True, slots=True)
class Entry:
    section: str | None  # the ``##`` heading it sits under (None: before any, or under a ``#``)
    text: str  # its source lines, exactly (without the final line break)
    index: int  # position in the document, from 0
    start: int = 0  # its first source line, from 0
    end: int = 0  # the line after its last non-blank line
    head_end: int = 0  # the line after its leading paragraph; ``start`` when it has none

    @property
    def date(self) -> str:
        """The latest ``(updated YYYY-MM-DD)`` mark, '' when none: newer entries win ties."""
        found = _UPDATED.findall(self.text)
        return max(found) if found else ""


@dataclass(frozen=True, slots=True)
class Heading:
    title: str
    level: int  # 1 or 2: only these delimit sections
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Parsed:
    lines: tuple[str, ...]  # the source lines with their own line endings
    entries: tuple[Entry, ...]
    headings: tuple[Heading, ...]
    newline: str  # the line ending new lines get: the document's first one


@dataclass(frozen=True, slots=True)
class Splice:
    """Lines ``start:end`` of a document replaced by ``lines`` (``start == end``: inserted)."""

    start: int
    end: int
    lines: tuple[str, ...]  # without line endings
    rank: int = 0  # orders insertions at the same line


def parse(text: str) -> Parsed:
    lines = tuple(_LINE.findall(text))
    tokens = markdown().parse(text)
    found: list[Entry] = []
    headings: list[Heading] = []
    section: str | None = None
    for position, token in enumerate(tokens):
        if token.level != 0 or not token.map:
            continue  # inside a quote or list: neither a section nor an entry
        if token.type == "heading_open" and token.tag in ("h1", "h2"):
            title = tokens[position + 1].content.strip()
            headings.append(Heading(title, int(token.tag[1]), *token.map))
            section = title if token.tag == "h2" else None
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            found += _items(tokens, position, lines, section, len(found))
    first_break = re.search(r"\r\n|\r|\n", text)
    return Parsed(lines, tuple(found), tuple(headings), first_break[0] if first_break else "\n")


def _items(tokens: list[Token], opened: int, lines: tuple[str, ...], section: str | None,
           count: int) -> list[Entry]:
    """The items of the list opened at ``tokens[opened]`` (the list's own level is 0)."""
    found: list[Entry] = []
    for position in range(opened + 1, len(tokens)):
        token = tokens[position]
        if token.level == 0:
            break  # the list's close
        if token.type != "list_item_open" or token.level != 1 or not token.map:
            continue
        start, end = token.map
        while end > start + 1 and _blank(lines[end - 1]):
            end -= 1  # markdown-it counts the blank lines after an item as its own
        first = tokens[position + 1]
        opened_by = first.map if first.type == "paragraph_open" and first.map else None
        head_end = opened_by[1] if opened_by and opened_by[0] == start else start
        body = "".join(lines[start:end]).rstrip("\r\n")
        found.append(Entry(section, body, count + len(found), start, end, head_end))
    return found


def entries(text: str) -> list[Entry]:
    """Every top-level list item of the document, in order."""
    return list(parse(text).entries)


def _blank(line: str) -> bool:
    return line.strip(" \t\r\n") == ""


def canonical_section(title: str) -> str | None:
    """The one of the six sections a heading names, forgiving case and spacing."""
    key = " ".join(title.split()).casefold()
    return next((s for s in SECTIONS if s.casefold() == key), None)


# ====================================================================== what the model sees


def labelled(text: str, prefix: str) -> str:
    """The document with ``P1: ``, ``P2: ``… after each entry's list marker; nothing else."""
    parsed = parse(text)
    lines = list(parsed.lines)
    for entry in parsed.entries:
        marker, spacing, rest = _split_item(lines[entry.start])
        lines[entry.start] = f"{marker}{spacing or ' '}{prefix}{entry.index + 1}: {rest}"
    return "".join(lines)


def _split_item(line: str) -> tuple[str, str, str]:
    """An entry's first line as (indent + marker, the spacing after it, the rest)."""
    found = _ITEM_START.match(line)
    if not found:
        return "", "", line
    return found[1], found[2], line[found.end():]


def render_entry(text: str, marker: str = "-") -> str:
    return f"{marker} {text}"


def bullet(entry: Entry) -> str:
    """The bullet an entry uses, for a new neighbour; numbered items get ``-``."""
    marker = _split_item(entry.text)[0].strip()
    return marker if marker in ("-", "*", "+") else "-"


# ======================================================================= duplicates, tokens

_LEADING_MARKER = re.compile(r"^(?:[-*+]|[0-9]{1,9}[.)])(?:\s+|$)")


def normalise(text: str) -> str:
    """The text reduced for duplicate detection: case, marker, marks, spacing, final stops."""
    folded = _LEADING_MARKER.sub("", " ".join(text.casefold().split()))
    return " ".join(_UPDATED.sub(" ", folded).split()).rstrip(".,;:!?… ")


_W = "A-Za-z0-9"
# A token is whole: not glued to a letter or digit, nor to one through ``.``, ``-`` or ``_``
# (2.14 is not kept by 2.14.0, v2 not by v2_beta), nor a digit to a digit through ``,``
# (1,000). The same rule decides extraction and presence, so a token always finds itself.
# ``_`` is a joiner rather than a letter so that ``_v2_`` (emphasis) holds the token v2.
_BEFORE = rf"(?<![{_W}])(?<![{_W}][._-])(?:(?<![0-9],)|(?![0-9]))"
_AFTER = rf"(?![{_W}])(?![._-][{_W}])(?:(?<![0-9])|(?!,[0-9]))"
_SPAN = r"[^\s<>\"`]"  # what a URL or path runs over; any space (incl. folded breaks) ends it
_TOKEN = re.compile(rf"""{_BEFORE}(?:
    (?P<url>(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.){_SPAN}+)
  | (?P<email>[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{{2,}})
  | (?P<path>~/{_SPAN}*|[A-Za-z]:\\{_SPAN}*|/[A-Za-z0-9._~-]{_SPAN}*
        |[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.[A-Za-z0-9]{{1,10}})
  | (?P<date>[0-9]{{4}}-[0-9]{{1,2}}-[0-9]{{1,2}}|[0-9]{{1,2}}[/.][0-9]{{1,2}}[/.][0-9]{{2,4}}
        |[0-9]{{1,2}}:[0-9]{{2}}(?::[0-9]{{2}})?(?:[AaPp][Mm])?)
  | (?P<hex>\#(?:[0-9A-Fa-f]{{8}}|[0-9A-Fa-f]{{6}}|[0-9A-Fa-f]{{3}}))
  | (?P<handle>@[{_W}](?:[{_W}._-]*[{_W}])?)
  | (?P<word>[{_W}]+(?:(?:[._-]|(?<=[0-9]),(?=[0-9]))[{_W}]+)*)
){_AFTER}""", re.X)
_TRAILING = ".,;:!?'*_~"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
# Line-leading list markers are structure, not facts (``3.`` of a numbered list is no value).
_LINE_MARKER = re.compile(r"(?<![^\r\n])[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?=[ \t\r\n]|\Z)")


def _content(text: str) -> str:
    """Marks and line-leading markers blanked out, every other character where it was."""
    blank = lambda m: " " * len(m[0])  # noqa: E731 - same length keeps offsets aligned
    return _LINE_MARKER.sub(blank, UPDATE_MARK.sub(blank, text))


def hard_tokens(text: str) -> set[str]:
    """Values a change must never lose: numbers, dates, times, URLs, e-mail addresses, paths,
    hex colours and identifiers (words with digits or ``_``, inner capitals, ALL-CAPS codes,
    @handles). ``(updated …)`` marks and list markers are not values."""
    found: set[str] = set()
    for match in _TOKEN.finditer(_content(text)):
        kind, token = match.lastgroup, match[0]
        if kind in ("url", "path"):
            token = _trim(token)
        elif kind == "word" and not _hard_word(token):
            continue
        if token:
            found.add(token)
    return found


def _trim(token: str) -> str:
    """Sentence punctuation and unbalanced closing brackets are not part of a URL or path."""
    while token and (token[-1] in _TRAILING or
                     (token[-1] in _CLOSERS and
                      token.count(token[-1]) > token.count(_CLOSERS[token[-1]]))):
        token = token[:-1]
    return token


def _hard_word(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return (any(c.isdigit() for c in word) or "_" in word
            or re.search("[a-z][A-Z]", word) is not None
            or (len(letters) >= 2 and all(c.isupper() for c in letters)))


def _folds_case(token: str) -> bool:
    """URLs and e-mail addresses are compared ignoring case; everything else exactly."""
    return "://" in token or token.lower().startswith("www.") or (
        "@" in token and not token.startswith("@"))


def token_present(token: str, text: str) -> bool:
    """Whether *token* occurs in *text* as a whole token (see ``_BEFORE`` and ``_AFTER``)."""
    return _present(token, _content(text))


def _present(token: str, content: str) -> bool:
    flags = re.IGNORECASE if _folds_case(token) else 0
    return re.search(_BEFORE + re.escape(token) + _AFTER, content, flags) is not None


def missing_tokens(old: str, new: str) -> list[str]:
    """The hard tokens of *old* that *new* no longer has, sorted."""
    content = _content(new)
    return sorted(t for t in hard_tokens(old) if not _present(t, content))


# ========================================================================= editing by entry


def head_splice(parsed: Parsed, entry: Entry, text: str, *, whole: bool) -> tuple[Splice, str]:
    """Replace an entry's leading paragraph (or, *whole*, all its lines) by one line of *text*
    under the entry's own marker. Returns the splice and the entry's new text."""
    marker, spacing, _ = _split_item(parsed.lines[entry.start])
    if not 1 <= len(spacing) <= 4 or "\t" in spacing:
        spacing = " "  # 5+ spaces would make the text an indented code block
    line = f"{marker}{spacing}{text}"
    cut = entry.end if whole or entry.head_end == entry.start else entry.head_end
    tail = "".join(parsed.lines[cut:entry.end])
    return Splice(entry.start, cut, (line,)), (line + parsed.newline + tail).rstrip("\r\n")


def removal(parsed: Parsed, entry: Entry) -> Splice:
    """An entry's lines removed; its trailing blank lines too when a blank line precedes it,
    so a loose list does not gain a double gap."""
    end = entry.end
    if entry.start > 0 and _blank(parsed.lines[entry.start - 1]):
        while end < len(parsed.lines) and _blank(parsed.lines[end]):
            end += 1
    return Splice(entry.start, end, ())


def placement(parsed: Parsed, section: str, texts: Iterable[str]
              ) -> tuple[Splice, str, tuple[str, ...]]:
    """Where new entries of one of the six sections go: after the section's last entry; else
    at the end of its heading's content; else under a new heading placed so the six keep
    their order. Returns the splice, the heading they sit under and the entries' lines."""
    rank = SECTIONS.index(section)
    under = [e for e in parsed.entries if e.section and canonical_section(e.section) == section]
    if under:
        last = under[-1]
        lines = tuple(render_entry(t, bullet(last)) for t in texts)
        return (Splice(last.end, last.end, lines + _gap_after(parsed, last.end), rank),
                last.section or section, lines)
    own = [h for h in parsed.headings if h.level == 2 and canonical_section(h.title) == section]
    lines = tuple(render_entry(t) for t in texts)
    if own:
        at = _content_end(parsed, own[0])
        gap = ("",) if at > own[0].end else ()
        return Splice(at, at, gap + lines + _gap_after(parsed, at), rank), own[0].title, lines
    at = _new_section_at(parsed, rank)  # the leading gap goes where not needed (splice)
    block = ("", f"## {section}", "") + lines + _gap_after(parsed, at)
    return Splice(at, at, block, rank), section, lines


def _gap_after(parsed: Parsed, at: int) -> tuple[str, ...]:
    return ("",) if at < len(parsed.lines) and not _blank(parsed.lines[at]) else ()


def _content_end(parsed: Parsed, heading: Heading) -> int:
    """The line after a section's last non-blank line (its content runs to the next # or ##)."""
    later = [h.start for h in parsed.headings if h.start >= heading.end]
    end = min(later, default=len(parsed.lines))
    while end > heading.end and _blank(parsed.lines[end - 1]):
        end -= 1
    return end


def _new_section_at(parsed: Parsed, rank: int) -> int:
    known = [(SECTIONS.index(c), h) for h in parsed.headings if h.level == 2
             and (c := canonical_section(h.title)) is not None]
    preceding = [(r, h.start, h) for r, h in known if r < rank]
    if preceding:
        return _content_end(parsed, max(preceding, key=lambda k: (k[0], k[1]))[2])
    following = [(r, h.start) for r, h in known if r > rank]
    if following:
        return min(following)[1]
    end = len(parsed.lines)
    while end > 0 and _blank(parsed.lines[end - 1]):
        end -= 1
    return end


def splice(parsed: Parsed, splices: Iterable[Splice]) -> str:
    """The document with the splices applied; every line they do not touch kept as it was."""
    out: list[str] = []
    at = 0
    order = sorted(splices, key=lambda s: (s.start, s.end > s.start, s.rank))
    for change in order:
        start = max(change.start, at)  # an insertion inside a replaced range lands after it
        out += parsed.lines[at:start]
        new = list(change.lines)
        if new and new[0] == "" and (not out or _blank(out[-1])):
            new = new[1:]  # two insertions at one point must not make a double gap
        if new and out and not out[-1].endswith(("\n", "\r")):
            out[-1] += parsed.newline  # the document's last line had no line break
        out += [line + parsed.newline for line in new]
        at = max(at, change.end)
    out += parsed.lines[at:]
    return "".join(out)
