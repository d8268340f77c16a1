"""Settings: the API key, the server, the models, personal memory and the idle delay.

Values are read from memory (``Settings.get``, the cached models list); everything that
touches the keychain, the database or the network goes through :class:`~app.ops.Operations`
(the models list too, fetched on the engine's network thread), never the GUI thread.  Save
writes what changed; a refusal is shown as its sentence and the dialog stays as it was.
Nothing switches a model silently: a retired or deprecated model gets a button that names its
successor.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Coroutine
from datetime import datetime, timezone
from typing import Any

import shiboken6
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QKeySequence, QPalette, QShortcut, QStandardItemModel
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.llm.catalog import Catalog, ModelInfo
from app.ops import Operations
from app.store.knowledge import PERSONAL
from app.store.registry.registry import Registry
from app.store.settings import (
    CHOICES,
    MAX_IDLE_SECONDS,
    Settings,
    origin,
    plain_http_host,
    plain_http_warning,
)
from ui.tasks import TaskRunner
from ui.text import Label, answered, message_box, sentence, tip

EFFORT_NAMES = {"": "Model's default", "low": "Low", "medium": "Medium", "high": "High",
                "xhigh": "Extra high", "max": "Max"}
PURPOSES = (("chat", "model.chat", "model.chat_effort", "Chat"),
            ("knowledge", "model.knowledge", "model.knowledge_effort", "Knowledge"))
# What each setting the dialog shows is called in a sentence.
FIELD_NAMES = {"api.base_url": "The base URL", "knowledge.idle_seconds": "The idle delay",
               "memory.enabled": "The Memory switch", "chat.enter_sends": "The Enter switch",
               "model.chat": "The chat model", "model.chat_effort": "The chat effort",
               "model.knowledge": "The knowledge model",
               "model.knowledge_effort": "The knowledge effort"}


def model_label(info: ModelInfo) -> str:
    """How the models list shows a model: its name, and its lifecycle when not active."""
    if info.lifecycle == "retired":
        return f"{info.display_name} — retired"
    if info.lifecycle == "deprecated":
        when = f", retires {info.retires_at[:10]}" if info.retires_at else ""
        return f"{info.display_name} — deprecated{when}"
    return info.display_name


def keychain_problem() -> str | None:
    """Why the system keychain cannot keep a key (its backend is keyring's fail or null
    backend, or cannot be loaded), or None.  On the writer thread: loading it is slow."""
    from app.store.settings import unusable_keychain  # one rule, with the chat's sentence

    return unusable_keychain()


def _local_time(stamp: str | None) -> str:
    """A stored UTC time as the person's local time, to the minute."""
    if not stamp:
        return ""
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp[:16].replace("T", " ")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def failure_sentence(error: BaseException | None, server: str) -> str:
    """One sentence for a models list that did not come.  Told apart by the SDK's error
    classes' names and status, so the window never imports the SDK itself."""
    kinds = {cls.__name__ for cls in type(error).__mro__} if error is not None else set()
    status = getattr(error, "status_code", None)
    from app.llm.client import is_proxy_key_refusal, refusal_of

    if status == 401 or "AuthenticationError" in kinds:
        return "The server rejected this key (401): check it, or paste a new one and Save."
    if error is not None and is_proxy_key_refusal(error):  # LiteLLM's 400 "No connected db."
        kind, message = refusal_of(error)
        said = (message or kind)[:120].strip().rstrip(".")
        return (f"The server did not accept this key (it says “{said}.”): check it, or paste "
                "a new one and Save.")
    if status == 403 or "PermissionDeniedError" in kinds:
        return "The server knows this key but may not list models with it (403)."
    if "APITimeoutError" in kinds:
        return f"{server} took too long to answer; check the base URL, or try again."
    if "APIConnectionError" in kinds:
        if "api.anthropic.com" in server:
            return f"Cannot reach {server}; check your internet connection and the base URL."
        return f"Cannot reach {server}; check that it is running, and the base URL."
    if isinstance(status, int):
        return (f"{server} answered with an error (HTTP {status}) instead of the models "
                "list.")
    return f"The models list could not be fetched from {server}."


