"""What CAIRN.md asks the person to decide, under its switch in the knowledge panel:

- an outside save removed entries Cairn wrote since it last read the file: they are named,
  with **Restore** (put them back where they stood) and **Dismiss** (the save stands);
- a sync service left a conflict copy beside CAIRN.md: **Compare** (the document against the
  copy, side by side), **Merge** (what the copy has that the document has not, put in) and
  **Dismiss** (not offered again; the file stays in the folder).

The bars only emit what the person chose; the panel's folder switches run the operations.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Signal, SignalInstance
from PySide6.QtGui import QPainter, QPaintEvent, QPalette, QPen, QResizeEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui.text import Label

MAX_NAMED = 3  # entries named in the sentence; the rest counted


def _button(text: str, name: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name)
    button.setToolTip(tip)
    button.setAutoDefault(False)
    return button


class _Wrapped(Label):
    """A wrapped sentence that claims the height its lines take at its width (the panel's
    layout would otherwise size it from a width guess and cut the last line)."""

    def __init__(self) -> None:
        super().__init__("")
        self.setWordWrap(True)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._claim()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        super().setText(text)
        self._claim()

    def _claim(self) -> None:
        needed = self.heightForWidth(self.width()) if self.width() > 0 else -1
        if needed > 0 and needed != self.minimumHeight():
            self.setMinimumHeight(needed)


class _Bar(QFrame):
    """A framed notice drawn from the palette at each paint, so it follows a switch between
    light and dark (a style sheet's ``palette()`` is read once, when it is set)."""

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Mid), 1))
        painter.setBrush(self.palette().color(QPalette.ColorRole.AlternateBase))
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)


def _bar(name: str) -> tuple[QFrame, QVBoxLayout]:
    frame = _Bar()
    frame.setObjectName("cairn-md-notice")
    frame.setAccessibleName(name)
    layout = QVBoxLayout(frame)
    layout.setContentsMargins(10, 8, 10, 8)
    layout.setSpacing(6)
    return frame, layout


def removed_sentence(removed: tuple[str, ...]) -> str:
    """"Your last save of CAIRN.md removed 2 entries Cairn wrote since it last read the file:
    "Launch 2027-04-15", "Venue: town hall"." """
    shown = [f"“{_entry(text)}”" for text in removed[:MAX_NAMED]]
    more = len(removed) - len(shown)
    said = ", ".join(shown) + (f" and {more} more" if more else "")
    what = "an entry" if len(removed) == 1 else f"{len(removed)} entries"
    return (f"The last save of CAIRN.md outside Cairn removed {what} Cairn wrote since it last "
            f"read the file: {said}.")


def _entry(text: str) -> str:
    first = text.split("\n", 1)[0].strip()
    first = first[2:] if first[:2] in ("- ", "* ", "+ ") else first
    return first if len(first) <= 80 else first[:79] + "…"


class FileNotices(QWidget):
    sig_restore = Signal()
    sig_keep_removal = Signal()
    sig_compare = Signal(str)  # a conflict copy's file name
    sig_merge = Signal(str)
    sig_dismiss_copy = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.removed_bar, removed_layout = _bar("Entries removed from CAIRN.md")
        self.removed_text = _Wrapped()
        self.removed_text.setAccessibleName("Entries removed from CAIRN.md")
        self.restore = _button("Restore", "Restore removed entries",
                               "Put the entries back where they stood (a new version)")
        self.restore.clicked.connect(self.sig_restore.emit)
        self.keep = _button("Dismiss", "Keep the removal",
                            "The save stands as it is; the entries stay in the history")
        self.keep.clicked.connect(self.sig_keep_removal.emit)
        row = QHBoxLayout()
        row.setSpacing(6)
        row.addWidget(self.restore)
        row.addWidget(self.keep)
        row.addStretch(1)
        removed_layout.addWidget(self.removed_text)
        removed_layout.addLayout(row)
        self.removed_bar.hide()

        # One conflict copy at a time (the next shows once this one is decided): a bar made
        # once, so the layout always knows the height its wrapped sentence needs.
        self.copy: str | None = None
        self.copy_bar, copy_layout = _bar("CAIRN.md conflict copy")
        self.copy_text = _Wrapped()
        self.copy_text.setAccessibleName("CAIRN.md conflict copy")
        compare = _button("Compare", "Compare the conflict copy",
                          "The document and the copy side by side")
        merge = _button("Merge", "Merge the conflict copy",
                        "Put in what the copy has that the document has not (nothing is "
                        "removed); the copy stays in the folder")
        dismiss = _button("Dismiss", "Dismiss the conflict copy",
                          "Not offered again; the copy stays in the folder")
        compare.clicked.connect(lambda: self._emit(self.sig_compare))
        merge.clicked.connect(lambda: self._emit(self.sig_merge))
        dismiss.clicked.connect(lambda: self._emit(self.sig_dismiss_copy))
        row = QHBoxLayout()
        row.setSpacing(6)
        for button in (compare, merge, dismiss):
            row.addWidget(button)
        row.addStretch(1)
        copy_layout.addWidget(self.copy_text)
        copy_layout.addLayout(row)
        self.copy_bar.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(6)
        layout.addWidget(self.removed_bar)
        layout.addWidget(self.copy_bar)
        self.hide()

    # ----------------------------------------------------------------- public

    def show_state(self, removed: tuple[str, ...], copies: tuple[str, ...]) -> None:
        self.removed_text.setText(removed_sentence(removed) if removed else "")
        self.removed_text.setAccessibleDescription(self.removed_text.text())
        self.removed_bar.setVisible(bool(removed))
        self.copy = copies[0] if copies else None
        more = f" (1 of {len(copies)})" if len(copies) > 1 else ""
        self.copy_text.setText(f"A sync service left a conflicting copy beside CAIRN.md"
                               f"{more}: {self.copy}" if copies else "")
        self.copy_text.setAccessibleDescription(self.copy_text.text())
        self.copy_bar.setVisible(bool(copies))
        self.setVisible(bool(removed or copies))

    def set_busy(self, busy: bool) -> None:
        for button in self.findChildren(QPushButton):
            button.setEnabled(not busy)

    # ----------------------------------------------------------------- private

    def _emit(self, signal: SignalInstance) -> None:
        if self.copy is not None:
            signal.emit(self.copy)


__all__ = ["FileNotices", "removed_sentence"]
