"""Claude searching and fetching the web: Anthropic's server tools (the API runs them; Cairn
offers them, shows their blocks and stores them verbatim).

Off until the person turns it on for a workspace (``set_web_settings``) or for one message
(``web=True`` on send).  A workspace without settings of its own takes its nearest parent's.
What a turn shows of them: a quiet line per search or fetch (:func:`web_line`), the sources
under the reply (:func:`sources`); the searches' count for the cost is the server's own
(``usage.server_tool_use``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from app.records import WebSettings
from app.store.web import WebStore, checked

if TYPE_CHECKING:
    from app.llm.catalog import ModelInfo
    from app.store.messages import Message
    from app.store.registry.registry import Registry

TITLE_CHARS = 160  # a page's title is cut here: it came from the web
_SPACES = re.compile(r"\s+")
_SEARCH_ERRORS = {
    "max_uses_exceeded": "the searches allowed for one reply were used up",
    "too_many_requests": "the search service was busy",
    "query_too_long": "the query was too long",
    "invalid_tool_input": "the query was not one the search service takes",
    "unavailable": "the search service was not available",
    "request_too_large": "the request was too large",
}
_FETCH_ERRORS = {
    "url_not_allowed": "the site is not allowed in this workspace",
    "url_not_in_prior_context": "the address had not appeared in the conversation",
    "url_not_accessible": "the page could not be reached",
    "unsupported_content_type": "the page is of a kind that cannot be read",
    "content_too_large": "the page was too large",
    "max_uses_exceeded": "the fetches allowed for one reply were used up",
    "too_many_requests": "the fetch service was busy",
    "url_too_long": "the address was too long",
    "invalid_tool_input": "the address was not one the fetch service takes",
    "unavailable": "the fetch service was not available",
}


@dataclass(frozen=True, slots=True)
class Source:
    """A page a reply drew on: its address and its title, as plain text (both came from the
    web: :func:`clean` and :func:`safe_url` made them so)."""

    url: str
    title: str

    @property
    def domain(self) -> str:
        return domain_of(self.url)

    @property
    def openable(self) -> bool:
        """Only web pages are ever handed to the browser."""
        return urlsplit(self.url).scheme.lower() in ("http", "https")

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "title": self.title}


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


# ----------------------------------------------------------------- the settings (use cases)


def web_settings(registry: Registry, store: WebStore, ws_id: str | None) -> WebSettings:
    """What web search is in *ws_id*: its own settings, else its nearest parent's, else off
    (an Ungrouped chat, *ws_id* None, has only the defaults)."""
    for ws in reversed(registry.lineage(ws_id)) if ws_id is not None else ():
        own = store.get(ws.id)
        if own is not None:
            return own
    return WebSettings()


def set_web_settings(registry: Registry, store: WebStore, ws_id: str,
                     settings: WebSettings) -> WebSettings:
    """Store *settings* for the workspace *ws_id* (refused in one sentence, nothing stored,
    for an unknown workspace, a count outside 1–50, a site that is not one, or both lists)."""
    ws = registry.get_workspace(ws_id, verb="change web search in")
    return store.set(ws.id, checked(settings))


def web_tools(settings: WebSettings, override: bool | None, info: ModelInfo | None
              ) -> list[dict[str, Any]]:
    """The server tools a turn offers: none unless web search is on for the workspace or
    *override* turns it on for this message (False turns it off for this message)."""
    on = settings.enabled if override is None else override
    if not on:
        return []
    versions = info.web_tools() if info is not None else None
    if info is not None and versions is None:
        return []  # the model says it cannot search the web
    search, fetch = versions or ("web_search_20250305", "web_fetch_20250910")
    sites: dict[str, Any] = {}
    if settings.allowed_domains:
        sites["allowed_domains"] = list(settings.allowed_domains)
    elif settings.blocked_domains:
        sites["blocked_domains"] = list(settings.blocked_domains)
    callers = {} if search.endswith("20250305") else {"allowed_callers": ["direct"]}
    return [{"type": search, "name": "web_search", "max_uses": settings.max_uses, **sites,
             **callers},
            {"type": fetch, "name": "web_fetch", "max_uses": settings.max_uses, **sites,
             **({} if fetch.endswith("20250910") else {"allowed_callers": ["direct"]})}]


# ----------------------------------------------------------------- what a reply shows


def web_line(block: dict[str, Any]) -> str | None:
    """The quiet line a search or a fetch shows in the chat; a failed one's sentence."""
    kind = block.get("type")
    if kind == "server_tool_use":
        found = block.get("input")
        tool_input: dict[str, Any] = found if isinstance(found, dict) else {}
        if block.get("name") == "web_search":
            return f"Searched the web: {str(tool_input.get('query', '')).strip()}"
        if block.get("name") == "web_fetch":
            return f"Read a web page: {str(tool_input.get('url', '')).strip()}"
        return None
    content = block.get("content")
    if kind == "web_search_tool_result" and isinstance(content, dict):
        why = _SEARCH_ERRORS.get(str(content.get("error_code")), "the search failed")
        return f"The web search did not work: {why}."
    if kind == "web_fetch_tool_result" and isinstance(content, dict) \
            and content.get("type") == "web_fetch_tool_result_error":
        why = _FETCH_ERRORS.get(str(content.get("error_code")), "the fetch failed")
        return f"The web page could not be read: {why}."
    return None


def sources(messages: Iterable[Message | Sequence[dict[str, Any]]]) -> list[Source]:
    """What a reply lists under it, each address once: the pages its text cites, in the
    order first cited (their numbers are the marks the window shows), then the other pages
    its searches found and its fetches read, in order.  The window and ``cairn ask`` both
    list these."""
    cited: dict[str, Source] = {}
    found: dict[str, Source] = {}

    def keep(into: dict[str, Source], url: object, title: object) -> None:
        if isinstance(url, str) and (url := safe_url(url)) and url not in into:
            into[url] = Source(url, clean(title) or domain_of(url) or url)

    for message in messages:
        content = message if isinstance(message, Sequence) else message.content
        for block in content:
            if not isinstance(block, dict):
                continue
            results = block.get("content")
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("citations"), list):
                for c in block["citations"]:
                    if isinstance(c, dict) and c.get("type") == "web_search_result_location":
                        keep(cited, c.get("url"), c.get("title"))
            elif kind == "web_search_tool_result" and isinstance(results, list):
                for r in results:
                    if isinstance(r, dict):
                        keep(found, r.get("url"), r.get("title"))
            elif kind == "web_fetch_tool_result" and isinstance(results, dict) \
                    and results.get("type") == "web_fetch_result":
                inner = results.get("content")
                document: dict[str, Any] = inner if isinstance(inner, dict) else {}
                keep(found, results.get("url"), document.get("title"))
    # A cited page is listed with the title its search gave it, when it has one.
    listed = [found.get(url, source) for url, source in cited.items()]
    return listed + [s for url, s in found.items() if url not in cited]
