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
from dataclasses import dataclass

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


def _lines(text: str) -> list[str]:
    return text.splitlines()


def compare(old: str, new: str) -> list[Hunk]:
    """The two texts as a list of hunks, lines without their endings."""
    a, b = _lines(old), _lines(new)
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


def _edits(base: list[str], other: list[str]) -> list[tuple[int, int, list[str]]]:
    """*other* as replacements of stretches of *base*: (start, end, lines)."""
    matcher = difflib.SequenceMatcher(None, base, other, autojunk=False)
    return [(i1, i2, other[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
            if tag != EQUAL]


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

    Stretches only one side changed take that side's lines.  A stretch both changed, the
    same way, is taken once; differently, it becomes the person's lines followed by the
    incoming lines the person's do not already have.  The result ends with a line break
    when either side does.
    """
    b, m, t = _lines(base), _lines(mine), _lines(theirs)
    edits = [(s, e, lines, "mine") for s, e, lines in _edits(b, m)]
    edits += [(s, e, lines, "theirs") for s, e, lines in _edits(b, t)]
    # By where they start; at one place an insertion goes before a replacement.
    edits.sort(key=lambda x: (x[0], x[1] != x[0], x[3]))
    groups: list[list[tuple[int, int, list[str], str]]] = []
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
        out.extend(b[at:start])
        sides = {g[3] for g in group}
        if sides == {"mine"}:
            out.extend(_apply(b, start, end, group))
        elif sides == {"theirs"}:
            lines = _apply(b, start, end, group)
            incoming.extend(range(len(out), len(out) + len(lines)))
            out.extend(lines)
        else:
            ours = _apply(b, start, end, [g for g in group if g[3] == "mine"])
            others = _apply(b, start, end, [g for g in group if g[3] == "theirs"])
            out.extend(ours)
            if ours != others:
                conflicts += 1
                have = set(ours)
                extra = [line for line in others if line not in have]
                incoming.extend(range(len(out), len(out) + len(extra)))
                out.extend(extra)
        at = end
    out.extend(b[at:])
    text = "\n".join(out)
    if out and (mine.endswith(("\n", "\r")) or theirs.endswith(("\n", "\r"))):
        text += "\n"
    return Merged(text, tuple(incoming), conflicts)


def _apply(base: list[str], start: int, end: int,
           edits: list[tuple[int, int, list[str], str]]) -> list[str]:
    """``base[start:end]`` with *edits* (non-overlapping, of one side) applied."""
    out: list[str] = []
    at = start
    for s, e, lines, _side in sorted(edits, key=lambda x: (x[0], x[1])):
        out.extend(base[at:s])
        out.extend(lines)
        at = max(at, e)
    out.extend(base[at:end])
    return out
