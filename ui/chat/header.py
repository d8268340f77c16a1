"""The chat's header: workspace › folder › the chat's title (renamed in place), what the turn
is doing ("Pulling Acme Inc knowledge…" from Send to the first token, then the model), and
the chat's knowledge ("2 exchanges waiting to be learned", "learned 2 min ago", a failure)."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QPainter, QPaintEvent, QPalette, QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QVBoxLayout, QWidget

from ui.text import Label, sentence, tip
from ui.widgets import ElidedLabel


class TitleEdit(QLineEdit):
    """The title, flat until it is clicked: Enter renames, Esc puts the old title back."""

    sig_rename = Signal(str, str)  # the chat it was typed for, the new title

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chat-title")
        self.setAccessibleName("Chat title")
        self.setToolTip("Click to rename the chat")
        self.setFrame(False)
        self.setStyleSheet("#chat-title { font-size: 15px; font-weight: 600;"
                           " background: transparent; }"
                           " #chat-title:focus { background: palette(base); }")
        self._shown = ""
        self._chat_id = ""
        self.returnPressed.connect(self._commit)

    def show_title(self, title: str, chat_id: str = "") -> None:
        if chat_id != self._chat_id:
            self.commit_pending()  # a rename typed for another chat goes to that chat
            self._chat_id = chat_id
            self.setText(title)
            self.setCursorPosition(0)
        elif not self.hasFocus():
            self.setText(title)
            self.setCursorPosition(0)
        self._shown = title
        self.setToolTip(tip(f"{title} (click to rename)"))

    def commit_pending(self) -> None:
        """A title typed but not yet confirmed is saved for the chat it was typed for."""
        text = self.text().strip()
        if self._chat_id and text and text != self._shown:
            self._shown = text
            self.sig_rename.emit(self._chat_id, text)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if event.key() == Qt.Key.Key_Escape:
            self.setText(self._shown)
            self.clearFocus()
            return
        super().keyPressEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802
        """Not being renamed, a title too long for the header ends in "…" (a line edit
        would cut it off mid-word); clicked, the whole title is there to edit."""
        room = self._text_room()
        if self.hasFocus() or self.fontMetrics().horizontalAdvance(self.text()) <= room.width():
            super().paintEvent(event)
            return
        painter = QPainter(self)
        painter.setFont(self.font())
        painter.setPen(self.palette().color(QPalette.ColorRole.Text))
        painter.drawText(room, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                         self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                                       room.width()))
        painter.end()

    def _text_room(self) -> QRect:
        margins = self.textMargins()
        return self.contentsRect().adjusted(margins.left() + 2, margins.top(),
                                            -margins.right() - 2, -margins.bottom())

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802
        super().focusOutEvent(event)
        self._commit()

    def _commit(self) -> None:
        if self.text().strip():
            self.commit_pending()
        else:
            self.setText(self._shown)
        self.clearFocus()


class ChatHeader(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        top = QHBoxLayout()
        top.setSpacing(4)
        self.trail = Label()
        self.trail.setTextFormat(Qt.TextFormat.PlainText)
        self.trail.setObjectName("chat-trail")
        self.trail.setAccessibleName("Chat location")
        self.trail.setStyleSheet("#chat-trail { font-size: 15px; color: palette(placeholder-text); }")
        self.title = TitleEdit()
        top.addWidget(self.trail, 0)
        top.addWidget(self.title, 1)
        layout.addLayout(top)
        # The workspace's folder under the title (the middle elided, whole in the
        # tooltip); the sidebar's menu reveals it, copies it or opens a terminal there.
        self.path = ElidedLabel(mode=Qt.TextElideMode.ElideMiddle)
        self.path.setObjectName("chat-path")
        self.path.setAccessibleName("Workspace folder")
        self.path.setStyleSheet("#chat-path { color: palette(placeholder-text); }")
        self.path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path.hide()
        layout.addWidget(self.path)
        bottom = QHBoxLayout()
        self.status = Label("")
        self.status.setObjectName("chat-status")
        self.status.setAccessibleName("Chat status")
        self.status.setStyleSheet("#chat-status { color: palette(placeholder-text); }")
        self.knowledge = ElidedLabel(mode=Qt.TextElideMode.ElideRight)
        self.knowledge.setObjectName("chat-knowledge")
        self.knowledge.setAccessibleName("Chat knowledge")
        self.knowledge.setStyleSheet("#chat-knowledge { color: palette(placeholder-text); }")
        self.knowledge.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        bottom.addWidget(self.status, 1)
        bottom.addWidget(self.knowledge, 1)
        layout.addLayout(bottom)
        self._trail = ""

    def show_chat(self, trail: list[str], title: str, chat_id: str = "") -> None:
        text = " › ".join(trail) + " ›" if trail else ""
        self._trail = text
        self.trail.setToolTip(tip(text))
        self.trail.setAccessibleDescription(text)
        self.trail.setVisible(bool(text))
        self._fit_trail()
        self.title.show_title(title, chat_id)

    def _fit_trail(self) -> None:
        """The trail takes what it needs, up to half the header; the rest is the title's."""
        metrics = self.trail.fontMetrics()
        room = min(metrics.horizontalAdvance(self._trail) + 4, max(80, self.width() // 2))
        self.trail.setText(metrics.elidedText(self._trail, Qt.TextElideMode.ElideLeft, room))
        self.trail.setFixedWidth(room)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit_trail()

    def show_path(self, path: str) -> None:
        """The chat's workspace folder ("" for an Ungrouped chat: hidden)."""
        self.path.setText(path)
        self.path.setToolTip(tip(path))
        self.path.setAccessibleDescription(path)
        self.path.setVisible(bool(path))

    def say_status(self, text: str) -> None:
        self.status.setText(text)
        self.status.setAccessibleDescription(text)

    def say_knowledge(self, text: str, *, failing: bool = False) -> None:
        self.knowledge.setText(sentence(text))  # one line; the whole sentence in its tooltip
        colour = "#dc2626" if failing else "palette(placeholder-text)"
        self.knowledge.setStyleSheet(f"#chat-knowledge {{ color: {colour}; }}")
