"""The knowledge preview, built off the GUI thread and bounded.

Qt's rich-text import (``setHtml``) is quadratic in how deep emphasis nests: a 200 KB
document of nested ``*_*_…`` (it can arrive as CAIRN.md, or in a bundle) took 16 s, and 320
KB 47 s, with the window frozen.  So the preview is made here, on a worker thread — the
markdown rendered and the ``QTextDocument`` built (Qt's rich-text classes are reentrant: a
document made in one thread may be moved to another) — and only the finished document is
handed to the GUI thread, which lays out no more than :data:`PREVIEW_CHARS` of the text (the
editor itself always holds all of it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from PySide6.QtCore import QThread
from PySide6.QtGui import QFont, QTextCursor, QTextDocument, QTextDocumentFragment

from ui.chat.markdown import COPY, Colours, block_spans, pieces, render

PREVIEW_CHARS = 60_000  # the preview lays out at most this much of the document
MARGIN = 10
_COPY_INDEX = re.compile(re.escape(COPY) + r"(\d+)")  # a piece's Copy links count from 0


@dataclass(slots=True)
class Built:
    document: QTextDocument  # lives in the GUI thread by the time the build returns
    code: list[str]  # each code block's text, by its Copy index
    cut: bool  # only the first PREVIEW_CHARS characters are shown


def bounded(text: str, limit: int | None = None) -> tuple[str, bool]:
    """The part of *text* the preview shows: all of it, or its blocks that end within
    *limit* (PREVIEW_CHARS) characters — whole blocks, so a code fence is never cut open —
    and whether it was cut."""
    limit = PREVIEW_CHARS if limit is None else limit
    if len(text) <= limit:
        return text, False
    end = 0
    for _start, block_end in block_spans(text[:limit + 1]):
        if block_end <= limit:
            end = block_end
    return text[:end or limit], True


def build(text: str, colours: Colours, font: QFont, gui: QThread) -> Built:
    """On a worker thread: the preview of *text*, as a document moved to the *gui* thread.

    It is imported a piece at a time (whole blocks, about 2,000 characters: the chat's
    pieces): each of Qt's calls is then short, and the interpreter lock, which PySide holds
    for a call's whole length, is free for the GUI thread between two of them."""
    shown, cut = bounded(text)
    document = QTextDocument()
    document.setDefaultFont(font)
    document.setDocumentMargin(MARGIN)
    code: list[str] = []
    if not text.strip():
        document.setHtml(f'<p style="color: {colours.quiet};">Nothing written yet.</p>')
    cursor = QTextCursor(document)
    for number, piece in enumerate(pieces(shown) if text.strip() else []):
        rendered = render(piece, colours)
        html = _COPY_INDEX.sub(lambda found: f"{COPY}{len(code) + int(found.group(1))}",
                               rendered.html) if rendered.code else rendered.html
        code.extend(rendered.code)
        if number:
            cursor.insertBlock()
        cursor.insertFragment(QTextDocumentFragment.fromHtml(html))
    if cut:
        cursor.insertBlock()
        cursor.insertFragment(QTextDocumentFragment.fromHtml(
            f'<hr/><p style="color: {colours.quiet};">The preview shows the first '
            f"{len(shown):,} of the document's {len(text):,} characters; the editor holds "
            "all of it.</p>"))
    document.moveToThread(gui)  # (pushed from the thread that made it, as Qt requires)
    return Built(document, code, cut)
