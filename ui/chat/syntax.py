"""Syntax colours for a code block whose fence names its language (Pygments), in the chat and
the knowledge Preview, following light or dark.

Pygments is imported when the first such block is rendered, never at start-up: a window that
shows no code never pays for it.  A block without a language, with one Pygments does not
know, or longer than :data:`MOST` stays plain (guessing a language is slow and often wrong).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

MOST = 100_000  # characters: beyond this a block is shown plain (colouring it would stall)
STYLES = {False: "default", True: "github-dark"}  # light, dark: readable on the block's grey


def coloured(code: str, language: str, *, dark: bool) -> str | None:
    """*code* as Qt rich text with inline colours, or None to show it plain."""
    if not language or len(code) > MOST:
        return None
    lexer = _lexer(language.casefold())
    if lexer is None:
        return None
    from pygments import highlight

    markup: str = highlight(code, lexer, _formatter(dark))
    return markup[:-1] if markup.endswith("\n") and not code.endswith("\n") else markup


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=2)
def _formatter(dark: bool) -> Any:
    from pygments.formatters import HtmlFormatter

    # Inline styles, no wrapping element: the block's own <pre> holds the spans.
    return HtmlFormatter(nowrap=True, noclasses=True, style=STYLES[dark])
