"""About Cairn: the version, and the notices of the third-party software the app ships.

The installed app carries them in licenses/THIRD-PARTY-NOTICES.txt beside resources/ (written
at build time by packaging/notices.py); a source checkout has no such file and says where the
licences are instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

NOTICES = Path(__file__).resolve().parent.parent / "licenses" / "THIRD-PARTY-NOTICES.txt"
SUMMARY = (
    "Cairn is built on Qt 6 through PySide6 (Qt for Python), used under the GNU LGPL version 3, "
    "on Python (PSF License), and on anthropic, qasync, platformdirs, markdown-it-py, keyring "
    "and the libraries they use, each under its own licence."
)


class AboutDialog(QDialog):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from app import version  # the same version `cairn --version` prints

        self.setWindowTitle("About Cairn")
        self.setAccessibleName("About Cairn")
        import PySide6

        from app.base.locations import data_dir
        from ui.text import Label

        title = QLabel(f"<b>Cairn {version()}</b>")
        title.setAccessibleName(f"Cairn {version()}")
        # What Cairn is and where its data lives (issue 36: the box said only licences).
        self.about = Label(
            "Chats with Claude kept beside your folders: each workspace is a folder, with a "
            "knowledge document Cairn keeps up to date from your chats.\n\n"
            f"Your data: {data_dir()}\n"
            f"Python {sys.version.split()[0]} · Qt for Python {PySide6.__version__}")
        self.about.setWordWrap(True)
        self.about.setAccessibleName("About")
        self.about.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        summary = QLabel(SUMMARY)
        summary.setWordWrap(True)
        summary.setAccessibleName("Licences")
        self.notices = QPlainTextEdit()
        self.notices.setReadOnly(True)
        self.notices.setAccessibleName("Third-party notices")
        if NOTICES.is_file():
            self.notices.setPlainText(NOTICES.read_text(encoding="utf-8"))
        else:
            self.notices.setPlainText(
                "This copy runs from source: the licences are in the installed packages "
                "(their .dist-info folders). The installed app shows the full notices here.")
            # Two lines, not a tall empty box (issue 36: "an empty About box").
            self.notices.setFixedHeight(self.notices.fontMetrics().lineSpacing() * 3 + 12)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.button(QDialogButtonBox.StandardButton.Close).setAccessibleName("Close")
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for widget in (title, self.about, summary, self.notices, buttons):
            layout.addWidget(widget)
        self.resize(640, 520 if NOTICES.is_file() else 340)


def show_about(parent: QWidget) -> None:
    AboutDialog(parent).exec()
