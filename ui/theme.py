"""The look: Fusion with a palette that follows the system's light or dark setting.

Qt 6's Fusion style picks up the platform palette on Windows and macOS, but not everywhere
(and not offscreen), so the two palettes are set here from ``QStyleHints.colorScheme`` and
swapped when the system changes its mind.  Widgets use palette roles, never fixed colours,
so both schemes read well.
"""

from __future__ import annotations

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
    """The system's scheme, as the platform's palette shows it (read before Fusion's own
    replaces it).  Not ``QStyleHints.colorScheme()``: the first touch of the ``Qt`` namespace
    costs PySide6 about 30 ms of enum set-up, which the first paint should not wait for;
    :func:`follow_scheme` asks the style hints once the window has painted."""
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


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
    dark = is_dark() if dark is None else dark
    # Each step restyles every widget there is, and setStyle also deletes the style they
    # were drawn with: done only when it changes something (a second window, a scheme
    # forced again), never to widgets already in the look asked for.
    style = app.style()
    if style is None or style.name().lower() != "fusion":
        app.setStyle("Fusion")
    font = QFont(app.font())
    if font.pointSizeF() < 10:
        font.setPointSizeF(10)
        app.setFont(font)
    wanted = palette(dark)
    if app.palette() != wanted:
        app.setPalette(wanted)


def follow_scheme(app: QApplication) -> None:
    """From now on the palette follows the system's light or dark setting as it changes."""
    from PySide6.QtCore import Qt

    if getattr(app, "_cairn_follows_scheme", False):
        return
    hints = QGuiApplication.styleHints()
    scheme = hints.colorScheme()
    if scheme != Qt.ColorScheme.Unknown:  # the style hints know better than the palette
        wanted = palette(scheme == Qt.ColorScheme.Dark)
        if wanted.color(QPalette.ColorRole.Window) != app.palette().color(
                QPalette.ColorRole.Window):
            app.setPalette(wanted)
    hints.colorSchemeChanged.connect(lambda changed: app.setPalette(
        palette(changed == Qt.ColorScheme.Dark)))
    app._cairn_follows_scheme = True  # type: ignore[attr-defined]
