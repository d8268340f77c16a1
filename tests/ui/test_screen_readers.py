"""The find counter, the knowledge status line and a suggestion's texts
tell assistive technology what they show, not only a fixed name (which stays, for UI
automation)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QAccessible

from tests.ui.drivers import (
    PREFERENCES,
    bulk_messages,
    draft_of,
    make_chat,
    merge,
    strip_of,
    suggest,
    with_document,
)
from tests.ui.helpers import wait_for
from ui.app import Starter


@pytest.fixture
def opened(offline_window: Starter) -> Starter:
    return offline_window


def told(widget) -> str:
    """What a screen reader hears: the name and the description Qt's accessibility gives."""
    face = QAccessible.queryAccessibleInterface(widget)
    assert face is not None
    return (face.text(QAccessible.Text.Name) + " | "
            + face.text(QAccessible.Text.Description))


def test_the_find_counter_tells_its_count(opened, folders):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "Notes")
    bulk_messages(opened, chat, ["one needle", "two needles, needle"])
    window = opened.window
    window.select_chat(chat)
    panel = window.chat_panel
    wait_for(lambda: draft_of(panel) == chat)
    bar = panel.find_bar
    bar.open_bar()
    bar.field.setText("needle")
    wait_for(lambda: bar.count.text() == "3 of 3")
    assert told(bar.count) == "Matches | 3 of 3"


def test_the_status_line_and_a_suggestion_tell_their_words(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, merge(ws_id))
    wait_for(lambda: strip.shown and strip.card(strip.shown[0].id) is not None)
    card = strip.card(strip.shown[0].id)
    assert told(card.reason) == ("Why it waits | Waits for you: The merge was refused: it "
                                 "drops words of P1 and P3.")
    assert told(card.evidence) == "Evidence | “short answers, please” — you said"
    line = opened.window.knowledge.editor.status_line.label
    wait_for(lambda: "suggested change" in line.text())
    assert told(line) == f"Knowledge status | {line.text()}"
