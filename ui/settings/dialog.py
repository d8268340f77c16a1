"""The Settings dialog: its pages (one module each in this package: ``connection``,
``models``, ``memory``, ``tools``), Save, Test, Forget, and what it says.

Values are read from memory (``Settings.get``, the cached models list); everything that
touches the keychain, the database or the network goes through :class:`~app.ops.Operations`
(the models list too, fetched on the engine's network thread), never the GUI thread.  Save
writes what changed; a refusal is shown as its sentence and the dialog stays as it was.
Which settings there are, how each is named and checked: ``app.store.settings.SETTINGS``.
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from typing import Any

import shiboken6
from PySide6.QtCore import Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QMessageBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.errors import CairnError
from app.llm.catalog import Catalog
from app.ops import Operations
from app.store.documents import PERSONAL
from app.store.registry.registry import Registry
from app.store.settings import SETTINGS, Settings, origin, plain_http_warning
from ui.settings.connection import ConnectionPage, failure_sentence, keychain_problem
from ui.settings.form import Page, note, show_value, spoken
from ui.settings.memory import MemoryPage
from ui.settings.models import PURPOSES, ModelsPage
from ui.tasks import TaskRunner
from ui.text import answered, message_box, sentence

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
        self._connection = ConnectionPage(settings, test=self.test_key, forget=self._forget_key)
        self._models = ModelsPage(settings, catalog, switch=self._switch_model)
        self._memory_page = MemoryPage(ops, registry, owner=self, run=self._tasks.run)
        self._memory = self._memory_page.editor
        self._memory.sig_error.connect(self._say)
        self._memory.sig_saved.connect(lambda _d: self._memory_saved())
        self._pages: tuple[Page, ...] = (self._connection, self._models, self._memory_page)
        # (the fields the dialog's own work uses)
        self._key, self._forget = self._connection.key, self._connection.forget
        self._test_button, self._test_result = (self._connection.test_button,
                                                self._connection.test_result)
        self._key_state, self._base_url = self._connection.key_state, self._connection.base_url
        self._tabs.addTab(self._connection, "Connection")
        self._tabs.addTab(self._models, "Models")
        self._tabs.addTab(self._memory_page, "Memory")
        from ui.settings.tools import ToolsPage  # (MCP servers)

        self.tools_page = ToolsPage(ops, registry)
        self._tabs.addTab(self.tools_page, "Tools")

        self._message = note("Settings message")
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

    # ================================================================= the connection

    def _typed_url(self) -> str:
        return self._connection.typed_url()

    def _warn_of_plain_http(self) -> None:
        self._connection.warn_of_plain_http()

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
            self._say(f"{SETTINGS[key].said} was changed outside this window (now {now}); "
                      "shown here.")
        else:
            self._say(f"{SETTINGS[key].said} was changed outside this window (now {now}); "
                      "Save will replace it with yours.")

    def _spoken(self, key: str, value: Any) -> str:
        if key in ("model.chat", "model.knowledge"):
            return self._models.spoken(value)
        return spoken(key, value) or "Anthropic's"  # (an empty base URL)

    def _show_value(self, key: str, value: Any) -> None:
        for page in self._pages:
            if key in page.shown_keys():
                page.show_setting(key, value)

    def _load_values(self) -> None:
        """The settings as stored (memory reads only): the models' lists are filled by
        :meth:`_fill_models`."""
        self._shown = {key: self._settings.get(key) for page in self._pages
                       for key in page.shown_keys()}
        for page in self._pages:
            for key, field in page.fields.items():
                show_value(field, self._settings.get(key))

    def _fill_models(self) -> None:
        """The models boxes from the cached models list, keeping what each box shows."""
        self._models.fill_models(self._ops.models_server())

    def _changed_settings(self) -> dict[str, Any]:
        settings = self._settings
        return {key: value for key, value in self._typed().items() if settings.get(key) != value}

    def _typed(self) -> dict[str, Any]:
        """What each field holds now."""
        return {key: value for page in self._pages for key, value in page.typed().items()}

    def _memory_changed(self) -> bool:
        return self._memory.is_dirty() or self._memory.incoming is not None

    # ================================================================= reacting

    def _switch_model(self, purpose: str) -> None:
        """One click: the successor, saved at once (never silently)."""
        successor = self._models.switch[purpose].property("successor")
        if not successor:
            return
        setting = {p: s for p, s, _e, _t in PURPOSES}[purpose]
        box = self._models.model_boxes[purpose]
        box.setCurrentIndex(max(box.findData(successor), 0))
        self._start(self._save_settings({setting: str(successor)}, said="Switched to "
                                        f"{box.currentText()}."))

    def _show_key_state(self, *, has_key: bool, problem: str | None) -> None:
        self._has_key = has_key
        self._connection.show_key_state(has_key=has_key, problem=problem)

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
