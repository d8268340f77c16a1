"""Fuzzy title matching for the quick switcher, as in VS Code's Ctrl+P: the typed letters
appear in the title in order; a match that starts words, runs on, or starts the title ranks
higher, and a shorter title wins a tie.

Fifty thousand titles are screened by one compiled regular expression (C speed) before any is
scored in Python, so a keystroke costs milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")
SCREENED = 2000  # titles scored at most per query (the first that pass the screen)


@dataclass(frozen=True, slots=True)
class Match(Generic[K]):
    key: K
    title: str
    score: int
    positions: tuple[int, ...]  # the matched characters of the title


def best(query: str, items: Iterable[tuple[K, str]], *, limit: int = 8) -> list[Match[K]]:
    """The *limit* titles that match *query* best, best first (none for a blank query)."""
    letters = "".join(query.split()).casefold()
    if not letters:
        return []
    screen = re.compile(".*?".join(re.escape(c) for c in letters), re.IGNORECASE | re.DOTALL)
    found: list[Match[K]] = []
    for key, title in items:
        if screen.search(title) is None:
            continue
        scored = score(letters, title)
        if scored is not None:
            found.append(Match(key, title, scored[0], scored[1]))
            if len(found) >= SCREENED:
                break
    found.sort(key=lambda m: (-m.score, len(m.title), m.title.casefold()))
    return found[:limit]


def score(letters: str, title: str) -> tuple[int, tuple[int, ...]] | None:
    """(score, positions) of *letters* (casefolded, no spaces) in *title*; None: no match.
    Greedy from each word start the first letter can take, the best kept."""
    folded = title.casefold()
    if len(folded) != len(title):  # (casefold changed lengths: match on lower())
        folded = title.lower()
    if len(folded) != len(title):
        return None
    best_found: tuple[int, tuple[int, ...]] | None = None
    starts = [i for i, c in enumerate(folded) if c == letters[0]]
    for start in starts[:12]:
        positions = [start]
        at = start + 1
        for letter in letters[1:]:
            nxt = folded.find(letter, at)
            if nxt < 0:
                break
            positions.append(nxt)
            at = nxt + 1
        else:
            points = _points(title, positions)
            if best_found is None or points > best_found[0]:
                best_found = (points, tuple(positions))
    return best_found


def _points(title: str, positions: list[int]) -> int:
    points = 0
    for n, at in enumerate(positions):
        points += 1
        if at == 0:
            points += 8
        elif not title[at - 1].isalnum():
            points += 5  # a word's start
        elif title[at - 1].islower() and title[at].isupper():
            points += 4  # camelCase
        if n and positions[n - 1] == at - 1:
            points += 4  # runs on
    return points
