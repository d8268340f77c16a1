"""What a title must be: something a person can see.

Titles are shown in the sidebar, the board, window titles and the command line; one made
only of invisible characters (spaces, zero-width and other format characters, lone combining
marks, blank Hangul fillers, the blank Braille pattern) would be an empty row nobody can find.
"""

from __future__ import annotations

import unicodedata

_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")


def visible(text: str) -> bool:
    """Does *text* show anything?  Private-use characters (icons) do."""
    return any(_shows(char) for char in text)


def _shows(char: str) -> bool:
    kind = unicodedata.category(char)
    return kind == "Co" or (kind[0] not in "CZM" and char not in _BLANK_LETTERS)
