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
import unicodedata
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

MARK_OPEN, MARK_CLOSE = "\ue000", "\ue001"
SOURCE = "cairn:source/"  # a source's link: cairn:source/<its index in the entry's sources>
TITLE_CHARS = 160  # a page's title is cut here: it came from the web
QUERY_CHARS = 200

_MARK = re.compile(f"{MARK_OPEN}(\\d+){MARK_CLOSE}")
_MARKS = re.compile(f"[{MARK_OPEN}{MARK_CLOSE}]")
_SPACES = re.compile(r"\s+")

WEB_TOOLS = ("web_search", "web_fetch")

_SEARCH_FAILED = {
    "max_uses_exceeded": "this reply reached its limit of web searches",
    "too_many_requests": "too many searches were asked for at once",
    "unavailable": "web search is unavailable right now",
    "query_too_long": "the query was too long",
    "invalid_tool_input": "the query was not one the search takes",
    "request_too_large": "the request was too large",
}
_FETCH_FAILED = {
    "url_not_allowed": "this workspace's web settings do not allow that site",
    "url_not_accessible": "the page could not be reached",
    "url_not_in_prior_context": "only addresses already in the chat can be read",
    "url_too_long": "the address is too long",
    "unsupported_content_type": "its content is of a kind that cannot be read",
    "content_too_large": "the page is too large",
    "too_many_requests": "too many pages were asked for at once",
    "max_uses_exceeded": "this reply reached its limit of pages to read",
    "unavailable": "reading web pages is unavailable right now",
    "invalid_tool_input": "the address was not one it takes",
}


@dataclass(frozen=True, slots=True)
class Source:
    """A page a reply drew on: its address and its title, as plain text."""

    url: str
    title: str

    @property
    def domain(self) -> str:
        return domain_of(self.url)

    @property
    def openable(self) -> bool:
        """Only web pages are ever handed to the browser."""
        return urlsplit(self.url).scheme.lower() in ("http", "https")


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


def clean(text: Any, limit: int = TITLE_CHARS) -> str:
    """Text from the web as one plain line: no control, format (direction-changing, zero
    width) or private-use characters, runs of spaces as one, at most *limit* characters."""
    if not isinstance(text, str):
        return ""
    kept = "".join(" " if c in "\t\n\r" else c for c in text
                   if c in "\t\n\r" or unicodedata.category(c) not in ("Cc", "Cf", "Co", "Cs"))
    line = _SPACES.sub(" ", kept).strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def safe_url(url: str) -> str:
    """*url* with every character that could hide what it is (spaces, control and
    direction-changing characters) percent-encoded: the address shown is the one opened."""
    url = url.strip()
    if all(c.isprintable() and not c.isspace() for c in url) and not any(
            unicodedata.category(c) in ("Cf", "Co") for c in url):
        return url
    return "".join(quote(c, safe="") if not c.isprintable() or c.isspace()
                   or unicodedata.category(c) in ("Cf", "Co") else c for c in url)


def domain_of(url: str) -> str:
    """The site *url* is on, as an address bar shows it (punycode stays punycode: a look-alike
    name does not pass for another), without ``www.``."""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except ValueError:
        return ""
    host = host.rstrip(".")
    return host[4:] if host.startswith("www.") else host


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


def is_web_block(block: dict[str, Any]) -> bool:
    kind = block.get("type")
    return kind in ("web_search_tool_result", "web_fetch_tool_result") or (
        kind == "server_tool_use" and block.get("name") in WEB_TOOLS)


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
    """Take in a search's or a fetch's result; the sentence that replaces its use's line
    when it failed (else None)."""
    content = block.get("content")
    _tool, asked = state.uses.get(str(block.get("tool_use_id")), ("", ""))
    if block.get("type") == "web_search_tool_result":
        if isinstance(content, list):
            for found in content:
                if isinstance(found, dict) and isinstance(found.get("url"), str):
                    state.add_found(found["url"], str(found.get("title") or ""))
            return None
        code = content.get("error_code") if isinstance(content, dict) else None
        reason = _SEARCH_FAILED.get(str(code), "the search failed")
        about = f" for “{asked}”" if asked else ""
        return f"Could not search the web{about}: {reason}."
    if isinstance(content, dict) and content.get("type") == "web_fetch_result":
        url = str(content.get("url") or asked)
        document = _dict(content.get("content"))
        state.add_found(url, str(document.get("title") or ""))
        return None
    code = content.get("error_code") if isinstance(content, dict) else None
    site = domain_of(asked) or "a web page"
    return f"Could not read {site}: {_FETCH_FAILED.get(str(code), 'the page could not be read')}."


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
