"""Comparing and merging versions of a knowledge document, line by line.

The editor's safe save meets a newer version: :func:`merge3` puts what the newer version
changed (since the version the person opened) into the person's text, and where both
changed the same lines it keeps both — the person's lines first, then the incoming ones
not already there — so that nothing either side wrote is lost.  :func:`compare` gives the
rows a diff view shows (inline or side by side).  Pure functions: run them off the GUI
thread for long documents.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass

from app.base.lines import body, ending, split_lines

EQUAL, INSERT, DELETE, REPLACE = "equal", "insert", "delete", "replace"


@dataclass(frozen=True, slots=True)
class Hunk:
    """One stretch of a comparison: lines of the old text and what they became."""

    tag: str  # equal, insert, delete, replace
    old: tuple[str, ...]
    new: tuple[str, ...]
    old_start: int  # first line in the old text, from 0
    new_start: int


@dataclass(frozen=True, slots=True)
class Merged:
    text: str
    incoming: tuple[int, ...]  # lines of *text* (from 0) that came from the newer version
    conflicts: int  # stretches both sides changed, kept as both


def _keys(lines: list[str]) -> list[str]:
    return [body(line) for line in lines]


def compare(old: str, new: str) -> list[Hunk]:
    """The two texts as a list of hunks, lines without their endings (only ``"\n"`` ends a
    line: a U+2028 or a form feed inside a line is part of it)."""
    a, b = _keys(split_lines(old)), _keys(split_lines(new))
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [Hunk(tag, tuple(a[i1:i2]), tuple(b[j1:j2]), i1, j1)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()]


def changed_lines(old: str, new: str) -> list[int]:
    """Lines of *new* (from 0) that are not in *old* where they stand: what to highlight
    when a new version replaces the one shown."""
    found: list[int] = []
    for hunk in compare(old, new):
        if hunk.tag in (INSERT, REPLACE):
            found.extend(range(hunk.new_start, hunk.new_start + len(hunk.new)))
    return found


_Edit = tuple[int, int, list[str], str]  # base start, end, the side's lines, the side


def _align(base: list[str], other: list[str], side: str) -> tuple[list[_Edit], dict[int, str]]:
    """*other* against *base*, matched by the lines' text without their endings: the
    stretches of *base* it replaced (start, end, its lines), and for each base line it
    kept, its own copy of that line (which may end differently)."""
    matcher = difflib.SequenceMatcher(None, _keys(base), _keys(other), autojunk=False)
    edits: list[_Edit] = []
    kept: dict[int, str] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == EQUAL:
            kept.update(zip(range(i1, i2), other[j1:j2]))
        else:
            edits.append((i1, i2, other[j1:j2], side))
    return edits, kept


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    (s1, e1), (s2, e2) = a, b
    if s1 == e1 and s2 == e2:
        return s1 == s2  # two insertions at one place
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


def merge3(base: str, mine: str, theirs: str) -> Merged:
    """*theirs*' changes since *base*, put into *mine*.

    Only ``"\n"`` ends a line, and every line keeps its own ending: CRLF stays CRLF, a
    last line without a newline stays without, and ``merge3(base, mine, base) == mine``,
    ``merge3(base, base, theirs) == theirs``, byte for byte.  Lines are matched by their
    text; an ending only one side changed takes that side's ending.

    Stretches only one side changed take that side's lines.  A stretch both changed, the
    same way, is taken once; differently, it becomes the person's lines followed by the
    incoming lines the person's do not already have (counted: a line the incoming side has
    twice and the person once comes once more, so no repeated line either side wrote is
    dropped).
    """
    b, m, t = split_lines(base), split_lines(mine), split_lines(theirs)
    mine_edits, in_mine = _align(b, m, "mine")
    their_edits, in_theirs = _align(b, t, "theirs")
    # A base line both sides kept: the copy whose ending changed, if one did (mine first).
    kept = [in_mine.get(i, line) if in_mine.get(i, line) != line
            else in_theirs.get(i, line) for i, line in enumerate(b)]
    edits = mine_edits + their_edits
    # By where they start; at one place an insertion goes before a replacement.
    edits.sort(key=lambda x: (x[0], x[1] != x[0], x[3]))
    groups: list[list[_Edit]] = []
    for edit in edits:
        if groups and any(_overlap((edit[0], edit[1]), (g[0], g[1])) for g in groups[-1]):
            groups[-1].append(edit)
        else:
            groups.append([edit])
    out: list[str] = []
    incoming: list[int] = []
    conflicts = 0
    at = 0
    for group in groups:
        start = min(g[0] for g in group)
        end = max(g[1] for g in group)
        out.extend(kept[at:start])
        sides = {g[3] for g in group}
        if sides == {"mine"}:
            out.extend(_apply(kept, start, end, group))
        elif sides == {"theirs"}:
            lines = _apply(kept, start, end, group)
            incoming.extend(range(len(out), len(out) + len(lines)))
            out.extend(lines)
        else:
            ours = _apply(kept, start, end, [g for g in group if g[3] == "mine"])
            others = _apply(kept, start, end, [g for g in group if g[3] == "theirs"])
            out.extend(ours)
            if _keys(ours) != _keys(others):
                conflicts += 1
                have = Counter(_keys(ours))
                extra: list[str] = []
                for line in others:
                    if have[body(line)] > 0:
                        have[body(line)] -= 1
                    else:
                        extra.append(line)
                incoming.extend(range(len(out), len(out) + len(extra)))
                out.extend(extra)
        at = end
    out.extend(kept[at:])
    return Merged("".join(_ended(out)), tuple(incoming), conflicts)


def _ended(lines: list[str]) -> list[str]:
    """*lines* with an ending on every line but the last: a side's last line (which may have
    none) followed by lines of the other side gets the ending of the lines around it."""
    out = list(lines)
    for i, line in enumerate(out[:-1]):
        if not line.endswith("\n"):
            near = [ending(x) for x in (out[i + 1], out[i - 1] if i else "") if ending(x)]
            out[i] = line + (near[0] if near else "\n")
    return out


def _apply(base: list[str], start: int, end: int, edits: list[_Edit]) -> list[str]:
    """``base[start:end]`` with *edits* (non-overlapping, of one side) applied."""
    out: list[str] = []
    at = start
    for s, e, lines, _side in sorted(edits, key=lambda x: (x[0], x[1])):
        out.extend(base[at:s])
        out.extend(lines)
        at = max(at, e)
    out.extend(base[at:end])
    return out
