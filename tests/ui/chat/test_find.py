"""Find in the chat counts matches, not messages ("1 of 1" with six words
highlighted), and Enter steps through the matches of one message, bringing each to sight
and marking it as the current one."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.ui.drivers import bulk_messages, draft_of, make_chat, press
from tests.ui.helpers import wait_for

LONG = "\n\n".join(
    [f"Paragraph {n}: Landsat imagery notes." if n in (0, 10, 20, 30, 40, 50)
     else f"Paragraph {n}: nothing to find here, only words about the weather and the sea."
     for n in range(60)])


def test_enter_steps_through_every_match_of_a_long_message(opened, folders):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "Satellites")
    ids = bulk_messages(opened, chat, ["Tell me about Landsat", LONG, "thanks"])
    window = opened.window
    window.select_chat(chat)
    panel = window.chat_panel
    wait_for(lambda: draft_of(panel) == chat)
    window.resize(1000, 600)
    bar = panel.find_bar
    bar.open_bar()
    answers: list[bool] = []
    bar.sig_searched.connect(lambda: answers.append(True))
    bar.field.setText("landsat")
    wait_for(lambda: answers and bar.count.text() == "7 of 7")  # 1 + 6, not "2 of 2"
    assert bar.matches == [(ids[0], 0)] + [(ids[1], n) for n in range(6)]
    delegate = panel.view.messages
    reply = next(e for e in panel.view.conversation.entries if ids[1] in e.message_ids)
    assert delegate._current == (reply.key, 5)  # the newest match, marked as current
    scrolled = []
    for expected in ("6 of 7", "5 of 7", "4 of 7"):
        press(bar.field, Qt.Key.Key_Return)  # the previous (older) match
        wait_for(lambda expected=expected: bar.count.text() == expected)
        wait_for(lambda expected=expected: delegate._current == (
            reply.key, int(expected.split()[0]) - 2))
        scrolled.append(panel.view.verticalScrollBar().value())
    assert scrolled == sorted(scrolled, reverse=True) and len(set(scrolled)) == 3  # moving up
    # The current match is in sight.
    row = panel.view.conversation.entries.index(reply)
    rect = delegate.match_rect(reply, panel.view.viewport().width(), delegate._current[1])
    top = panel.view.visualRect(panel.view.conversation.index(row, 0)).top()
    assert 0 <= top + rect.center().y() <= panel.view.viewport().height()
    press(bar.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # newer again
    wait_for(lambda: bar.count.text() == "5 of 7")
