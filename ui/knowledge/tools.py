"""The workspace's Tools page (a tab of the side panel): each MCP server defined in Settings
→ Tools with a switch that lets this workspace's chats use it, and per tool its policy here:
Ask (the default), Always allow (what the chat's "Always allow" stores, taken back by
choosing Ask) or Off (never offered).

Opening the page starts nothing: a server's tools are listed when it already runs (a chat used
it), or when the person presses Show tools (that runs its program).  Policies set here are
listed even for a server that does not run, so every "always" can be seen and taken back.
What a server says of a tool (read-only, destructive…) is shown as its claim, never trusted:
it skips no question.  Names and descriptions are the server's text: plain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.text import Label, sentence, tip

if TYPE_CHECKING:
    from app.store.mcp import InWorkspace
    from app.store.registry.registry import Registry
    from app.tools.mcp_client import ServerTool
    from ui.knowledge.ops import KnowledgeOps
    from ui.tasks import RunTask

POLICY_NAMES = (("ask", "Ask"), ("allow", "Always allow"), ("off", "Off"))
NONE_YET = ("No MCP servers yet. Add them in Settings → Tools (or import those you use with "
            "Claude Desktop); then turn them on here.")
SAYS = ("Servers on here give Claude their tools in this workspace's chats. Claude asks "
        "before each call unless its tool is set to Always allow.")


def _ancestors(widget: QWidget, top: QWidget) -> list[QWidget]:
    """*widget*'s parents up to *top* (not included)."""
    found = []
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        found.append(parent)
        parent = parent.parentWidget()
    return found


def _muted(text: str, name: str) -> Label:
    label = Label(text)
    label.setAccessibleName(name)
    label.setWordWrap(True)
    label.setStyleSheet("color: palette(placeholder-text);")
    return label


