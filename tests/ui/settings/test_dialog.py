"""The settings dialog, offscreen: the key in the (test) keychain, the Test button against the
fake server, models with their lifecycle, the switch to a successor, personal memory with a
conflict, and refusals as their sentence.  Nothing here asks the keychain on the GUI thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import keyring
import pytest
from keyring.backends import fail
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QApplication,
    QCheckBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QWidget,
)

from app.ops import Operations
from app.store.documents import PERSONAL
from app.store.settings import KEYRING_SERVICE, KEYRING_USER
from tests.memory_keyring import TEST_KEY, MemoryKeyring
from tests.ui.drivers import named
from ui.settings import SettingsDialog

NEW_KEY = "sk-ant-api03-NEW-key-4d2e"
SLOW = 20_000  # ms: for waits that make an SDK client or go over the network



@pytest.fixture
def open_dialog(qtbot: Any, loop: Any, online: Any) -> Callable[[], SettingsDialog]:
    """Opens the dialog on the online Cairn once its keychain and memory reads are back."""

    def make() -> SettingsDialog:
        dialog = SettingsDialog(Operations(online), registry=online.registry,
                                settings=online.settings, catalog=online.catalog)
        qtbot.addWidget(dialog)
        dialog.show()
        # Making the first client loads the CA bundle: seconds on a busy machine.
        qtbot.waitUntil(lambda: dialog.loaded, timeout=SLOW)
        assert not named(dialog, QPlainTextEdit, "Personal memory").isReadOnly()
        assert named(dialog, QLabel, "API key status").text() != ""
        return dialog

    return make




def click(qtbot: Any, dialog: QWidget, name: str) -> None:
    button = named(dialog, QAbstractButton, name)
    assert button.isEnabled() and button.isVisible(), name
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def message(dialog: QWidget) -> str:
    label = named(dialog, QLabel, "Settings message")
    return label.text() if label.isVisible() else ""


def stored_key() -> str | None:
    """The key kept for the test's server (the fake one on 127.0.0.1: one key per server)."""
    found = [secret for (service, user), secret in keyring.get_keyring().secrets.items()
             if service == KEYRING_SERVICE and user.startswith(f"{KEYRING_USER} http://127.0.0.1:")]
    return found[0] if found else None


# ================================================================= the key


def test_saving_a_key_puts_it_in_the_keychain_and_never_shows_it(qtbot, open_dialog, online):
    online.settings.forget_api_key()
    dialog = open_dialog()
    state = named(dialog, QLabel, "API key status")
    assert state.text().startswith("No key yet")
    field = named(dialog, QLineEdit, "API key")
    assert field.echoMode() == QLineEdit.EchoMode.Password
    assert not named(dialog, QPushButton, "Forget API key").isEnabled()
    qtbot.keyClicks(field, NEW_KEY)
    assert dialog.has_unsaved_changes()
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: stored_key() == NEW_KEY)
    qtbot.waitUntil(lambda: state.text() == "A key is saved in your system keychain. Paste a "
                    "new one to replace it.")
    # (Save then fetches the saved server's models list.)
    qtbot.waitUntil(lambda: message(dialog) == "Saved.", timeout=SLOW)
    assert field.text() == ""
    assert not dialog.has_unsaved_changes()
    shown = " ".join(w.text() for w in dialog.findChildren(QLabel)) + field.placeholderText()
    assert NEW_KEY not in shown and "4d2e" not in shown  # stored, not revealed

    click(qtbot, dialog, "Forget API key")
    qtbot.waitUntil(lambda: stored_key() is None)
    qtbot.waitUntil(lambda: state.text().startswith("No key yet"))


def test_the_environment_key_is_said_to_override(qtbot, open_dialog, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    dialog = open_dialog()
    state = named(dialog, QLabel, "API key status").text()
    assert "ANTHROPIC_API_KEY" in state and "overrides" in state
    assert "sk-ant-from-env" not in state
    assert not named(dialog, QPushButton, "Forget API key").isEnabled()


def test_without_a_usable_keychain_it_says_so_and_points_to_the_variable(qtbot, open_dialog):
    keyring.set_keyring(fail.Keyring())  # the conftest fixture puts the test keyring back
    dialog = open_dialog()
    state = named(dialog, QLabel, "API key status").text()
    assert state.startswith("Cairn cannot keep a key here: ") and "keychain" in state
    assert "Set ANTHROPIC_API_KEY in your environment instead" in state
    assert not named(dialog, QLineEdit, "API key").isEnabled()


def test_the_keychain_is_never_asked_on_the_gui_thread(qtbot, open_dialog, online):
    asked: list[int] = []

    class Watched(MemoryKeyring):
        def get_password(self, service: str, username: str) -> str | None:
            asked.append(threading.get_ident())
            return super().get_password(service, username)

        def set_password(self, service: str, username: str, password: str) -> None:
            asked.append(threading.get_ident())
            super().set_password(service, username, password)

    keyring.set_keyring(Watched())
    online.settings.forget_api_key()  # so the next read really asks the keychain
    dialog = open_dialog()
    qtbot.keyClicks(named(dialog, QLineEdit, "API key"), NEW_KEY)
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: message(dialog) == "Saved.")
    assert asked and threading.get_ident() not in asked