def _heading(text: str) -> QLabel:
    label = Label(text)
    font = QFont(label.font())
    font.setWeight(QFont.Weight.DemiBold)
    label.setFont(font)
    return label


def _spacer(height: int) -> QWidget:
    spacer = QWidget()
    spacer.setFixedHeight(height)
    return spacer


def _note(name: str, *, muted: bool = False, text: str = "") -> QLabel:
    """A sentence for the person (selectable, wrapped), named for assistive technology."""
    label = Label(text)
    label.setAccessibleName(name)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if muted:
        label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
    return label


def _button(text: str, name: str, slot: Callable[[], None]) -> QPushButton:
    button = QPushButton(text)
    button.setAccessibleName(name)
    button.setAutoDefault(False)
    button.clicked.connect(lambda _=False: slot())
    return button


class _Form:
    """Labels on the left, fields on the right, notes under their field.  A grid rather than
    QFormLayout, which gives word-wrapped notes in the field column too much height."""

    def __init__(self) -> None:
        self.grid = QGridLayout()
        self.grid.setContentsMargins(16, 18, 16, 12)
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(10)
        self.grid.setColumnStretch(1, 1)
        self._rows = 0

    def addRow(self, first: str | QWidget, field: QWidget | QLayout | None = None) -> None:
        row, self._rows = self._rows, self._rows + 1
        if isinstance(first, QWidget):  # one widget across both columns
            self.grid.addWidget(first, row, 0, 1, 2)
            return
        if first:
            label = Label(first)
            label.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.grid.addWidget(label, row, 0)
            if isinstance(field, QWidget):
                label.setBuddy(field)
        if isinstance(field, QLayout):
            self.grid.addLayout(field, row, 1)
        elif field is not None:
            self.grid.addWidget(field, row, 1)

    def page(self) -> QWidget:
        page = QWidget()
        outer = QVBoxLayout(page)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addLayout(self.grid)
        outer.addStretch(1)
        return page


_UNSAVED = " (not saved yet: press Save to keep it)"


