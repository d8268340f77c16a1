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


# ------------------------------------------------------------------ the bridge


def test_the_bridge_re_emits_events_as_signals_on_the_gui_thread(qtbot, registry, folders):
    import threading

    from PySide6.QtCore import QThread

    from app.events import ChatAdded, WorkspaceAdded
    from ui.bridge import EventBridge

    bridge = EventBridge(registry)
    (path,) = folders("Acme")
    arrived: list[tuple[object, object]] = []
    bridge.sig_workspace_added.connect(lambda e: arrived.append((e, QThread.currentThread())))
    with qtbot.waitSignal(bridge.sig_chat_added) as chat_added:
        worker = threading.Thread(
            target=lambda: (registry.add_workspace(path), registry.new_chat(folder=path)))
        worker.start()
        worker.join()
    ((event, thread),) = arrived
    assert isinstance(event, WorkspaceAdded) and (event.parent, event.row) == (None, 0)
    assert thread is bridge.thread()  # queued to the GUI thread, in order
    (chat_event,) = chat_added.args
    assert isinstance(chat_event, ChatAdded) and chat_event.workspace == event.id
    bridge.detach()


def test_the_bridge_hands_over_a_snapshot_with_a_reset(qtbot, registry, open_registry):
    from ui.bridge import EventBridge, Snapshot

    bridge = EventBridge(registry)
    other = open_registry()
    chat = other.new_chat(title="written elsewhere")
    with qtbot.waitSignal(bridge.sig_reset) as reset:
        assert registry.sync() is True
        registry.new_chat(title="after the reset")  # later: not in the snapshot
    (snapshot,) = reset.args
    assert isinstance(snapshot, Snapshot)
    assert [c.id for c in snapshot.chats.ungrouped] == [chat.id]
    bridge.detach()


def test_a_deleted_bridge_stops_listening(qtbot, registry, caplog):
    from shiboken6 import delete

    from ui.bridge import EventBridge

    bridge = EventBridge(registry)
    assert registry.hub.subscriber_count == 1
    delete(bridge)
    assert registry.hub.subscriber_count == 0
    registry.new_chat(title="nobody listens")
    assert "failed" not in caplog.text