# ================================================================= the Test button


def test_the_test_button_fetches_the_models_list_with_the_key(qtbot, open_dialog, fake):
    dialog = open_dialog()
    result = named(dialog, QLabel, "Test result")
    click(qtbot, dialog, "Test")
    qtbot.waitUntil(lambda: result.text().startswith("It works"), timeout=SLOW)
    assert result.text() == f"It works: {fake.base_url} listed 5 models for this key."
    listed = [r for r in fake.requests if r.path == "/v1/models"]
    assert listed and listed[-1].api_key == TEST_KEY


def test_a_newly_typed_key_is_tested_and_stored_only_by_save(qtbot, open_dialog, fake):
    """Test tries what is typed; only Save stores it."""
    dialog = open_dialog()
    qtbot.keyClicks(named(dialog, QLineEdit, "API key"), NEW_KEY)
    click(qtbot, dialog, "Test")
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: result.text().startswith("It works"), timeout=SLOW)
    assert result.text().endswith("(not saved yet: press Save to keep it).")
    assert [r for r in fake.requests if r.path == "/v1/models"][-1].api_key == NEW_KEY
    assert stored_key() == TEST_KEY  # not stored by Test
    assert dialog.has_unsaved_changes()
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: stored_key() == NEW_KEY, timeout=SLOW)
    # Once saved, the test's line no longer says "not saved yet".
    qtbot.waitUntil(lambda: message(dialog) == "Saved.", timeout=SLOW)
    assert result.text() == f"It works: {fake.base_url} listed 5 models for this key."


def test_a_typed_key_that_works_is_not_called_no_key_and_the_key_field_has_the_focus(
        qtbot, open_dialog, online, fake):
    """"No key yet." beside "It works"; "Add your API key…" opened Settings
    with the keyboard on the tab bar."""
    online.settings.forget_api_key()
    dialog = open_dialog()
    field = named(dialog, QLineEdit, "API key")
    dialog.activateWindow()
    qtbot.waitUntil(lambda: dialog.focusWidget() is field)
    state = named(dialog, QLabel, "API key status")
    assert state.text().startswith("No key yet")
    qtbot.keyClicks(field, NEW_KEY)
    click(qtbot, dialog, "Test")
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: result.text().startswith("It works"), timeout=SLOW)
    assert not state.text().startswith("No key yet") and "works" in state.text()


def test_a_rejected_key_fails_the_test_in_one_sentence(qtbot, open_dialog, fake):
    dialog = open_dialog()
    fake.models_status = 401
    click(qtbot, dialog, "Test")
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: "rejected" in result.text(), timeout=SLOW)
    assert result.text() == ("The server rejected this key (401): check it, or paste a new one "
                             "and Save.")


def test_an_unreachable_server_fails_the_test_in_one_sentence(qtbot, open_dialog, online):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{probe.getsockname()[1]}"
    dialog = open_dialog()
    stored = online.settings.get("api.base_url")
    url = named(dialog, QLineEdit, "Base URL")
    url.clear()
    qtbot.keyClicks(url, nowhere)
    click(qtbot, dialog, "Test")
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: result.text().startswith("Cannot reach"), timeout=SLOW)
    # (a local server: whether it runs, not the internet connection)
    assert result.text() == f"Cannot reach {nowhere}; check that it is running, and the base URL."
    # Nothing was stored, and Esc asks before the typed address goes.
    assert online.settings.get("api.base_url") == stored
    asked: list[str] = []
    import ui.settings.dialog as settings_module  # (where the dialog asks)
    real = settings_module.message_box

    def recorded(*args, **kwargs):
        box = real(*args, **kwargs)
        asked.append(box.text())
        return box

    settings_module.message_box = recorded
    try:
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    finally:
        settings_module.message_box = real
    assert asked == ["Save your changes before closing?"] and dialog.isVisible()
    assert online.settings.get("api.base_url") == stored
    # The Models tab claims no list for the typed server, which never answered.
    assert "listed by " + nowhere not in named(dialog, QLabel, "Models list status").text()



