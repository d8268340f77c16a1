"""Renders the window offscreen with sample data into docs/*.png.

Run: QT_QPA_PLATFORM=offscreen uv run python docs/screenshots.py
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="cairn-shots-"))
    os.environ["CAIRN_DATA_DIR"] = str(root / "data")
    os.environ["CAIRN_FIRST_USE_DIR"] = str(root / "Documents" / "Cairn")
    for name in ("Acme Inc/Brand", "Acme Inc/Q3 planning", "Thesis"):
        (root / name).mkdir(parents=True)

    from PySide6.QtWidgets import QApplication

    from app.registry import Registry
    from ui.window import MainWindow

    app = QApplication([])
    app.setStyle("Fusion")
    reg = Registry.open()
    thesis, _ = reg.add_workspace(str(root / "Thesis"))
    acme, _ = reg.add_workspace(str(root / "Acme Inc"))
    reg.add_workspace(str(root / "Acme Inc" / "Brand"), at_end=True)
    reg.add_workspace(str(root / "Acme Inc" / "Q3 planning"), at_end=True)
    reg.new_chat(folder=str(root / "Acme Inc" / "Brand"), title="Logo ideas")
    launch = reg.new_chat(folder=str(root / "Acme Inc" / "Brand"), title="Launch copy")
    reg.new_chat(folder=str(root / "Acme Inc"), title="Pricing questions")
    reg.new_chat(title="Scratch chat")
    reg.pin_chat(launch.id)
    (root / "Thesis").rmdir()
    reg.refresh_status()
    window = MainWindow(reg)
    window.resize(1000, 560)
    window.show()
    app.processEvents()
    out = Path(__file__).resolve().parent / "window.png"
    window.grab().save(str(out))
    print(out)
    reg.close()


if __name__ == "__main__":
    main()
