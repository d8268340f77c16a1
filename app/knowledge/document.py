"""A knowledge document as sections and entries, parsed with markdown-it-py.

Entries are the top-level list items (with their sub-items). Parsing never changes the text:
each entry keeps its exact source lines and knows where they are, so the rebuild can edit the
document at entry granularity and leave every other byte the person wrote as it was.

Also here, because the rebuild's validation rests on them: the labels the knowledge model
sees (``P1: …``), duplicate detection (:func:`normalise`) and the document's block structure
outside its entries (:func:`skeleton`).  The hard tokens live in :mod:`tokens`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from app.knowledge.tokens import UPDATE_MARK, hard_tokens, missing_tokens  # noqa: F401 - re-exported

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
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
# markdown-it splits lines on \r\n, \r and \n only; str.splitlines() knows more breaks and
# would put the line numbers of its token maps out of step with ours.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_ITEM_START = re.compile(r"(\ufeff?[ \t]*(?:[-*+]|[0-9]{1,9}[.)]))([ \t]*)")


@cache
def markdown() -> MarkdownIt:
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
    level: int  # 1 or 2, or 3 for one of the six: only these delimit sections
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Parsed:
    lines: tuple[str, ...]  # the source lines with their own line endings
    entries: tuple[Entry, ...]
    headings: tuple[Heading, ...]
    newline: str  # the line ending new lines get: the document's first one
    # The blocks outside the entries, in order: (kind, their exact source lines).  Edits by
    # entry must leave these byte for byte (see ops._render).
    blocks: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Splice:
    """Lines ``start:end`` of a document replaced by ``lines`` (``start == end``: inserted)."""

    start: int
    end: int
    lines: tuple[str, ...]  # without line endings
    # Orders insertions at the same line: entries that continue the section above come
    # first (negative), then new sections in their canonical order.
    rank: int = 0


# YAML front matter: metadata, never entries (its "- tag" lines are not facts).
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*(?:\r\n|\r|\n)(?:.*?(?:\r\n|\r|\n))??"
                           r"(?:---|\.\.\.)[ \t]*(?:\r\n|\r|\n|\Z)", re.S)
_CONTAINERS = ("bullet_list_open", "ordered_list_open")


def parse(text: str) -> Parsed:
    lines = tuple(_LINE.findall(text))
    front = _front_lines(text)
    tokens = markdown().parse(_markdown_source(lines, front))
    found: list[Entry] = []
    headings: list[Heading] = []
    blocks = [("front matter", "".join(lines[:front]).rstrip("\r\n"))] if front else []
    section: str | None = None
    for position, token in enumerate(tokens):
        if token.level != 0 or not token.map or token.nesting < 0:
            continue  # inside a quote or list: neither a section nor an entry
        if token.type in _CONTAINERS:
            found += _items(tokens, position, lines, section, len(found))
            continue
        # (the final line break aside: a new line after the last one gives it one)
        blocks.append((f"{token.type} {token.tag}",
                       "".join(lines[slice(*token.map)]).rstrip("\r\n")))
        if token.type == "heading_open":
            title = tokens[position + 1].content.strip()
            canonical = canonical_section(title)
            if token.tag in ("h1", "h2") or (token.tag == "h3" and canonical):
                headings.append(Heading(title, int(token.tag[1]), *token.map))
                section = title if token.tag == "h2" or canonical else None
    first_break = re.search(r"\r\n|\r|\n", text)
    return Parsed(lines, tuple(found), tuple(headings), first_break[0] if first_break else "\n",
                  tuple(blocks))


def _front_lines(text: str) -> int:
    found = _FRONT_MATTER.match(text)
    return len(_LINE.findall(found[0])) if found else 0


def _markdown_source(lines: tuple[str, ...], front: int) -> str:
    """What markdown-it reads: front matter as blank lines and no byte-order mark, so that
    line numbers stay ours and a BOM does not hide the first heading."""
    source = ["\n" if number < front else line for number, line in enumerate(lines)]
    if source and source[0].startswith("\ufeff"):
        source[0] = source[0][1:]
    return "".join(source)


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


@dataclass(frozen=True, slots=True)
class Block:
    """A top-level block outside the lists (a paragraph, a table, a code block, a quote, an
    HTML block, a heading, a rule) and its source lines ``start:end``."""

    kind: str  # markdown-it's token type: paragraph_open, table_open, fence, heading_open…
    start: int
    end: int


def top_blocks(text: str) -> list[Block]:
    """The document's top-level blocks other than lists (whose items are :func:`entries`),
    in order; front matter is not among them.  Line numbers are :func:`parse`'s."""
    lines = tuple(_LINE.findall(text))
    tokens = markdown().parse(_markdown_source(lines, _front_lines(text)))
    return [Block(token.type, *token.map) for token in tokens
            if token.level == 0 and token.map and token.nesting >= 0
            and token.type not in _CONTAINERS]