def test_no_key_at_all_is_said_by_the_test(qtbot, open_dialog, online):
    online.settings.forget_api_key()
    dialog = open_dialog()
    click(qtbot, dialog, "Test")
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: result.text().startswith("No API key is set"), timeout=SLOW)


# ================================================================= models


def labels(box: QComboBox) -> list[str]:
    return [box.itemText(row) for row in range(box.count())]


def test_models_come_from_the_list_with_their_lifecycle_and_a_choice_is_saved(
        qtbot, open_dialog, online, fake):
    haiku_4_5 = next(m for m in fake.models if m["id"] == "claude-haiku-4-5")
    haiku_4_5.update(lifecycle="deprecated", deprecated_at="2026-10-07T00:00:00Z",
                     retires_at="2027-02-01T00:00:00Z")
    dialog = open_dialog()
    chat = named(dialog, QComboBox, "Chat model")
    qtbot.waitUntil(lambda: chat.count() == 5)  # the list, fetched as the dialog opened
    assert labels(chat)[:3] == ["Claude Haiku 5.5", "Claude Opus 5.5", "Claude Sonnet 5.5"]
    assert "Claude Haiku 4.5 — deprecated, retires 2027-02-01" in labels(chat)
    assert "Claude Sonnet 4.5 — retired" in labels(chat)
    assert chat.currentText() == "Claude Sonnet 5.5"

    chat.setCurrentIndex(chat.findData("claude-opus-5-5"))
    effort = named(dialog, QComboBox, "Chat effort")
    effort.setCurrentIndex(effort.findData("high"))
    knowledge = named(dialog, QComboBox, "Knowledge model")
    knowledge.setEditText("llama3.2")  # a local server's model, typed
    named(dialog, QSpinBox, "Idle delay").setValue(45)
    named(dialog, QCheckBox, "Memory").setChecked(False)
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: message(dialog) == "Saved.")
    get = online.settings.get
    assert (get("model.chat"), get("model.chat_effort"), get("model.knowledge"),
            get("knowledge.idle_seconds"), get("memory.enabled")) == (
        "claude-opus-5-5", "high", "llama3.2", 45, False)
    assert "llama3.2" in labels(knowledge)  # the setting shows even though not listed


def test_a_retired_model_gets_a_one_click_switch_and_is_never_switched_silently(
        qtbot, open_dialog, online):
    online.settings.set("model.chat", "claude-sonnet-4-5")
    dialog = open_dialog()
    named(dialog, QTabWidget, "Settings sections").setCurrentIndex(1)  # Models
    switch = dialog.findChild(QPushButton, "switch_chat_model")
    assert switch.isVisible()  # the models list arrived as the dialog opened
    assert switch.text() == switch.accessibleName() == "Switch to Claude Sonnet 5.5"
    lifecycle = named(dialog, QLabel, "Chat model lifecycle")
    assert lifecycle.text() == ("Claude Sonnet 4.5 was retired on 2026-11-30: Cairn refuses to "
                                "use it.")
    assert named(dialog, QComboBox, "Chat model").currentText() == "Claude Sonnet 4.5 — retired"
    assert online.settings.get("model.chat") == "claude-sonnet-4-5"  # shown, not changed
    click(qtbot, dialog, "Switch to Claude Sonnet 5.5")
    qtbot.waitUntil(lambda: message(dialog) == "Switched to Claude Sonnet 5.5.")
    assert online.settings.get("model.chat") == "claude-sonnet-5-5"
    assert not switch.isVisible() and not lifecycle.isVisible()


def test_a_refusal_is_shown_as_its_sentence(qtbot, open_dialog, online):
    dialog = open_dialog()
    named(dialog, QComboBox, "Chat model").setEditText("   ")
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: message(dialog).startswith("Cannot change setting"))
    assert message(dialog) == "Cannot change setting 'Chat model': a model name cannot be empty"
    assert online.settings.get("model.chat") == "claude-sonnet-5-5"


# ================================================================= personal memory