class ToolsView(QWidget):
    sig_error = Signal(str)
    sig_loaded = Signal()  # the page shows what is stored (tests wait on it)
    sig_tools = Signal(str)  # a server's tools are shown (tests wait on it)

    def __init__(self, ops: KnowledgeOps, registry: Registry, run_task: RunTask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry, self.run_task = ops, registry, run_task
        self.ws_id: str | None = None
        self.servers: list[InWorkspace] = []
        self.switches: dict[str, QCheckBox] = {}
        self.show_buttons: dict[str, QPushButton] = {}
        self.policy_boxes: dict[tuple[str, str], QComboBox] = {}
        self.listed: dict[str, list[ServerTool]] = {}  # tools listed by a server this session
        self._loads = 0
        self._refocus = ""  # the control just used: the keyboard stays on it (read again)

        self.says = _muted(SAYS, "What the Tools page does")
        self.body = QWidget()
        self.rows = QVBoxLayout(self.body)
        self.rows.setContentsMargins(0, 0, 4, 0)
        self.rows.setSpacing(10)
        self.rows.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.body)
        scroll.setAccessibleName("MCP servers in this workspace")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 8, 0, 0)
        layout.setSpacing(8)
        layout.addWidget(self.says)
        layout.addWidget(scroll, 1)

    # ----------------------------------------------------------------- public

    def open(self, ws_id: str | None) -> None:
        """Show *ws_id*'s servers: read when the page is in sight (a hidden tab reads
        nothing: it reads when shown)."""
        if ws_id != self.ws_id:
            self.listed.clear()
        self.ws_id = ws_id
        if self.isVisible():
            self.reload()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802
        # Shown again: what a chat's "Always allow" stored meanwhile, a server started since.
        super().showEvent(event)
        self.reload()

    def reload(self) -> None:
        if self.ws_id is None:
            self._show([])
            return
        self._loads += 1
        self.run_task(self._load(self.ws_id, self._loads))

    def show_tools(self, name: str) -> None:
        """Start the server (it runs its program) and list its tools with their policies."""
        self.run_task(self._start(name))

    # ----------------------------------------------------------------- private

    async def _load(self, ws_id: str, load: int) -> None:
        try:
            servers = await self.ops.mcp_in_workspace(ws_id)
        except CairnError as refused:
            self.sig_error.emit(str(refused))
            return
        if not shiboken6.isValid(self) or load != self._loads or ws_id != self.ws_id:
            return
        for server in servers:
            running = self.ops.running_mcp_tools(server.config.name)
            if running is not None:
                self.listed[server.config.name] = running
        self._show(servers)
        self.sig_loaded.emit()

    def _show(self, servers: list[InWorkspace]) -> None:
        focused = self.focusWidget()
        focus_name = self._refocus or (focused.accessibleName() if focused is not None
                                       and focused.hasFocus() else "")
        self._refocus = ""
        self.servers = servers
        self.switches.clear()
        self.show_buttons.clear()
        self.policy_boxes.clear()
        while self.rows.count() > 1:  # (the stretch stays last)
            item = self.rows.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        if not servers and self.ws_id is not None:
            self.rows.insertWidget(0, _muted(NONE_YET, "No MCP servers"))
        for n, server in enumerate(servers):
            card = self._card(server)
            self.rows.insertWidget(n, card)
            card.setVisible(self.body.isVisible())  # now, not queued: the focus may go to it
        if focus_name:  # the keyboard stays where it was (a switch, a policy)
            names = [focus_name]
            if focus_name.startswith("Policy of ") and " on " in focus_name:
                # A tool's row that went (its policy back to Ask, the server not running):
                # its server's switch.
                names.append(f"Use {focus_name.rsplit(' on ', 1)[1]} in this workspace")
            shown = [w for w in self.body.findChildren(QWidget)  # (the old ones: hidden)
                     if w.isEnabled() and not w.isHidden()
                     and all(not a.isHidden() for a in _ancestors(w, self.body))]
            for wanted in names:
                found = next((w for w in shown if w.accessibleName() == wanted), None)
                if found is not None:
                    found.setFocus()
                    break

    def _card(self, server: InWorkspace) -> QWidget:
        config = server.config
        name = config.name
        card = QFrame()
        card.setObjectName("mcp-card")
        card.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(card)
        layout.setContentsMargins(8, 6, 8, 8)
        layout.setSpacing(4)
        switch = QCheckBox(f"Use {name} in this workspace")
        switch.setAccessibleName(f"Use {name} in this workspace")
        switch.setChecked(server.on)
        switch.setToolTip(tip("Chats here may use its tools from their next message (it starts "
                              "when a chat first uses it)"))
        switch.clicked.connect(lambda on, n=name: self._switch(n, on))
        self.switches[name] = switch
        layout.addWidget(switch)
        runs = config.url or " ".join([config.command or "", *config.args])
        layout.addWidget(_muted(runs, f"What {name} runs"))
        if server.on_above:
            layout.addWidget(_muted("On for the whole project: its folders' chats use it too.",
                                    f"{name} is on in the project"))
        tools = self.listed.get(name)
        names = [t.name for t in tools] if tools is not None else []
        # Policies set here or in the project for tools not listed (the server does not
        # run): still shown.
        kept = [t for t in {**server.above, **server.policies} if t not in names]
        grid = QGridLayout()
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(2)
        grid.setColumnStretch(1, 1)
        row = 0
        for tool in tools or []:
            row = self._tool_row(grid, row, name, tool.name, server.policies.get(tool.name, "ask"),
                                 tool.description, tool.annotations,
                                 server.above.get(tool.name))
        for tool_name in kept:
            row = self._tool_row(grid, row, name, tool_name,
                                 server.policies.get(tool_name, "ask"), "", {},
                                 server.above.get(tool_name))
        if row:
            layout.addLayout(grid)
        if any(t.annotations for t in tools or []):
            layout.addWidget(_muted("What a tool says of itself (read-only…) is shown, never "
                                    "trusted: Claude asks all the same.",
                                    f"About what {name}'s tools say"))
        if tools is None:
            button = QPushButton("Show tools")
            button.setAccessibleName(f"Show tools of {name}")
            button.setToolTip(tip(f"Start {name} (it runs {runs[:200]}) and list its tools"))
            button.setAutoDefault(False)
            button.clicked.connect(lambda _=False, n=name: self.show_tools(n))
            self.show_buttons[name] = button
            line = QHBoxLayout()
            line.addWidget(button)
            line.addStretch(1)
            layout.addLayout(line)
        elif not tools:
            layout.addWidget(_muted(f"{name} offers no tools.", f"{name} offers no tools"))
        return card

    def _tool_row(self, grid: QGridLayout, row: int, server: str, tool: str, policy: str,
                  description: str, annotations: dict[str, object],
                  above: str | None = None) -> int:
        from app.tools.mcp import hints_text  # (plain Python: the SDK is not loaded)

        label = Label(tool)
        label.setAccessibleName(f"Tool {tool}")
        hints = hints_text(dict(annotations))
        project = ""
        if above is not None and policy == "ask":  # the project's policy applies here
            project = f"{dict(POLICY_NAMES).get(above, above)} in the project"
        described = " ".join(description.split())[:400]
        label.setToolTip(tip(described + (f"\n\nThe server says: {hints} (not checked)"
                                          if hints else "")))
        grid.addWidget(label, row, 0)
        notes = QVBoxLayout()
        notes.setSpacing(0)
        if hints:  # the server's claim, beside the name: shown, never trusted
            said = Label(hints)
            said.setAccessibleName(f"What {server} says of {tool}")
            said.setToolTip(tip(f"The server says {tool} is {hints}. Cairn does not check it, "
                                "and asks all the same."))
            notes.addWidget(said)
        if project:  # what applies here while this workspace sets nothing
            from_project = Label(project)
            from_project.setAccessibleName(f"Policy of {tool} on {server} in the project")
            from_project.setToolTip(tip("The project's policy applies in its folders while "
                                        "they set none; change it on the project's Tools tab"))
            notes.addWidget(from_project)
        for n in range(notes.count()):
            item = notes.itemAt(n)
            note = item.widget() if item is not None else None
            if note is not None:
                note.setProperty("wordWrap", True)
                note.setStyleSheet("color: palette(placeholder-text); font-size: small;")
        if notes.count():
            grid.addLayout(notes, row, 1)
        box = QComboBox()
        for value, shown in POLICY_NAMES:
            box.addItem(shown, value)
        box.setCurrentIndex(max(0, box.findData(policy)))
        box.setAccessibleName(f"Policy of {tool} on {server}")
        box.setToolTip("Ask before each call, always allow it in this workspace, or never "
                       "offer it to Claude")
        box.activated.connect(lambda _i, s=server, t=tool, b=box: self._policy(s, t, b))
        self.policy_boxes[(server, tool)] = box
        grid.addWidget(box, row, 2)
        return row + 1

    def _switch(self, name: str, on: bool) -> None:
        ws_id = self.ws_id
        if ws_id is None:
            return

        self._refocus = f"Use {name} in this workspace"

        async def switch() -> None:
            try:
                await self.ops.switch_mcp_server(name, ws_id, on)
            except CairnError as refused:
                self.sig_error.emit(sentence(str(refused)))
            if shiboken6.isValid(self):
                self.reload()

        self.run_task(switch())

    def _policy(self, server: str, tool: str, box: QComboBox) -> None:
        ws_id = self.ws_id
        if ws_id is None:
            return
        policy = str(box.currentData())
        self._refocus = box.accessibleName()

        async def set_policy() -> None:
            try:
                await self.ops.set_mcp_policy(server, tool, ws_id, policy)
            except CairnError as refused:
                self.sig_error.emit(sentence(str(refused)))
            if shiboken6.isValid(self):
                self.reload()

        self.run_task(set_policy())

    async def _start(self, name: str) -> None:
        button = self.show_buttons.get(name)
        if button is not None:
            button.setEnabled(False)
            button.setText("Starting…")
        try:
            tools = await self.ops.start_mcp_tools(name)
        except CairnError as refused:
            self.sig_error.emit(sentence(str(refused)))
            if shiboken6.isValid(self) and button is not None and shiboken6.isValid(button):
                button.setEnabled(True)
                button.setText("Show tools")
            return
        if not shiboken6.isValid(self):
            return
        self.listed[name] = tools
        self._show(self.servers)
        self.sig_tools.emit(name)


__all__ = ["ToolsView"]
