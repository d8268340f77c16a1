"""Turns the registry's change events into a Qt signal.

The registry calls its listeners on whichever thread wrote; a signal emitted there reaches
slots on the GUI thread through Qt's queued connection, so widgets only change on the GUI
thread.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.registry import Registry


class RegistryBridge(QObject):
    sig_changed = Signal(str, str)  # (event, id), e.g. ("workspace-added", "ws_…")

    def __init__(self, registry: Registry, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._registry = registry
        registry.on_change(self._relay)

    def detach(self) -> None:
        self._registry.remove_listener(self._relay)

    def _relay(self, event: str, item_id: str) -> None:
        self.sig_changed.emit(event, item_id)