def test_memory_is_edited_and_a_conflict_offers_reload(qtbot, open_dialog, online):
    online.knowledge.save(PERSONAL, "- Name: Dana\n", source="user")
    dialog = open_dialog()
    editor = named(dialog, QPlainTextEdit, "Personal memory")
    assert editor.toPlainText() == "- Name: Dana\n"
    editor.setPlainText("- Name: Dana\n- Prefers short answers\n")
    online.knowledge.save(PERSONAL, "- Name: Dana\n- Lives in Lisbon\n", source="rebuild")
    click(qtbot, dialog, "Save")
    conflict = named(dialog, QLabel, "Knowledge conflict message")
    qtbot.waitUntil(conflict.isVisible)
    assert conflict.text().startswith("A chat updated this document while you were editing "
                                      "(now version 2)")
    qtbot.waitUntil(lambda: message(dialog).startswith("Personal memory was not saved"))
    assert online.knowledge.get(PERSONAL).text.endswith("Lisbon\n")  # nothing overwritten
    click(qtbot, dialog, "Reload")
    qtbot.waitUntil(lambda: editor.toPlainText() == "- Name: Dana\n- Lives in Lisbon\n")
    assert not conflict.isVisible() and not dialog.has_unsaved_changes()

    editor.setPlainText("- Name: Dana\n- Lives in Lisbon\n- Prefers short answers\n")
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: online.knowledge.get(PERSONAL).version == 3)
    assert online.knowledge.get(PERSONAL).text.endswith("short answers\n")


def test_memory_conflict_keep_mine_saves_over_the_newer_version(qtbot, open_dialog, online):
    dialog = open_dialog()
    editor = named(dialog, QPlainTextEdit, "Personal memory")
    editor.setPlainText("- Mine\n")
    online.knowledge.save(PERSONAL, "- From a chat\n", source="rebuild")
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(named(dialog, QLabel, "Knowledge conflict message").isVisible)
    click(qtbot, dialog, "Keep mine")
    qtbot.waitUntil(lambda: online.knowledge.get(PERSONAL).text == "- Mine\n")
    assert online.knowledge.get(PERSONAL).version == 2
    assert [v.source for v in online.knowledge.history(PERSONAL)] == ["user", "rebuild"]
    qtbot.waitUntil(lambda: message(dialog) == "Saved.")


def test_memory_is_edited_in_the_knowledge_editor_with_its_history(qtbot, open_dialog, online):
    """Personal memory uses the knowledge panel's editor: the unsaved dot, Ctrl+S, the
    history with its diff, and Restore."""
    from PySide6.QtWidgets import QListWidget, QTextBrowser

    online.knowledge.save(PERSONAL, "- Name: Dana\n", source="user")
    dialog = open_dialog()
    named(dialog, QTabWidget, "Settings sections").setCurrentIndex(2)  # Memory
    editor = named(dialog, QPlainTextEdit, "Personal memory")
    dot = named(dialog, QLabel, "Unsaved changes")
    editor.setPlainText("- Name: Dana\n- Works in Lisbon\n")
    assert dialog.has_unsaved_changes() and not dot.isHidden()
    qtbot.keyClick(editor, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: online.knowledge.get(PERSONAL).version == 2)
    qtbot.waitUntil(lambda: dot.isHidden() and message(dialog) == "Saved.")
    click(qtbot, dialog, "History")
    rows = named(dialog, QListWidget, "Versions")
    qtbot.waitUntil(lambda: rows.count() == 2)
    changes = named(dialog, QTextBrowser, "Changes")
    qtbot.waitUntil(lambda: "Works in Lisbon" in changes.toPlainText())
    rows.setCurrentRow(1)
    click(qtbot, dialog, "Restore")
    qtbot.waitUntil(lambda: online.knowledge.get(PERSONAL).version == 3)
    assert online.knowledge.get(PERSONAL).text == "- Name: Dana\n"
    assert online.knowledge.get(PERSONAL).source == "restore"
    qtbot.waitUntil(lambda: editor.toPlainText() == "- Name: Dana\n")


# ================================================================= accessibility


def test_every_control_has_an_accessible_name(qtbot, open_dialog):
    dialog = open_dialog()
    controls = [w for kind in (QAbstractButton, QLineEdit, QComboBox, QSpinBox, QPlainTextEdit)
                for w in dialog.findChildren(kind)
                if not isinstance(w.parent(), (QComboBox, QSpinBox))]  # their inner editors
    unnamed = [f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r} in "
               f"{type(w.parent()).__name__}" for w in controls if not w.accessibleName()]
    assert unnamed == []
    assert named(dialog, QPushButton, "Save").text() == "Save"


# ================================================================= plain http


def _the_question(qtbot) -> QMessageBox:
    found: list[QMessageBox] = []

    def asked() -> bool:
        found[:] = [w for w in QApplication.topLevelWidgets()
                    if isinstance(w, QMessageBox) and w.isVisible()
                    and w.accessibleName() == "Send your key over plain http?"]
        return bool(found)

    qtbot.waitUntil(asked, timeout=SLOW)
    return found[0]