class SettingsDialog(QDialog):
    """Opened by the window (``Settings``, Ctrl+,); modeless or modal as the window likes.

    It changes things through *ops*; *settings* and *catalog* it only reads (from memory),
    and *registry* feeds the personal memory editor.
    """

    sig_saved = Signal()  # something was saved
    sig_loaded = Signal()  # the key's state, personal memory and a fresh models list are in

    def __init__(self, ops: Operations, *, registry: Registry, settings: Settings,
                 catalog: Catalog, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ops = ops
        self._registry = registry
        self._settings = settings
        self._catalog = catalog
        self._tasks = TaskRunner(self._say, owner=self, failure=(
            "That did not work ({kind}); nothing else changed."))
        self._has_key = False
        self._saving = False  # Save is saving the memory: its own message follows
        self.loaded = False  # see sig_loaded
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.setMinimumSize(620, 560)

        self._tabs = QTabWidget()
        self._tabs.setAccessibleName("Settings sections")
        self._tabs.addTab(self._connection_page(), "Connection")
        self._tabs.addTab(self._models_page(), "Models")
        self._tabs.addTab(self._memory_page(), "Memory")
        from ui.settings_tools import ToolsPage  # (its own module: MCP servers)

        self.tools_page = ToolsPage(ops, registry)
        self._tabs.addTab(self.tools_page, "Tools")

        self._message = _note("Settings message")
        self._message.hide()
        buttons = QDialogButtonBox()
        self._close = buttons.addButton(QDialogButtonBox.StandardButton.Close)
        self._close.setAccessibleName("Close")
        self._save = buttons.addButton(QDialogButtonBox.StandardButton.Save)
        self._save.setAccessibleName("Save")
        self._save.setDefault(True)
        self._save.setToolTip("Save (Ctrl+S)")
        self._save.clicked.connect(self.save)
        self._close.clicked.connect(self.reject)
        QShortcut(QKeySequence.StandardKey.Save, self, self.save)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 16, 20, 16)
        layout.setSpacing(12)
        layout.addWidget(self._tabs, 1)
        layout.addWidget(self._message)
        layout.addWidget(buttons)

        self._load_values()
        self._fill_models()
        self._start(self._load())
        self._key.setFocus()  # where "Add your API key…" leads: the key's field, not the tabs

    # ================================================================= public

    def save(self) -> None:
        """Save what changed (key, settings, personal memory), through Operations."""
        self._start(self._save_all())

    def test_key(self) -> None:
        """Try the typed key and URL against the server's models list, storing nothing."""
        self._start(self._test())

    def has_unsaved_changes(self) -> bool:
        return bool(self._key.text().strip()) or bool(self._changed_settings()) \
            or self._memory.is_dirty()

    # ================================================================= building the pages

    def _connection_page(self) -> QWidget:
        self._key = QLineEdit()
        self._key.setAccessibleName("API key")
        self._key.setEchoMode(QLineEdit.EchoMode.Password)
        self._key.setPlaceholderText("Checking the keychain…")
        self._forget = _button("Forget", "Forget API key", self._forget_key)
        self._forget.setToolTip("Remove the key from the system keychain")
        self._test_button = _button("Test", "Test", self.test_key)
        self._test_button.setToolTip("Fetch the models list with this key (a new key and base "
                                     "URL are saved first)")
        key_row = QHBoxLayout()
        key_row.setSpacing(8)
        key_row.addWidget(self._key, 1)
        key_row.addWidget(self._test_button)
        key_row.addWidget(self._forget)
        self._key_state = _note("API key status")
        self._key_server = _note("API key server", muted=True)  # whose key: one per server
        self._test_result = _note("Test result")
        self._test_result.hide()

        self._base_url = QLineEdit()
        self._base_url.setAccessibleName("Base URL")
        self._base_url.setPlaceholderText("Anthropic (https://api.anthropic.com)")
        from_env = os.environ.get("ANTHROPIC_BASE_URL", "").strip()
        url_hint = _note("Base URL help", muted=True, text=(
            "Leave empty for Anthropic" + (f" (ANTHROPIC_BASE_URL is set: {from_env})"
                                           if from_env else "")
            + ". For an Anthropic-compatible server, enter its address: LiteLLM's proxy "
            "http://localhost:4000, Ollama http://localhost:11434, llama.cpp "
            "http://localhost:8080."))

        form = _Form()
        form.addRow("API key", key_row)
        form.addRow("", self._key_state)
        form.addRow("", self._key_server)
        form.addRow("", self._test_result)
        form.addRow(_spacer(14))
        # Plain http to another machine: said while it is typed, and asked before the key goes.
        self._url_warning = _note("Base URL warning")
        self._url_warning.setStyleSheet("color: #dc2626;")
        self._base_url.textChanged.connect(self._warn_of_plain_http)
        form.addRow("Base URL", self._base_url)
        form.addRow("", self._url_warning)
        form.addRow("", url_hint)
        self._warn_of_plain_http()
        return form.page()

    def _typed_url(self) -> str:
        """The base URL the field means: what it holds, else ANTHROPIC_BASE_URL's."""
        return self._base_url.text().strip() or os.environ.get("ANTHROPIC_BASE_URL", "").strip()

    def _warn_of_plain_http(self) -> None:
        url = self._typed_url()
        plain = plain_http_host(url) is not None
        if plain:
            allowed = self._settings.plain_http_refusal(url) is None
            self._url_warning.setText(plain_http_warning(url) + (
                " You allowed it." if allowed else
                " Cairn asks before it sends your key there."))
        self._url_warning.setVisible(plain)

    async def _agreed_to_plain_http(self, url: str, *, verb: str) -> bool:
        """Whether the key may go to *url*: not plain http to another machine, already
        allowed, or allowed now by the person in a question that names the risk."""
        if self._settings.plain_http_refusal(url) is None:
            return True
        box = message_box(QMessageBox.Icon.Warning, "Send your key over plain http?",
                          plain_http_warning(url),
                          informative=f"{verb} sends your API key to {origin(url)} "
                                      "unencrypted only if you choose Send over http.",
                          buttons=QMessageBox.StandardButton.Cancel, parent=self)
        box.setAccessibleName("Send your key over plain http?")
        go = box.addButton("Send over http", QMessageBox.ButtonRole.AcceptRole)
        go.setAccessibleName("Send over http")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        await answered(box)
        return box.clickedButton() is go

    def _models_page(self) -> QWidget:
        form = _Form()
        self._model_boxes: dict[str, QComboBox] = {}
        self._effort_boxes: dict[str, QComboBox] = {}
        self._lifecycle: dict[str, QLabel] = {}
        self._lifecycle_rows: dict[str, QWidget] = {}
        self._switch: dict[str, QPushButton] = {}
        for purpose, _setting, effort_key, title in PURPOSES:
            model = QComboBox()
            model.setEditable(True)
            model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            model.setAccessibleName(f"{title} model")
            model.setMinimumContentsLength(28)
            model.setToolTip("Choose from the models list, or type a model name (a local "
                             "server's, say)")
            model.currentIndexChanged.connect(lambda _=0, p=purpose: self._model_chosen(p))
            model.editTextChanged.connect(lambda _="", p=purpose: self._model_chosen(p))
            effort = QComboBox()
            effort.setAccessibleName(f"{title} effort")
            effort.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
            for value in CHOICES[effort_key]:
                effort.addItem(EFFORT_NAMES.get(value, value.capitalize()), value)
            # A retired or deprecated model: what that means, and the one-click way out.
            lifecycle = _note(f"{title} model lifecycle")
            lifecycle.setWordWrap(False)  # one short sentence; wrapping here mis-sizes the row
            switch = QPushButton()
            switch.setObjectName(f"switch_{purpose}_model")
            switch.setAccessibleName(f"Switch {purpose} model")  # named for its target when shown
            switch.setAutoDefault(False)
            switch.clicked.connect(lambda _=False, p=purpose: self._switch_model(p))
            row = QWidget()
            column = QVBoxLayout(row)
            column.setContentsMargins(0, 0, 0, 4)
            column.setSpacing(6)
            column.addWidget(lifecycle)
            column.addWidget(switch, 0, Qt.AlignmentFlag.AlignLeft)
            row.hide()
            self._model_boxes[purpose] = model
            self._effort_boxes[purpose] = effort
            self._lifecycle[purpose] = lifecycle
            self._lifecycle_rows[purpose] = row
            self._switch[purpose] = switch
            if purpose == "knowledge":
                form.addRow(_spacer(14))
                form.addRow(_heading("Knowledge updates"))
                form.addRow(_note("Knowledge help", muted=True, text=(
                    "When a chat goes quiet, Cairn merges what it taught into the workspace "
                    "knowledge and your personal memory, with this model.")))
            else:
                form.addRow(_heading("Chats"))
            form.addRow("Model", model)
            form.addRow("", row)
            form.addRow("Effort", effort)
            if purpose == "chat":
                self._enter_sends = QCheckBox("Enter sends, Shift+Enter starts a new line")
                self._enter_sends.setAccessibleName("Enter sends")
                self._enter_sends.setToolTip("Off: Enter starts a new line and Shift+Enter "
                                             "sends (Ctrl+Enter always sends)")
                form.addRow("Composer", self._enter_sends)
        self._idle = QSpinBox()
        self._idle.setAccessibleName("Idle delay")
        self._idle.setRange(0, MAX_IDLE_SECONDS)
        self._idle.setSuffix(" seconds")
        self._idle.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self._idle.setToolTip("How long a chat stays quiet before its knowledge is updated")
        form.addRow("Update after", self._idle)
        self._models_hint = _note("Models list status", muted=True)
        form.addRow(_spacer(14))
        form.addRow(self._models_hint)
        return form.page()

    def _memory_page(self) -> QWidget:
        from ui.bridge import EventBridge
        from ui.knowledge.editor import DocumentEditor

        self._memory_on = QCheckBox("Use personal memory in chats")
        self._memory_on.setAccessibleName("Memory")
        help_text = _note("Memory help", muted=True, text=(
            "When on, this document goes with every message and chats keep it up to date. "
            "It never touches a workspace's knowledge."))
        # The knowledge panel's editor: the same colours, history and safe save.
        self._bridge = EventBridge(self._registry, self)
        self._memory = DocumentEditor(self._ops, self._bridge, self._registry,
                                      self._tasks.run, name="Personal memory", own_save=False)
        self._memory.sig_error.connect(self._say)
        self._memory.sig_saved.connect(lambda _d: self._memory_saved())

        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(16, 18, 16, 12)
        layout.setSpacing(10)
        layout.addWidget(self._memory_on)
        layout.addWidget(help_text)
        layout.addWidget(self._memory, 1)
        return page

    # ================================================================= reading values

    def changed_elsewhere(self, event: object) -> None:
        """A setting changed outside the dialog (``cairn settings set`` in a terminal, another
        window): a field still as it was shows the new value; a field the person edited keeps
        their text, and the dialog says that Save will replace the other value."""
        key = getattr(event, "key", None)
        if key not in self._shown or not shiboken6.isValid(self):
            return
        stored, before = self._settings.get(key), self._shown[key]
        typed = self._typed()[key]
        self._shown[key] = stored
        if stored == before or typed == stored:
            return  # nothing new, or this dialog's own Save
        now = self._spoken(key, stored)
        if typed == before:
            self._show_value(key, stored)
            self._say(f"{FIELD_NAMES[key]} was changed outside this window (now {now}); "
                      "shown here.")
        else:
            self._say(f"{FIELD_NAMES[key]} was changed outside this window (now {now}); "
                      "Save will replace it with yours.")

    def _spoken(self, key: str, value: Any) -> str:
        if isinstance(value, bool):
            return "on" if value else "off"
        if key.endswith("_effort"):
            return EFFORT_NAMES.get(str(value), str(value))
        if key.startswith("model."):
            info = self._catalog.info(str(value))
            return info.display_name if info is not None else str(value)
        if key == "knowledge.idle_seconds":
            return f"{value} seconds"
        return str(value) or "Anthropic's"

    def _show_value(self, key: str, value: Any) -> None:
        if key == "api.base_url":
            self._base_url.setText(str(value))
        elif key == "knowledge.idle_seconds":
            self._idle.setValue(int(value))
        elif key == "memory.enabled":
            self._memory_on.setChecked(bool(value))
        elif key == "chat.enter_sends":
            self._enter_sends.setChecked(bool(value))
        for purpose, setting, effort_key, _title in PURPOSES:
            if key == effort_key:
                box = self._effort_boxes[purpose]
                box.setCurrentIndex(max(box.findData(value), 0))
            elif key == setting:
                box = self._model_boxes[purpose]
                if box.findData(value) < 0:
                    known = self._catalog.info(str(value))
                    box.addItem(model_label(known) if known else str(value), value)
                box.setCurrentIndex(box.findData(value))
                self._model_chosen(purpose)

    def _load_values(self) -> None:
        """The settings as stored (memory reads only)."""
        self._shown = {key: self._settings.get(key) for key in FIELD_NAMES}
        get = self._settings.get
        self._base_url.setText(get("api.base_url"))
        for purpose, _setting, effort_key, _title in PURPOSES:
            box = self._effort_boxes[purpose]
            box.setCurrentIndex(max(box.findData(get(effort_key)), 0))
        self._idle.setValue(int(get("knowledge.idle_seconds")))
        self._memory_on.setChecked(bool(get("memory.enabled")))
        self._enter_sends.setChecked(bool(get("chat.enter_sends")))

    def _fill_models(self) -> None:
        """The models boxes from the cached models list, keeping what each box shows."""
        catalog = self._catalog
        server = self._ops.models_server()
        # Only a list this server gave: another server's would claim models it never listed.
        models = catalog.models() if catalog.has_list(server) else []
        for purpose, setting, _effort, _title in PURPOSES:
            box = self._model_boxes[purpose]
            wanted = self._model_id(purpose) if box.count() else self._settings.get(setting)
            box.blockSignals(True)
            box.clear()
            for info in models:
                box.addItem(model_label(info), info.id)
                box.setItemData(box.count() - 1, tip(info.id), Qt.ItemDataRole.ToolTipRole)
            if wanted and box.findData(wanted) < 0:
                known = catalog.info(wanted)
                box.addItem(model_label(known) if known else wanted, wanted)
            item_model = box.model()
            for row in range(box.count()):  # a retired model cannot be chosen, only kept
                listed = catalog.info(box.itemData(row))
                if isinstance(item_model, QStandardItemModel) and listed is not None \
                        and listed.lifecycle == "retired" and box.itemData(row) != wanted:
                    item_model.item(row).setEnabled(False)
            box.setCurrentIndex(max(box.findData(wanted), 0))
            box.blockSignals(False)
            self._model_chosen(purpose)
        if not models:
            self._models_hint.setText(
                f"No models list yet from {server}: it is fetched when the connection is "
                "saved and works; or type the model name your server serves.")
        else:
            fetched = (catalog.fetched_at or "")[:10]
            self._models_hint.setText(f"{len(models)} models listed by {server}"
                                      + (f" on {fetched}" if fetched else "") + ".")

    def _model_id(self, purpose: str) -> str:
        box = self._model_boxes[purpose]
        text = box.currentText().strip()
        row = box.findText(text, Qt.MatchFlag.MatchExactly)
        if row >= 0 and box.itemData(row):
            return str(box.itemData(row))
        return text

    def _changed_settings(self) -> dict[str, Any]:
        settings = self._settings
        return {key: value for key, value in self._typed().items() if settings.get(key) != value}

    def _typed(self) -> dict[str, Any]:
        """What each field holds now."""
        wanted: dict[str, Any] = {
            "api.base_url": self._base_url.text().strip(),
            "knowledge.idle_seconds": self._idle.value(),
            "memory.enabled": self._memory_on.isChecked(),
            "chat.enter_sends": self._enter_sends.isChecked(),
        }
        for purpose, setting, effort_key, _title in PURPOSES:
            wanted[setting] = self._model_id(purpose)
            wanted[effort_key] = self._effort_boxes[purpose].currentData()
        return wanted

    def _memory_changed(self) -> bool:
        return self._memory.is_dirty() or self._memory.incoming is not None

    # ================================================================= reacting

    def _model_chosen(self, purpose: str) -> None:
        """The lifecycle of the model shown, the switch to its successor, and the effort
        levels it takes."""
        catalog = self._catalog
        model_id = self._model_id(purpose)
        info = catalog.info(model_id)
        label, switch = self._lifecycle[purpose], self._switch[purpose]
        successor = catalog.successor(model_id) if info is not None else None
        ending = info is not None and info.lifecycle in ("retired", "deprecated")
        if info is not None and ending:
            day = f" on {info.retires_at[:10]}" if info.retires_at else ""
            if info.lifecycle == "retired":
                label.setText(f"{info.display_name} was retired{day}: Cairn refuses to use it.")
            else:
                label.setText(f"{info.display_name} is deprecated and retires{day or ' soon'}.")
        if successor is not None and ending:
            switch.setText(f"Switch to {successor.display_name}")
            switch.setAccessibleName(f"Switch to {successor.display_name}")
            switch.setProperty("successor", successor.id)
        switch.setVisible(successor is not None and ending)
        self._lifecycle_rows[purpose].setVisible(ending)
        effort = self._effort_boxes[purpose]
        item_model = effort.model()
        if isinstance(item_model, QStandardItemModel):
            for row in range(effort.count()):
                level = effort.itemData(row)
                takes = (info is None or not info.described or level == ""
                         or level in info.efforts or row == effort.currentIndex())
                item_model.item(row).setEnabled(takes)

    def _switch_model(self, purpose: str) -> None:
        """One click: the successor, saved at once (never silently)."""
        successor = self._switch[purpose].property("successor")
        if not successor:
            return
        setting = dict((p, s) for p, s, _e, _t in PURPOSES)[purpose]
        box = self._model_boxes[purpose]
        box.setCurrentIndex(max(box.findData(successor), 0))
        self._start(self._save_settings({setting: str(successor)}, said="Switched to "
                                        f"{box.currentText()}."))

    def _show_key_state(self, *, has_key: bool, problem: str | None) -> None:
        self._has_key = has_key
        from_env = bool(os.environ.get("ANTHROPIC_API_KEY", "").strip())
        if from_env:
            text = ("ANTHROPIC_API_KEY is set in the environment: Cairn uses it, and it "
                    "overrides any key saved here.")
            placeholder = "Using ANTHROPIC_API_KEY"
        elif problem:
            also = (", or install and unlock GNOME Keyring or KWallet"
                    if sys.platform.startswith("linux") else "")
            text = (f"Cairn cannot keep a key here: {problem.rstrip('.')}. Set "
                    f"ANTHROPIC_API_KEY in your environment instead{also}.")
            placeholder = "No keychain: set ANTHROPIC_API_KEY"
        elif has_key:
            # (the field is narrow: what to do goes in the sentence under it)
            text = "A key is saved in your system keychain. Paste a new one to replace it."
            placeholder = "•••••••• saved"
        else:
            owner = self._settings.key_owner()
            whose = ("your Anthropic API key" if owner == "Anthropic"
                     else f"the API key for {owner}")
            text = (f"No key yet. Paste {whose}; Cairn keeps it in your system "
                    "keychain, never in a file.")
            placeholder = "sk-ant-…" if owner == "Anthropic" else "API key"
        self._key_state.setText(text)
        self._key.setPlaceholderText(placeholder)
        self._key.setEnabled(problem is None)
        self._forget.setEnabled(has_key and not from_env and problem is None)
        self._show_key_server()

    def _show_key_server(self) -> None:
        """Which server the key field is for: each base URL keeps its own key."""
        owner = self._settings.key_owner()
        self._key_server.setText(f"The key here is for {owner}, the saved base URL: each "
                                 "server keeps its own key.")

    def _memory_saved(self) -> None:
        """A choice in the memory editor (Keep mine) saved it."""
        if not self._saving:
            self._say("Saved.")
            self.sig_saved.emit()

    def _say(self, text: str) -> None:
        self._message.setText(sentence(text))
        self._message.setVisible(bool(text))

    # ================================================================= async work

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        """Run *work*; the buttons are usable again when it ends, however it ends."""
        async def then_usable() -> None:
            try:
                await work
            finally:
                if shiboken6.isValid(self):
                    self._busy(False)

        self._tasks.run(then_usable())

    def _busy(self, busy: bool) -> None:
        for button in (self._save, self._test_button, self._forget):
            button.setEnabled(not busy)
        if not busy:
            self._forget.setEnabled(self._has_key and self._key.isEnabled()
                                    and not os.environ.get("ANTHROPIC_API_KEY", "").strip())

    async def _load(self) -> None:
        """What needs the keychain or the database: the key's state, personal memory; then
        the models list when this server's is missing or a day old."""
        try:
            opening = self._memory.open(PERSONAL)
            if opening is not None:
                await opening
            if not shiboken6.isValid(self):
                return
            await self._refresh_key_state()
            if self._has_key and self._catalog.stale(self._ops.models_server()):
                try:
                    await self._ops.refresh_models(force=False)
                except CairnError:
                    pass  # plain http not agreed to: the Base URL's warning says so
                if shiboken6.isValid(self):
                    self._fill_models()
        finally:
            if shiboken6.isValid(self):
                self.loaded = True
                self.sig_loaded.emit()

    async def _refresh_key_state(self) -> None:
        settings = self._settings

        def ask() -> tuple[bool, str | None]:
            has = bool(settings.api_key())
            problem = getattr(settings, "keychain_problem", None) or keychain_problem()
            return has, problem

        has_key, problem = await self._ops.read(ask)
        if shiboken6.isValid(self):
            self._show_key_state(has_key=has_key, problem=problem)

    async def _save_key(self) -> bool:
        """Save a newly typed key; False when there was none."""
        key = self._key.text().strip()
        if not key:
            return False
        await self._ops.set_api_key(key)
        self._key.clear()
        await self._refresh_key_state()
        return True

    async def _save_settings(self, changes: dict[str, Any], *, said: str) -> None:
        self._busy(True)
        for key, value in changes.items():
            await self._ops.set_setting(key, value)
        self._say(said)
        self._fill_models()
        self.sig_saved.emit()

    async def _save_all(self) -> None:
        self._busy(True)
        changes = self._changed_settings()
        url = self._typed_url()
        if "api.base_url" in changes and self._settings.plain_http_refusal(url) is not None:
            if not await self._agreed_to_plain_http(url, verb="Saving"):
                if shiboken6.isValid(self):
                    self._say("Nothing was saved: the base URL is plain http to another "
                              "machine. Use https, or a server on this machine.")
                return
            changes = {"api.plain_http": origin(url), **changes}  # (before the URL)
        self._say("Saving…")
        for key, value in changes.items():
            await self._ops.set_setting(key, value)
        if "api.plain_http" in changes and shiboken6.isValid(self):
            self._warn_of_plain_http()
        # After the base URL: a key is kept for the server it is typed for (one per server).
        key_saved = await self._save_key()
        if "api.base_url" in changes and not key_saved:
            await self._refresh_key_state()  # the new server's key, or none yet
        if key_saved or "api.base_url" in changes:  # the saved server's own models list
            try:
                await self._ops.refresh_models()
            except CairnError:
                pass  # no usable key yet: the Connection tab says so
            if not shiboken6.isValid(self):
                return
        if changes or key_saved:
            self._fill_models()
        memory_saved = self._memory_changed()
        if memory_saved:
            self._saving = True
            try:
                stored = await self._memory.save_now()
            finally:
                self._saving = False
            if not stored:
                if shiboken6.isValid(self):
                    self._say(("Your other settings were saved, but personal memory was not: "
                               if key_saved or changes else "Personal memory was not saved: ")
                              + "it changed since you opened it; choose below.")
                    self._tabs.setCurrentIndex(2)
                return
        self._say("Saved." if key_saved or changes or memory_saved else "Nothing to save.")
        # A test's "(not saved yet…)" is no longer true (issue 36).
        self._test_result.setText(self._test_result.text().replace(_UNSAVED, ""))
        self.sig_saved.emit()

    def _forget_key(self) -> None:
        async def forget() -> None:
            self._busy(True)
            await self._ops.forget_api_key()
            await self._refresh_key_state()
            self._say("The key was removed from the keychain.")

        self._start(forget())

    async def _test(self) -> None:
        """Try what is typed (the key, else the stored one; the base URL as it stands),
        storing nothing: only Save stores."""
        self._busy(True)
        url = self._typed_url()
        plain_http = self._settings.plain_http_refusal(url) is not None
        if plain_http and not await self._agreed_to_plain_http(url, verb="Test"):
            if shiboken6.isValid(self):
                self._test_result.setText("Not tested: nothing was sent to a plain http "
                                          "server on another machine.")
                self._test_result.show()
            return
        self._test_result.setText("Testing…")
        self._test_result.show()
        try:
            server, count, error = await self._ops.test_connection(
                key=self._key.text().strip() or None, base_url=self._base_url.text().strip(),
                plain_http=plain_http)
        except CairnError as refused:  # no key, a malformed URL: the sentence says which
            if shiboken6.isValid(self):
                self._test_result.setText(sentence(str(refused)))
            return
        if not shiboken6.isValid(self):
            return
        if count is None:
            self._test_result.setText(failure_sentence(error, server))
            return
        typed_key = bool(self._key.text().strip())
        unsaved = _UNSAVED if self._changed_settings() or typed_key else ""
        if typed_key and not self._has_key:  # never "No key yet." beside "It works" (issue 36)
            self._key_state.setText("The key typed above works: Save keeps it in your system "
                                    "keychain, never in a file.")
        self._test_result.setText(
            f"It works: {server} listed {count} model{'' if count == 1 else 's'} for this key"
            f"{unsaved}." if count else f"It works: {server} answered, but lists no models; "
            f"type the model name it serves on the Models tab{unsaved}.")

    # ================================================================= Qt overrides

    def reject(self) -> None:
        if not self.has_unsaved_changes():
            super().reject()
            return
        ask = message_box(QMessageBox.Icon.Question, "Unsaved settings",
                          "Save your changes before closing?",
                          buttons=QMessageBox.StandardButton.Save
                          | QMessageBox.StandardButton.Discard
                          | QMessageBox.StandardButton.Cancel, parent=self)
        ask.setAccessibleName("Unsaved settings")

        def answered(_: int) -> None:
            button = ask.standardButton(ask.clickedButton())
            if button == QMessageBox.StandardButton.Discard:
                QDialog.reject(self)
            elif button == QMessageBox.StandardButton.Save:
                async def save_and_close() -> None:
                    await self._save_all()
                    if not self.has_unsaved_changes():
                        QDialog.reject(self)

                self._start(save_and_close())

        ask.finished.connect(answered)
        ask.open()
