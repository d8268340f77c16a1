"""The composer's web toggle: web search (and reading pages) for the next message only.

It starts as the chat's workspace has it (its "Web search…" setting) and goes back to that
once a message is sent; what the person chose for one message is sent as the turn's override
(``ops.start_turn(..., web=...)``): None when it is as the workspace has it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolButton, QWidget


class WebToggle(QToolButton):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Web")
        self.setText("Web search")
        self.setCheckable(True)
        self.setAutoRaise(True)
        self.setAccessibleName("Search the web")
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # reached by Tab, toggled by Space
        # On: the highlight's colours, so "on" reads at a glance in light and dark alike.
        self.setStyleSheet("QToolButton { padding: 2px 8px; border-radius: 6px; }"
                           " QToolButton:checked { background: palette(highlight);"
                           " color: palette(highlighted-text); border: none; }")
        self.default = False  # the workspace's setting
        self.toggled.connect(self._describe)
        self._describe(False)

    def set_default(self, on: bool) -> None:
        """The chat's workspace has web search *on* (or off): the toggle shows it again."""
        self.default = on
        self.setChecked(on)
        self._describe(on)

    def reset(self) -> None:
        """A message was sent: the next one is as the workspace has it."""
        self.setChecked(self.default)

    def choice(self) -> bool | None:
        """The override for the next message: None when it is as the workspace has it."""
        on = self.isChecked()
        return None if on == self.default else on

    def _describe(self, on: bool) -> None:
        said = ("on" if self.default else "off") + " in this workspace"
        self.setToolTip(("Claude may search the web for this message" if on
                         else "Claude will not search the web for this message")
                        + f" (web search is {said})")
        self.setAccessibleDescription(self.toolTip())
