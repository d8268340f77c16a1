"""Paints the conversation's entries: markdown laid out once, cached, drawn many times.

An entry is laid out as a stack of rich-text documents: its thinking (folded), its text in
pieces (``ui.chat.markdown``), its file-read lines, and a footer (tokens and cost, status,
the links Copy, Retry and Edit).  A piece's document is cached by its text, so a reply that
streams re-lays out only its last piece, and an entry's layout is cached by its version and
the width, so scrolling and repainting never parse or lay out anything again.

A message with versions leaves a gap at the start of its footer, where the conversation puts
its ‹ 2/3 › (``ui.chat.versions``).

Links inside a document are anchors: ``cairn:copy/N`` (a code block), ``cairn:thinking``,
``cairn:retry``, ``cairn:edit``, ``cairn:copy-message``, or a web link to open in the browser.
"""

from __future__ import annotations

import html
from collections import OrderedDict
from dataclasses import dataclass, field

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRectF,
    QSize,
    Qt,
    QTimer,
    QUrl,
)
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QImage,
    QPainter,
    QPalette,
    QPen,
    QTextBlockFormat,
    QTextCursor,
    QTextDocument,
    QTextDocumentFragment,
    QTextFormat,
)
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from app.llm.prices import usage_line
from app.store.files import human_size
from app.store.messages import FAILED, STOPPED
from ui.chat.entries import CALL, PERSON, Entry
from ui.chat.markdown import (
    QUOTE_INDENT,
    Colours,
    breakable,
    pieces,
    plain,
    render,
    stable_pieces,
    streaming_chunks,
)
from ui.chat.model import EntryRole
from ui.chat.versions import VersionSwitch, switch_size
from ui.chat.web import SOURCE
from ui.text import sentence

MEASURE = 760  # the widest the text column grows: a readable line of chat text
SIDE = 24  # space left and right of the column
PAD_Y = 10  # space above and below an entry
GAP = 6  # between the documents of one entry
BUBBLE_PAD = 12  # inside the person's bubble
STREAMING = "streaming"
THUMB_URL = "cairn-thumb:"  # a sent image's thumbnail, as a document's resource
GAP_URL = "cairn-gap:"  # the room a footer leaves for ‹ 2/3 › (a transparent image)
FOUND = "#ffe066"  # the background of a word found (find in the chat, a search result)
CURRENT = "#ff9632"  # the match find in the chat is on: stronger, so Enter shows where it went

_Index = QModelIndex | QPersistentModelIndex


@dataclass(slots=True)
class Block:
    doc: QTextDocument
    x: float
    y: float
    code: list[str] = field(default_factory=list)
    bars: list[QRectF] = field(default_factory=list)  # a quote's bar, in the doc's coordinates


@dataclass(slots=True)
class Layout:
    width: int
    version: int
    hovered: bool
    height: int
    blocks: list[Block]
    column: QRectF  # where the entry's text is (the bubble, for the person)
    bubble: QRectF | None = None
    switch: QRectF | None = None  # where ‹ 2/3 › goes, over the footer's gap (issue 38)


