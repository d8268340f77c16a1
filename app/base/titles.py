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


# ===================================================================== names as they enter

# How long a name may be: a title (workspace, chat) is cut with "…" past MAX_TITLE; a file
# name at MAX_NAME (what file systems allow); a one-line description at MAX_LINE.
MAX_TITLE = 200
MAX_NAME = 255
MAX_LINE = 1_000
MAX_DESCRIPTION = 10_000  # a workspace's description (lines kept); refused past it

# Characters that reorder what follows them (embeddings, overrides, isolates, marks): a name
# holding them can show as something else ("exe.txt" as "txt.exe").
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                          "\u2066\u2067\u2068\u2069")


def one_line(text: str, *, limit: int = MAX_TITLE) -> str:
    """*text* as a name: NFC, every line break, tab and run of spaces one space, no control
    or bidi-override character, trimmed, and at most *limit* characters (cut with "…").
    The same answer for its own answer, so a name can be normalised again where it is shown."""
    if (text.isprintable() and len(text) <= limit and " ".join(text.split()) == text
            and unicodedata.is_normalized("NFC", text)):
        return text  # the common case: nothing to do
    kept = "".join(" " if char.isspace() else char for char in text if not _hidden(char))
    clean = unicodedata.normalize("NFC", " ".join(kept.split()))
    if len(clean) > limit:
        clean = clean[: limit - 1].rstrip() + "…"
    return clean


def text_lines(text: str) -> str:
    """*text* whose lines are kept (a description): NFC, every line break ``\\n``, tabs kept,
    no other control or bidi-override character."""
    if text.isprintable() and unicodedata.is_normalized("NFC", text):
        return text
    for other in ("\r\n", "\r", "\x0b", "\x0c", "\x85", "\u2028", "\u2029"):
        text = text.replace(other, "\n")
    kept = "".join(char for char in text
                   if char in "\n\t" or not (char in BIDI_CONTROLS
                                             or unicodedata.category(char) in ("Cc", "Cs")))
    return unicodedata.normalize("NFC", kept)


def _hidden(char: str) -> bool:
    """A character no name holds: a control character (line breaks and tabs become spaces
    first), a lone surrogate, or a bidi control."""
    if char in BIDI_CONTROLS:
        return True
    return unicodedata.category(char) in ("Cc", "Cs") and not char.isspace()
