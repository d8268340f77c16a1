"""The search box: one field, ``Search``, opened with Ctrl+K (Cmd+K) from
anywhere in the window; a quick switcher too.

Workspace and chat titles that match the typed letters fuzzily come first, then what the
index finds, grouped by kind (messages, knowledge, files).  Every keystroke asks the core
off the GUI thread; while an answer is awaited the latest text waits its turn, and an answer
to older text is dropped.  Up/Down move, Enter opens, Esc closes and gives focus back.

Everything shown comes from data and is drawn as plain text: the snippet's matched words are
drawn bold from their offsets, never from markup.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QKeyEvent, QPainter, QPalette, QTextCharFormat, QTextLayout
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.text import Label

if TYPE_CHECKING:
    from app.ops import Found, Operations
    from app.store.search import Hit

RunTask = Callable[[Coroutine[Any, Any, Any]], object]
ResultRole = Qt.ItemDataRole.UserRole + 1
_GROUPS = (("message", "Messages"), ("chat", "Chats"), ("knowledge", "Knowledge"),
           ("file", "Files"))
_KIND_WORD = {"workspace": "Workspace", "chat": "Chat", "message": "Message",
              "knowledge": "Knowledge", "file": "File"}


@dataclass(frozen=True, slots=True)
class Target:
    """What Enter opens."""

    kind: str  # workspace | chat | message | knowledge | file
    title: str
    snippet: str = ""
    marks: tuple[tuple[int, int], ...] = ()
    workspace: str | None = None
    chat: str | None = None
    message: int | None = None
    owner: str | None = None
    line: int | None = None
    file: str | None = None
    words: tuple[str, ...] = ()


def target_of(hit: Hit, words: tuple[str, ...]) -> Target:
    return Target(hit.kind, hit.title, hit.snippet, hit.marks, workspace=hit.workspace,
                  chat=hit.chat, message=hit.message, owner=hit.owner, line=hit.line,
                  file=hit.file, words=words)


class SearchField(QLineEdit):
    sig_move = Signal(int)
    sig_enter = Signal()
    sig_escape = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        key = event.key()
        if key in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_PageDown, Qt.Key.Key_PageUp):
            step = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1, Qt.Key.Key_PageDown: 8,
                    Qt.Key.Key_PageUp: -8}[Qt.Key(key)]
            self.sig_move.emit(step)
            return
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.sig_enter.emit()
            return
        if key == Qt.Key.Key_Escape:
            self.sig_escape.emit()
            return
        super().keyPressEvent(event)


class ResultDelegate(QStyledItemDelegate):
    """A result: its kind and title on one line, the snippet below with the matched words
    bold; a group's heading in small capitals."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
                 ) -> QSize:  # noqa: N802
        target = index.data(ResultRole)
        line = option.fontMetrics.height()
        if target is None:
            return QSize(200, line + 10)
        return QSize(200, line * (2 if target.snippet else 1) + 12)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        target: Target | None = index.data(ResultRole)
        palette = option.palette
        painter.save()
        rect: QRect = option.rect
        if target is None:  # a heading
            font = QFont(option.font)
            font.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
            font.setBold(True)
            painter.setFont(font)
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(rect.adjusted(10, 4, -10, 0), Qt.AlignmentFlag.AlignLeft
                             | Qt.AlignmentFlag.AlignVCenter, str(index.data()))
            painter.restore()
            return
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        if selected:
            painter.fillRect(rect, palette.color(QPalette.ColorRole.Highlight))
        text_colour = palette.color(QPalette.ColorRole.HighlightedText if selected
                                    else QPalette.ColorRole.Text)
        line = option.fontMetrics.height()
        x, width = rect.left() + 12, rect.width() - 24
        kind = _KIND_WORD[target.kind]
        quiet = QColor(text_colour)
        quiet.setAlphaF(0.6)
        painter.setPen(quiet)
        painter.drawText(QRect(x, rect.top() + 5, 80, line), Qt.AlignmentFlag.AlignLeft, kind)
        bold = QFont(option.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.setPen(text_colour)
        title = option.fontMetrics.elidedText(" ".join(target.title.split()) or "Untitled",
                                              Qt.TextElideMode.ElideRight, width - 90)
        painter.drawText(QRect(x + 84, rect.top() + 5, width - 84, line),
                         Qt.AlignmentFlag.AlignLeft, title)
        painter.setFont(option.font)
        if target.snippet:
            _draw_marked(painter, option.font, target.snippet, target.marks,
                         x + 84, rect.top() + 6 + line, width - 84, quiet, text_colour)
        painter.restore()


def _draw_marked(painter: QPainter, font: QFont, snippet: str,
                 marks: tuple[tuple[int, int], ...], x: int, y: int, width: int,
                 colour: QColor, strong: QColor) -> None:
    """One line of *snippet* (line breaks as spaces), the marked spans bold: a text layout
    with formats, never markup."""
    flat = "".join(" " if c in "\r\n\t" else c for c in snippet)
    layout = QTextLayout(flat, font)
    formats = []
    for start, end in marks:
        span = QTextLayout.FormatRange()
        span.start, span.length = start, end - start
        fmt = QTextCharFormat()
        fmt.setFontWeight(QFont.Weight.Bold)
        fmt.setForeground(strong)
        span.format = fmt
        formats.append(span)
    layout.setFormats(formats)
    layout.beginLayout()
    line = layout.createLine()
    if line.isValid():
        line.setLineWidth(width)
    layout.endLayout()
    painter.save()
    painter.setPen(colour)
    painter.setClipRect(QRect(x, y, width, int(line.height()) + 2) if line.isValid()
                        else QRect(x, y, width, 0))
    layout.draw(painter, QRect(x, y, width, 0).topLeft())
    painter.restore()


class SearchBox(QFrame):
    """The box, floating over the window's top; see the module's docstring."""

    sig_open = Signal(object)  # a Target
    sig_answered = Signal(str)  # the text whose answer is shown (tests wait on it)

    def __init__(self, ops: Operations, run_task: RunTask, parent: QWidget) -> None:
        super().__init__(parent)
        self.ops, self.run_task = ops, run_task
        self.setObjectName("search-box")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#search-box { background: palette(window); border: 1px solid"
                           " palette(mid); border-radius: 8px; }")
        self.field = SearchField()
        self.field.setAccessibleName("Search")
        self.field.setPlaceholderText("Search chats, knowledge and files — or jump to a "
                                      "workspace or chat")
        self.field.setClearButtonEnabled(True)
        self.results = QListWidget()
        self.results.setAccessibleName("Search results")
        self.results.setItemDelegate(ResultDelegate(self.results))
        self.results.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the field keeps the keys
        self.results.setUniformItemSizes(False)
        self.results.itemActivated.connect(lambda _item: self.open_current())
        self.results.itemClicked.connect(lambda _item: self.open_current())
        self.status = Label("")
        self.status.setAccessibleName("Search status")
        self.status.setWordWrap(True)
        self.status.setStyleSheet("color: palette(placeholder-text);")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.setSpacing(6)
        layout.addWidget(self.field)
        layout.addWidget(self.status)
        layout.addWidget(self.results, 1)
        self.field.textChanged.connect(self._typed)
        self.field.sig_move.connect(self.move_current)
        self.field.sig_enter.connect(self.open_current)
        self.field.sig_escape.connect(self.close_box)
        self._asking = False  # an answer is awaited
        self._waiting: str | None = None  # the text typed meanwhile, asked next
        self._shown = ""  # the text whose answer the list shows
        self._before: QWidget | None = None  # where the focus was: it goes back there
        parent.installEventFilter(self)
        self.hide()

    # ----------------------------------------------------------------- opening and closing

    def open_box(self) -> None:
        focus = QApplication.focusWidget()
        if not self.isVisible():
            self._before = focus if focus is not None and focus is not self.field else None
        self._place()
        self.show()
        self.raise_()
        self.field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.field.selectAll()
        if not self.field.text():
            self.status.setText("Type to find a workspace, a chat, or anything said in them, "
                                "their knowledge and files. \"Exact phrase\", workspace:NAME, "
                                "in:chats, in:knowledge, in:files, before:/after:YYYY-MM-DD, "
                                "is:archived.")

    def close_box(self) -> None:
        self.hide()
        before, self._before = self._before, None
        if before is not None:
            try:
                before.setFocus(Qt.FocusReason.OtherFocusReason)
            except RuntimeError:  # (deleted meanwhile)
                pass

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.parent() and event.type() == QEvent.Type.Resize and self.isVisible():
            self._place()
        return False

    def _place(self) -> None:
        parent = self.parentWidget()
        if parent is None:
            return
        width = min(680, max(360, parent.width() - 80))
        height = min(520, max(240, parent.height() - 120))
        self.setGeometry((parent.width() - width) // 2, 56, width, height)

    # ----------------------------------------------------------------- asking

    def _typed(self, text: str) -> None:
        if not text.strip():
            self._waiting = None
            self._shown = text
            self.results.clear()
            self.status.setText("")
            return
        if self._asking:
            self._waiting = text  # asked when the answer in flight arrives
            return
        self._ask(text)

    def _ask(self, text: str) -> None:
        self._asking = True
        self.run_task(self._answer(text))

    async def _answer(self, text: str) -> None:
        try:
            found: Found | None = await self.ops.find_anything(text)
            failure = None
        except CairnError as error:
            found, failure = None, str(error)
        finally:
            self._asking = False
        waiting, self._waiting = self._waiting, None
        if text != self.field.text():  # stale: the person typed on
            if waiting is not None and waiting.strip():
                self._ask(waiting)
            elif self.field.text().strip() and self.field.text() != text:
                self._ask(self.field.text())
            return
        if waiting is not None and waiting != text and waiting.strip():
            self._ask(waiting)
            return
        self._show(text, found, failure)

    def _show(self, text: str, found: Found | None, failure: str | None) -> None:
        self._shown = text
        self.results.clear()
        words = found.words if found is not None else ()
        count = 0
        if found is not None:
            if found.workspaces:
                self._heading("Workspaces")
                for match in found.workspaces:
                    self._add(Target("workspace", match.title, workspace=match.key))
                    count += 1
            if found.chats:
                self._heading("Chats")
                for match in found.chats:
                    self._add(Target("chat", match.title, chat=match.key))
                    count += 1
            switched = {m.key for m in found.chats}
            for kind, heading in _GROUPS:
                group = [h for h in found.hits if h.kind == kind
                         and not (kind == "chat" and h.chat in switched)]  # listed above
                if not group:
                    continue
                self._heading(heading if kind != "chat" else "Chat titles")
                for hit in group:
                    self._add(target_of(hit, words))
                    count += 1
        sentence = failure or (found.refusal if found is not None else None)
        if sentence:
            self.status.setText(sentence)
        elif count == 0:
            self.status.setText("Nothing found.")
        else:
            self.status.setText("")
        self.status.setVisible(bool(self.status.text()))
        self._select_first()
        self.sig_answered.emit(text)

    def _heading(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, text)
        self.results.addItem(item)

    def _add(self, target: Target) -> None:
        item = QListWidgetItem(target.title)
        item.setData(ResultRole, target)
        said = f"{_KIND_WORD[target.kind]}: {target.title}"
        if target.snippet:
            said += f" — {target.snippet}"
        item.setData(Qt.ItemDataRole.AccessibleTextRole, said)
        self.results.addItem(item)

    # ----------------------------------------------------------------- moving and opening

    def _select_first(self) -> None:
        for row in range(self.results.count()):
            if self.results.item(row).data(ResultRole) is not None:
                self.results.setCurrentRow(row)
                return

    def move_current(self, step: int) -> None:
        rows = [r for r in range(self.results.count())
                if self.results.item(r).data(ResultRole) is not None]
        if not rows:
            return
        current = self.results.currentRow()
        at = rows.index(current) if current in rows else -1
        at = max(0, min(len(rows) - 1, at + step))
        self.results.setCurrentRow(rows[at])
        self.results.scrollToItem(self.results.item(rows[at]))

    def current(self) -> Target | None:
        item = self.results.currentItem()
        return item.data(ResultRole) if item is not None else None

    def open_current(self) -> None:
        target = self.current()
        if target is None:
            return
        self._before = None  # focus goes where the result opens
        self.hide()
        self.sig_open.emit(target)
