"""How a card of the status board is painted (title, folder, the advance arrow)."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QPainter,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import (
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from ui.board.cards import CARD_ROLE, Card, _next_status, _title  # noqa: F401

Index = QModelIndex | QPersistentModelIndex

# ================================================================= painting a card


def _raised(palette: QPalette) -> tuple[QColor, QColor]:
    """The card's fill and its controls': a card stands out lighter than its column in both
    schemes (Base is the lightest colour of a light palette, Button of a dark one)."""
    base = palette.color(QPalette.ColorRole.Base)
    button = palette.color(QPalette.ColorRole.Button)
    return (base, button) if base.lightness() >= button.lightness() else (button, base)


def detail_line(card: Card, metrics: QFontMetrics, width: int) -> str:
    """A card's subtitle in *width*: where it is, elided in the middle, so both the start
    ("⚠ Folder missing", "in Acme", "~/") and the folder's own name stay readable."""
    if card.missing:
        detail = "⚠ Folder missing" + (f" · in {card.where}" if card.parents else "")
    elif card.parents:
        detail = f"in {card.where}"
    else:
        detail = _shown_path(card.path)
    return elide_parts(detail, metrics, width)


def elide_parts(text: str, metrics: QFontMetrics, width: int) -> str:
    """*text* in *width*, whole parts of a path or a trail dropped from its middle
    ("~/…/Cairn Copy") before any word is cut: never fragments like "~/Docu…n Copy" (issue
    36); cut in the middle only when even that does not fit."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    for sep in (" › ", "/"):
        parts = text.split(sep)
        if len(parts) > 2:
            for keep in range(len(parts) - 2, 0, -1):
                candidate = sep.join([parts[0], "…", *parts[-keep:]])
                if metrics.horizontalAdvance(candidate) <= width:
                    return candidate
            break
    return metrics.elidedText(text, Qt.TextElideMode.ElideMiddle, width)


def _shown_path(path: str) -> str:
    home = str(Path.home())
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home):]
    return path


class CardDelegate(QStyledItemDelegate):
    """A card: the title, where it lives, and the control that advances it one step."""

    MARGIN = 4  # around each card, so cards stand apart
    PAD = 12  # inside the card
    LINE_GAP = 6

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hovered: tuple[QPersistentModelIndex, bool] | None = None  # (card, over advance)

    # ----------------------------------------------------------------- geometry

    @staticmethod
    def _small(font: QFont) -> QFont:
        small = QFont(font)
        small.setPointSizeF(max(font.pointSizeF() * 0.9, 8.0))
        return small

    @staticmethod
    def _bold(font: QFont) -> QFont:
        bold = QFont(font)
        bold.setWeight(QFont.Weight.DemiBold)
        return bold

    def card_rect(self, rect: QRect) -> QRect:
        m = self.MARGIN
        return rect.adjusted(m, m, -m, -m)

    def bottom_row(self, rect: QRect, font: QFont) -> QRect:
        """The card's second row (where it lives, and the advance control)."""
        height = QFontMetrics(self._small(font)).height() + 8
        inner = self.card_rect(rect).adjusted(self.PAD, self.PAD, -self.PAD, -self.PAD)
        return QRect(inner.left(), inner.bottom() + 5 - height, inner.width(), height)

    def advance_rect(self, rect: QRect, font: QFont, status: str) -> QRect | None:
        """Where the advance control of a card drawn in *rect* is; None in the last column."""
        target = _next_status(status)
        if target is None:
            return None
        width = QFontMetrics(self._small(font)).horizontalAdvance(f"{_title(target)} →") + 18
        row = self.bottom_row(rect, font)
        return QRect(row.right() + 5 - width, row.top(), width, row.height())

    # ----------------------------------------------------------------- Qt overrides

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        title = QFontMetrics(self._bold(option.font))
        small = QFontMetrics(self._small(option.font))
        height = (2 * self.MARGIN + 2 * self.PAD + title.height() + self.LINE_GAP
                  + small.height() + 8)
        return QSize(200, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        card = index.data(CARD_ROLE)
        if not isinstance(card, Card):
            return
        palette: QPalette = option.palette
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        focused = bool(option.state & QStyle.StateFlag.State_HasFocus)
        hovering = self.hovered is not None and self.hovered[0] == index
        over_advance = hovering and self.hovered is not None and self.hovered[1]
        rect = self.card_rect(option.rect)

        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        raised, sunken = _raised(palette)
        fill = palette.color(QPalette.ColorRole.Highlight) if selected else raised
        border = palette.color(QPalette.ColorRole.Link if selected and focused
                               else QPalette.ColorRole.Dark if hovering
                               else QPalette.ColorRole.Mid)
        painter.setPen(QPen(border, 1.5 if selected and focused else 1.0))
        painter.setBrush(fill)
        painter.drawRoundedRect(QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5), 8, 8)

        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        inner = rect.adjusted(self.PAD, self.PAD, -self.PAD, -self.PAD)
        bold = self._bold(option.font)
        title_fm = QFontMetrics(bold)
        painter.setFont(bold)
        painter.setPen(palette.color(text_role))
        title_rect = QRect(inner.left(), inner.top(), inner.width(), title_fm.height())
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         title_fm.elidedText(card.title, Qt.TextElideMode.ElideRight,
                                             title_rect.width()))

        small = self._small(option.font)
        small_fm = QFontMetrics(small)
        advance = self.advance_rect(option.rect, option.font, card.status)
        line_rect = self.bottom_row(option.rect, option.font)
        if advance is not None:
            line_rect.setRight(advance.left() - 8)
        painter.setFont(small)
        muted = palette.color(text_role if selected else QPalette.ColorRole.PlaceholderText)
        painter.setPen(muted)
        painter.drawText(line_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         detail_line(card, small_fm, line_rect.width()))

        if advance is not None:
            target = _next_status(card.status) or ""
            pill = QRectF(advance).adjusted(0.5, 0.5, -0.5, -0.5)
            pill_fill = palette.color(QPalette.ColorRole.Highlight) if over_advance else sunken
            painter.setPen(QPen(palette.color(QPalette.ColorRole.Mid), 1.0))
            painter.setBrush(pill_fill)
            painter.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
            painter.setPen(palette.color(QPalette.ColorRole.HighlightedText if over_advance
                                         else QPalette.ColorRole.ButtonText))
            painter.drawText(advance, Qt.AlignmentFlag.AlignCenter, f"{_title(target)} →")
        painter.restore()
