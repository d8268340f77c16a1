"""Regenerate Cairn's raster icons from resources/icons/cairn.svg.

    cd <repo> && QT_QPA_PLATFORM=offscreen uv run python packaging/make_icons.py

Writes cairn.png (256 px), cairn.ico (16, 32, 48, 256) and cairn.icns (32 to 1024 px).
The .ico and .icns containers are written here with struct rather than by Qt's image
plugins, because those plugins store one image per file and each platform wants several.
"""

from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

# Headless by default: rendering an SVG needs no window system.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
SOURCE = ICONS / "cairn.svg"

ICO_SIZES = (16, 32, 48, 256)
# (type code, pixel size) for PNG-carrying ICNS entries, as macOS 10.7+ reads them.
# The 1x 16/32 px slots (ic04/ic05) want a different pixel format; Finder scales from ic11/ic12.
ICNS_ENTRIES = (
    (b"ic11", 32),  # 16@2x
    (b"ic12", 64),  # 32@2x
    (b"ic07", 128),
    (b"ic13", 256),  # 128@2x
    (b"ic08", 256),
    (b"ic14", 512),  # 256@2x
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
)


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    # Straight (non-premultiplied) alpha is what PNG and ICO bitmaps store.
    return image.convertToFormat(QImage.Format.Format_ARGB32)


def png_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise RuntimeError("Qt could not encode PNG")
    buffer.close()
    return bytes(data)


def ico_bitmap(image: QImage) -> bytes:
    """A 32-bit BGRA DIB entry: the form every Windows tool reads for small sizes."""
    size = image.width()
    header = struct.pack("<IiiHHIIiiII", 40, size, size * 2, 1, 32, 0, 0, 0, 0, 0, 0)
    rows = []
    for y in reversed(range(size)):  # DIBs are stored bottom-up
        row = bytearray()
        for x in range(size):
            argb = image.pixel(x, y)
            row += struct.pack("<I", argb)  # little-endian 0xAARRGGBB is B, G, R, A
        rows.append(bytes(row))
    # The AND mask is unused with an alpha channel but must be present; rows pad to 32 bits.
    mask_row = bytes(((size + 31) // 32) * 4)
    return header + b"".join(rows) + mask_row * size


def write_ico(renderer: QSvgRenderer, path: Path) -> None:
    # 256 px is stored as PNG (Vista+) to keep the file small; smaller sizes as bitmaps.
    payloads = []
    for size in ICO_SIZES:
        image = render(renderer, size)
        payloads.append(png_bytes(image) if size >= 256 else ico_bitmap(image))
    out = bytearray(struct.pack("<HHH", 0, 1, len(ICO_SIZES)))
    offset = 6 + 16 * len(ICO_SIZES)
    for size, payload in zip(ICO_SIZES, payloads):
        dim = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        out += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(payload), offset)
        offset += len(payload)
    for payload in payloads:
        out += payload
    path.write_bytes(bytes(out))


def write_icns(renderer: QSvgRenderer, path: Path) -> None:
    cache: dict[int, bytes] = {}
    body = bytearray()
    for code, size in ICNS_ENTRIES:
        if size not in cache:
            cache[size] = png_bytes(render(renderer, size))
        body += code + struct.pack(">I", 8 + len(cache[size])) + cache[size]
    path.write_bytes(b"icns" + struct.pack(">I", 8 + len(body)) + bytes(body))


def main() -> int:
    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841
    renderer = QSvgRenderer(str(SOURCE))
    if not renderer.isValid():
        print(f"cannot read {SOURCE}", file=sys.stderr)
        return 1
    (ICONS / "cairn.png").write_bytes(png_bytes(render(renderer, 256)))
    write_ico(renderer, ICONS / "cairn.ico")
    write_icns(renderer, ICONS / "cairn.icns")
    for name in ("cairn.png", "cairn.ico", "cairn.icns"):
        print(f"wrote {ICONS / name} ({(ICONS / name).stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
