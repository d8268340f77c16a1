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
        elif tag == REPLACE and i2 - i1 == j2 - j1:
            # n lines for n lines: each line replaced by its counterpart, one edit a line, so
            # that a line the other side changed next to it is never grouped with it
            edits.extend((i1 + k, i1 + k + 1, [other[j1 + k]], side) for k in range(i2 - i1))
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

    Stretches only one side changed take that side's lines, line by line: a line only the
    person changed is never "incoming", even beside a line the newer version changed.  A
    stretch both changed, the same way, is taken once; differently, it becomes the person's
    lines followed by the incoming lines the person's do not already have (counted: a line the incoming side has
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
            conflicts += _both(kept, start, end, group, out, incoming)
        at = end
    out.extend(kept[at:])
    return Merged("".join(_ended(out)), tuple(incoming), conflicts)


def _both(kept: list[str], start: int, end: int, group: list[_Edit], out: list[str],
          incoming: list[int]) -> int:
    """A stretch both sides changed, line by line: a base line only one side changed takes
    that side's line (never the other's unchanged copy as "incoming"); lines both changed
    become the person's lines followed by the incoming ones the person's do not already have.
    Appends to *out* and *incoming*; returns 1 when both changed a line differently."""
    mine = [g for g in group if g[3] == "mine"]
    theirs = [g for g in group if g[3] == "theirs"]
    ours = _tagged(kept, start, end, mine)
    others = _tagged(kept, start, end, theirs)
    if _keys([x for x, _, _ in ours]) == _keys([x for x, _, _ in others]):
        out.extend(x for x, _, _ in ours)  # changed the same way: taken once
        return 0
    their_lines = _changed(theirs)
    one_for_one = {g[0]: g[2][0] for g in theirs if g[1] - g[0] == 1 and len(g[2]) == 1}
    used: set[tuple[int, int]] = set()  # base lines whose incoming replacement went in already
    for line, base, _from in ours:
        if base is not None and base in their_lines:  # only theirs changed this base line
            if base in one_for_one:
                incoming.append(len(out))
                out.append(one_for_one[base])
                used.add((base, base + 1))
            continue  # deleted by theirs, or replaced within a block: its lines follow
        out.append(line)
    have = Counter(body(x) for x, base, _from in ours if base is None)
    for line, base, edit in others:
        if base is not None or edit in used:
            continue  # a base line theirs kept (the person's copy or change stands), or a
            # replacement already put in its line's place
        if have[body(line)] > 0:
            have[body(line)] -= 1
            continue
        incoming.append(len(out))
        out.append(line)
    both = _changed(mine) & their_lines
    inserted = {g[0] for g in mine if g[0] == g[1]} & {g[0] for g in theirs if g[0] == g[1]}
    return 1 if both or inserted else 0


def _changed(edits: list[_Edit]) -> set[int]:
    return {i for s, e, _lines, _side in edits for i in range(s, e)}


def _tagged(base: list[str], start: int, end: int, edits: list[_Edit]
            ) -> list[tuple[str, int | None, tuple[int, int] | None]]:
    """``base[start:end]`` with *edits* applied, each line with the base line it is (None: a
    line the side wrote) and, for a written line, the base stretch its edit replaced."""
    out: list[tuple[str, int | None, tuple[int, int] | None]] = []
    at = start
    for s, e, lines, _side in sorted(edits, key=lambda x: (x[0], x[1])):
        out.extend((base[i], i, None) for i in range(at, s))
        out.extend((line, None, (s, e)) for line in lines)
        at = max(at, e)
    out.extend((base[i], i, None) for i in range(at, end))
    return out


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
