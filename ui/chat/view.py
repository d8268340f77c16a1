"""The conversation's view (``Conversation``): a list that scrolls by pixel, keeps to the
latest message while the person is at the bottom, offers "Jump to latest" when they are not,
and asks for older messages as they scroll up.

Text is selectable: pressing on a message puts a read-only text browser with the same
document over it (the press goes on to the browser, so a drag selects at once); Ctrl+C copies
the selection, or the whole message as markdown when nothing is selected.  Links are handled
by whoever listens to ``sig_anchor``.
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPoint,
    QPointF,
    QRectF,
    Qt,
    QTimer,
    QUrl,
    Signal,
)
from PySide6.QtGui import (
    QContextMenuEvent,
    QFocusEvent,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFrame,
    QListView,
    QMenu,
    QStyleOptionViewItem,
    QTextBrowser,
    QToolButton,
    QToolTip,
    QWidget,
)

from app.chat.web import Source
from ui.chat.delegate import BUBBLE_PAD, Layout, MessageDelegate
from ui.chat.entries import CALL, PERSON, Entry
from ui.chat.model import ConversationModel, EntryRole
from ui.chat.versions import VersionSwitch
from ui.chat.web import SOURCE
from ui.links import is_web, target_of
from ui.text import tip

OLDER_AT = 400  # pixels from the top at which older messages are asked for
BOTTOM_SLACK = 4  # pixels from the bottom that still count as "at the bottom"
MENU_SOURCES = 12  # a message's menu offers its first sources (the keyboard's way to them)
PREVIOUS_VERSION, NEXT_VERSION = "cairn:previous-version", "cairn:next-version"
FORK = "cairn:fork"


def source_number(href: str) -> int:
    """The number a ``cairn:source/N`` link shows (N + 1), or 0."""
    try:
        return int(href[len(SOURCE):]) + 1 if href.startswith(SOURCE) else 0
    except ValueError:
        return 0


def source_of(entry: Entry, href: str) -> Source | None:
    """The source a ``cairn:source/N`` link of *entry* names, or None."""
    n = source_number(href)
    return entry.sources[n - 1] if 0 < n <= len(entry.sources) else None


def links_in(layout: Layout) -> list[str]:
    """The web links of a laid-out message, in order, each once."""
    found: list[str] = []
    for block in layout.blocks:
        text_block = block.doc.begin()
        while text_block.isValid():
            it = text_block.begin()
            while not it.atEnd():
                fmt = it.fragment().charFormat()
                href = fmt.anchorHref() if fmt.isAnchor() else ""
                if href.lower().startswith(("http:", "https:", "mailto:")) and href not in found:
                    found.append(href)
                it += 1
            text_block = text_block.next()
    return found


class ConversationView(QListView):
    sig_anchor = Signal(object, str, object)  # (entry, href, code text or None)
    sig_wants_older = Signal()
    sig_escape = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._link_shown = ""  # the link target whose tooltip shows
        # First: Qt calls the overrides below while the view is still being set up.
        self._selector: QTextBrowser | None = None
        self._selector_row = -1
        self.messages = MessageDelegate(self)  # how each message looks, and its layouts
        self.setObjectName("conversation")
        self.setAccessibleName("Conversation")
        self.conversation = ConversationModel(self)
        self.setModel(self.conversation)
        self.setItemDelegate(self.messages)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setUniformItemSizes(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setMouseTracking(True)
        self.setStyleSheet("QListView#conversation { background: palette(base); }"
                           " QListView#conversation::item:selected { background: transparent; }")
        self.verticalScrollBar().setSingleStep(24)
        self.pinned = True  # at the bottom: new text keeps the latest in sight
        self.older_pending = False  # the panel is reading older messages
        self.has_older = False
        self.empty_text = ""  # what an opened chat with no message yet says
        self.jump = QToolButton(self)
        self.jump.setText("↓  Jump to latest")
        self.jump.setAccessibleName("Jump to latest")
        self.jump.setCursor(Qt.CursorShape.PointingHandCursor)
        self.jump.setStyleSheet("QToolButton { background: palette(button); border: 1px solid"
                                " palette(mid); border-radius: 12px; padding: 4px 12px; }")
        self.jump.clicked.connect(self.to_latest)
        self.jump.hide()
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._scrolled)
        bar.rangeChanged.connect(self._range_changed)
        self.conversation.modelReset.connect(self._close_selector)
        self.conversation.dataChanged.connect(self._data_changed)
        # ‹ 2/3 › under each message with versions (issue 38): a widget of its row (a
        # persistent editor: placed by the delegate, gone with its row), made once the rows
        # are laid out (made while they are inserted, it would lay them all out twice).
        self.versions_enabled = True  # False while a reply streams in the chat
        self._switches_due: tuple[int, int] | None = None
        self.conversation.modelReset.connect(
            lambda: self._switches_later(0, self.conversation.rowCount() - 1))
        self.conversation.rowsInserted.connect(lambda _p, first, last:
                                               self._switches_later(first, last))
        self.conversation.rowsRemoved.connect(lambda *_: self._add_due_switches())

    # ----------------------------------------------------------------- public

    def to_latest(self) -> None:
        self.pinned = True
        self.scrollToBottom()
        self._update_jump()

    def show_entries(self, entries: list[Entry]) -> None:
        """Another chat: shown from its end."""
        self.conversation.show(entries)
        self.pinned = True
        self.doItemsLayout()
        self.scrollToBottom()
        self._update_jump()

    def prepend_older(self, entries: list[Entry]) -> None:
        """Older messages above, the ones in sight staying where they are."""
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        self._close_selector()
        self.conversation.prepend(entries)
        self.doItemsLayout()
        bar.setValue(bar.maximum() - from_bottom)

    def entry_changed(self, entry: Entry) -> None:
        """A streaming entry grew: laid out again now, the latest kept in sight if pinned."""
        row = self.conversation.row_of(entry.key)
        width = self.viewport().width()
        before = self.messages.layout(entry, width, row).height if row is not None else -1
        self.conversation.changed(entry)
        if row is None:
            return
        index = self.conversation.index(row, 0)
        if self.messages.layout(entry, width, row).height != before:
            self.messages.sizeHintChanged.emit(index)  # the rows below move: a re-layout
        else:
            self.viewport().update(self.visualRect(index))  # the same height: a repaint

    def copy_current(self) -> None:
        entry = self._entry(self.currentIndex())
        if entry is not None:
            QApplication.clipboard().setText(entry.text)

    # ----------------------------------------------------------------- scrolling

    def _scrolled(self, value: int) -> None:
        bar = self.verticalScrollBar()
        self.pinned = value >= bar.maximum() - BOTTOM_SLACK
        self._update_jump()
        self._place_selector()
        if value <= OLDER_AT and self.has_older and not self.older_pending \
                and bar.maximum() > 0:
            self.older_pending = True
            self.sig_wants_older.emit()

    def _range_changed(self, _low: int, high: int) -> None:
        if self.pinned:
            self.verticalScrollBar().setValue(high)
        self._update_jump()

    def _update_jump(self) -> None:
        show = not self.pinned and self.conversation.rowCount() > 0
        if show != self.jump.isVisible():
            self.jump.setVisible(show)
        if show:
            self._place_jump()

    def _place_jump(self) -> None:
        self.jump.adjustSize()
        x = (self.width() - self.jump.width()) // 2
        self.jump.move(x, self.height() - self.jump.height() - 12)
        self.jump.raise_()

    def _data_changed(self, top: QModelIndex, bottom: QModelIndex, _roles: object = None
                      ) -> None:
        if top.row() == self._selector_row:
            self._close_selector()
        self._add_switches(top.row(), bottom.row())

    # ----------------------------------------------------------------- versions (issue 38)

    def _switches_later(self, first: int, last: int) -> None:
        """Rows *first*..*last* were inserted: their switches are made right after the layout
        that follows (or when one is asked for: ``switch_of``)."""
        due = self._switches_due
        if due is not None:  # (rows inserted above the ones due move them down)
            moved = last - first + 1 if first <= due[0] else 0
            first, last = min(first, due[0] + moved), max(last, due[1] + moved)
        self._switches_due = (first, last)
        QTimer.singleShot(0, self._add_due_switches)

    def _add_due_switches(self) -> None:
        due, self._switches_due = self._switches_due, None
        if due is not None:
            self._add_switches(*due)

    def _add_switches(self, first: int, last: int) -> None:
        """Rows *first*..*last*: ‹ 2/3 › for each that has versions, none for the others."""
        for row in range(max(0, first), min(last, self.conversation.rowCount() - 1) + 1):
            index = self.conversation.index(row, 0)
            entry = self._entry(index)
            switch = self.indexWidget(index)
            if entry is None or entry.of <= 1:
                if switch is not None:
                    self.closePersistentEditor(index)
                continue
            if not isinstance(switch, VersionSwitch):
                self.openPersistentEditor(index)  # the delegate makes it (createEditor)
                switch = self.indexWidget(index)
                if not isinstance(switch, VersionSwitch):
                    continue
                switch.sig_step.connect(lambda step, w=switch: self._switch_stepped(w, step))
            switch.entry = entry  # type: ignore[attr-defined]
            switch.show_version(entry.nth, entry.of, enabled=self.versions_enabled)

    def set_versions_enabled(self, enabled: bool) -> None:
        """The arrows step only while nothing streams in the chat."""
        if enabled == self.versions_enabled:
            return
        self.versions_enabled = enabled
        self._add_due_switches()
        for row in range(self.conversation.rowCount()):
            switch = self.indexWidget(self.conversation.index(row, 0))
            if isinstance(switch, VersionSwitch):
                switch.show_version(switch.nth, switch.of, enabled=enabled)

    def refresh_overlays(self) -> None:
        """After a scroll made without the scroll bar's signals: Jump to latest and the text
        selector follow."""
        self._update_jump()
        self._place_selector()

    def switch_of(self, row: int) -> VersionSwitch | None:
        """Row *row*'s ‹ 2/3 ›, or None."""
        self._add_due_switches()
        switch = self.indexWidget(self.conversation.index(row, 0))
        return switch if isinstance(switch, VersionSwitch) else None

    def _switch_stepped(self, switch: VersionSwitch, step: int) -> None:
        entry = getattr(switch, "entry", None)
        if entry is not None:
            self.sig_anchor.emit(entry, PREVIOUS_VERSION if step < 0 else NEXT_VERSION, None)

    def _place_switch(self, row: int) -> None:
        """Row *row*'s ‹ 2/3 › follows its footer (which moves when the row is hovered)."""
        index = self.conversation.index(row, 0)
        switch = self.indexWidget(index)
        if switch is None:
            return
        option = QStyleOptionViewItem()
        self.initViewItemOption(option)
        option.rect = self.visualRect(index)
        self.messages.updateEditorGeometry(switch, option, index)

    # ----------------------------------------------------------------- selecting text

    def _entry(self, index: QModelIndex) -> Entry | None:
        return index.data(EntryRole) if index.isValid() else None

    def open_selector(self, index: QModelIndex) -> QTextBrowser | None:
        """The read-only browser over *index*'s message, for selecting its text."""
        entry = self._entry(index)
        if entry is None:
            return None
        if self._selector is not None and self._selector_row == index.row():
            return self._selector
        self._close_selector()
        width = self.viewport().width()
        browser = QTextBrowser(self.viewport())
        browser.setObjectName("message-text")
        browser.setAccessibleName("Message text")
        browser.setFrameShape(QFrame.Shape.NoFrame)
        browser.setOpenLinks(False)
        browser.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        browser.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        browser.setStyleSheet("QTextBrowser { background: transparent; }")
        browser.viewport().setAutoFillBackground(False)
        layout = self.messages.layout(entry, width, index.row())
        if entry.kind == PERSON:
            doc = layout.blocks[0].doc.clone(browser)
        else:
            doc = self.messages.entry_document(entry, width, index.row())
            doc.setParent(browser)
        doc.setTextWidth(layout.column.width() - (2 * BUBBLE_PAD if entry.kind == PERSON else 0))
        browser.setDocument(doc)
        browser.anchorClicked.connect(lambda url, e=entry: self._browser_anchor(e, url))
        browser.installEventFilter(self)
        self._selector, self._selector_row = browser, index.row()
        self.messages.editing_row = index.row()
        self._place_selector()
        browser.show()
        switch = self.indexWidget(index)
        if switch is not None:  # ‹ 2/3 › stays clickable over the browser's footer
            switch.raise_()
        self.viewport().update()
        return browser

    def _place_selector(self) -> None:
        browser = self._selector
        if browser is None:
            return
        index = self.conversation.index(self._selector_row, 0)
        entry = self._entry(index)
        if entry is None:
            self._close_selector()
            return
        rect = self.visualRect(index)
        layout = self.messages.layout(entry, rect.width(), index.row())
        column = layout.column
        if entry.kind == PERSON:
            column = column.adjusted(BUBBLE_PAD, BUBBLE_PAD, -BUBBLE_PAD, -BUBBLE_PAD)
        # The width first: the browser lays its document out at its own width, and only
        # then is the document's height the one to give it.
        # Exactly over the painted text: never over the rows below it.
        x, y = int(rect.x() + column.x()), int(rect.y() + column.y())
        browser.setGeometry(x, y, int(column.width()) + 1, max(1, int(column.height())))

    def _close_selector(self) -> None:
        if self._selector is None:
            return
        browser, self._selector = self._selector, None
        self._selector_row = -1
        self.messages.editing_row = -1
        browser.hide()
        browser.deleteLater()
        self.viewport().update()

    def _browser_anchor(self, entry: Entry, url: QUrl) -> None:
        href = url.toString()
        code = None
        if href.startswith("cairn:copy/"):
            index = self.conversation.index(self._selector_row, 0)
            _, code = self._anchor_of(index, None, href)
        self.sig_anchor.emit(entry, href, code)

    def _anchor_of(self, index: QModelIndex, point: QPointF | None, href: str = ""
                   ) -> tuple[str, str | None]:
        entry = self._entry(index)
        if entry is None:
            return "", None
        width = self.viewport().width()
        if point is not None:
            return self.messages.anchor_at(entry, width, index.row(), point)
        layout = self.messages.layout(entry, width, index.row())
        try:
            n = int(href.rsplit("/", 1)[1])
        except ValueError:
            return "", None
        for block in layout.blocks:  # the Copy links count from 0 in each piece
            if n < len(block.code):
                return href, block.code[n]
            n -= len(block.code)
        return "", None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self._selector and event.type() == QEvent.Type.KeyPress:
            key = event  # type: ignore[assignment]
            if isinstance(key, QKeyEvent) and key.key() == Qt.Key.Key_Escape:
                self._close_selector()
                self.setFocus()
                return True
            if isinstance(key, QKeyEvent) and key.matches(QKeySequence.StandardKey.Copy) \
                    and self._selector is not None \
                    and not self._selector.textCursor().hasSelection():
                self.copy_current()
                return True
        return super().eventFilter(watched, event)

    # ----------------------------------------------------------------- Qt overrides

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        index = self.indexAt(event.position().toPoint())
        if not index.isValid() or event.button() != Qt.MouseButton.LeftButton:
            self._close_selector()
            super().mousePressEvent(event)
            return
        self.setCurrentIndex(index)
        rect = self.visualRect(index)
        point = event.position() - QPointF(rect.topLeft())
        href, code = self._anchor_of(index, point)
        if href:
            entry = self._entry(index)
            self.sig_anchor.emit(entry, href, code)
            event.accept()
            return
        entry = self._entry(index)
        layout = self.messages.layout(entry, rect.width(), index.row()) if entry else None
        if layout is None or not layout.column.contains(point):
            self._close_selector()
            return
        browser = self.open_selector(index)
        if browser is None:
            return
        browser.setFocus()
        inside = browser.viewport().mapFrom(self.viewport(), event.position().toPoint())
        forwarded = QMouseEvent(QEvent.Type.MouseButtonPress, QPointF(inside),
                                event.globalPosition(), event.button(), event.buttons(),
                                event.modifiers())
        QApplication.sendEvent(browser.viewport(), forwarded)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802
        index = self.indexAt(event.position().toPoint())
        row = index.row() if index.isValid() else -1
        previous = self.messages.hovered_row
        if row != previous:
            self.messages.hovered_row = row
            for r in (previous, row):
                if r >= 0:
                    self.viewport().update(self.visualRect(self.conversation.index(r, 0)))
                    self._place_switch(r)
        if index.isValid():
            rect = self.visualRect(index)
            href, _ = self._anchor_of(index, event.position() - QPointF(rect.topLeft()))
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if href
                                      else Qt.CursorShape.IBeamCursor)
        else:
            href = ""
            self.viewport().unsetCursor()
        self._show_target(href, event.globalPosition().toPoint(), self._entry(index))
        super().mouseMoveEvent(event)

    def _show_target(self, href: str, where: QPoint, entry: Entry | None = None) -> None:
        """Where a link goes, before it is clicked (its text may show another address); a
        source's or a citation's: its number, title and full address."""
        target = target_of(href)
        source = source_of(entry, href) if entry is not None else None
        if source is not None:
            shown = f"{source_number(href)}. {source.title}\n{source.url}"
            if shown != self._link_shown:
                QToolTip.showText(where, tip(shown), self.viewport())
                self._link_shown = shown
        elif is_web(target):
            if target != self._link_shown:
                QToolTip.showText(where, tip(target), self.viewport())
                self._link_shown = target
        elif self._link_shown:
            QToolTip.hideText()
            self._link_shown = ""

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802
        previous, self.messages.hovered_row = self.messages.hovered_row, -1
        if previous >= 0:
            self.viewport().update(self.visualRect(self.conversation.index(previous, 0)))
            self._place_switch(previous)
        super().leaveEvent(event)

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        had_one = self.currentIndex().isValid()
        super().focusInEvent(event)  # (Qt makes the first row current, unselected: no frame)
        if not had_one and self.conversation.rowCount() and \
                event.reason() != Qt.FocusReason.MouseFocusReason:
            # Tabbed into: the newest message takes the focus frame, so it shows where the
            # keyboard is.
            last = self.conversation.index(self.conversation.rowCount() - 1, 0)
            self.selectionModel().setCurrentIndex(
                last, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_current()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.sig_escape.emit()  # Stop, as in the composer
            return
        if event.key() in (Qt.Key.Key_Left, Qt.Key.Key_Right) and \
                event.modifiers() == Qt.KeyboardModifier.AltModifier:
            entry = self._entry(self.currentIndex())  # Alt+Left, Alt+Right: its versions
            if entry is not None and entry.of > 1 and self.versions_enabled:
                step = -1 if event.key() == Qt.Key.Key_Left else 1
                if 1 <= entry.nth + step <= entry.of:
                    self.sig_anchor.emit(entry, PREVIOUS_VERSION if step < 0 else NEXT_VERSION,
                                         None)
            return
        if event.key() == Qt.Key.Key_F10 and \
                event.modifiers() == Qt.KeyboardModifier.ShiftModifier:
            centre = self.visualRect(self.currentIndex()).center()  # as the Menu key does
            self.contextMenuEvent(QContextMenuEvent(QContextMenuEvent.Reason.Keyboard, centre,
                                                    self.viewport().mapToGlobal(centre)))
            return
        super().keyPressEvent(event)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802
        index = self.indexAt(event.pos()) if event.reason() == QContextMenuEvent.Reason.Mouse \
            else self.currentIndex()
        entry = self._entry(index)
        if entry is None:
            return
        menu = QMenu(self)
        menu.addAction("Copy message as markdown",
                       lambda: self.sig_anchor.emit(entry, "cairn:copy-message", None))
        layout = self.messages.layout(entry, self.viewport().width(), index.row())
        codes = [code for block in layout.blocks for code in block.code]
        for n, code in enumerate(codes):  # the Copy links, for the keyboard too
            first = code.strip().split("\n", 1)[0][:40]
            menu.addAction(f"Copy code block {n + 1}: {first}",
                           partial(self.sig_anchor.emit, entry, "cairn:copy/", code))
        for href in links_in(layout)[:8]:  # and the web links
            menu.addAction(f"Open {href[:60]}", partial(self.sig_anchor.emit, entry, href, None))
        for n, source in enumerate(entry.sources[:MENU_SOURCES]):  # and the sources
            if source.openable:
                title = source.title[:60].replace("&", "&&")  # (& marks a menu's shortcut)
                menu.addAction(f"Open source {n + 1}: {title}",
                               partial(self.sig_anchor.emit, entry, f"{SOURCE}{n}", None))
        if self._selector is not None and self._selector.textCursor().hasSelection():
            menu.addAction("Copy selection", self._selector.copy)
        if "retry" in entry.actions:
            menu.addAction("Retry", lambda: self.sig_anchor.emit(entry, "cairn:retry", None))
        if "edit" in entry.actions:
            menu.addAction("Edit and resend",
                           lambda: self.sig_anchor.emit(entry, "cairn:edit", None))
        if entry.thinking:
            menu.addAction("Hide thinking" if entry.thinking_open else "Show thinking",
                           lambda: self.sig_anchor.emit(entry, "cairn:thinking", None))
        for n in entry.calls():  # an MCP call's arguments and result (the keyboard's way too)
            part = entry.parts[n]
            line = part.text[:60].replace("&", "&&")
            menu.addAction(f"{'Hide' if part.open else 'Show'} the call {line}",
                           partial(self.sig_anchor.emit, entry, f"{CALL}{n}", None))
        if entry.of > 1:  # its versions, as ‹ › and Alt+Left, Alt+Right do
            for text, href, step in (("Previous version", PREVIOUS_VERSION, -1),
                                     ("Next version", NEXT_VERSION, 1)):
                action = menu.addAction(f"{text} (Alt+{'Left' if step < 0 else 'Right'})",
                                        partial(self.sig_anchor.emit, entry, href, None))
                action.setEnabled(self.versions_enabled and 1 <= entry.nth + step <= entry.of)
        if entry.message_ids:  # stored: a new chat with the conversation up to here
            menu.addAction("Fork from here", lambda: self.sig_anchor.emit(entry, FORK, None))
        self.run_menu(menu, event.globalPos() if event.reason() == QContextMenuEvent.Reason.Mouse
                      else self.viewport().mapToGlobal(self.visualRect(index).center()))

    def run_menu(self, menu: QMenu, where: QPoint) -> None:
        """Show a message's menu at *where* until it is closed (a hook tests replace)."""
        menu.exec(where)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        # Rows in sight (and a few around) are laid out exactly at the new width; the rest
        # get an estimate until they come into sight.
        top = self.indexAt(self.viewport().rect().topLeft()).row()
        bottom = self.indexAt(self.viewport().rect().bottomLeft()).row()
        rows = self.conversation.rowCount()
        if self.pinned or bottom < 0:
            bottom = rows - 1
        if top < 0:
            top = max(0, bottom - 10)
        self.messages.exact_rows = range(max(0, top - 5), min(rows, bottom + 6))
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            # QListView lays its rows out again only when the size changes along its flow
            # (the height, here): a narrower or wider column must reflow every row.
            self.scheduleDelayedItemsLayout()
        self._close_selector()
        self._update_jump()
        if self.jump.isVisible():
            self._place_jump()
        if self.pinned:  # (still at the bottom when it runs: a switch may have moved it)
            QTimer.singleShot(0, lambda: self.scrollToBottom() if self.pinned else None)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.messages.palette_changed()
            self.doItemsLayout()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        super().paintEvent(event)
        if self.conversation.rowCount() or not self.empty_text:
            return
        painter = QPainter(self.viewport())
        painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
        x, width = self.messages.column(self.viewport().width())
        area = QRectF(x, 0, width, self.viewport().height()).toRect()
        painter.drawText(area, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap),
                         self.empty_text)
        painter.end()

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802
        super().scrollContentsBy(dx, dy)
        self._place_selector()


__all__ = ["ConversationView", "QPoint"]
