"""The placeholder window: the sidebar shows what the registry holds, and follows its changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ui.window import MainWindow

ROOT = Path(__file__).resolve().parent.parent


def texts(window: MainWindow) -> list[str]:
    return [item.text(0) for item in window._iter_items()]


def test_sidebar_shows_pinned_tree_and_ungrouped(qtbot, registry, folders):
    acme, brand = folders("Acme", "Acme/Brand")
    ws, _ = registry.add_workspace(acme)
    registry.add_workspace(brand)
    chat = registry.new_chat(folder=brand, title="Launch copy")
    registry.new_chat(title="Scratch chat")
    window = MainWindow(registry)
    qtbot.addWidget(window)
    shown = texts(window)
    assert {"WORKSPACES", "Acme", "Brand", "Launch copy", "UNGROUPED", "Scratch chat"} <= set(shown)
    brand_item = next(i for i in window._iter_items() if i.text(0) == "Brand")
    assert brand_item.parent().text(0) == "Acme"  # the folder sits under its parent
    registry.pin_chat(chat.id)  # the window refreshes from the registry's change event
    qtbot.waitUntil(lambda: "★ Launch copy" in texts(window))
    window.select_workspace(ws.id)
    assert window.sidebar.currentItem().text(0) == "Acme"


def test_exit_after_first_paint(isolated, tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-m", "ui.main", "--exit-after-first-paint"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    # The window quit by itself once painted (else the timeout fails the test).
    assert done.returncode == 0, done.stderr


def test_open_resolves_a_relative_path_against_the_current_folder(isolated, tmp_path, capsys):
    from app import cli

    (tmp_path / "projects" / "Thesis").mkdir(parents=True)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-m", "ui.main", "open", "Thesis", "--exit-after-first-paint"],
        cwd=tmp_path / "projects", env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert cli.main(["workspace", "list", "--json"]) == 0
    listed = capsys.readouterr().out
    assert str(tmp_path / "projects" / "Thesis") in listed


def test_changes_from_another_thread_reach_the_window_on_the_gui_thread(qtbot, registry):
    import threading

    from PySide6.QtCore import QThread

    window = MainWindow(registry)
    qtbot.addWidget(window)
    threads: list[object] = []
    window._refresh_soon.timeout.connect(lambda: threads.append(QThread.currentThread()))
    worker = threading.Thread(target=lambda: registry.new_chat(title="from a worker"))
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: "from a worker" in texts(window))
    assert threads and all(t is window.thread() for t in threads)


def test_window_catches_up_with_another_process_on_activation(qtbot, registry, open_registry):
    window = MainWindow(registry)
    qtbot.addWidget(window)
    other = open_registry()  # the command line, say
    other.new_chat(title="written elsewhere")
    assert "written elsewhere" not in texts(window)
    assert registry.sync() is True
    qtbot.waitUntil(lambda: "written elsewhere" in texts(window))
    assert registry.sync() is False
