"""Starting the window: Qt, the qasync event loop, the Fusion look, and start-up errors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import qasync
from PySide6.QtCore import QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from app.errors import CairnError
from app.logs import setup_logging
from app.cairn import Cairn
from ui.window import MainWindow

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
QUIT_WAIT_SECONDS = 5.0


def run(*, data_dir: Path | None, open_path: str | None, exit_after_first_paint: bool) -> int:
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setApplicationName("Cairn")
    app.setStyle("Fusion")  # Fusion follows the system's light/dark palette in Qt 6
    icon = RESOURCES / "icons" / "cairn.svg"
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))

    if data_dir is not None:
        os.environ["CAIRN_DATA_DIR"] = str(data_dir)  # logs follow the data folder
    setup_logging()
    try:
        cairn = Cairn.open(data_dir)
    except CairnError as error:
        # Start-up refused (newer database, inconsistency): say so, change nothing.
        QMessageBox.critical(None, "Cairn cannot start", str(error))
        return 1
    registry = cairn.registry

    window = MainWindow(registry)
    if open_path is not None:
        try:
            ws, _ = registry.add_workspace(open_path)
            window.select_workspace(ws.id)
        except CairnError as error:
            QMessageBox.warning(window, "Cannot add this folder", str(error))
    if exit_after_first_paint:
        window.sig_first_paint.connect(lambda: QTimer.singleShot(0, app.quit))
    window.show()

    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        # Rebuilds a previous session left waiting resume once the window is up.
        loop.call_soon(cairn.scheduler.resume)
        loop.run_until_complete(closed.wait())
        # At quit, a bounded wait for rebuilds in flight; what is left resumes next start.
        loop.run_until_complete(cairn.scheduler.drain(timeout=QUIT_WAIT_SECONDS))
    cairn.close()
    return 0
