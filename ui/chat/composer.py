"""The composer: what the person writes (``Message``), the files that go with it (chips),
``Attach``, ``Send`` and ``Stop``.

Enter sends and Shift+Enter breaks the line (the ``enter_sends`` switch swaps them; Ctrl+Enter
always sends); Esc stops a reply that is streaming, or leaves editing a sent message.  Files
arrive by the Attach dialog, by dropping them here, or by pasting (an image on the clipboard
too); the panel checks each one and either adds its chip or says why not, in one sentence.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import (
    QBuffer,
    QByteArray,
    QEvent,
    QIODevice,
    QMimeData,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QImage, QImageWriter, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.store.files import human_size
from ui.chat.web_toggle import WebToggle
from ui.text import Label, sentence, tip

MAX_LINES = 10  # the composer grows with its text up to this many lines, then scrolls


class MessageEdit(QPlainTextEdit):
    sig_send = Signal()
    sig_escape = Signal()
    sig_files = Signal(list)  # [Path]: files pasted or dropped
    sig_image = Signal(bytes)  # PNG: an image pasted

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("message")
        self.setAccessibleName("Message")
        self.setPlaceholderText("Message…")
        self.setTabChangesFocus(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.enter_sends = True
        self.document().documentLayout().documentSizeChanged.connect(self._fit)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._fit()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            mods = event.modifiers()
            shift = bool(mods & Qt.KeyboardModifier.ShiftModifier)
            ctrl = bool(mods & Qt.KeyboardModifier.ControlModifier)
            if ctrl or (shift != self.enter_sends):
                self.sig_send.emit()
                return
            self.textCursor().insertText("\n")  # (Shift+Enter would insert U+2028)
            return
        if key == Qt.Key.Key_Escape:
            self.sig_escape.emit()
            return
        super().keyPressEvent(event)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802
        return source.hasImage() or source.hasUrls() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802
        files = [Path(u.toLocalFile()) for u in source.urls() if u.isLocalFile()]
        if files:
            self.sig_files.emit(files)
            return
        # Text first: a spreadsheet's or a word processor's cells come with a picture of
        # them too, and the person pasted the words.
        if source.hasImage() and not source.hasText():
            image = source.imageData()
            if isinstance(image, QImage) and not image.isNull():
                self.sig_image.emit(png_bytes(image))
                return
        if source.hasText():
            self.insertPlainText(source.text())  # never rich text: what it says, not its look

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(super().sizeHint().width(), self._height())

    def _height(self) -> int:
        line = self.fontMetrics().lineSpacing()
        lines = max(1.0, min(float(MAX_LINES), self.document().size().height()))
        margins = self.contentsMargins()
        return int(lines * line + 2 * self.document().documentMargin()
                   + margins.top() + margins.bottom()) + 2

    def _fit(self, *_: object) -> None:
        self.setFixedHeight(self._height())
        past = self.document().size().height() > MAX_LINES
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded if past
                                        else Qt.ScrollBarPolicy.ScrollBarAlwaysOff)


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    QImageWriter(buffer, QByteArray(b"png")).write(image)  # (what QImage.save does)
    buffer.close()
    return bytes(data.data())


PREVIEW_HEIGHT = 40  # px: a pasted image's preview in its chip


class Chip(QFrame):
    """An attached file: its name and size, and ✕ to take it off."""

    sig_remove = Signal(object)  # self

    def __init__(self, path: Path, name: str, size: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path, self.name, self.file_size = path, name, size
        self.setObjectName("chip")
        self.setAccessibleName(f"Attached {name}")
        self.setStyleSheet("#chip { background: palette(alternate-base); border: 1px solid"
                           " palette(mid); border-radius: 8px; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 2, 2)
        layout.setSpacing(4)
        label = Label(f"{name} · {human_size(size)}")
        label.setTextFormat(Qt.TextFormat.PlainText)  # a file name is never markup
        label.setToolTip(tip(str(path)))
        remove = QToolButton()
        remove.setText("✕")
        remove.setAutoRaise(True)
        remove.setAccessibleName(f"Remove {name}")
        remove.clicked.connect(lambda: self.sig_remove.emit(self))
        layout.addWidget(label)
        layout.addWidget(remove)
        self.preview: QLabel | None = None

    def set_preview(self, image: QImage) -> None:
        """A pasted image shown small before it is sent (issue 36): the person sees what
        goes, not only "pasted-….png"."""
        from PySide6.QtGui import QPixmap

        small = image.scaledToHeight(PREVIEW_HEIGHT, Qt.TransformationMode.SmoothTransformation) \
            if image.height() > PREVIEW_HEIGHT else image
        if self.preview is None:
            self.preview = QLabel()
            self.preview.setAccessibleName(f"Preview of {self.name}")
            layout = self.layout()
            if isinstance(layout, QHBoxLayout):
                layout.insertWidget(0, self.preview)
        self.preview.setPixmap(QPixmap.fromImage(small))


class Composer(QFrame):
    """See the module's docstring.  The panel connects to the signals and does the work."""

    sig_send = Signal(str, list)  # text, [Path]
    sig_stop = Signal()
    sig_files = Signal(list)  # [Path] to check and attach
    sig_image = Signal(bytes)
    sig_edit_cancelled = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")  # (files dropped on it: the chat panel takes them)
        self.start_folder = ""  # where Attach opens: the chat's folder (the window sets it)
        self.setStyleSheet("#composer { background: palette(base); border: 1px solid"
                           " palette(mid); border-radius: 12px; }")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(12, 8, 8, 8)
        outer.setSpacing(6)

        self.editing_bar = QWidget()
        bar = QHBoxLayout(self.editing_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        self.editing_label = Label("Editing your message: Send replaces it and what followed.")
        self.editing_label.setStyleSheet("color: palette(placeholder-text);")
        cancel = QToolButton()
        cancel.setText("Cancel")
        cancel.setAccessibleName("Cancel editing")
        cancel.setAutoRaise(True)
        cancel.clicked.connect(self.cancel_edit)
        bar.addWidget(self.editing_label, 1)
        bar.addWidget(cancel)
        self.editing_bar.hide()
        outer.addWidget(self.editing_bar)

        self.chips = QWidget()
        self.chips_layout = QHBoxLayout(self.chips)
        self.chips_layout.setContentsMargins(0, 0, 0, 0)
        self.chips_layout.setSpacing(6)
        self.chips_layout.addStretch(1)
        self.chips.hide()
        outer.addWidget(self.chips)

        self.edit = MessageEdit()
        self.edit.sig_send.connect(self.send)
        self.edit.sig_escape.connect(self._escape)
        self.edit.sig_files.connect(self.sig_files.emit)
        self.edit.sig_image.connect(self.sig_image.emit)
        outer.addWidget(self.edit)

        row = QHBoxLayout()
        row.setSpacing(6)
        self.attach = QToolButton()
        self.attach.setObjectName("Attach")
        self.attach.setAccessibleName("Attach")
        self.attach.setText("Attach")
        self.attach.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.attach.setToolTip("Attach files: text, PDF or images (or drop or paste them here)")
        self.attach.setAutoRaise(True)
        self.attach.clicked.connect(self.choose_files)
        self.problem = Label("")
        self.problem.setObjectName("composer-problem")
        self.problem.setAccessibleName("Composer problem")
        self.problem.setWordWrap(True)
        self.problem.setTextFormat(Qt.TextFormat.PlainText)
        self.problem.setStyleSheet("color: #dc2626;")
        self.problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("Send")
        self.send_button.setAccessibleName("Send")
        self.send_button.setToolTip("Send (Enter)")
        self.send_button.setDefault(False)
        self.send_button.clicked.connect(self.send)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setObjectName("Stop")
        self.stop_button.setAccessibleName("Stop")
        self.stop_button.setToolTip("Stop the reply (Esc); what arrived is kept")
        self.stop_button.clicked.connect(self.sig_stop.emit)
        self.stop_button.hide()
        row.addWidget(self.attach, 0)
        self.web = WebToggle()  # web search for the next message
        row.addWidget(self.web, 0)
        row.addStretch(1)
        row.addWidget(self.send_button)
        row.addWidget(self.stop_button)
        self.problem.hide()
        outer.addWidget(self.problem)  # its own line: a sentence needs the composer's width
        outer.addLayout(row)
        self.streaming = False
        self.editing: int | None = None  # the id of the sent message being edited
        self._tint()

    def _tint(self) -> None:
        from ui.icons import tinted

        colour = self.palette().color(self.foregroundRole()).name()
        self.attach.setIcon(tinted("attach", colour, 16, self.devicePixelRatioF()))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "attach"):
            self._tint()

    # ----------------------------------------------------------------- state

    def set_streaming(self, streaming: bool) -> None:
        self.streaming = streaming
        self.send_button.setVisible(not streaming)
        self.stop_button.setVisible(streaming)

    def set_enter_sends(self, enter_sends: bool) -> None:
        self.edit.enter_sends = enter_sends
        self.send_button.setToolTip("Send (Enter)" if enter_sends else "Send (Shift+Enter)")

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.setPlainText(text)
        cursor = self.edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.edit.setTextCursor(cursor)

    def files(self) -> list[Path]:
        return [chip.path for chip in self._chips()]

    def attachments(self) -> list[tuple[Path, str, int]]:
        return [(chip.path, chip.name, chip.file_size) for chip in self._chips()]

    def sent(self, files: list[Path]) -> None:
        """A message went: the files it took leave, the ones added since stay."""
        for chip in self._chips():
            if chip.path in files:
                self._remove_chip(chip)
        self.editing = None
        self.editing_bar.hide()
        self.say("")
        self.web.reset()

    def say(self, text: str) -> None:
        """A refusal, under the text, until the next change."""
        text = sentence(text)
        self.problem.setText(text)
        self.problem.setAccessibleDescription(text)
        self.problem.setVisible(bool(text))

    def add_chip(self, path: Path, name: str, size: int) -> None:
        if any(chip.path == path for chip in self._chips()):
            return
        chip = Chip(path, name, size)
        chip.sig_remove.connect(self._remove_chip)
        self.chips_layout.insertWidget(self.chips_layout.count() - 1, chip)
        self.chips.show()

    def clear(self) -> None:
        """After a send: the text, the chips and any editing are gone."""
        self.edit.clear()
        for chip in self._chips():
            self._remove_chip(chip)
        self.editing = None
        self.editing_bar.hide()
        self.say("")

    def begin_edit(self, message_id: int, text: str) -> None:
        self.editing = message_id
        self.editing_bar.show()
        self.set_text(text)
        self.edit.setFocus()

    def cancel_edit(self) -> None:
        if self.editing is None:
            return
        self.editing = None
        self.editing_bar.hide()
        self.edit.clear()
        self.sig_edit_cancelled.emit()

    # ----------------------------------------------------------------- actions

    def send(self) -> None:
        if self.streaming:
            return
        self.sig_send.emit(self.text(), self.files())

    def choose_files(self) -> None:
        paths = self.ask_files()
        if paths:
            self.sig_files.emit([Path(p) for p in paths])

    def ask_files(self) -> list[str]:
        """The Attach dialog (a hook: tests replace it)."""
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Attach files", self.start_folder,
            filter="Text, PDF and images (*.md *.txt *.csv *.json *.py *.pdf *.png *.jpg "
                   "*.jpeg *.gif *.webp);;All files (*)")
        return list(paths)

    def _escape(self) -> None:
        if self.streaming:
            self.sig_stop.emit()
        elif self.editing is not None:
            self.cancel_edit()

    def _chips(self) -> list[Chip]:
        found = []
        for i in range(self.chips_layout.count()):
            item = self.chips_layout.itemAt(i)
            widget = item.widget() if item is not None else None
            if isinstance(widget, Chip):
                found.append(widget)
        return found

    def _remove_chip(self, chip: Chip) -> None:
        self.chips_layout.removeWidget(chip)
        chip.deleteLater()
        if not any(c is not chip for c in self._chips()):
            self.chips.hide()
