"""The look: Fusion with a palette that follows the system's light or dark setting.

Qt 6's Fusion style picks up the platform palette on Windows and macOS, but not everywhere
(and not offscreen), so the two palettes are set here from ``QStyleHints.colorScheme`` and
swapped when the system changes its mind.  Widgets use palette roles, never fixed colours,
so both schemes read well.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

LIGHT = {
    QPalette.ColorRole.Window: "#f6f6f4",
    QPalette.ColorRole.WindowText: "#1f1f1e",
    QPalette.ColorRole.Base: "#ffffff",
    QPalette.ColorRole.AlternateBase: "#f1f1ef",
    QPalette.ColorRole.Text: "#1f1f1e",
    QPalette.ColorRole.PlaceholderText: "#8a8a86",
    QPalette.ColorRole.Button: "#f1f1ef",
    QPalette.ColorRole.ButtonText: "#1f1f1e",
    QPalette.ColorRole.Highlight: "#d9e6f7",
    QPalette.ColorRole.HighlightedText: "#10233d",
    QPalette.ColorRole.ToolTipBase: "#ffffff",
    QPalette.ColorRole.ToolTipText: "#1f1f1e",
    QPalette.ColorRole.Link: "#1f5fbf",
    QPalette.ColorRole.Mid: "#d5d5d1",
    QPalette.ColorRole.Midlight: "#e6e6e3",
    QPalette.ColorRole.Dark: "#a8a8a4",
}

DARK = {
    QPalette.ColorRole.Window: "#1e1f21",
    QPalette.ColorRole.WindowText: "#e6e6e3",
    QPalette.ColorRole.Base: "#17181a",
    QPalette.ColorRole.AlternateBase: "#232427",
    QPalette.ColorRole.Text: "#e6e6e3",
    QPalette.ColorRole.PlaceholderText: "#85878c",
    QPalette.ColorRole.Button: "#2a2b2e",
    QPalette.ColorRole.ButtonText: "#e6e6e3",
    QPalette.ColorRole.Highlight: "#2f4a6d",
    QPalette.ColorRole.HighlightedText: "#f2f6fb",
    QPalette.ColorRole.ToolTipBase: "#2a2b2e",
    QPalette.ColorRole.ToolTipText: "#e6e6e3",
    QPalette.ColorRole.Link: "#7fb0ff",
    QPalette.ColorRole.Mid: "#3a3b3f",
    QPalette.ColorRole.Midlight: "#323337",
    QPalette.ColorRole.Dark: "#111214",
}


def is_dark() -> bool:
    hints = QGuiApplication.styleHints()
    return hints.colorScheme() == Qt.ColorScheme.Dark


def palette(dark: bool) -> QPalette:
    result = QPalette()
    for role, colour in (DARK if dark else LIGHT).items():
        result.setColor(role, QColor(colour))
        disabled = QColor(colour)
        if role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText,
                    QPalette.ColorRole.ButtonText):
            disabled.setAlpha(110)
        result.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    return result


def apply_theme(app: QApplication, *, dark: bool | None = None) -> None:
    """Fusion, the system font a little roomier, and the palette of the system's scheme.

    *dark* forces a scheme (screenshots, tests); otherwise the system decides, now and when
    it changes.
    """
    app.setStyle("Fusion")
    font = QFont(app.font())
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
    app.setFont(font)
    app.setPalette(palette(is_dark() if dark is None else dark))
    if dark is None and not getattr(app, "_cairn_follows_scheme", False):
        hints = QGuiApplication.styleHints()
        hints.colorSchemeChanged.connect(lambda scheme: app.setPalette(
            palette(scheme == Qt.ColorScheme.Dark)))
        app._cairn_follows_scheme = True  # type: ignore[attr-defined]
