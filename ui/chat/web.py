"""What a reply's web search and web fetch look like, read from its stored blocks (the API's
own JSON shapes): a quiet line per search ("Searched the web: …") and per fetch ("Read
qt.io"), the sources under the reply, and numbered marks on the text that cites them.

Plain Python (no Qt), so the rules are tested on their own.  Everything here came from the
web: titles and queries are kept as plain text (control and direction-changing characters
dropped, long ones cut), and the markup that shows them escapes them.

A citation is a mark in the reply's text: :data:`MARK_OPEN`, the source's number, and
:data:`MARK_CLOSE`, two characters of Unicode's private use area that no reply keeps (they
are taken out of the model's text first), so a reply cannot forge one.  The renderer turns
a mark into a link to its source (``cairn:source/<index>``); Copy and assistive technology
get ``[1]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.chat.web import Source, clean, domain_of, safe_url, web_line

# (Not U+E000/U+E001: search marks its matches with those, app/store/search_index.py.)
MARK_OPEN, MARK_CLOSE = "\ue010", "\ue011"
SOURCE = "cairn:source/"  # a source's link: cairn:source/<its index in the entry's sources>
QUERY_CHARS = 200

_MARK = re.compile(f"{MARK_OPEN}(\\d+){MARK_CLOSE}")
_MARKS = re.compile(f"[{MARK_OPEN}{MARK_CLOSE}]")
_SPACES = re.compile(r"\s+")

@dataclass(slots=True)
class WebState:
    """A reply's web blocks read so far: the sources it cited (numbered in the order first
    cited), the pages it found or read, and where each search's line is."""

    cited: list[Source] = field(default_factory=list)
    found: list[Source] = field(default_factory=list)
    uses: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (tool, query/url)

    @property
    def sources(self) -> list[Source]:
        """What is listed under the reply: the cited sources (their numbers are their marks'),
        then the other pages found, each address once."""
        cited = {s.url for s in self.cited}
        return self.cited + [s for s in self.found if s.url not in cited]

    def number(self, url: str, title: str) -> int:
        """The number of the source at *url* (given on its first citation)."""
        url = safe_url(url)
        for n, source in enumerate(self.cited, 1):
            if source.url == url:
                return n
        found = next((s for s in self.found if s.url == url), None)
        self.cited.append(found or Source(url, clean(title) or domain_of(url)))
        return len(self.cited)

    def add_found(self, url: str, title: str) -> None:
        url = safe_url(url)
        if url and not any(s.url == url for s in self.found):
            self.found.append(Source(url, clean(title) or domain_of(url)))


def without_marks(text: str) -> str:
    """Model text with any character a mark is made of taken out."""
    return _MARKS.sub("", text) if MARK_OPEN in text or MARK_CLOSE in text else text


def mark(number: int) -> str:
    return f"{MARK_OPEN}{number}{MARK_CLOSE}"


def marks_as_text(text: str) -> str:
    """Marks as Copy and assistive technology give them: ``[1]``."""
    return _MARK.sub(r"[\1]", text) if MARK_OPEN in text else text


def marks_as_links(markup: str, colour: str) -> str:
    """Marks in rendered markup as small numbered links to their sources."""
    if MARK_OPEN not in markup:
        return markup
    # Raised, but at a size that stays readable and easy to hit (<sup> shrinks it twice).
    return _MARK.sub(
        lambda m: (f'<a href="{SOURCE}{int(m.group(1)) - 1}" style="color: {colour};'
                   ' text-decoration: none; vertical-align: super; font-weight: 600;">'
                   f'[{m.group(1)}]</a>'), markup)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def use_line(block: dict[str, Any], state: WebState) -> str | None:
    """The quiet line of a ``server_tool_use`` block: what Claude asked the web for."""
    tool_input = _dict(block.get("input"))
    name = block.get("name")
    if name == "web_search":
        query = clean(tool_input.get("query"), QUERY_CHARS)
        state.uses[str(block.get("id"))] = ("web_search", query)
        return f"Searched the web: {query}" if query else "Searched the web"
    if name == "web_fetch":
        url = str(tool_input.get("url") or "")
        state.uses[str(block.get("id"))] = ("web_fetch", url)
        return f"Read {domain_of(url) or 'a web page'}"
    return None


def result(block: dict[str, Any], state: WebState) -> str | None:
    """Take in a search's or a fetch's result; when it failed, the one sentence that says so
    under its line (the core's words for it, as the command line says them)."""
    content = block.get("content")
    _tool, asked = state.uses.get(str(block.get("tool_use_id")), ("", ""))
    if block.get("type") == "web_search_tool_result" and isinstance(content, list):
        for found in content:
            if isinstance(found, dict) and isinstance(found.get("url"), str):
                state.add_found(found["url"], str(found.get("title") or ""))
        return None
    if isinstance(content, dict) and content.get("type") == "web_fetch_result":
        document = _dict(content.get("content"))
        state.add_found(str(content.get("url") or asked), str(document.get("title") or ""))
        return None
    return web_line(block) or "A web search or read did not work."


def cited(block: dict[str, Any], state: WebState) -> str:
    """The marks a text block's web citations put after its text ("" when it cites none)."""
    numbers: list[int] = []
    for citation in block.get("citations") or []:
        if not isinstance(citation, dict) or citation.get("type") != "web_search_result_location":
            continue
        url = citation.get("url")
        if isinstance(url, str) and url:
            n = state.number(url, str(citation.get("title") or ""))
            if n not in numbers:
                numbers.append(n)
    return "".join(mark(n) for n in numbers)


def sources_text(sources: list[Source]) -> str:
    """The sources as the entry's text lists them (Copy, assistive technology)."""
    if not sources:
        return ""
    return "Sources:\n" + "\n".join(f"[{n}] {s.title} — {s.url}"
                                    for n, s in enumerate(sources, 1))