def _blank(line: str) -> bool:
    return line.strip(" \t\r\n") == ""


def canonical_section(title: str) -> str | None:
    """The one of the six sections a heading (or an op) names, forgiving case, spacing, a
    heading's ``#`` marks, trailing punctuation, "and" for "&" and the usual short forms."""
    return _SECTION_NAMES.get(_section_key(title))


def _section_key(title: str) -> str:
    key = re.sub(r"\A\s*#+\s*|\s*#*\s*\Z", "", title).casefold().replace("&", " and ")
    return " ".join(key.split()).rstrip(" :.;!?-–—")


_SECTION_NAMES: dict[str, str] = {
    **{_section_key(s): s for s in SECTIONS},
    "working style": SECTIONS[0], "preferences": SECTIONS[0], "style": SECTIONS[0],
    "working style and preference": SECTIONS[0], "style and preferences": SECTIONS[0],
    "fact": SECTIONS[1], "decision": SECTIONS[2], "people": SECTIONS[3],
    "contacts": SECTIONS[3], "people and contact": SECTIONS[3], "assets": SECTIONS[4],
    "links": SECTIONS[4], "assets and link": SECTIONS[4], "questions": SECTIONS[5],
    "open question": SECTIONS[5],
}


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


def item_text(line: str) -> str:
    """An entry's text without its list marker (and the spacing after it)."""
    return _split_item(line)[2]


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


def head(parsed: Parsed, entry: Entry) -> str:
    """An entry's leading paragraph (its marker included); all of it when it has none."""
    return "".join(parsed.lines[entry.start:entry.head_end]).rstrip("\r\n") or entry.text


def merge_splice(parsed: Parsed, first: Entry, others: Iterable[Entry], text: str
                 ) -> tuple[Splice, str]:
    """*first* becomes one line of *text* followed by its own sub-items and blocks, then those
    of *others* (re-indented under its marker): a merge rewrites the leading paragraphs and
    carries everything under them.  Returns the splice and the merged entry's text."""
    splice_, line_text = head_splice(parsed, first, text, whole=False)
    marker, spacing, _ = _split_item(splice_.lines[0])
    width = len(marker.lstrip("\ufeff")) + len(spacing)
    tails: list[str] = []
    for entry in others:
        own_marker, own_spacing, _ = _split_item(parsed.lines[entry.start])
        own = len(own_marker.lstrip("\ufeff")) + len(own_spacing)
        for line in parsed.lines[entry.head_end:entry.end]:
            body = line.rstrip("\r\n")
            if own != width and body.startswith(" " * own):
                body = " " * width + body[own:]
            tails.append(body)
    if not tails:
        return splice_, line_text
    end = first.end  # the first entry's own tail stays where it is, the others follow it
    own_tail = tuple(line.rstrip("\r\n") for line in parsed.lines[first.head_end:first.end])
    lines = (splice_.lines[0],) + own_tail + tuple(tails)
    return Splice(first.start, end, lines), parsed.newline.join(lines).rstrip("\r\n")


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
        return (Splice(last.end, last.end, lines + _gap_after(parsed, last.end),
                       rank - len(SECTIONS)),
                last.section or section, lines)
    own = [h for h in parsed.headings if canonical_section(h.title) == section]
    lines = tuple(render_entry(t) for t in texts)
    if own:
        at = _content_end(parsed, own[0])
        gap = ("",) if at > own[0].end else ()
        return (Splice(at, at, gap + lines + _gap_after(parsed, at), rank - len(SECTIONS)),
                own[0].title, lines)
    at = _new_section_at(parsed, rank)  # the leading gap goes where not needed (splice)
    # The entries right under the heading, as the six sections are written: a blank line
    # between them would be the only one in the document.
    block = ("", f"## {section}") + lines + _gap_after(parsed, at)
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
    known = [(SECTIONS.index(c), h) for h in parsed.headings
             if (c := canonical_section(h.title)) is not None]
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
    # A byte-order mark belongs to the file, not to its first line: it stays first whatever
    # happens to that line (removed, or preceded by a new section).
    bom = "\ufeff" if parsed.lines and parsed.lines[0].startswith("\ufeff") else ""
    source = (parsed.lines[0][len(bom):],) + parsed.lines[1:] if bom else parsed.lines
    order = sorted(splices, key=lambda s: (s.start, s.end > s.start, s.rank))
    for change in order:
        start = max(change.start, at)  # an insertion inside a replaced range lands after it
        out += source[at:start]
        new = [line.removeprefix(bom) if bom else line for line in change.lines]
        if new and new[0] == "" and (not out or _blank(out[-1])):
            new = new[1:]  # two insertions at one point must not make a double gap
        if new and out and not out[-1].endswith(("\n", "\r")):
            out[-1] += parsed.newline  # the document's last line had no line break
        out += [line + parsed.newline for line in new]
        at = max(at, change.end)
    out += source[at:]
    return bom + "".join(out)
