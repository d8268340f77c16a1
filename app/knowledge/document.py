"""A knowledge document as sections and entries, parsed with markdown-it-py.

Entries are the top-level list items (with their sub-items) under the six ``##`` sections.
Parsing never changes the text: each entry keeps its exact source lines, so anything the
person wrote stays as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from markdown_it import MarkdownIt

SECTIONS: tuple[str, ...] = (
    "Working style & preferences",
    "Facts",
    "Decisions",
    "People & contacts",
    "Assets & links",
    "Open questions",
)

_UPDATED = re.compile(r"\((?:updated|added) (\d{4}-\d{2}-\d{2})\)")
_md = MarkdownIt("commonmark")


@dataclass(frozen=True, slots=True)
class Entry:
    section: str | None  # the ``##`` heading it sits under (None: before any heading)
    text: str  # its source lines, exactly
    index: int  # position in the document, from 0

    @property
    def date(self) -> str:
        """The latest ``(updated YYYY-MM-DD)`` mark, '' when none: newer entries win ties."""
        found = _UPDATED.findall(self.text)
        return max(found) if found else ""


def entries(text: str) -> list[Entry]:
    """Every top-level list item of the document, in order."""
    lines = text.splitlines(keepends=True)
    found: list[Entry] = []
    section: str | None = None
    tokens = _md.parse(text)
    depth = 0
    for position, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag == "h2" and depth == 0:
            section = tokens[position + 1].content.strip()
        elif token.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif token.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        elif token.type == "list_item_open" and depth == 1 and token.map:
            start, end = token.map
            body = "".join(lines[start:end]).rstrip("\n")
            found.append(Entry(section, body, len(found)))
    return found
