"""Markdown as Qt rich text: what a reply looks like in the conversation.

markdown-it-py parses (CommonMark, GitHub's tables and strikethrough; raw HTML is shown as
text, never obeyed) and its renderer is given rules for what Qt's rich-text engine draws
well: a code block is a one-cell box with its language and a Copy link above it, a table
has thin rules, a task list item shows ☐ or ☑, an image is a link to it (nothing is fetched).

A long text is rendered in *pieces* (groups of whole blocks, about 2,000 characters each):
a reply that streams re-renders only its last piece, and a finished one is laid out a piece
at a time.  ``block_spans`` cuts only at blank lines outside code fences.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from ui.chat.web import marks_as_links, without_marks
from ui.links import ASK, is_web, misleading

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token

PIECE_CHARS = 2_000
QUOTE_INDENT = 16  # px a quote's text moves right per level: its bar is drawn in that room
COPY = "cairn:copy/"  # the anchor of a code block's Copy link: cairn:copy/<index in the piece>

# A fence at any indentation: inside a list item it is indented past the usual three spaces.
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_TASK = re.compile(r"^\[([ xX])\]\s+")


@dataclass(frozen=True, slots=True)
class Colours:
    """What the HTML needs from the palette (light or dark)."""

    code_background: str = "#f4f4f5"
    rule: str = "#d4d4d8"
    quiet: str = "#71717a"
    link: str = "#2563eb"
    dark: bool = False  # code blocks' syntax colours follow (ui/chat/syntax.py)


@dataclass(slots=True)
class Rendered:
    html: str
    code: list[str] = field(default_factory=list)  # each code block's text, by its Copy index


def block_spans(text: str) -> list[tuple[int, int]]:
    """Where *text*'s blocks are: (start, end) offsets, cut at blank lines outside code
    fences; the text between two spans is blank.

    A cut happens only before a line that starts at the margin: an indented line after a
    blank one continues a list item (its second paragraph, its code), so it stays with it.
    """
    spans: list[tuple[int, int]] = []
    fence: str | None = None
    start: int | None = None
    end = 0
    at = 0
    gap = False  # a blank line outside a fence was seen since the last text
    for line in text.split("\n"):
        line_end = at + len(line)
        opened = _FENCE.match(line)
        blank = not line.strip()
        if fence is None and gap and not blank and start is not None \
                and not line[:1].isspace():
            spans.append((start, end))
            start = None
        if fence is None and opened:
            fence = opened.group(1)
        elif fence is not None and opened and opened.group(1)[0] == fence[0] \
                and len(opened.group(1)) >= len(fence) \
                and not line.strip()[len(opened.group(1)):]:
            fence = None
        if not blank or fence is not None:
            if start is None:
                start = at
            end = line_end
            gap = False
        elif fence is None:
            gap = True
        at = line_end + 1
    if start is not None:
        spans.append((start, end))
    return spans


def _grouped(text: str, spans: list[tuple[int, int]], size: int) -> tuple[list[str], int]:
    """Whole blocks grouped into pieces of about *size* characters: the pieces, and where
    the blocks not yet grouped start."""
    out: list[str] = []
    first: int | None = None
    last_end = 0
    for a, b in spans:
        if first is None:
            first = a
        if b - first >= size:
            out.append(text[first:b])
            first, last_end = None, b
    return out, (first if first is not None else last_end)


def pieces(text: str, size: int = PIECE_CHARS) -> list[str]:
    """*text* as pieces of whole blocks of about *size* characters (at least one piece)."""
    out, rest = _grouped(text, block_spans(text), size)
    if text[rest:].strip():
        out.append(text[rest:].strip("\n"))
    return out or [""]


def stable_pieces(text: str, size: int = PIECE_CHARS) -> tuple[list[str], str, int]:
    """For a text that is still growing: the pieces that can no longer change, the tail (the
    rest, whose last block may not be finished), and the offset where the tail starts.

    The pieces are the ones :func:`pieces` finds in the finished text, so a reply laid out
    while it streamed is laid out from the same cached documents when it ends."""
    spans = block_spans(text)
    if spans and not (text.endswith("\n\n") and _fences_closed(text[spans[-1][0]:])):
        spans = spans[:-1]  # the last block may still grow
    out, rest = _grouped(text, spans, size)
    return out, text[rest:].strip("\n"), rest


def streaming_chunks(tail: str, size: int = PIECE_CHARS) -> list[str]:
    """The tail of a reply that streams, ready to lay out: as it is, or — when a long code
    block is still open in it — cut into closed boxes of whole lines (each laid out once)
    and the box still growing, so a reply that is one long code block never re-lays out
    all of it on every refresh.  (Once the reply has ended, the block is one box again.)"""
    if len(tail) <= size:
        return [tail]
    lines = tail.split("\n")
    fence: str | None = None
    opened_at = -1
    for i, line in enumerate(lines):
        found = _FENCE.match(line)
        if fence is None and found:
            fence, opened_at = found.group(1), i
        elif fence is not None and found and found.group(1)[0] == fence[0] \
                and len(found.group(1)) >= len(fence) and not line.strip()[len(found.group(1)):]:
            fence, opened_at = None, -1
    if fence is None:
        return [tail]
    opener = lines[opened_at]
    close = opener[: len(opener) - len(opener.lstrip())] + fence
    head = "\n".join(lines[:opened_at]).strip("\n")
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    body = lines[opened_at + 1:]
    for line in body[:-1]:  # the last line may still grow
        current.append(line)
        length += len(line) + 1
        if length >= size:
            chunks.append("\n".join([opener, *current, close]))
            current, length = [], 0
    last = "\n".join([opener, *current, *body[-1:]])
    return ([head] if head.strip() else []) + chunks + [last]


def _fences_closed(block: str) -> bool:
    return sum(1 for line in block.split("\n") if _FENCE.match(line)) % 2 == 0


def render(text: str, colours: Colours = Colours(),  # noqa: B008 - frozen
           copied: int = -1, *, marks: bool = False) -> Rendered:
    """One piece of markdown as Qt rich text; the code block *copied* (its index in the
    piece) says "Copied" where the others say "Copy".  *marks*: a reply's citation marks
    (``ui.chat.web``) become numbered links to its sources; elsewhere (a knowledge
    document) their characters are dropped, never a link."""
    if not marks:
        text = without_marks(text)
    renderer = _renderer()
    env: dict[str, Any] = {"code": [], "colours": colours, "copied": copied}
    tokens = renderer.parse(text, env)
    _mark_tasks(tokens)
    _mark_misleading(tokens)
    _bound_nesting(tokens)
    body = renderer.renderer.render(tokens, renderer.options, env)
    if marks:
        body = marks_as_links(body, colours.link)
    return Rendered(breakable(body), env["code"])


def plain(text: str) -> str:
    """Text the person wrote, shown as written: escaped, line breaks kept."""
    return breakable("<p>" + html.escape(text).replace("\n", "<br>") + "</p>")


# Qt lays out a line with nowhere to break in time that grows with the square of its length
# (a 1 MB run without a space: 29 s; a stored 300,000-character reply stalled the window 7 s
# when opened).  A zero-width space every BREAK_EVERY characters of a long run gives it
# places to wrap (linear: 0.3 s for 1 MB); the stored text, Copy and the code blocks' Copy
# are untouched.  Only text between tags is changed, never a link's target, never an entity.
LONG_RUN = 80
BREAK_EVERY = 40
_TAG = re.compile(r"(<[^>]*>)")
_UNIT = r"(?:&#?\w+;|[^\s&<\u200b])"
_RUN = re.compile(f"{_UNIT}{{{LONG_RUN},}}")
_UNITS = re.compile(_UNIT)


def breakable(markup: str) -> str:
    """*markup* (Qt rich text) with a place to wrap in every long run of its text."""
    if len(markup) < LONG_RUN or not _RUN.search(markup):
        return markup
    parts = _TAG.split(markup)
    for i in range(0, len(parts), 2):  # the text between two tags
        if len(parts[i]) >= LONG_RUN:
            parts[i] = _RUN.sub(_with_breaks, parts[i])
    return "".join(parts)


def _with_breaks(run: re.Match[str]) -> str:
    units = _UNITS.findall(run.group(0))
    return "\u200b".join("".join(units[at:at + BREAK_EVERY])
                          for at in range(0, len(units), BREAK_EVERY))


# ----------------------------------------------------------------- the renderer

@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    # A reply's links go to the web, never to Cairn's own anchors (markdown-it's way to say
    # so is to replace the method).
    md.validateLink = is_web  # type: ignore[method-assign,assignment]
    rules: dict[str, Any] = {
        "fence": _code, "code_block": _code, "code_inline": _code_inline,
        "table_open": _table_open, "th_open": _cell_open, "td_open": _cell_open,
        "image": _image, "heading_open": _heading_open, "hr": _hr,
        "blockquote_open": _quote_open, "blockquote_close": _quote_close,
    }
    for name, rule in rules.items():
        md.add_render_rule(name, rule)
    return md


def _colours(env: dict[str, Any]) -> Colours:
    colours: Colours = env.get("colours") or Colours()
    return colours


def _code(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    code = token.content[:-1] if token.content.endswith("\n") else token.content
    language = (token.info or "").strip().split(" ")[0] if token.type == "fence" else ""
    index = len(env["code"])
    env["code"].append(code)
    c = _colours(env)
    label = html.escape(language) if language else "code"
    from ui.chat.syntax import coloured  # (small; Pygments itself only for a named language)

    body = coloured(code, language, dark=c.dark) if language else None
    return (
        f'<table width="100%" cellspacing="0" cellpadding="8" bgcolor="{c.code_background}"'
        ' style="margin-top: 6px; margin-bottom: 6px;">'
        f'<tr><td><span style="color: {c.quiet}; font-size: small;">{label}</span></td>'
        f'<td align="right"><a href="{COPY}{index}" style="color: {c.quiet};'
        f' font-size: small; text-decoration: none;">'
        f'{"Copied" if env.get("copied") == index else "Copy"}</a></td></tr>'
        f'<tr><td colspan="2"><pre style="font-family: monospace; white-space: pre-wrap;">'
        f"{body if body is not None else html.escape(code)}</pre></td></tr></table>\n")


def _code_inline(self: Any, tokens: list[Token], idx: int, options: Any,
                 env: dict[str, Any]) -> str:
    c = _colours(env)
    return (f'<code style="font-family: monospace; background-color: {c.code_background};">'
            f"{html.escape(tokens[idx].content)}</code>")


def _table_open(self: Any, tokens: list[Token], idx: int, options: Any,
                env: dict[str, Any]) -> str:
    c = _colours(env)
    # Solid: Qt's default (outset) draws the top and left edges in a light shade, lost on a
    # light background, so a table showed only its right and bottom borders (issue 36).
    return (f'<table border="1" cellspacing="0" cellpadding="6" style="border-collapse: '
            f'collapse; border-style: solid; border-color: {c.rule}; margin-top: 6px; '
            'margin-bottom: 6px;">\n')


def _cell_open(self: Any, tokens: list[Token], idx: int, options: Any,
               env: dict[str, Any]) -> str:
    token = tokens[idx]
    style = token.attrGet("style") or ""
    align = ""
    if "text-align:" in str(style):
        align = f' align="{str(style).split(":", 1)[1].strip()}"'
    return f"<{token.tag}{align}>"


def _image(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    src = html.escape(str(token.attrGet("src") or ""), quote=True)
    alt = html.escape(token.content or "image")
    return f'<a href="{src}">[image: {alt}]</a>'


_HEADING_SIZES = {"h1": "x-large", "h2": "large", "h3": "medium", "h4": "medium",
                  "h5": "medium", "h6": "medium"}


def _heading_open(self: Any, tokens: list[Token], idx: int, options: Any,
                  env: dict[str, Any]) -> str:
    tag = tokens[idx].tag
    return f'<{tag} style="font-size: {_HEADING_SIZES.get(tag, "medium")};">'


def _hr(self: Any, tokens: list[Token], idx: int, options: Any, env: dict[str, Any]) -> str:
    return "<hr>\n"


def _quote_open(self: Any, tokens: list[Token], idx: int, options: Any,
                env: dict[str, Any]) -> str:
    # Qt's own blockquote (an indent), never nested tables: a quote of a quote of a quote
    # would make Qt's table layout cost double at each level.
    c = _colours(env)
    return f'<blockquote style="color: {c.quiet}; margin-left: {QUOTE_INDENT}px;">'


def _quote_close(self: Any, tokens: list[Token], idx: int, options: Any,
                 env: dict[str, Any]) -> str:
    return "</blockquote>\n"


def _mark_misleading(tokens: list[Token]) -> None:
    """A link whose text shows an address it does not open gets :data:`ASK` in front of its
    target: following it asks first (see ui/links.py)."""
    for inline in tokens:
        if inline.type != "inline" or not inline.children:
            continue
        opened: Token | None = None
        text: list[str] = []
        for child in inline.children:
            if child.type == "link_open":
                opened, text = child, []
            elif child.type == "link_close" and opened is not None:
                href = str(opened.attrGet("href") or "")
                if misleading("".join(text), href):
                    opened.attrSet("href", ASK + href)
                opened = None
            elif opened is not None and child.type in ("text", "code_inline"):
                text.append(child.content)


# Qt's rich-text import is quadratic in how deep inline markup nests (200 KB of nested
# `*_*_…` took 16 s to import): past this depth emphasis, strikethrough and links show as
# the text they hold, unstyled.  No real text nests even four deep.
MAX_INLINE_DEPTH = 8


def _bound_nesting(tokens: list[Token]) -> None:
    for inline in tokens:
        if inline.type != "inline" or not inline.children:
            continue
        depth = 0
        for child in inline.children:
            nesting = child.nesting
            if nesting == 1:
                depth += 1
            if nesting and depth > MAX_INLINE_DEPTH:  # an opening or closing tag too deep
                child.type, child.tag, child.nesting, child.content = "text", "", 0, ""
                child.attrs = {}
            if nesting == -1:
                depth -= 1


def _mark_tasks(tokens: list[Token]) -> None:
    """GitHub's task lists: a list item that opens with ``[ ]`` or ``[x]`` shows ☐ or ☑, and
    a bulleted list whose items all do shows no bullets (the box is the item's mark)."""
    lists: list[tuple[Token, list[bool]]] = []  # the lists open here, and their items: tasks?
    for i, token in enumerate(tokens):
        if token.type in ("bullet_list_open", "ordered_list_open"):
            lists.append((token, []))
        elif token.type in ("bullet_list_close", "ordered_list_close") and lists:
            opened, items = lists.pop()
            if opened.type == "bullet_list_open" and items and all(items):
                opened.attrSet("style", "list-style-type: none")
        if token.type != "list_item_open":
            continue
        task = False
        inline = tokens[i + 2] if i + 2 < len(tokens) else None
        if inline is not None and inline.type == "inline" and inline.children \
                and inline.children[0].type == "text":
            first = inline.children[0]
            found = _TASK.match(first.content)
            if found:
                box = "☐ " if found.group(1) == " " else "☑ "
                first.content = box + first.content[found.end():]
                task = True
        if lists:
            lists[-1][1].append(task)
