"""How a sidebar row looks: quiet section headers, rows with one icon set, a warning for a
workspace whose folder is gone, and a dot on a chat that has work running.

Icons come from the one SVG set (``ui.icons``), tinted from the palette, so the set serves
the light and the dark look.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette, QPen
from PySide6.QtWidgets import (
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QWidget,
)

from ui.icons import tinted
from ui.sidebar.model import (
    HINT_ROLE,
    ICON_ROLE,
    KIND_ROLE,
    MISSING_ROLE,
    SECTION,
    WORKING_ROLE,
)

ROW_HEIGHT = 30  # every row: the tree lays out uniform rows in constant time
ICON = 16
RADIUS = 6
Index = QModelIndex | QPersistentModelIndex


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightnessF() < 0.5


def warning_colour(palette: QPalette) -> QColor:
    return QColor("#e0a84a" if is_dark(palette) else "#b7791f")


def quiet_colour(palette: QPalette) -> QColor:
    return palette.color(QPalette.ColorRole.PlaceholderText)


def section_font(font: QFont) -> QFont:
    small = QFont(font)
    small.setPointSizeF(max(font.pointSizeF() * 0.78, 7.0))
    small.setWeight(QFont.Weight.DemiBold)
    small.setCapitalization(QFont.Capitalization.AllUppercase)
    small.setLetterSpacing(QFont.SpacingType.PercentageSpacing, 108)
    return small


class SidebarDelegate(QStyledItemDelegate):
    """Paints every row itself (background, icon, elided title, adornments), so that the
    look is the same on every platform style and in both palettes."""

    def __init__(self, view: QTreeView, parent: QWidget | None = None) -> None:
        super().__init__(parent or view)
        self._view = view

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        height = max(ROW_HEIGHT, option.fontMetrics.height() + 12)
        return QSize(120, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if index.data(KIND_ROLE) == SECTION:
            self._paint_section(painter, option, index)
        else:
            self._paint_item(painter, option, index)
        painter.restore()

    # ----------------------------------------------------------------- private

    def _paint_section(self, painter: QPainter, option: QStyleOptionViewItem,
                       index: Index) -> None:
        palette = option.palette
        font = section_font(option.font)
        metrics = QFontMetrics(font)
        rect = option.rect.adjusted(8, 0, -8, -3)
        title = str(index.data() or "")
        painter.setFont(font)
        painter.setPen(quiet_colour(palette))
        text_rect = QRect(rect.left(), rect.top(), metrics.horizontalAdvance(title) + 2,
                          rect.height())
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom,
                         title)
        if option.state & QStyle.StateFlag.State_HasFocus:
            painter.setPen(palette.color(QPalette.ColorRole.Highlight).darker(130))
            painter.drawLine(text_rect.left(), rect.bottom() + 2,
                             text_rect.right(), rect.bottom() + 2)
        # A chevron after the title says the section folds.
        name = "chevron-down" if self._view.isExpanded(index) else "chevron-right"
        size = 12
        chevron = QRect(text_rect.right() + 4, rect.bottom() - metrics.ascent() + 1, size, size)
        ratio = painter.device().devicePixelRatioF() if painter.device() else 1.0
        tinted(name, quiet_colour(palette).name(), size, ratio).paint(painter, chevron)

    def _paint_item(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        palette = option.palette
        state = option.state
        selected = bool(state & QStyle.StateFlag.State_Selected)
        band = option.rect.adjusted(0, 2, -6, -2)
        if selected:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(palette.color(QPalette.ColorRole.Highlight))
            painter.drawRoundedRect(band, RADIUS, RADIUS)
        elif state & QStyle.StateFlag.State_MouseOver:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(palette.color(QPalette.ColorRole.AlternateBase))
            painter.drawRoundedRect(band, RADIUS, RADIUS)
        if state & QStyle.StateFlag.State_HasFocus and self._view.hasFocus():
            # The keyboard's place: a 2 px ring, in the text colour on the selection band
            # (a link colour on it would barely show), in the link colour elsewhere.
            focus = QColor(palette.color(QPalette.ColorRole.HighlightedText if selected
                                         else QPalette.ColorRole.Link))
            painter.setPen(QPen(focus, 2))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(QRectF(band).adjusted(2, 2, -2, -2), RADIUS - 1, RADIUS - 1)

        missing = bool(index.data(MISSING_ROLE))
        text_colour = palette.color(QPalette.ColorRole.HighlightedText if selected
                                    else QPalette.ColorRole.Text)
        icon_colour = warning_colour(palette) if missing else (
            text_colour if selected else quiet_colour(palette))
        ratio = painter.device().devicePixelRatioF() if painter.device() else 1.0
        left = band.left() + 6
        name = index.data(ICON_ROLE)
        if name:
            glyph = QRect(left, band.center().y() - ICON // 2 + 1, ICON, ICON)
            tinted(str(name), icon_colour.name(), ICON, ratio).paint(painter, glyph)
            left += ICON + 8

        right = band.right() - 8
        font = QFont(option.font)
        small = QFont(option.font)
        small.setPointSizeF(option.font.pointSizeF() * 0.85)
        if missing:  # say it in words too: a colour alone is not enough
            word = "missing"
            width = QFontMetrics(small).horizontalAdvance(word)
            painter.setFont(small)
            painter.setPen(warning_colour(palette))
            painter.drawText(QRect(right - width, band.top(), width, band.height()),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, word)
            right -= width + 8
        if index.data(WORKING_ROLE):
            dot = 6
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(palette.color(QPalette.ColorRole.Link))
            painter.drawEllipse(QRectF(right - dot, band.center().y() - dot / 2 + 0.5, dot, dot))
            right -= dot + 8

        title = str(index.data() or "")
        metrics = QFontMetrics(font)
        hint = str(index.data(HINT_ROLE) or "")  # a repeated title: its folder, dimmed
        width = max(right - left, 0)
        if hint:
            small_metrics = QFontMetrics(small)
            hint = fitted_hint(hint, title, small_metrics, int(width * 0.6))
            hint_width = small_metrics.horizontalAdvance(hint)
            shown_title = metrics.elidedText(title, Qt.TextElideMode.ElideRight,
                                             max(width - hint_width - 8, 0))
            hint_left = left + metrics.horizontalAdvance(shown_title) + 8
            painter.setFont(small)
            painter.setPen(text_colour if selected else quiet_colour(palette))
            painter.drawText(QRect(hint_left, band.top(), max(right - hint_left, 0),
                                   band.height()),
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                             hint)
        else:
            shown_title = metrics.elidedText(title, Qt.TextElideMode.ElideRight, width)
        painter.setFont(font)
        painter.setPen(quiet_colour(palette) if missing and not selected else text_colour)
        text_rect = QRect(left, band.top(), width, band.height())
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         shown_title)


def fitted_hint(hint: str, title: str, metrics: QFontMetrics, room: int) -> str:
    """A repeated title's folder hint ("work/Acme") in *room*: whole, else the one segment
    that tells the pair apart (the parent when the folder is named as the title), cut at its
    end only if it must be — never middle fragments such as "Docume…e Copy" (issue 36)."""
    if metrics.horizontalAdvance(hint) <= room:
        return hint
    parts = hint.split("/")
    if len(parts) > 1:
        hint = parts[0] if parts[-1].casefold() == title.casefold() else parts[-1]
    return metrics.elidedText(hint, Qt.TextElideMode.ElideRight, room)
