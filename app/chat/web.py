"""Claude searching and fetching the web: Anthropic's server tools (the API runs them; Cairn
offers them, shows their blocks and stores them verbatim).

Off until the person turns it on for a workspace (``set_web_settings``) or for one message
(``web=True`` on send).  A workspace without settings of its own takes its nearest parent's.
What a turn shows of them: a quiet line per search or fetch (:func:`web_line`), the sources
under the reply (:func:`sources`), the searches' count for the cost (:func:`searches`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from app.records import WebSettings
from app.store.web import WebStore, checked

if TYPE_CHECKING:
    from app.llm.catalog import ModelInfo
    from app.store.messages import Message
    from app.store.registry.registry import Registry

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
    """A page a reply's searches found (or fetched), shown under the reply."""

    url: str
    title: str

    @property
    def domain(self) -> str:
        return urlsplit(self.url).hostname or self.url

    def to_json(self) -> dict[str, str]:
        return {"url": self.url, "title": self.title}


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
    """The pages a reply's searches found and its fetches read, each once, in order."""
    found: dict[str, Source] = {}
    for message in messages:
        content = message if isinstance(message, Sequence) else message.content
        for block in content:
            if not isinstance(block, dict):
                continue
            results = block.get("content")
            if block.get("type") == "web_search_tool_result" and isinstance(results, list):
                for r in results:
                    if isinstance(r, dict) and isinstance(r.get("url"), str):
                        found.setdefault(r["url"], Source(r["url"], str(r.get("title") or r["url"])))
            elif block.get("type") == "web_fetch_tool_result" and isinstance(results, dict) \
                    and results.get("type") == "web_fetch_result":
                url = str(results.get("url", ""))
                inner = results.get("content")
                document: dict[str, Any] = inner if isinstance(inner, dict) else {}
                if url:
                    found.setdefault(url, Source(url, str(document.get("title") or url)))
    return list(found.values())


def searches(messages: Iterable[Message]) -> int:
    """How many web searches the messages of a reply made (what they are billed by)."""
    return sum(1 for m in messages for b in m.content if b.get("type") == "server_tool_use"
               and b.get("name") == "web_search")
