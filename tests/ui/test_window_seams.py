"""Where the window's parts meet the core, driven in the real window (the ``opened`` fixture)
against the fake server: the models list Settings fetches never disturbs the next message (one
request, its reply shown), and leaving a chat starts its knowledge rebuild without waiting for
the idle delay."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPushButton

from app import events as ev
from app.store.messages import COMPLETE
from tests.ui.drivers import draft_of, idle
from tests.ui.helpers import run, wait_for
from ui.app import Starter
from ui.chat.entries import PERSON, REPLY
from ui.settings import SettingsDialog


def new_chat(starter: Starter, folder: str) -> str:
    assert starter.ops is not None
    run(starter.ops.add_workspace(folder))
    chat, _ = run(starter.ops.new_chat(folder=folder))
    starter.window.select_chat(chat.id)
    panel = starter.window.chat_panel
    wait_for(lambda: panel.chat_id == chat.id and draft_of(panel) == chat.id)
    return chat.id


def send(starter: Starter, text: str) -> None:
    panel = starter.window.chat_panel
    panel.composer.set_text(text)
    panel.composer.edit.setFocus()
    panel.composer.send()



def named(parent: Any, kind: type, name: str) -> Any:
    (found,) = [w for w in parent.findChildren(kind) if w.accessibleName() == name]
    return found


def test_a_message_sent_right_after_settings_test_makes_one_request_and_shows_its_reply(
        opened, fake, folders, qtbot):
    (acme,) = folders("Acme Inc")
    new_chat(opened, acme)
    opened.window.settings_action.trigger()
    dialog = opened.window.findChild(SettingsDialog)
    assert dialog is not None
    wait_for(lambda: dialog.loaded)
    qtbot.mouseClick(named(dialog, QPushButton, "Test"), Qt.MouseButton.LeftButton)
    result = named(dialog, QLabel, "Test result")
    wait_for(lambda: result.text().startswith("It works"))
    assert any(r.path == "/v1/models" for r in fake.requests)
    dialog.reject()
    assert not dialog.isVisible()  # (nothing unsaved: it closed without asking)

    reply = "Our colours are #FF5500 and #111111."
    fake.reply_text(reply)
    send(opened, "What are our brand colours?")
    wait_for(lambda: len(fake.message_requests) >= 1 and idle(opened))
    assert len(fake.message_requests) == 1  # never sent twice (nor paid for twice)
    entries = opened.window.chat_panel.view.conversation.entries
    assert [e.kind for e in entries] == [PERSON, REPLY]
    assert entries[1].text == reply and entries[1].status == COMPLETE
    assert not fake.errors


def test_leaving_a_chat_starts_its_rebuild_without_waiting_for_the_idle_delay(
        opened, fake, folders):
    run(opened.ops.set_setting("knowledge.idle_seconds", 3_600))  # a rebuild only when asked
    (acme,) = folders("Acme Inc")
    first = new_chat(opened, acme)
    heard: list[Any] = []
    opened.window.bridge.sig_event.connect(heard.append)
    fake.reply_text("We settled it: the launch is on 2027-04-15 and Dana signs the contract "
                    "for the venue next week.")  # long enough to be worth learning from
    send(opened, "When is the launch, and who signs?")
    wait_for(lambda: len(fake.message_requests) == 1 and idle(opened))
    wait_for(lambda: any(isinstance(e, ev.RebuildQueued) and e.chat == first for e in heard))
    assert not any(isinstance(e, ev.RebuildStarted) for e in heard)  # the idle delay is an hour

    fake.reply_json("update_knowledge", {"ops": []})
    second, _ = run(opened.ops.new_chat(folder=acme))
    opened.window.select_chat(second.id)  # the person leaves the first chat
    wait_for(lambda: any(isinstance(e, ev.RebuildStarted) and e.chat == first for e in heard))
    wait_for(lambda: any(isinstance(e, (ev.RebuildApplied, ev.RebuildFailed))
                         and e.chat == first for e in heard))
    assert len(fake.message_requests) == 2  # the turn, then the rebuild's one request
    assert not any(isinstance(e, ev.RebuildFailed) for e in heard)


def open_settings(opened: Starter) -> SettingsDialog:
    opened.window.settings_action.trigger()
    dialog = opened.window.findChild(SettingsDialog)
    assert dialog is not None
    wait_for(lambda: dialog.loaded)
    return dialog


def test_an_open_settings_dialog_shows_a_value_the_command_line_changed(opened):
    """`cairn settings set` in a terminal while Settings is open: a field
    left as it was shows the new value, and Save no longer writes the old one back."""
    from PySide6.QtWidgets import QLineEdit

    from app import cli
    from app.store.settings import Settings

    dialog = open_settings(opened)
    base_url = named(dialog, QLineEdit, "Base URL")
    before = base_url.text()
    assert cli.main(["settings", "set", "api.base_url", "http://127.0.0.1:9/elsewhere"]) == 0
    wait_for(lambda: base_url.text() == "http://127.0.0.1:9/elsewhere")
    assert before != base_url.text()
    message = named(dialog, QLabel, "Settings message")
    assert message.isVisible() and "changed outside this window" in message.text()
    assert not dialog.has_unsaved_changes()  # the field shows what is stored: nothing to save
    dialog.save()
    wait_for(lambda: message.text() in ("Nothing to save.", "Saved."))
    assert Settings(opened.cairn.registry.db).get("api.base_url") == \
        "http://127.0.0.1:9/elsewhere"
    dialog.reject()


def test_an_edited_setting_changed_elsewhere_warns_before_save_replaces_it(opened):
    """The person's own edit stays, and the dialog says that Save will replace the value
    another process stored meanwhile."""
    from PySide6.QtWidgets import QLineEdit

    from app import cli

    dialog = open_settings(opened)
    base_url = named(dialog, QLineEdit, "Base URL")
    base_url.setText("http://127.0.0.1:9/mine")
    assert cli.main(["settings", "set", "api.base_url", "http://127.0.0.1:9/theirs"]) == 0
    message = named(dialog, QLabel, "Settings message")
    wait_for(lambda: "changed outside this window" in message.text())
    assert "(now http://127.0.0.1:9/theirs); Save will replace it with yours." in message.text()
    assert base_url.text() == "http://127.0.0.1:9/mine"
    assert dialog.has_unsaved_changes()
    base_url.setText(opened.cairn.settings.get("api.base_url"))  # taken back: nothing asks
    dialog.reject()
