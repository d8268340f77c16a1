"""The hub's events (``app.events``) as Qt signals on the GUI thread.

The hub calls its listeners on whichever thread committed.  The bridge forwards each event
through a queued connection, so every ``sig_*`` signal is emitted on the GUI thread, in the
order the events happened, after the change that caused them.  Each signal carries the event
object itself (a frozen dataclass; see app/events.py for its fields and what its rows mean).

``sig_reset`` carries a :class:`Snapshot` of the registry taken while the reload was being
announced: by the time the GUI thread handles it the registry may already be further on,
and the events that follow it in the queue are relative to the snapshot, not to the present.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, Qt, Signal, Slot

from app import events as ev
from app.records import ChatListing, Workspace
from app.store.registry.registry import Registry


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What a sidebar model rebuilds from on ``Reset``: the tree and the chat lists."""

    tree: dict[str | None, list[Workspace]]
    chats: ChatListing


class EventBridge(QObject):
    """Subscribes to the registry's hub for as long as it lives (or until :meth:`detach`)."""

    # Every event, before its own signal below.  Only events somebody listens to for
    # themselves have one; the others (a chat moved, pinned or archived, a message stored,
    # work started) reach the sidebar's model and the tests through this one.
    sig_event = Signal(object)

    # ----------------------------------------------------------------- the registry
    sig_workspace_added = Signal(object)  # WorkspaceAdded(id, parent, row, record)
    sig_workspace_removed = Signal(object)  # WorkspaceRemoved(id, parent, row)
    sig_workspace_changed = Signal(object)  # WorkspaceChanged(id, record)
    sig_workspace_moved = Signal(object)  # WorkspaceMoved(id, old_parent, new_parent, row, old_row)
    sig_chat_added = Signal(object)  # ChatAdded(id, workspace, row, record)
    sig_chat_changed = Signal(object)  # ChatChanged(id, record)
    sig_chats_regrouped = Signal(object)  # ChatsRegrouped(ids, to, rows)
    sig_chat_removed = Signal(object)  # ChatRemoved(id, workspace, row, archived_row)
    sig_reset = Signal(object)  # Snapshot: another process wrote; rebuild from it

    # ----------------------------------------------------------------- the other stores
    sig_knowledge_saved = Signal(object)  # KnowledgeSaved(owner, version, source)
    sig_suggestions_changed = Signal(object)  # SuggestionsChanged(owner)
    sig_file_added = Signal(object)  # FileAdded(workspace, file_id)
    sig_file_changed = Signal(object)  # FileChanged(workspace, file_id)
    sig_file_removed = Signal(object)  # FileRemoved(workspace, file_id)
    sig_setting_changed = Signal(object)  # SettingChanged(key)
    sig_rebuild_queued = Signal(object)  # RebuildQueued(chat)
    sig_rebuild_started = Signal(object)  # RebuildStarted(chat)
    sig_rebuild_applied = Signal(object)  # RebuildApplied(chat, owners)
    sig_rebuild_failed = Signal(object)  # RebuildFailed(chat, sentence)
    sig_work_ended = Signal(object)  # WorkEnded(chat, kind)

    _sig_arrived = Signal(object)  # any thread -> the GUI thread, queued

    def __init__(self, registry: Registry, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._registry = registry
        self._sig_arrived.connect(self._dispatch, Qt.ConnectionType.QueuedConnection)
        self._subscription = registry.hub.subscribe(self._relay)
        self.destroyed.connect(self._subscription.close)  # never relay to a deleted object

    # ----------------------------------------------------------------- public

    def detach(self) -> None:
        """Stop following the hub; events already queued are still delivered."""
        self._subscription.close()

    # ----------------------------------------------------------------- private

    def _relay(self, event: ev.Event) -> None:
        # On the committing thread, while the registry holds its lock: the place to copy
        # the state a Reset asks models to re-read.
        if isinstance(event, ev.Reset):
            registry = self._registry
            event = _Resetting(Snapshot(tree=registry.tree(), chats=registry.chat_listing()))
        self._sig_arrived.emit(event)

    @Slot(object)
    def _dispatch(self, event: ev.Event) -> None:
        if isinstance(event, _Resetting):
            self.sig_event.emit(ev.Reset())
            self.sig_reset.emit(event.snapshot)
            return
        self.sig_event.emit(event)
        name = _SIGNALS.get(type(event))
        if name is not None:
            getattr(self, name).emit(event)


@dataclass(frozen=True, slots=True)
class _Resetting(ev.Event):
    snapshot: Snapshot


_SIGNALS: dict[type[ev.Event], str] = {
    ev.WorkspaceAdded: "sig_workspace_added",
    ev.WorkspaceRemoved: "sig_workspace_removed",
    ev.WorkspaceChanged: "sig_workspace_changed",
    ev.WorkspaceMoved: "sig_workspace_moved",
    ev.ChatAdded: "sig_chat_added",
    ev.ChatChanged: "sig_chat_changed",
    ev.ChatsRegrouped: "sig_chats_regrouped",
    ev.ChatRemoved: "sig_chat_removed",
    ev.KnowledgeSaved: "sig_knowledge_saved",
    ev.SuggestionsChanged: "sig_suggestions_changed",
    ev.FileAdded: "sig_file_added",
    ev.FileChanged: "sig_file_changed",
    ev.FileRemoved: "sig_file_removed",
    ev.SettingChanged: "sig_setting_changed",
    ev.RebuildQueued: "sig_rebuild_queued",
    ev.RebuildStarted: "sig_rebuild_started",
    ev.RebuildApplied: "sig_rebuild_applied",
    ev.RebuildFailed: "sig_rebuild_failed",
    ev.WorkEnded: "sig_work_ended",
}
