"""The bridge: the hub's events as Qt signals on the GUI thread."""

from __future__ import annotations


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
