"""The window's process ends at once after quitting (ui.app.exit_now), and only once nothing
can be lost: what was typed is stored, the database closed with its WAL checkpointed away,
the window state written; while Cairn owns the clipboard the application is destroyed first,
which hands the copied text over."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Types into the open chat's composer once the window is filled in, then quits as Ctrl+Q
# does; "slow exit" is printed only if the interpreter's own teardown ran (atexit).
QUIT_AFTER_TYPING = """
import atexit, sys
atexit.register(lambda: print("slow exit", flush=True))
import ui.app
after_ready = ui.app.Starter._after_ready
def typed_then_quit(self):
    after_ready(self)
    from PySide6.QtCore import QTimer
    panel = self.window.chat_panel
    def when_open():
        if panel.chat_id is None or panel._draft_for != panel.chat_id:  # its draft not read
            QTimer.singleShot(10, when_open)
            return
        panel.composer.edit.insertPlainText("typed just before quitting")
        self.window.close()
    when_open()
ui.app.Starter._after_ready = typed_then_quit
from ui.main import main
main([])
print("returned", flush=True)
"""


def a_chat_left_open(data: Path, folder: Path) -> str:
    from PySide6.QtCore import QSettings

    from app.store.registry.registry import Registry

    folder.mkdir(parents=True)
    registry = Registry.open(data)
    try:
        registry.add_workspace(str(folder))
        chat = registry.new_chat(folder=str(folder))
    finally:
        registry.close()
    state = QSettings(str(data / "window.ini"), QSettings.Format.IniFormat)
    state.setValue("chat", chat.id)
    state.sync()
    return chat.id


def test_quitting_ends_the_process_at_once_with_everything_stored(isolated, tmp_path):
    chat_id = a_chat_left_open(isolated, tmp_path / "Acme")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", QUIT_AFTER_TYPING], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "slow exit" not in done.stdout and "returned" not in done.stdout  # os._exit
    db = isolated / "cairn.db"
    assert not Path(f"{db}-wal").exists()  # closed last: checkpointed and removed
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT draft FROM chat WHERE id = ?", (chat_id,)).fetchone() == (
            "typed just before quitting",)
    finally:
        conn.close()
    from PySide6.QtCore import QSettings

    state = QSettings(str(isolated / "window.ini"), QSettings.Format.IniFormat)
    assert state.value("chat") == chat_id and state.value("geometry") is not None


def test_the_application_goes_first_while_cairn_owns_the_clipboard(monkeypatch, qapp):
    import logging

    from PySide6.QtGui import QClipboard
    from PySide6.QtWidgets import QApplication

    import ui.app

    happened: list[str] = []
    monkeypatch.setattr(os, "_exit", lambda code: happened.append(f"exit {code}"))
    monkeypatch.setattr(logging, "shutdown", lambda: None)  # (pytest's own handlers stay)
    monkeypatch.setattr(QApplication, "shutdown", lambda self: happened.append("shutdown"))
    monkeypatch.setattr(QClipboard, "ownsClipboard", lambda self: True)
    ui.app.exit_now(3)
    assert happened == ["shutdown", "exit 3"]  # its destructor hands the clipboard over
    happened.clear()
    monkeypatch.setattr(QClipboard, "ownsClipboard", lambda self: False)
    ui.app.exit_now(3)
    assert happened == ["exit 3"]


@pytest.fixture
def qapp():  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QApplication

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return QApplication.instance() or QApplication([])
