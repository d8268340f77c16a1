"""Icons from the one SVG set in ``resources/icons``, drawn in a palette colour.

The set draws in ``currentColor``; each icon is rendered once per colour, size and pixel
ratio, so light and dark palettes both get icons in their own text colour.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from PySide6.QtCore import QByteArray, QRectF, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


@lru_cache(maxsize=256)
def tinted(name: str, colour: str, size: int = 16, ratio: float = 1.0) -> QIcon:
    """The icon *name* drawn in *colour* (``#rrggbb``) at *size* device-independent pixels;
    an empty icon when the set has no such name."""
    path = ICONS / f"{name}.svg"
    if not path.exists():
        return QIcon()
    svg = path.read_text(encoding="utf-8").replace("currentColor", colour)
    renderer = QSvgRenderer(QByteArray(svg.encode()))
    pixels = round(size * ratio)
    pixmap = QPixmap(pixels, pixels)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    renderer.render(painter, QRectF(0, 0, pixels, pixels))
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return QIcon(pixmap)
