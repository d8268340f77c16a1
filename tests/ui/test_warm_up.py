"""The SDK is loaded when the person starts writing a message, not when the window opens
(~90 MB a window only looked at never needs), and never on the GUI thread; a Send
before the warm-up ended still gets its client off the GUI thread."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.ops import Operations
from tests.ui.drivers import idle, new_chat
from tests.ui.helpers import wait_for


def test_the_warm_up_waits_for_the_first_keystroke_in_a_message(opened, folders, monkeypatch):
    calls: list[str] = []
    real = Operations.warm_up

    async def counted(self: Operations) -> None:
        calls.append(threading.current_thread().name)
        await real(self)

    monkeypatch.setattr(Operations, "warm_up", counted)
    (acme,) = folders("Acme Inc")
    new_chat(None, opened, acme)
    wait_for(lambda: opened._after_ready_done)  # the filled window painted: no warm-up yet
    panel = opened.window.chat_panel
    assert calls == []
    panel.composer.edit.setFocus()
    QTest.keyClicks(panel.composer.edit, "Hel")
    wait_for(lambda: calls)
    QTest.keyClicks(panel.composer.edit, "lo")
    QTest.keyClick(panel.composer.edit, Qt.Key.Key_Backspace)
    assert len(calls) == 1  # once: later keystrokes ask for nothing more


def test_a_send_at_once_makes_its_client_off_the_gui_thread(opened, fake, folders, monkeypatch):
    import app.llm.client

    made_on: list[threading.Thread] = []
    real = app.llm.client.make_client

    def recorded(*args: Any, **kwargs: Any) -> Any:
        made_on.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(app.llm.client, "make_client", recorded)
    (acme,) = folders("Acme Inc")
    new_chat(None, opened, acme)
    panel = opened.window.chat_panel
    fake.reply_text("Hello back.")
    panel.composer.edit.setFocus()
    QTest.keyClicks(panel.composer.edit, "Hello")  # the warm-up starts, and at once:
    panel.composer.send()
    wait_for(lambda: idle(opened) and len(panel.view.conversation.entries) == 2)
    assert made_on and threading.main_thread() not in made_on
