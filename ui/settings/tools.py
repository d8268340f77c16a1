"""Settings → Tools: the MCP servers Cairn knows, defined once for every workspace.

Each server with what it runs (its command and arguments, or its URL) and the workspaces it
is on in; Add (a program Cairn runs: command, arguments, environment; or a server at a URL:
headers), Remove (after a confirmation), and Import from Claude Desktop (its own file on this
system, or one the person picks).  The same use cases as ``cairn mcp add|remove|
import-claude-desktop`` (:class:`~app.ops.Operations`, then ``app.store.mcp``): the values of
the environment and the headers go to the keychain, never the database; an imported server
is off everywhere.  Nothing here starts a server.  Names, commands and URLs are the person's
or a file's text: shown plain.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QRadioButton,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from ui.tasks import TaskRunner
from ui.text import Label, confirm, sentence, tip

if TYPE_CHECKING:
    from app.ops import Operations
    from app.store.mcp import ServerConfig
    from app.store.registry.registry import Registry

SAYS = ("MCP servers give Claude tools — git, databases, your company's own. Define them "
        "here; then turn each on in a workspace's Tools page. Starting one runs a program, "
        "so every server is off until you turn it on.")


def runs(config: ServerConfig) -> str:
    """What a server runs, in one line: its URL, or its command and arguments."""
    if config.url:
        return config.url
    return " ".join([config.command or "", *config.args])


def _note(name: str, *, muted: bool = False) -> Label:
    label = Label("")
    label.setAccessibleName(name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if muted:
        label.setStyleSheet("color: palette(placeholder-text);")
    return label


def _button(text: str, name: str) -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name)
    button.setAutoDefault(False)
    return button


class ToolsPage(QWidget):
    """The Tools tab of Settings."""

    sig_loaded = Signal()  # the list shows what is stored (tests wait on it)
    sig_said = Signal(str)  # a sentence was said under the list

    def __init__(self, ops: Operations, registry: Registry,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops, self.registry = ops, registry
        self._tasks = TaskRunner(self.say, owner=self,
                                 failure="That did not work ({kind}); nothing else changed.")
        self.servers: list[tuple[ServerConfig, list[str]]] = []
        self.adding: AddServerDialog | None = None

        says = _note("What MCP servers are", muted=True)
        says.setText(SAYS)
        self.list = QTreeWidget()
        self.list.setAccessibleName("MCP servers")
        self.list.setHeaderLabels(["Name", "Runs", "On in"])
        self.list.setRootIsDecorated(False)
        self.list.setAlternatingRowColors(True)
        self.list.setUniformRowHeights(True)
        header = self.list.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        self.list.currentItemChanged.connect(lambda *_: self._selected_changed())
        self.empty = _note("No MCP servers", muted=True)
        self.empty.setText("No servers yet. Add one, or import those you use with Claude "
                           "Desktop.")
        self.empty.hide()

        self.add_button = _button("Add…", "Add MCP server")
        self.add_button.clicked.connect(self.open_add)
        self.remove_button = _button("Remove…", "Remove MCP server")
        self.remove_button.setEnabled(False)
        self.remove_button.clicked.connect(self.remove_selected)
        self.import_button = _button("Import from Claude Desktop", "Import from Claude Desktop")
        self.import_button.setToolTip("Add the servers of Claude Desktop's configuration on "
                                      "this computer; each is off until you turn it on")
        self.import_button.clicked.connect(lambda: self.import_from(None))
        self.import_file_button = _button("Import a file…", "Import a configuration file")
        self.import_file_button.setToolTip("Add the servers of a claude_desktop_config.json "
                                           "you choose")
        self.import_file_button.clicked.connect(self.choose_import_file)
        row = QHBoxLayout()
        row.setSpacing(8)
        for button in (self.add_button, self.remove_button):
            row.addWidget(button)
        row.addStretch(1)
        for button in (self.import_button, self.import_file_button):
            row.addWidget(button)
        self.message = _note("Tools message")
        self.message.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 18, 16, 12)
        layout.setSpacing(10)
        layout.addWidget(says)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty)
        layout.addLayout(row)
        layout.addWidget(self.message)
        self.reload()

    # ----------------------------------------------------------------- hooks (tests replace)

    def confirm_remove(self, name: str) -> bool:
        return confirm(QMessageBox.Icon.Question, "Remove MCP server",
                       f"Remove the MCP server “{name}”? No workspace will use it any more, "
                       "and its secrets leave the keychain.", "Remove",
                       role=QMessageBox.ButtonRole.DestructiveRole, parent=self)

    def ask_file(self) -> str:
        path, _ = QFileDialog.getOpenFileName(self, "Import MCP servers from a file",
                                              str(Path.home()), "JSON files (*.json);;"
                                              "All files (*)")
        return path

    # ----------------------------------------------------------------- public

    def reload(self) -> None:
        self._tasks.run(self._load())

    def say(self, text: str) -> None:
        self.message.setText(sentence(text) if text else "")
        self.message.setVisible(bool(text))
        self.sig_said.emit(text)

    def selected(self) -> str | None:
        item = self.list.currentItem()
        return str(item.data(0, Qt.ItemDataRole.UserRole)) if item is not None else None

    def open_add(self) -> None:
        """The Add dialog (window-modal, not a loop of its own); added: the list again."""
        dialog = AddServerDialog(self.ops, parent=self)
        dialog.sig_added.connect(self._added)
        self.adding = dialog
        dialog.open()

    def remove_selected(self) -> None:
        name = self.selected()
        if name is not None and self.confirm_remove(name):
            self._tasks.run(self._remove(name))

    def choose_import_file(self) -> None:
        path = self.ask_file()
        if path:
            self.import_from(Path(path))

    def import_from(self, path: Path | None) -> None:
        """Claude Desktop's servers (its own file when *path* is None), each whose name is
        free, off everywhere; what was added and kept is said."""
        self._tasks.run(self._import(path))

    # ----------------------------------------------------------------- private

    async def _load(self) -> None:
        servers = await self.ops.mcp_servers()
        if not shiboken6.isValid(self):
            return
        chosen = self.selected()
        self.servers = servers
        self.list.clear()
        for config, ws_ids in servers:
            titles = [ws.title for ws in (self.registry.workspace(i) for i in ws_ids)
                      if ws is not None]
            where = ", ".join(titles) if titles else "off everywhere"
            item = QTreeWidgetItem([config.name, runs(config), where])
            item.setData(0, Qt.ItemDataRole.UserRole, config.name)
            secrets = [*config.env, *config.headers]
            item.setToolTip(1, tip(runs(config) + (
                f"\nKept in the keychain: {', '.join(secrets)}" if secrets else "")))
            item.setToolTip(2, tip(where))
            self.list.addTopLevelItem(item)
            if config.name == chosen:
                self.list.setCurrentItem(item)
        self.list.setVisible(bool(servers))
        self.empty.setVisible(not servers)
        self._selected_changed()
        self.sig_loaded.emit()

    def _selected_changed(self) -> None:
        self.remove_button.setEnabled(self.selected() is not None)

    def _added(self, name: str) -> None:
        self.say(f"Added {name}. It is off in every workspace: turn it on in a workspace's "
                 "Tools page.")
        self.reload()

    async def _remove(self, name: str) -> None:
        await self.ops.remove_mcp_server(name)
        if shiboken6.isValid(self):
            self.say(f"Removed {name}.")
            await self._load()

    async def _import(self, path: Path | None) -> None:
        self.say("Importing…")
        (where, added, kept), _ = await self.ops.import_claude_desktop(path)
        if not shiboken6.isValid(self):
            return
        parts = []
        if added:
            parts.append(f"Added {', '.join(added)} from {where}; "
                         f"{'it is' if len(added) == 1 else 'each is'} off in every workspace "
                         "until you turn it on.")
        if kept:
            parts.append(f"Kept {', '.join(kept)} as {'it was' if len(kept) == 1 else 'they were'}"
                         ": a server of that name exists.")
        self.say(" ".join(parts) or f"{where} names no servers.")
        await self._load()


class AddServerDialog(QDialog):
    """Add one server: a program Cairn runs, or a server at a URL.  A refusal is said in the
    dialog, and what was typed stays."""

    sig_added = Signal(str)

    def __init__(self, ops: Operations, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ops = ops
        self._tasks = TaskRunner(self.say, owner=self,
                                 failure="That did not work ({kind}); nothing was added.")
        self.setWindowTitle("Add MCP server")
        self.setAccessibleName("Add MCP server")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setMinimumWidth(520)

        self.name = QLineEdit()
        self.name.setAccessibleName("Server name")
        self.name.setPlaceholderText("git")
        self.program = QRadioButton("A program Cairn runs")
        self.program.setAccessibleName("A program Cairn runs")
        self.at_url = QRadioButton("A server at a URL")
        self.at_url.setAccessibleName("A server at a URL")
        kinds = QButtonGroup(self)
        kinds.addButton(self.program)
        kinds.addButton(self.at_url)
        self.program.setChecked(True)
        kind_row = QHBoxLayout()
        kind_row.addWidget(self.program)
        kind_row.addWidget(self.at_url)
        kind_row.addStretch(1)

        self.command = QLineEdit()
        self.command.setAccessibleName("Command")
        self.command.setPlaceholderText("uvx")
        self.arguments = QPlainTextEdit()
        self.arguments.setAccessibleName("Arguments, one per line")
        self.arguments.setPlaceholderText("mcp-server-git\n--repository\n/path/to/repository")
        self.arguments.setTabChangesFocus(True)
        self.env = QPlainTextEdit()
        self.env.setAccessibleName("Environment, KEY=VALUE per line")
        self.env.setPlaceholderText("GITHUB_TOKEN=…")
        self.env.setTabChangesFocus(True)
        self.url = QLineEdit()
        self.url.setAccessibleName("URL")
        self.url.setPlaceholderText("https://mcp.example.com/mcp")
        self.headers = QPlainTextEdit()
        self.headers.setAccessibleName("Headers, Name: value per line")
        self.headers.setPlaceholderText("Authorization: Bearer …")
        self.headers.setTabChangesFocus(True)
        for box in (self.arguments, self.env, self.headers):
            box.setFixedHeight(72)

        program_page, program_grid = _grid()
        _row(program_grid, "Co&mmand", self.command)
        _row(program_grid, "&Arguments", self.arguments)
        _row(program_grid, "&Environment", self.env)
        url_page, url_grid = _grid()
        _row(url_grid, "&URL", self.url)
        _row(url_grid, "&Headers", self.headers)
        url_grid.setRowStretch(url_grid.rowCount(), 1)  # (the program's page is taller)
        self.fields = QStackedWidget()
        self.fields.addWidget(program_page)
        self.fields.addWidget(url_page)
        self.program.toggled.connect(lambda on: self.fields.setCurrentIndex(0 if on else 1))

        secret = _note("Where secrets go", muted=True)
        secret.setText("The values of the environment and the headers are kept in your "
                       "system keychain, never in Cairn's database or logs.")
        self.message = _note("Add MCP server message")
        self.message.setStyleSheet("color: #dc2626;")
        self.message.hide()
        buttons = QDialogButtonBox()
        self.add_button = buttons.addButton("Add", QDialogButtonBox.ButtonRole.AcceptRole)
        self.add_button.setAccessibleName("Add")
        self.add_button.setDefault(True)
        cancel = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        cancel.setAccessibleName("Cancel")
        self.add_button.clicked.connect(self.add)
        cancel.clicked.connect(self.reject)

        head, head_grid = _grid()
        _row(head_grid, "&Name", self.name)
        head_grid.addLayout(kind_row, head_grid.rowCount(), 1)
        layout = QVBoxLayout(self)
        layout.addWidget(head)
        layout.addWidget(self.fields)
        layout.addWidget(secret)
        layout.addWidget(self.message)
        layout.addWidget(buttons)

    def say(self, text: str) -> None:
        self.message.setText(sentence(text) if text else "")
        self.message.setVisible(bool(text))

    def add(self) -> None:
        from app.store.mcp import from_fields

        try:
            if self.program.isChecked():
                config = from_fields(self.name.text(), command=self.command.text(),
                                     arguments=self.arguments.toPlainText(),
                                     env=self.env.toPlainText())
            else:
                config = from_fields(self.name.text(), url=self.url.text(),
                                     headers=self.headers.toPlainText())
        except CairnError as refused:
            self.say(str(refused))
            return
        self._tasks.run(self._add(config))

    async def _add(self, config: ServerConfig) -> None:
        self.add_button.setEnabled(False)
        self.say("")
        try:
            added, _ = await self.ops.add_mcp_server(config)
        finally:
            if shiboken6.isValid(self):
                self.add_button.setEnabled(True)
        if shiboken6.isValid(self):
            self.sig_added.emit(added.name)
            self.accept()


def _grid() -> tuple[QWidget, QGridLayout]:
    page = QWidget()
    grid = QGridLayout(page)
    grid.setContentsMargins(0, 0, 0, 0)
    grid.setHorizontalSpacing(12)
    grid.setColumnStretch(1, 1)
    grid.setColumnMinimumWidth(0, 96)  # every grid's labels one width: the fields line up
    return page, grid


def _row(grid: QGridLayout, text: str, field: QWidget) -> None:
    row = grid.rowCount()
    label = Label(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setBuddy(field)
    label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
    grid.addWidget(label, row, 0)
    grid.addWidget(field, row, 1)


__all__ = ["AddServerDialog", "ToolsPage", "runs"]