class MessageDelegate(QStyledItemDelegate):
    """See the module's docstring.  ``hovered_row`` and ``editing_row`` are set by the view."""

    DOCS = 1500  # piece documents kept
    DOC_CHARS = 1_500_000  # and at most this much text in them
    LAYOUTS = 400  # entry layouts kept

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._widget = parent
        self._docs: OrderedDict[tuple[str, str], tuple[QTextDocument, list[str]]] = OrderedDict()
        self._doc_chars = 0
        self._layouts: OrderedDict[str, Layout] = OrderedDict()
        self._heights: dict[str, tuple[int, int, int]] = {}  # key -> (version, width, height)
        # Rows laid out exactly when the width changes; the others get an estimate until
        # they are painted (a resize with a thousand messages read would lay out each one).
        self.exact_rows = range(0)
        self._estimated: set[str] = set()
        self._recheck: dict[str, _Index] = {}
        self._growth: dict[str, tuple[str, list[str]]] = {}  # streaming: (stable text, pieces)
        self.hovered_row = -1
        self.editing_row = -1
        self._highlight: tuple[str, ...] = ()
        self._current: tuple[str, int] | None = None  # (entry key, n): the match find is on
        self.colours = Colours()
        self._gap_image = QImage(1, 1, QImage.Format.Format_ARGB32)
        self._gap_image.fill(Qt.GlobalColor.transparent)
        self.palette_changed()

    # ----------------------------------------------------------------- the palette

    def palette_changed(self) -> None:
        """Light or dark: every cached document is made again in the new colours."""
        palette = self._widget.palette()
        dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
        self.colours = Colours(
            code_background="#27272a" if dark else "#f4f4f5",
            rule="#3f3f46" if dark else "#d4d4d8",
            quiet=palette.color(QPalette.ColorRole.PlaceholderText).name(),
            link=palette.color(QPalette.ColorRole.Link).name(),
            dark=dark,
        )
        self._docs.clear()
        self._doc_chars = 0
        self._layouts.clear()
        self._heights.clear()

    # ----------------------------------------------------------------- Qt

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:  # noqa: N802
        entry: Entry | None = index.data(EntryRole)
        width = self._width(option)
        if entry is None:
            return QSize(width, 0)
        known = self._heights.get(entry.key)
        if known is not None and known[0] == entry.version:
            if known[1] == width:
                return QSize(width, known[2])
            if index.row() not in self.exact_rows:
                height = self._estimate(known[1], known[2], width)
                self._heights[entry.key] = (entry.version, width, height)
                self._estimated.add(entry.key)
                return QSize(width, height)
        return QSize(width, self.layout(entry, width, index.row()).height)

    def _estimate(self, old_width: int, old_height: int, width: int) -> int:
        """A row's height at a new width, before it is laid out: its text rewraps roughly in
        proportion to the column's width (the exact height comes when it is painted)."""
        _, old_column = self.column(old_width)
        _, column = self.column(width)
        return max(1, round(old_height * old_column / column)) if column else old_height

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: _Index) -> None:
        entry: Entry | None = index.data(EntryRole)
        if entry is None:
            return
        if entry.key in self._estimated:  # painted at last: its exact height, and a re-layout
            self._estimated.discard(entry.key)
            estimate = option.rect.height()
            layout = self.layout(entry, option.rect.width(), index.row())
            if layout.height != estimate:
                self._recheck[entry.key] = QPersistentModelIndex(index)
                QTimer.singleShot(0, self._rechecked)
        layout = self.layout(entry, option.rect.width(), index.row())
        painter.save()
        painter.translate(option.rect.topLeft())
        palette = option.palette
        focused = bool(option.state & QStyle.StateFlag.State_HasFocus) and \
            bool(option.state & QStyle.StateFlag.State_Selected)
        if layout.bubble is not None:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(palette.color(QPalette.ColorRole.AlternateBase))
            painter.drawRoundedRect(layout.bubble, 12, 12)
        if focused:  # keyboard focus on a message: a quiet frame, so arrows show where it is
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(QPen(palette.color(QPalette.ColorRole.Highlight), 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            frame = (layout.bubble or layout.column).adjusted(-4, -4, 4, 4)
            painter.drawRoundedRect(frame, 8, 8)
        if index.row() != self.editing_row:  # the selection editor draws it meanwhile
            context = QAbstractTextDocumentLayout.PaintContext()
            context.palette = palette
            context.palette.setColor(QPalette.ColorRole.Text,
                                     palette.color(QPalette.ColorRole.WindowText))
            # Only what is in sight: a long reply is many documents, most of them scrolled away.
            sight = QRectF(self._widget.viewport().rect()) if hasattr(self._widget, "viewport") \
                else QRectF(option.rect)
            sight.translate(-QPointF(option.rect.topLeft()))
            current = self._current[1] if self._current is not None \
                and self._current[0] == entry.key else None
            before = 0  # matches in the entry's earlier documents (which one is current)
            for block in layout.blocks:
                height = block.doc.size().height()
                hidden = block.y > sight.bottom() or block.y + height < sight.top()
                if hidden and current is None:
                    continue
                found = self._cursors(block.doc) if self._highlight else []
                first, before = before, before + len(found)
                if hidden:
                    continue
                painter.save()
                painter.translate(QPointF(block.x, block.y))
                context.clip = sight.translated(-block.x, -block.y)
                # Find and search: marked, the current match stronger.
                context.selections = self._marks(
                    found, None if current is None else current - first)
                block.doc.documentLayout().draw(painter, context)
                painter.restore()
        rule = QColor(self.colours.rule)
        for block in layout.blocks:  # under the selection's browser too: it has no bars
            for bar in block.bars:
                painter.fillRect(bar.translated(block.x, block.y), rule)
        painter.restore()

    def highlight(self, words: tuple[str, ...]) -> None:
        """Mark *words* wherever they appear (find in the chat, a search result); () none."""
        self._highlight = tuple(w for w in words if w)

    def set_current(self, key: str | None, n: int = 0) -> None:
        """The match find in the chat is on: the *n*-th mark of the entry *key* (None: no
        match is current)."""
        self._current = (key, n) if key is not None else None

    def _cursors(self, doc: QTextDocument) -> list[QTextCursor]:
        """Where the highlighted words are in *doc*, in reading order (each word, any case;
        at most 200)."""
        found: list[QTextCursor] = []
        for word in self._highlight:
            cursor = doc.find(word)
            while not cursor.isNull() and len(found) < 200:
                found.append(cursor)
                cursor = doc.find(word, cursor)
        found.sort(key=lambda c: (c.selectionStart(), c.selectionEnd()))
        return found

    def _marks(self, found: list[QTextCursor], current: int | None
               ) -> list[QAbstractTextDocumentLayout.Selection]:
        marks: list[QAbstractTextDocumentLayout.Selection] = []
        for n, cursor in enumerate(found):
            mark = QAbstractTextDocumentLayout.Selection()
            mark.cursor = cursor
            mark.format.setBackground(QColor(CURRENT if n == current else FOUND))
            mark.format.setForeground(QColor("#1f1f1f"))
            marks.append(mark)
        return marks

    def match_count(self, entry: Entry, width: int) -> int:
        """How many marks the entry shows (as laid out at *width*)."""
        return sum(len(self._cursors(b.doc)) for b in self.layout(entry, width).blocks)

    def match_rect(self, entry: Entry, width: int, n: int) -> QRectF | None:
        """Where the entry's *n*-th mark is, in the row's coordinates (None: it has fewer)."""
        at = 0
        for block in self.layout(entry, width).blocks:
            found = self._cursors(block.doc)
            if n < at + len(found):
                cursor = found[n - at]
                text_block = cursor.block()
                offset = cursor.selectionStart() - text_block.position()
                line = text_block.layout().lineForTextPosition(offset)
                top = block.doc.documentLayout().blockBoundingRect(text_block).top()
                rect = line.rect() if line.isValid() else QRectF(0, 0, 1, 1)
                return QRectF(block.x + rect.x(), block.y + top + rect.y(), rect.width(),
                              rect.height())
            at += len(found)
        return None

    def _rechecked(self) -> None:
        waiting, self._recheck = self._recheck, {}
        for index in waiting.values():
            if index.isValid():  # (a persistent index converts: PySide6's stubs miss that)
                self.sizeHintChanged.emit(QModelIndex(index))  # type: ignore[arg-type]

    # ----------------------------------------------------------------- the layout

    def layout(self, entry: Entry, width: int, row: int = -1) -> Layout:
        hovered = row == self.hovered_row
        found = self._layouts.get(entry.key)
        if found is not None and found.version == entry.version and found.width == width \
                and found.hovered == hovered:
            self._layouts.move_to_end(entry.key)
            return found
        made = self._lay_out(entry, width, hovered)
        self._layouts[entry.key] = made
        self._heights[entry.key] = (entry.version, width, made.height)
        self._estimated.discard(entry.key)
        while len(self._layouts) > self.LAYOUTS:
            self._layouts.popitem(last=False)
        return made

    def column(self, width: int) -> tuple[float, float]:
        """The text column's left edge and width, for a view *width* wide."""
        column = max(120.0, min(float(MEASURE), width - 2.0 * SIDE))
        return max(0.0, (width - column) / 2), column

    def _lay_out(self, entry: Entry, width: int, hovered: bool) -> Layout:
        x0, column = self.column(width)
        if entry.kind == PERSON:
            return self._person(entry, width, x0, column, hovered)
        return self._reply(entry, width, x0, column, hovered)

    def _person(self, entry: Entry, width: int, x0: float, column: float,
                hovered: bool) -> Layout:
        widest = column * 0.85 - 2 * BUBBLE_PAD
        parts = [plain(p.text) for p in entry.parts]
        shown = {sha: image for _name, sha in entry.images
                 if (image := entry.thumbs.get(sha)) is not None}
        if shown:  # a sent image as a thumbnail, above its name
            parts.append("<p>" + " ".join(
                f'<img src="{THUMB_URL}{sha}" width="{image.width()}" height="{image.height()}">'
                for sha, image in shown.items()) + "</p>")
        if entry.attachments:
            files = "<br>".join(f"Attached: {html.escape(name)} · {human_size(size)}"
                                for name, size in entry.attachments)
            parts.append(f'<p style="color: {self.colours.quiet};">{files}</p>')
        doc, code = self._doc("person", "".join(parts) or "<p></p>", widest, shown)
        inner = min(widest, doc.idealWidth())
        doc.setTextWidth(inner)
        bubble_w = inner + 2 * BUBBLE_PAD
        bubble_h = doc.size().height() + 2 * BUBBLE_PAD
        bubble = QRectF(x0 + column - bubble_w, PAD_Y, bubble_w, bubble_h)
        blocks = [Block(doc, bubble.x() + BUBBLE_PAD, bubble.y() + BUBBLE_PAD, code)]
        y = bubble.bottom() + 4
        links = self._links(entry, hovered)
        if entry.of > 1:
            links = self._gap() + ("&nbsp;&nbsp;&nbsp;" + links if links else "")
        footer, _ = self._doc("footer", f'<p align="right" style="font-size: small;">{links}</p>',
                              column)
        blocks.append(Block(footer, x0, y))
        y += footer.size().height()
        return Layout(width, entry.version, hovered, int(y + PAD_Y), blocks,
                      bubble, bubble, self._switch_at(blocks[-1]) if entry.of > 1 else None)

    def _reply(self, entry: Entry, width: int, x0: float, column: float,
               hovered: bool) -> Layout:
        quiet = self.colours.quiet
        blocks: list[Block] = []
        y = float(PAD_Y)

        def add(kind: str, source: str) -> None:
            nonlocal y
            doc, code = self._doc(kind, source, column)
            if kind == "md" and entry.copied is not None and entry.copied in code:
                doc, code = self._doc(f"copied:{code.index(entry.copied)}", source, column)
            bars = quote_bars(doc) if kind in ("md", "tail") and ">" in source else []
            blocks.append(Block(doc, x0, y, code, bars))
            y += doc.size().height() + GAP

        streaming = entry.status == STREAMING
        if entry.thinking:
            arrow = "▾" if entry.thinking_open else "▸"
            label = "Thinking…" if streaming and not entry.parts else "Thinking"
            add("quiet", f'<p><a href="cairn:thinking" style="color: {quiet};'
                         f' text-decoration: none;">{arrow} {label}</a></p>')
            if entry.thinking_open:
                add("quiet", f'<p style="color: {quiet};">'
                             f"{html.escape(entry.thinking).replace(chr(10), '<br>')}</p>")
        elif streaming and not entry.parts:
            add("quiet", f'<p style="color: {quiet};">…</p>')
        last_text = max((i for i, p in enumerate(entry.parts) if p.kind == "text"), default=-1)
        for i, part in enumerate(entry.parts):
            if part.kind == "tool" and part.detail:  # an MCP call: unfolds to what it did
                arrow = "▾" if part.open else "▸"
                add("quiet", f'<p><a href="{CALL}{i}" style="color: {quiet};'
                             f' text-decoration: none;"><i>{arrow} {html.escape(part.text)}</i>'
                             "</a></p>")
                if part.open:
                    add("quiet", f'<p style="color: {quiet}; white-space: pre-wrap; margin-left: 14px;'
                                 f' font-family: monospace; font-size: small;">'
                                 f"{html.escape(part.detail)}</p>")
                continue
            if part.kind == "tool":
                add("quiet", f'<p style="color: {quiet};"><i>↳ {html.escape(part.text)}</i></p>')
                continue
            if streaming and i == last_text:
                done, tail = self._growing(entry.key, part.text)
                for piece in done:
                    add("md", piece)
                *steady, growing = streaming_chunks(tail)
                for piece in steady:
                    add("md", piece)
                add("tail", growing)
            else:
                for piece in pieces(part.text):
                    add("md", piece)
        if entry.sources and not streaming:
            add("sources", self._sources(entry))
        footer = self._reply_footer(entry, hovered)
        if footer:
            add("footer", footer)
        column_rect = QRectF(x0, PAD_Y, column, max(0.0, y - GAP - PAD_Y))
        switch = self._switch_at(blocks[-1]) if entry.of > 1 and footer else None
        return Layout(width, entry.version, hovered, int(y - GAP + PAD_Y), blocks, column_rect,
                      switch=switch)

    def _growing(self, key: str, text: str) -> tuple[list[str], str]:
        """``stable_pieces`` for a text that only grows: the pieces already found are kept,
        and only what follows them is split again (a 20,000-token reply is never re-read
        whole on each refresh)."""
        known = self._growth.get(key)
        if known is None or not text.startswith(known[0]):
            known = ("", [])
        prefix, done = known
        more, tail, rest = stable_pieces(text[len(prefix):])
        if more:
            done = done + more
            self._growth[key] = (text[: len(prefix) + rest], done)
        return done, tail

    def forget_growth(self, key: str) -> None:
        self._growth.pop(key, None)

    def forget_others(self, keys: set[str]) -> None:
        """Another chat is shown: layouts and heights of rows no longer in the model go (the
        documents stay cached: a chat shown again lays out from them)."""
        for key in [k for k in self._layouts if k not in keys]:
            del self._layouts[key]
        for key in [k for k in self._heights if k not in keys]:
            del self._heights[key]
        self._estimated &= keys

    def _sources(self, entry: Entry) -> str:
        """The pages a reply drew on, numbered as its marks are: each title (plain text: it
        came from the web) a link that asks before opening, and its site beside it."""
        quiet, link = self.colours.quiet, self.colours.link
        rows = []
        for n, source in enumerate(entry.sources):
            title = html.escape(source.title)
            if source.openable:
                title = (f'<a href="{SOURCE}{n}" style="color: {link};'
                         f' text-decoration: none;">{title}</a>')
            site = html.escape(source.domain)
            if site:
                title += f'<span style="color: {quiet};">&nbsp;· {site}</span>'
            # A table: a title that wraps stays beside its number.
            rows.append(f'<tr><td style="color: {quiet}; padding-right: 4px;">{n + 1}.</td>'
                        f"<td>{title}</td></tr>")
        return breakable(
            f'<p style="color: {quiet}; font-size: small; margin-top: 6px;">Sources</p>'
            f'<table cellspacing="0" cellpadding="1" style="font-size: small;">'
            + "".join(rows) + "</table>")

    def _reply_footer(self, entry: Entry, hovered: bool) -> str:
        quiet = self.colours.quiet
        lines = []
        if entry.status == FAILED and entry.error:
            lines.append(f'<p style="color: #dc2626;">⚠ {html.escape(sentence(entry.error))}</p>')
        elif entry.status == STOPPED:
            lines.append(f'<p style="color: {quiet};">Stopped — what arrived is kept.</p>')
        if entry.status == STREAMING:
            return "".join(lines)
        details = []
        if entry.usage is not None and (entry.usage.input or entry.usage.output):
            details.append(html.escape(usage_line(
                entry.usage, entry.cost_usd if entry.cost_known else None)))
        links = self._links(entry, hovered)
        if links:
            details.append(links)
        gap = self._gap() + "&nbsp;&nbsp;" if entry.of > 1 else ""
        if details or gap:
            lines.append(f'<p style="color: {quiet}; font-size: small;">{gap}'
                         + " &nbsp;·&nbsp; ".join(details) + "</p>")
        return "".join(lines)

    def _gap(self) -> str:
        """The footer's room for ‹ 2/3 ›: an image as wide and tall as the switch."""
        size = switch_size(self._widget.font())
        return (f'<img src="{GAP_URL}" width="{size.width()}" height="{size.height()}"'
                ' style="vertical-align: middle;">')

    def _switch_at(self, block: Block) -> QRectF | None:
        """Where the gap is in the footer *block*, in the row's coordinates."""
        doc = block.doc
        text_block = doc.begin()
        while text_block.isValid():
            it = text_block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                fmt = fragment.charFormat()
                if fmt.isImageFormat() and fmt.toImageFormat().name() == GAP_URL:
                    offset = fragment.position() - text_block.position()
                    line = text_block.layout().lineForTextPosition(offset)
                    if not line.isValid():
                        return None
                    top = doc.documentLayout().blockBoundingRect(text_block).top()
                    size = switch_size(self._widget.font())
                    at = line.cursorToX(offset)  # (PySide6: the x and the position)
                    x = float(at[0] if isinstance(at, tuple) else at)  # type: ignore[arg-type]
                    y = top + line.y() + (line.height() - size.height()) / 2
                    return QRectF(block.x + x, block.y + y, size.width(), size.height())
                it += 1
            text_block = text_block.next()
        return None

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem,  # noqa: N802
                     index: _Index) -> QWidget:
        """A row's one editor is its ‹ 2/3 › (the view opens it for a message with
        versions; nothing in a message is edited in place)."""
        return VersionSwitch(parent)

    def setEditorData(self, editor: QWidget, index: _Index) -> None:  # noqa: N802
        """The view tells the switch what it shows (``VersionSwitch.show_version``)."""

    def setModelData(self, editor: QWidget, model: object, index: _Index) -> None:  # noqa: N802
        """A switch changes nothing in the model: its clicks are operations."""

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,  # noqa: N802
                             index: _Index) -> None:
        """A row's ‹ 2/3 › goes over its footer's gap (the view keeps it as the row's widget)."""
        if not isinstance(editor, VersionSwitch):
            super().updateEditorGeometry(editor, option, index)
            return
        entry: Entry | None = index.data(EntryRole)
        layout = self.layout(entry, option.rect.width(), index.row()) \
            if entry is not None else None
        if layout is None or layout.switch is None:
            editor.hide()
            return
        editor.setGeometry(layout.switch.translated(QPointF(option.rect.topLeft())).toRect())

    def _links(self, entry: Entry, hovered: bool) -> str:
        quiet = self.colours.quiet
        # The last exchange's links always show; any other message's when it is hovered.
        shown = hovered or entry.last
        names = [("cairn:copy-message", "Copy")] if shown else []
        if shown and "retry" in entry.actions:
            names.append(("cairn:retry", "Retry"))
        if shown and "edit" in entry.actions:
            names.append(("cairn:edit", "Edit"))
        # No breakable space between them: they wrap together (Retry never alone).
        return "&nbsp;&nbsp;&nbsp;".join(f'<a href="{href}" style="color: {quiet};">{text}</a>'
                                         for href, text in names)

    def _doc(self, kind: str, source: str, width: float,
             images: dict[str, QImage] | None = None) -> tuple[QTextDocument, list[str]]:
        """The document for one piece: made once per text (and palette), then re-used.
        *images*: thumbnails its ``<img src="cairn-thumb:…">`` show (the source names them,
        so a document with them is another document)."""
        key = (kind, source)
        found = self._docs.get(key)
        if found is None:
            doc = QTextDocument()
            doc.setDocumentMargin(0)
            doc.setDefaultFont(self._widget.font())
            doc.setUndoRedoEnabled(False)
            for sha, image in (images or {}).items():
                doc.addResource(QTextDocument.ResourceType.ImageResource,
                                QUrl(f"{THUMB_URL}{sha}"), image)
            if GAP_URL in source:
                doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(GAP_URL),
                                self._gap_image)
            code: list[str] = []
            if kind in ("md", "tail") or kind.startswith("copied:"):
                copied = int(kind.split(":", 1)[1]) if kind.startswith("copied:") else -1
                rendered = render(source, self.colours, copied, marks=True)
                doc.setHtml(rendered.html)
                code = rendered.code
            else:
                doc.setHtml(source)
            found = (doc, code)
            if kind != "tail":  # a streaming tail changes with every delta: never kept
                self._docs[key] = found
                self._doc_chars += len(source)
                while len(self._docs) > self.DOCS or (self._doc_chars > self.DOC_CHARS
                                                      and len(self._docs) > 1):
                    (_, dropped), _ = self._docs.popitem(last=False)
                    self._doc_chars -= len(dropped)
        else:
            self._docs.move_to_end(key)
        if found[0].textWidth() != width:
            found[0].setTextWidth(width)
        return found

    @staticmethod
    def _width(option: QStyleOptionViewItem) -> int:
        return max(1, option.rect.width())

    # ----------------------------------------------------------------- hit testing

    def anchor_at(self, entry: Entry, width: int, row: int, point: QPointF
                  ) -> tuple[str, str | None]:
        """The link under *point* (relative to the entry's top left): (href, code block's
        text for a Copy link) or ("", None)."""
        layout = self.layout(entry, width, row)
        for block in layout.blocks:
            local = point - QPointF(block.x, block.y)
            size = block.doc.size()
            if 0 <= local.x() <= size.width() and 0 <= local.y() <= size.height():
                href = block.doc.documentLayout().anchorAt(local)
                if href.startswith("cairn:copy/"):
                    try:
                        return href, block.code[int(href.rsplit("/", 1)[1])]
                    except (ValueError, IndexError):
                        return "", None
                return href, None
        return "", None

    def entry_document(self, entry: Entry, width: int, row: int) -> QTextDocument:
        """The entry's documents as one, for the selection editor (text to select and copy)."""
        layout = self.layout(entry, width, row)
        whole = QTextDocument()
        whole.setDocumentMargin(0)
        whole.setDefaultFont(self._widget.font())
        whole.addResource(QTextDocument.ResourceType.ImageResource, QUrl(GAP_URL),
                          self._gap_image)
        cursor = QTextCursor(whole)
        counted = 0  # Copy links count from 0 in each piece: here they count across the entry
        for i, block in enumerate(layout.blocks):
            if i:  # spaced as painted: GAP between pieces, a piece's top margin not counted
                last = cursor.blockFormat()
                last.setBottomMargin(GAP)
                cursor.setBlockFormat(last)
                cursor.insertBlock(QTextBlockFormat())  # never in the list above it
            start = cursor.position()
            cursor.insertFragment(QTextDocumentFragment(block.doc))
            if i:  # the piece's first block keeps its own format (alignment, say)
                own = block.doc.begin().blockFormat()
                first = QTextCursor(whole.findBlock(start))
                spaced = own if own.objectIndex() < 0 else first.blockFormat()
                spaced.setTopMargin(0)
                first.setBlockFormat(spaced)
            if block.code:
                _renumber_copies(whole, start, cursor.position(), counted)
                counted += len(block.code)
        return whole



