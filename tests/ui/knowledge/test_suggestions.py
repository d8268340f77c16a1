"""The Suggestions strip in the knowledge panel of the real window, offscreen: what a rebuild would not apply waits there with its diff, reason and evidence; Accept
applies it as the person's version, Edit… in their own words, Dismiss drops it; a refusal is
one sentence; hostile text stays text.  Suggestions are stored through the core, as a
rebuild stores them."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QLabel

from app.store.documents import Change
from app.store.suggestions import Proposed
from tests.ui.drivers import (
    PREFERENCES,
    click,
    merge,
    named,
    show,
    strip_of,
    suggest,
    with_document,
)
from tests.ui.helpers import wait_for
from ui.app import Starter


@pytest.fixture
def opened(offline_window: Starter) -> Starter:
    return offline_window










def test_a_suggestion_shows_its_diff_reason_and_evidence(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    assert not strip.isVisible()  # nothing waits: no strip
    suggest(opened, ws_id, merge(ws_id))
    wait_for(lambda: strip.isVisible() and len(strip.shown) == 1)
    assert strip.toggle.text() == "Suggestions (1) ▾"
    texts = [w.text() for w in strip.findChildren(QLabel) if w.isVisible()]
    assert "− Use metric units only." in texts and "+ Keep answers short." in texts
    assert "Waits for you: The merge was refused: it drops words of P1 and P3." in texts
    assert "“short answers, please” — you said" in texts
    opened.window.grab().save(str(tmp_path / "suggestions.png"))


def test_accept_applies_it_as_the_person_s_version(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, merge(ws_id))
    wait_for(lambda: len(strip.shown) == 1)
    editor = show(opened, ws_id).editor
    click(strip, "Accept suggestion")
    wait_for(lambda: not strip.isVisible() and editor.text().endswith("- Keep answers short.\n"))
    document = opened.ops.cairn.knowledge.get(ws_id)
    assert document.text == "## Working style & preferences\n- Keep answers short.\n"
    assert document.source == "user"
    assert opened.ops.cairn.knowledge.suggestions([ws_id]) == []


def test_edit_accepts_it_in_the_person_s_words(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, merge(ws_id))
    wait_for(lambda: len(strip.shown) == 1)
    asked: list[str] = []
    strip.ask_edit = lambda text: (asked.append(text), "Warm tone, short answers, metric")[1]
    click(strip, "Edit suggestion")
    wait_for(lambda: not strip.isVisible())
    assert asked == ["Keep answers short."]
    assert opened.ops.cairn.knowledge.get(ws_id).text == (
        "## Working style & preferences\n- Warm tone, short answers, metric\n")


def test_dismiss_drops_it_and_leaves_the_document(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, merge(ws_id), Proposed(
        ws_id, "add", "Facts", (), "Office in Lyon", "No more than 3 adds per exchange.",
        "our office is in Lyon", "person"))
    wait_for(lambda: len(strip.shown) == 2)
    assert named(strip, QLabel, "Suggestion number").text() == "1 of 2"
    click(strip, "Next suggestion")  # one card at a time, stepped through
    assert named(strip, QLabel, "Suggestion number").text() == "2 of 2"
    assert strip.card(strip.shown[1].id) is not None and strip.card(strip.shown[0].id) is None
    click(strip, "Previous suggestion")
    version = opened.ops.cairn.knowledge.get(ws_id).version
    first = strip.card(strip.shown[0].id)
    assert first is not None
    click(first, "Dismiss suggestion")
    wait_for(lambda: len(strip.shown) == 1 and strip.toggle.text() == "Suggestions (1) ▾")
    assert opened.ops.cairn.knowledge.get(ws_id).version == version
    assert strip.shown[0].text == "Office in Lyon"
    # Dismiss can be undone from the window's notice.
    notice = opened.window.notice
    wait_for(lambda: notice.isVisible() and notice.label.text() == "Suggestion dismissed.")
    assert notice.action.isVisible() and notice.action.text() == "Undo"
    notice.action.click()
    wait_for(lambda: len(strip.shown) == 2)
    assert {s.text for s in strip.shown} == {"Office in Lyon", merge(ws_id).text}
    assert not notice.isVisible()


def test_a_suggestion_that_no_longer_fits_is_refused_in_one_sentence(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, merge(ws_id))
    wait_for(lambda: len(strip.shown) == 1)
    cairn = opened.ops.cairn
    edited = PREFERENCES.replace("Keep answers short.", "Keep answers very short.")
    current = cairn.knowledge.get(ws_id)
    assert cairn.knowledge.save_if_unchanged([Change(ws_id, edited, current.version)],
                                             source="user")
    errors: list[str] = []
    strip.sig_error.connect(errors.append)
    click(strip, "Accept suggestion")
    wait_for(lambda: bool(errors))
    assert errors == ["cannot accept this suggestion: the entry it changes no longer reads as "
                      "it did when it was suggested; edit the document instead, or dismiss "
                      "the suggestion"]
    assert cairn.knowledge.get(ws_id).text == edited and len(strip.shown) == 1


def test_hostile_suggestion_text_is_shown_as_text(opened, tmp_path):
    ws_id = with_document(opened, tmp_path, "## Facts\n- Office in Lyon\n")
    strip = strip_of(opened, ws_id)
    hostile = "<img src=//host/t.png>Office <b>moved</b>"
    suggest(opened, ws_id, Proposed(ws_id, "update", "Facts", ("Office in Lyon",), hostile,
                                    "<a href='file:///x'>reason</a>", "<i>quote</i>", "claude"))
    wait_for(lambda: len(strip.shown) == 1)
    labels = [w for w in strip.findChildren(QLabel) if hostile in w.text()]
    assert labels and all(w.textFormat().name == "PlainText" for w in labels)
    assert named(strip, QLabel, "Why it waits").textFormat().name == "PlainText"
    assert "— Claude said" in named(strip, QLabel, "Evidence").text()


def test_a_quote_found_in_no_message_is_said_so(opened, tmp_path):
    """Words found in no message are never labelled as the chat's."""
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    suggest(opened, ws_id, Proposed(
        ws_id, "add", "Facts", (), "Budget is 40,000 EUR", "The evidence does not occur in "
        "the new exchanges.", "the budget is forty thousand", None))
    wait_for(lambda: len(strip.shown) == 1 and strip.card(strip.shown[0].id) is not None)
    evidence = strip.card(strip.shown[0].id).evidence.text()
    assert evidence == "“the budget is forty thousand” — not found in the chat's messages"
    assert "from the chat" not in evidence


def test_the_status_line_counts_what_waits_now_in_plain_words(opened, tmp_path):
    """The status line says how many suggestions wait (not the knowledge
    model's "P1 says …"), and nothing of them once each was decided."""
    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)
    line = show(opened, ws_id).editor.status_line.label
    cairn = opened.ops.cairn
    chat = cairn.registry.new_chat(title="Style talk")
    note = "1 suggestion could not be applied: P1 says 4; quote where the exchanges say it."
    assert cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={ws_id: note},
                                        suggestions=[merge(ws_id)])
    wait_for(lambda: len(strip.shown) == 1)
    wait_for(lambda: "1 suggested change waits for you under Suggestions" in line.text())
    assert "P1" not in line.text() and "could not be applied" not in line.text()
    click(strip.card(strip.shown[0].id), "Dismiss suggestion")
    wait_for(lambda: not strip.shown)
    wait_for(lambda: line.text() == "Edited by you just now")
