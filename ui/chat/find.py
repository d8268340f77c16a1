"""Find in the open chat, going to a message, and Ctrl+Home.

The find bar asks the search index for every message of the chat that matches (the whole
chat, not the rows read so far) and steps through them, newest first; going to a message
reads the pages from the one that holds it down to what is shown, so the conversation stays
one unbroken run, then centres it with the words highlighted.  Ctrl+Home reads the rest of
the chat and shows its first message.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QLineEdit, QWidget

from app.errors import CairnError
from ui.chat.entries import build
from ui.text import Label, tip
from ui.widgets import tool_button

if TYPE_CHECKING:
    from ui.chat.ops import ChatOps
    from ui.chat.view import ConversationView


class ChatPanel(Protocol):
    """What of the chat panel these use (the panel itself imports this module)."""

    chat_id: str | None
    ops: ChatOps
    view: ConversationView
    sig_error: SignalInstance

    def run_task(self, coroutine: Coroutine[Any, Any, Any], /) -> Any: ...
    def shown_count(self) -> int: ...
    def oldest_id(self) -> int | None: ...
    def set_oldest_id(self, message_id: int) -> None: ...


class FindField(QLineEdit):
    """Enter: the next (older) match; Shift+Enter: the previous (newer); Esc: close."""

    sig_step = Signal(int)
    sig_close = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            self.sig_step.emit(1 if shift else -1)
            return
        if key == Qt.Key.Key_Escape:
            self.sig_close.emit()
            return
        super().keyPressEvent(event)


class FindBar(QWidget):
    """The bar above the conversation: a field, "3 of 12", previous, next, close."""

    sig_searched = Signal()  # an answer arrived (tests wait on it)
    sig_moved = Signal(int)  # shown: the message id of the current match

    def __init__(self, panel: ChatPanel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.panel = panel
        self.setObjectName("find-bar")
        self.field = FindField()
        self.field.setAccessibleName("Find in chat")
        self.field.setPlaceholderText("Find in this chat")
        self.field.setClearButtonEnabled(True)
        self.count = Label("").named("Matches")  # plain: a refusal may carry what was typed
        self.count.setMinimumWidth(80)
        self.older = tool_button("↑", "Previous match", "Older match (Enter)")
        self.newer = tool_button("↓", "Next match", "Newer match (Shift+Enter)")
        self.close_button = tool_button("✕", "Close find", "Close (Esc)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.field, 1)
        layout.addWidget(self.count)
        layout.addWidget(self.older)
        layout.addWidget(self.newer)
        layout.addWidget(self.close_button)
        # Every match: (message id, which of its matches), oldest first; "3 of 12" counts
        # these, not messages (one message may hold many).
        self.matches: list[tuple[int, int]] = []
        self.current = -1
        self.words: tuple[str, ...] = ()
        self._counts: dict[int, int] = {}  # message id -> its matches, as the core counted
        self._asked = 0  # answers to older questions are dropped
        self._chat: str | None = None
        self.home: QShortcut | None = None
        self.field.textChanged.connect(self._typed)
        self.field.sig_step.connect(self.step)
        self.field.sig_close.connect(self.close_bar)
        self.older.clicked.connect(lambda: self.step(-1))
        self.newer.clicked.connect(lambda: self.step(1))
        self.close_button.clicked.connect(self.close_bar)
        self.hide()

    def open_bar(self) -> None:
        self.show()
        self.field.setFocus()
        self.field.selectAll()
        if self.field.text() and self._chat != self.panel.chat_id:
            self._typed(self.field.text())

    def close_bar(self) -> None:
        self.hide()
        self.matches, self.current, self.words = [], -1, ()
        self.panel.view.messages.highlight(())
        self.panel.view.messages.set_current(None)
        self.panel.view.viewport().update()
        self.panel.view.setFocus()

    def chat_changed(self) -> None:
        """Another chat is shown: its own matches, if the bar is open."""
        self.matches, self.current = [], -1
        self.count.setText("")
        if self.isVisible() and self.field.text():
            self._typed(self.field.text())

    def _typed(self, text: str) -> None:
        self._asked += 1
        asked, chat_id = self._asked, self.panel.chat_id
        self._chat = chat_id
        if chat_id is None or not text.strip():
            self.matches, self.current = [], -1
            self.count.setText("")
            self.panel.view.messages.highlight(())
            self.panel.view.messages.set_current(None)
            self.panel.view.viewport().update()
            return
        self.panel.run_task(self._ask(chat_id, text, asked))

    async def _ask(self, chat_id: str, text: str, asked: int) -> None:
        ops = self.panel.ops
        try:
            counted = await ops.find_matches_in_chat(chat_id, text)
            refusal = None
        except CairnError as error:
            counted, refusal = [], str(error)
        if asked != self._asked or chat_id != self.panel.chat_id:
            return  # stale: the person typed on, or left the chat
        self.words = ops.words(text)
        self._counts = dict(counted)
        found = [(message_id, n) for message_id, count in counted for n in range(count)]
        self.matches = found
        self.panel.view.messages.set_current(None)
        self.panel.view.messages.highlight(self.words)
        self.panel.view.viewport().update()
        if refusal is not None:
            self.count.setText("")
            self.count.setToolTip(tip(refusal))
            self.panel.sig_error.emit(refusal)
        elif not found:
            self.current = -1
            self.count.setText("No matches")
        else:
            self.current = len(found) - 1  # the newest first: the chat opens at its end
            await self._show()
        self.sig_searched.emit()

    def step(self, delta: int) -> None:
        if not self.matches:
            return
        self.current = (self.current + delta) % len(self.matches)
        self.panel.run_task(self._show())

    async def _show(self) -> None:
        self.count.setText(f"{self.current + 1} of {len(self.matches)}")
        message_id, n = self.matches[self.current]
        if await go_to(self.panel, message_id, self.words):
            self._on_match(message_id, n)
            self.sig_moved.emit(message_id)

    def _on_match(self, message_id: int, n: int) -> None:
        """Mark the match as current and bring it to the middle: a long message's matches
        are far apart within its row."""
        view = self.panel.view
        row = next((r for r in range(view.conversation.rowCount())
                    if message_id in view.conversation.entries[r].message_ids), None)
        if row is None:
            return
        entry = view.conversation.entries[row]
        # An entry may show several messages (a reply and its tool calls): its marks are
        # counted over all of them, the earlier messages' first.
        before = sum(self._counts.get(m, 0) for m in entry.message_ids if m < message_id)
        delegate = view.messages
        width = view.viewport().width()
        at = min(before + n, max(delegate.match_count(entry, width) - 1, 0))
        delegate.set_current(entry.key, at)
        rect = delegate.match_rect(entry, width, at)
        if rect is not None:
            top = view.visualRect(view.conversation.index(row, 0)).top()
            middle = top + rect.center().y()
            bar = view.verticalScrollBar()
            bar.setValue(bar.value() + int(middle - view.viewport().height() / 2))
        view.viewport().update()



async def go_to(panel: ChatPanel, message_id: int, words: tuple[str, ...]) -> bool:
    """Show *message_id* of the open chat, centred, its words highlighted; reading the pages
    between it and what is shown first.  False when it is not in the conversation."""
    chat_id, shown = panel.chat_id, panel.shown_count()
    if chat_id is None:
        return False
    oldest = panel.oldest_id()
    view = panel.view
    if oldest is not None and message_id < oldest:
        view.older_pending = True  # no scroll-back read meanwhile
        try:
            messages, more = await panel.ops.reaching(chat_id, message_id, before=oldest)
        finally:
            view.older_pending = False
        if shown != panel.shown_count() or oldest != panel.oldest_id():
            return False  # another chat, or another read, meanwhile
        if messages:
            panel.set_oldest_id(messages[0].id)
            view.has_older = more
            view.prepend_older(build(messages))
    row = next((r for r in range(view.conversation.rowCount())
                if message_id in view.conversation.entries[r].message_ids), None)
    if row is None:
        return False
    view.messages.highlight(words)
    index = view.conversation.index(row, 0)
    view.pinned = False
    view.setCurrentIndex(index)
    view.scrollTo(index, QAbstractItemView.ScrollHint.PositionAtCenter)
    view.viewport().update()
    return True


async def to_first(panel: ChatPanel) -> None:
    """Ctrl+Home: the chat's first message, the rest of the chat read first."""
    chat_id, shown, oldest = panel.chat_id, panel.shown_count(), panel.oldest_id()
    view = panel.view
    if chat_id is None:
        return
    if view.has_older and oldest is not None:
        view.older_pending = True
        try:
            messages = await panel.ops.messages_before(chat_id, oldest)
        finally:
            view.older_pending = False
        if shown != panel.shown_count() or oldest != panel.oldest_id():
            return
        if messages:
            panel.set_oldest_id(messages[0].id)
            view.prepend_older(build(messages))
        view.has_older = False
    view.pinned = False
    if view.conversation.rowCount():
        view.setCurrentIndex(view.conversation.index(0, 0))
    view.scrollToTop()


def install(panel: ChatPanel, parent: QWidget) -> FindBar:
    """The find bar above the conversation, and Ctrl+Home on the conversation."""
    bar = FindBar(panel, parent)
    home = QShortcut(QKeySequence("Ctrl+Home"), panel.view)
    home.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    home.activated.connect(lambda: panel.run_task(to_first(panel)))
    bar.home = home  # (kept with the bar)
    return bar