def quote_bars(doc: QTextDocument) -> list[QRectF]:
    """Where a quote's bar goes, one per level, beside each run of quoted blocks (Qt's rich
    text draws a quote as an indent only)."""
    bars: list[QRectF] = []
    runs: dict[int, list[float]] = {}  # level -> [top, bottom] of the run open at it
    layout = doc.documentLayout()
    block = doc.begin()
    while block.isValid():
        fmt = block.blockFormat()
        quoted = fmt.hasProperty(QTextFormat.Property.BlockQuoteLevel)
        level = max(1, round(fmt.leftMargin() / QUOTE_INDENT)) if quoted else 0
        rect = layout.blockBoundingRect(block)
        for depth in [d for d in runs if d > level]:
            top, bottom = runs.pop(depth)
            bars.append(QRectF((depth - 1) * QUOTE_INDENT + 2, top, 3, bottom - top))
        for depth in range(1, level + 1):
            run = runs.setdefault(depth, [rect.top(), rect.bottom()])
            run[1] = rect.bottom()
        block = block.next()
    for depth, (top, bottom) in runs.items():
        bars.append(QRectF((depth - 1) * QUOTE_INDENT + 2, top, 3, bottom - top))
    return bars


def _renumber_copies(doc: QTextDocument, start: int, end: int, offset: int) -> None:
    """Add *offset* to the number of each ``cairn:copy/N`` link between *start* and *end*."""
    block = doc.findBlock(start)
    while block.isValid() and block.position() < end:
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            href = fmt.anchorHref()
            if fmt.isAnchor() and href.startswith("cairn:copy/"):
                number = int(href.rsplit("/", 1)[1]) + offset
                fmt.setAnchorHref(f"cairn:copy/{number}")
                cursor = QTextCursor(doc)
                cursor.setPosition(fragment.position())
                cursor.setPosition(fragment.position() + fragment.length(),
                                   QTextCursor.MoveMode.KeepAnchor)
                cursor.setCharFormat(fmt)
            it += 1
        block = block.next()
