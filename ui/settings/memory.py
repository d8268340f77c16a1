"""Settings → Memory: the switch that sends personal memory with every message, and the
document itself in the knowledge panel's editor (the same colours, history and safe save)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtWidgets import QCheckBox, QVBoxLayout, QWidget

from app.ops import Operations
from app.store.registry.registry import Registry
from ui.settings.form import Page, field_for, note


class MemoryPage(Page):
    """The declared settings of the ``memory`` page above the personal memory editor."""

    name = "memory"

    def __init__(self, ops: Operations, registry: Registry, *, owner: QWidget,
                 run: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        super().__init__()
        from app.store.settings import SETTINGS
        from ui.bridge import EventBridge
        from ui.knowledge.editor import DocumentEditor

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 18, 16, 12)
        layout.setSpacing(10)
        memory_on = self.field("memory.enabled")
        assert isinstance(memory_on, QCheckBox)
        self.memory_on = memory_on
        layout.addWidget(self.memory_on)
        layout.addWidget(note("Memory help", muted=True, text=(
            "When on, this document goes with every message and chats keep it up to date. "
            "It never touches a workspace's knowledge.")))
        for setting in SETTINGS.values():  # any other declared for this page, in order
            if setting.page == self.name and setting.key not in self.fields:
                self.fields[setting.key] = field_for(setting)
                layout.addWidget(self.fields[setting.key])
        # The knowledge panel's editor: the same colours, history and safe save.
        self.bridge = EventBridge(registry, owner)
        self.editor = DocumentEditor(ops, self.bridge, registry, run,
                                     name="Personal memory", own_save=False)
        layout.addWidget(self.editor, 1)
