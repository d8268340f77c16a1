"""Find anything in the window: the search box opened with Ctrl+K, the quick
switcher, results opening where they belong, find in the open chat, Ctrl+Home."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.ui.drivers import bulk_messages, draft_of, make_chat, ops_of, press
from tests.ui.helpers import wait_for
from ui.app import Starter
from ui.search.box import ResultRole


def type_search(starter: Starter, text: str) -> None:
    box = starter.window.search_box
    box.field.setText(text)
    wait_for(lambda: box._shown == text and not box._asking)


def results(starter: Starter) -> list[object]:
    box = starter.window.search_box
    return [box.results.item(r).data(ResultRole) for r in range(box.results.count())
            if box.results.item(r).data(ResultRole) is not None]


def test_ctrl_k_finds_a_message_in_another_workspace_and_enter_opens_it_there(
        opened, folders, tmp_path):
    acme, zen = folders("Acme", "Zen")
    far = make_chat(opened, zen, "Garden log")
    texts = ["the lighthouse keeper ordered marmalade"] + [f"filler line {n}" for n in range(300)]
    target, *_ = bulk_messages(opened, far, texts)
    here = make_chat(opened, acme, "Acme chat")
    window = opened.window
    window.select_chat(here)
    panel = window.chat_panel
    wait_for(lambda: panel.chat_id == here and draft_of(panel) == here)
    panel.composer.edit.setFocus()
    wait_for(lambda: panel.composer.edit.hasFocus())
    press(panel.composer.edit, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    box = window.search_box
    wait_for(lambda: box.isVisible() and box.field.hasFocus())
    assert box.field.accessibleName() == "Search"
    type_search(opened, "marmal")
    found = results(opened)
    first = found[0]
    assert (first.kind, first.chat, first.message) == ("message", far, target)
    assert [first.snippet[s:e] for s, e in first.marks] == ["marmalade"]
    press(box.field, Qt.Key.Key_Return)
    wait_for(lambda: panel.chat_id == far)
    # The chat opens at that message, 300 messages up: the pages around it were read.
    wait_for(lambda: panel.view.currentIndex().isValid() and target in
             panel.view.conversation.entries[panel.view.currentIndex().row()].message_ids)
    assert not box.isVisible()
    assert panel.view.messages._highlight == ("marmal",)
    rect = panel.view.visualRect(panel.view.currentIndex())
    assert panel.view.viewport().rect().intersects(rect)  # in sight
    assert window.grab().save(str(tmp_path / "search-opened.png"))  # to look at


def test_esc_closes_the_box_and_gives_the_focus_back(opened, folders):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "A chat")
    window = opened.window
    window.select_chat(chat)
    panel = window.chat_panel
    wait_for(lambda: draft_of(panel) == chat)
    panel.composer.edit.setFocus()
    wait_for(lambda: panel.composer.edit.hasFocus())
    window.open_search()
    box = window.search_box
    wait_for(lambda: box.field.hasFocus())
    press(box.field, Qt.Key.Key_Escape)
    assert not box.isVisible()
    wait_for(lambda: panel.composer.edit.hasFocus())


def test_ctrl_k_reaches_the_box_from_the_sidebar_filter(opened):
    window = opened.window
    window.focus_filter()
    field = QApplication.focusWidget()
    assert field is not None
    field.setFocus()
    press(field, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: window.search_box.isVisible() and window.search_box.field.hasFocus())


def test_the_quick_switcher_puts_titles_first_and_opens_them(opened, folders):
    acme, zen = folders("Acme", "Zen Garden")
    chat = make_chat(opened, acme, "Quarterly budget review")
    make_chat(opened, zen, "Other")
    bulk_messages(opened, chat, ["nothing about it"])
    window = opened.window
    window.open_search()
    type_search(opened, "qbr")
    (first, *_) = results(opened)
    assert (first.kind, first.chat) == ("chat", chat)
    type_search(opened, "zen gar")
    (first, *_) = results(opened)
    assert first.kind == "workspace" and first.title == "Zen Garden"
    box = window.search_box
    type_search(opened, "qbr")
    press(box.field, Qt.Key.Key_Return)
    wait_for(lambda: window.chat_panel.chat_id == chat)


def test_up_down_move_and_results_are_grouped_by_kind(opened, folders, tmp_path):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "Notes")
    bulk_messages(opened, chat, ["walrus facts here"])
    ops = ops_of(opened)
    ws_id = ops.cairn.registry.workspaces()[-1].id
    ops.cairn.knowledge.save(ws_id, "## Facts\n\n- The walrus is large\n", source="user")
    source = tmp_path / "walrus.txt"
    source.write_text("walrus tusks", encoding="utf-8")
    ops.cairn.files.add(ws_id, source)
    window = opened.window
    window.open_search()
    type_search(opened, "walrus")
    box = window.search_box
    kinds = [t.kind for t in results(opened)]
    assert kinds == sorted(kinds, key=["message", "knowledge", "file"].index)
    assert set(kinds) == {"message", "knowledge", "file"}
    headings = [box.results.item(r).text() for r in range(box.results.count())
                if box.results.item(r).data(ResultRole) is None]
    assert headings == ["Messages", "Knowledge", "Files"]
    assert box.current().kind == "message"
    press(box.field, Qt.Key.Key_Down)
    assert box.current().kind == "knowledge"
    press(box.field, Qt.Key.Key_Down)
    assert box.current().kind == "file"
    press(box.field, Qt.Key.Key_Up)
    press(box.field, Qt.Key.Key_Return)
    editor = window.knowledge.editor
    wait_for(lambda: editor.opened is not None and editor.edit.textCursor().hasSelection())
    assert editor.edit.textCursor().selectedText() == "- The walrus is large"
    window.open_search()
    type_search(opened, "walrus in:files")
    press(box.field, Qt.Key.Key_Return)
    files = window.knowledge.files
    wait_for(lambda: files.selected() is not None and files.selected().name == "walrus.txt")
    assert window.knowledge.tabs.currentWidget() is files


def test_a_hostile_query_is_answered_in_the_box(opened, folders):
    window = opened.window
    window.open_search()
    type_search(opened, 'NEAR( "unbalanced *')
    assert window.search_box.status.text() == "Nothing found."
    type_search(opened, "x" * 2000)
    assert "at most 1,000 characters" in window.search_box.status.text()


def test_find_in_chat_reaches_a_message_2000_rows_up_and_ctrl_home_the_first(
        opened, folders, tmp_path):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "Very long chat")
    texts = ["the first message"] + ["a needle in the hay"] + [
        f"hay {n}" for n in range(2000)] + ["the last needle"]
    ids = bulk_messages(opened, chat, texts)
    window = opened.window
    window.select_chat(chat)
    panel = window.chat_panel
    wait_for(lambda: draft_of(panel) == chat)
    assert len(panel.view.conversation.entries) < 200  # only the end is read
    panel.view.setFocus()
    wait_for(lambda: panel.view.hasFocus())
    press(panel.view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    bar = panel.find_bar
    wait_for(lambda: bar.isVisible() and bar.field.hasFocus())
    with_answer = []
    bar.sig_searched.connect(lambda: with_answer.append(True))
    bar.field.setText("needle")
    wait_for(lambda: with_answer and bar.count.text() == "2 of 2")
    assert bar.matches == [(ids[1], 0), (ids[-1], 0)]
    press(bar.field, Qt.Key.Key_Return)  # the older match: 2,000 rows up
    wait_for(lambda: bar.count.text() == "1 of 2" and panel.view.currentIndex().isValid()
             and ids[1] in panel.view.conversation.entries[
                 panel.view.currentIndex().row()].message_ids)
    assert panel.view.viewport().rect().intersects(
        panel.view.visualRect(panel.view.currentIndex()))
    assert window.grab().save(str(tmp_path / "find-in-chat.png"))  # to look at
    press(bar.field, Qt.Key.Key_Escape)
    assert not bar.isVisible() and panel.view.messages._highlight == ()
    # Ctrl+Home: the chat's very first message.
    panel.view.setFocus()
    press(panel.view, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    wait_for(lambda: panel.view.conversation.entries[0].message_ids[0] == ids[0]
             and not panel.view.has_older and panel.view.verticalScrollBar().value() == 0)


def test_ctrl_f_elsewhere_still_filters_the_sidebar(opened):
    window = opened.window
    window.sidebar.tree.setFocus()
    wait_for(lambda: window.sidebar.tree.hasFocus())
    press(window.sidebar.tree, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert not window.chat_panel.find_bar.isVisible()


def test_the_box_draws_results_as_plain_text(opened, folders, tmp_path):
    (acme,) = folders("Acme")
    chat = make_chat(opened, acme, "<b>Bold</b> title")
    bulk_messages(opened, chat, ["<img src=x> beacon <a href='y'>link</a>"])
    window = opened.window
    window.open_search()
    type_search(opened, "beacon")
    (hit,) = [t for t in results(opened) if t.kind == "message"]
    assert hit.title == "<b>Bold</b> title" and "<img src=x>" in hit.snippet
    assert window.grab().save(str(tmp_path / "search-box.png"))  # to look at


def test_ctrl_k_puts_what_says_the_word_above_titles_that_only_hold_its_letters(opened,
                                                                               folders):
    """"Bauer" ranked a chat about Landsat first (b·a…u…e…r) and
    pre-selected it over the messages that say Bauer."""
    (acme,) = folders("Acme")
    make_chat(opened, acme, "Landsat bands: blue and red")
    quote = make_chat(opened, acme, "Renovation quote")
    (said,) = bulk_messages(opened, quote, ["Bauer GmbH sent the quote for the roof"])
    window = opened.window
    window.open_search()
    type_search(opened, "Bauer")
    found = results(opened)
    assert found and (found[0].kind, found[0].message) == ("message", said)
    assert all(getattr(r, "title", "") != "Landsat bands: blue and red" for r in found)
    box = window.search_box
    current = box.results.currentItem()
    assert current is not None and current.data(ResultRole).message == said  # Enter opens it
