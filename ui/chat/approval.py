"""The question before an MCP tool runs, above the composer: the server, the tool, its
arguments (formatted, long values folded) and what the server says of it, with **Allow
once**, **Allow in this chat**, **Always allow** and **Deny** (DESIGN §12).

It is the window's :data:`app.tools.Approver`: the turn awaits the answer (Stop cancels the
wait, and the question goes).  Questions wait per chat: another chat's question shows when
that chat is shown again.  Keyboard: the buttons take Tab and their mnemonics (Alt+O, Alt+C,
Alt+A, Alt+D), Escape denies; the question is the bar's accessible description, read when
it takes focus.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui.text import Label

if TYPE_CHECKING:
    from app.tools import ApprovalRequest

# The answers (app.tools's; spelled here so that the window's start imports no tool code).
ALLOW_ONCE, ALLOW_CHAT, ALWAYS_ALLOW, DENY = "once", "chat", "always", "deny"


@dataclass(slots=True)
class _Waiting:
    request: ApprovalRequest
    answer: asyncio.Future[str]


def question_text(request: ApprovalRequest) -> str:
    """What the person reads (plain text: every part of it comes from a server or Claude)."""
    from app.tools.mcp import arguments_text, hints_text

    hints = hints_text(request.annotations)
    return (f"Claude wants to use {request.tool} on the MCP server {request.server}"
            + (f" (the server says: {hints}; not checked)" if hints else "") + ".\n"
            + arguments_text(request.arguments))


class ApprovalBar(QFrame):
    """Hidden until a turn in the shown chat asks; then the oldest question of that chat."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approval")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Allow a tool call?")
        layout = QVBoxLayout(self)
        self.question = Label()
        self.question.setTextFormat(Qt.TextFormat.PlainText)  # a server's words, as written
        self.question.setWordWrap(True)
        self.question.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.question)
        row = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for answer, text, said in (
                (ALLOW_ONCE, "Allow &once", "Run this call, and ask again next time"),
                (ALLOW_CHAT, "Allow in this &chat", "Run this tool without asking in this chat"),
                (ALWAYS_ALLOW, "&Always allow", "Run this tool without asking in this workspace"),
                (DENY, "&Deny", "Do not run it: Claude is told you declined")):
            button = QPushButton(text)
            button.setAccessibleDescription(said)
            button.setToolTip(said)
            button.clicked.connect(lambda _=False, a=answer: self.answer(a))
            self.buttons[answer] = button
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        self._waiting: dict[str, list[_Waiting]] = {}
        self._chat_id: str | None = None
        self.hide()

    async def ask(self, request: ApprovalRequest) -> str:
        """The window's approver: wait for the person's answer to *request*."""
        waiting = _Waiting(request, asyncio.get_running_loop().create_future())
        self._waiting.setdefault(request.chat_id, []).append(waiting)
        self._show()
        try:
            return await waiting.answer
        finally:  # answered, or the turn stopped: the question goes either way
            queue = self._waiting.get(request.chat_id, [])
            if waiting in queue:
                queue.remove(waiting)
            self._show()

    def show_for(self, chat_id: str | None) -> None:
        """The chat shown now: its question, if one waits."""
        self._chat_id = chat_id
        self._show()

    def answer(self, answer: str) -> None:
        current = self._current()
        if current is not None and not current.answer.done():
            current.answer.set_result(answer)

    def waiting(self, chat_id: str) -> ApprovalRequest | None:
        queue = self._waiting.get(chat_id) or []
        return queue[0].request if queue else None

    def _current(self) -> _Waiting | None:
        queue = self._waiting.get(self._chat_id or "") or []
        return queue[0] if queue else None

    def _show(self) -> None:
        current = self._current()
        if current is None:
            focused = self.focusWidget()
            had_focus = focused is not None and self.isAncestorOf(focused)
            self.hide()
            parent = self.parentWidget()
            if had_focus and parent is not None:
                parent.setFocus()  # (not lost to nowhere when the bar goes)
            return
        text = question_text(current.request)
        self.question.setText(text)
        self.setAccessibleDescription(text)
        was_hidden = not self.isVisible()
        self.show()
        if was_hidden:
            self.buttons[ALLOW_ONCE].setFocus()  # the person can answer at once, by keyboard

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.answer(DENY)
            return
        super().keyPressEvent(event)
