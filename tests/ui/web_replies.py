"""A reply that searched and read the web, as its blocks are stored (the API's JSON shapes,
from the SDK's stream accumulation): for the chat view's tests and the screenshots."""

from __future__ import annotations

from typing import Any

QT = {"type": "web_search_result", "title": "Qt for Python 6.12 released",
      "url": "https://www.qt.io/blog/qt-for-python-6.12",
      "encrypted_content": "EqgfCioIARgBIiQexample1", "page_age": "November 20, 2026"}
PYPI = {"type": "web_search_result", "title": "PySide6 · PyPI",
        "url": "https://pypi.org/project/PySide6/", "encrypted_content": "EqgfCioIARgBexample2"}
WIKI = {"type": "web_search_result", "title": "Qt (software) - Wikipedia",
        "url": "https://en.wikipedia.org/wiki/Qt_(software)",
        "encrypted_content": "EqgfCioIARgBexample3"}

QUESTION = "What changed in this week's PySide6 release?"
CLAIM = "PySide6 6.12 is built on Qt 6.12 and supports Python 3.10 to 3.14."
WHEELS = " It ships as wheels for Windows, macOS and Linux."


def citation(result: dict[str, Any], cited: str) -> dict[str, Any]:
    return {"type": "web_search_result_location", "url": result["url"],
            "title": result["title"], "cited_text": cited, "encrypted_index": "Eo8BCioexample"}


def web_reply() -> list[dict[str, Any]]:
    """One round: a search, a page read, a search that failed, then text citing two of the
    results (the first claim cites Qt's page, the second PyPI's and Qt's again)."""
    return [
        {"type": "thinking", "thinking": "I should search.", "signature": "sig"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
         "input": {"query": "PySide6 6.12 release notes"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
         "content": [QT, PYPI, WIKI]},
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch",
         "input": {"url": QT["url"]}},
        {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {
            "type": "web_fetch_result", "url": QT["url"], "retrieved_at": "2026-12-01T09:30:00Z",
            "content": {"type": "document", "title": QT["title"], "source": {
                "type": "text", "media_type": "text/plain", "data": "Qt for Python 6.12…"}}}},
        {"type": "server_tool_use", "id": "srvtoolu_3", "name": "web_search",
         "input": {"query": "PySide6 6.12 deprecations"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_3", "content": {
            "type": "web_search_tool_result_error", "error_code": "max_uses_exceeded"}},
        {"type": "text", "text": "Here is what the release notes say. "},
        {"type": "text", "text": CLAIM, "citations": [citation(QT, "based on Qt 6.12")]},
        {"type": "text", "text": WHEELS,
         "citations": [citation(PYPI, "wheels"), citation(QT, "platforms")]},
        {"type": "text", "text": "\n\nThe main changes:\n\n- a new `QtGraphs` module\n"
                                 "- faster signal connections"},
    ]