def test_plain_http_to_another_machine_is_said_and_asked_before_the_key_goes(
        qtbot, open_dialog, online, fake, monkeypatch):
    """The fake server on 127.0.0.1 is taken for another machine once the dialog is open: a
    base URL typed for it is warned of at once; Save asks, Cancel saves and sends nothing,
    Send over http saves the URL with the agreement to that one origin."""
    from app.store import settings as settings_module
    from app.store.settings import origin
    from ui.settings import connection as settings_ui  # (where the page warns)

    dialog = open_dialog()
    real = settings_module.plain_http_host

    def remote(url: str) -> str | None:
        return "fake.example" if url.startswith(fake.base_url) else real(url)

    monkeypatch.setattr(settings_module, "plain_http_host", remote)
    monkeypatch.setattr(settings_ui, "plain_http_host", remote)
    field = named(dialog, QLineEdit, "Base URL")
    warning = named(dialog, QLabel, "Base URL warning")
    field.clear()
    assert not warning.isVisible()
    qtbot.keyClicks(field, fake.base_url + "/")
    assert warning.isVisible() and "unencrypted" in warning.text()
    sent = len(fake.requests)
    click(qtbot, dialog, "Save")
    box = _the_question(qtbot)
    assert "unencrypted" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: message(dialog).startswith("Nothing was saved"), timeout=SLOW)
    assert online.settings.get("api.base_url") == fake.base_url
    assert online.settings.get("api.plain_http") == "" and len(fake.requests) == sent
    click(qtbot, dialog, "Test")  # the Test asks too, and Cancel sends nothing
    box = _the_question(qtbot)
    box.button(QMessageBox.StandardButton.Cancel).click()
    result = named(dialog, QLabel, "Test result")
    qtbot.waitUntil(lambda: result.text().startswith("Not tested"), timeout=SLOW)
    assert len(fake.requests) == sent
    click(qtbot, dialog, "Save")
    box = _the_question(qtbot)
    [go] = [b for b in box.buttons() if b.text() == "Send over http"]
    go.click()
    qtbot.waitUntil(lambda: message(dialog) == "Saved.", timeout=SLOW)
    assert online.settings.get("api.base_url") == fake.base_url + "/"
    assert online.settings.get("api.plain_http") == origin(fake.base_url)
    assert "You allowed it." in warning.text()


def test_the_key_is_shown_for_its_server_and_saved_for_the_base_url_typed_with_it(
        qtbot, open_dialog, online):
    """One key per server. The label names the saved base URL's server; a
    key typed with a new base URL is kept for that server, the other server's key untouched."""
    from app.store.settings import key_user

    online.settings.set("api.base_url", "")
    online.settings.set_api_key("sk-ant-anthropic")
    dialog = open_dialog()
    server = named(dialog, QLabel, "API key server")
    qtbot.waitUntil(lambda: "for Anthropic" in server.text())
    url = named(dialog, QLineEdit, "Base URL")
    url.setText("http://localhost:4000")
    qtbot.keyClicks(named(dialog, QLineEdit, "API key"), "sk-litellm-proxy")
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: "the server at localhost:4000" in server.text())
    assert keyring.get_password(KEYRING_SERVICE, key_user("http://localhost:4000")) == \
        "sk-litellm-proxy"
    assert keyring.get_password(KEYRING_SERVICE, KEYRING_USER) == "sk-ant-anthropic"


def test_a_setting_declared_once_gets_its_field_on_its_page_and_is_saved(
        qtbot, open_dialog, online, monkeypatch):
    """Adding a setting is one declaration: the Models page adds a field made for its type
    (a list of its choices), named for assistive technology; Save stores the value chosen."""
    from app.store.settings import SETTINGS, Setting

    declared = Setting("chat.tone", "plain", "Tone", "How chats answer.",
                       choices=(("plain", "Plain"), ("warm", "Warm")), page="models",
                       field="Tone", said="The tone")
    monkeypatch.setitem(SETTINGS, declared.key, declared)
    dialog = open_dialog()
    tone = named(dialog, QComboBox, "Tone")
    assert [tone.itemText(i) for i in range(tone.count())] == ["Plain", "Warm"]
    assert tone.currentData() == "plain" and not dialog.has_unsaved_changes()
    tone.setCurrentIndex(tone.findData("warm"))
    assert dialog.has_unsaved_changes()
    click(qtbot, dialog, "Save")
    qtbot.waitUntil(lambda: message(dialog) == "Saved.")
    assert online.settings.get("chat.tone") == "warm"
