"""Lines of a text as Cairn counts them: only ``"\\n"`` ends a line.

``str.splitlines`` also breaks on U+2028, U+2029, form feeds, ``\\x1c``-``\\x1e`` and ``\\x85``
and drops the endings: text written with any of those would come back changed (a U+2028
inside an entry could even start a heading).  Here each line keeps its own ending, so
``"".join(split_lines(text)) == text`` always: CRLF stays CRLF, and a last line without a
newline stays without.
"""

from __future__ import annotations


def split_lines(text: str) -> list[str]:
    """*text* in lines, each with its own ``"\\n"`` (or ``"\\r\\n"``); the last one may have
    none."""
    lines = text.split("\n")
    last = lines.pop()
    out = [line + "\n" for line in lines]
    if last:
        out.append(last)
    return out


def body(line: str) -> str:
    """*line* without its ending (``"\\r\\n"`` or ``"\\n"``)."""
    return line.removesuffix("\n").removesuffix("\r") if line.endswith("\n") else line


def ending(line: str) -> str:
    """*line*'s ending: ``"\\r\\n"``, ``"\\n"`` or ``""``."""
    return line[len(body(line)):]
