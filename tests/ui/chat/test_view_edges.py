"""The chat view's edge cases (a review's findings, each a regression test): races between
Send, a chat being opened and a turn ending; text typed at awkward moments; selection and
copying in long replies; pasting; renaming while switching chats."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QMimeData, Qt, QUrl
from PySide6.QtGui import QColor, QImage, QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.store.messages import COMPLETE, FAILED
from tests.ui.drivers import (
    draft_of,
    entries,
    exchange,
    follow_link,
    idle,
    new_chat,
    send,
    turns_going,
)
from tests.ui.helpers import run, wait_for
from ui.chat.markdown import PIECE_CHARS, pieces, streaming_chunks


def slow(monkeypatch, ops, name: str, seconds: float) -> None:
    """Make one read of the operations slow, as a busy storage thread makes it."""
    original = getattr(ops, name)

    async def slower(*args, **kwargs):
        await asyncio.sleep(seconds)
        return await original(*args, **kwargs)

    monkeypatch.setattr(ops, name, slower)


def test_a_reply_ending_while_its_chat_opens_is_shown_once(opened, loop, fake, folders,
                                                            monkeypatch):
    (acme,) = folders("Acme Inc")
    first = new_chat(loop, opened, acme)
    fake.reply_text("First answer.")
    send(opened, "First question")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    second = new_chat(loop, opened, acme)
    window, panel = opened.window, opened.window.chat_panel
    window.select_chat(first)
    wait_for(lambda: draft_of(panel) == first)
    fake.reply_text("Second answer.", chunk=4, delay=0.02)
    send(opened, "Second question")
    wait_for(lambda: turns_going(panel))
    window.select_chat(second)
    slow(monkeypatch, opened.ops, "page", 0.6)  # the turn ends while the chat reopens
    window.select_chat(first)
    wait_for(lambda: idle(opened) and draft_of(panel) == first
             and opened.ops.running(first) is None, timeout=30)
    wait_for(lambda: [e.text for e in entries(opened)] == [
        "First question", "First answer.", "Second question", "Second answer."])


def test_text_typed_while_send_is_stored_stays_in_the_composer(opened, loop, fake, folders,
                                                               monkeypatch):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    composer = opened.window.chat_panel.composer
    slow(monkeypatch, opened.ops, "start_turn", 0.5)
    fake.reply_text("Noted.")
    send(opened, "Sent part")
    composer.edit.moveCursor(QTextCursor.MoveOperation.End)
    # Before the message is stored, the person goes on typing on a new line.
    QTest.keyClick(composer.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(composer.edit, "second thought")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    assert entries(opened)[0].text == "Sent part"
    assert composer.text() == "second thought"
    wait_for(lambda: opened.cairn.chats.draft(chat_id) == "second thought")


def test_edit_and_resend_gives_the_unsent_draft_back(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    panel = opened.window.chat_panel
    fake.reply_text("First answer.")
    send(opened, "Frist question")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    panel.composer.set_text("my long unsent draft")
    follow_link(panel, entries(opened)[0], "cairn:edit", None)
    assert panel.composer.text() == "Frist question"
    fake.reply_text("Second answer.")
    panel.composer.set_text("First question")
    panel.composer.send()
    wait_for(lambda: idle(opened) and entries(opened)[0].text == "First question"
             and len(entries(opened)) == 2)
    assert panel.composer.text() == "my long unsent draft"
    assert opened.cairn.chats.draft(chat_id) == "my long unsent draft"
    # Cancelling an edit gives it back too.
    follow_link(panel, entries(opened)[0], "cairn:edit", None)
    panel.composer.cancel_edit()
    assert panel.composer.text() == "my long unsent draft"


def test_a_failure_is_shown_once(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    for _ in range(3):
        fake.reply_error_status(529, "overloaded_error", "Overloaded")
    send(opened, "Are you there?")
    wait_for(lambda: idle(opened) and len(entries(opened)) >= 2, timeout=60)
    kinds = [(e.kind, e.status) for e in entries(opened)]
    assert kinds == [("person", COMPLETE), ("reply", FAILED)]


def typed_while_opening(opened, loop, folders, monkeypatch, seconds):  # type: ignore[no-untyped-def]
    """Two chats of one workspace, the first with a stored draft; the first selected while
    its page is slow to read, and "Quick note" typed before it has opened."""
    (acme,) = folders("Acme Inc")
    first = new_chat(loop, opened, acme)
    run(opened.ops.save_draft(first, "Stored draft"))
    second = new_chat(loop, opened, acme)
    panel = opened.window.chat_panel
    slow(monkeypatch, opened.ops, "page", seconds)
    opened.window.select_chat(first)
    panel.composer.edit.setFocus()
    QTest.keyClicks(panel.composer.edit, "Quick note")
    return first, second, panel


def test_text_typed_before_a_chat_has_opened_is_kept_with_its_draft(opened, loop, folders,
                                                                     monkeypatch):
    first, second, panel = typed_while_opening(opened, loop, folders, monkeypatch, 0.4)
    wait_for(lambda: draft_of(panel) == first)
    assert panel.composer.text() == "Stored draft\nQuick note"
    opened.window.select_chat(second)  # switching away saves it
    wait_for(lambda: opened.cairn.chats.draft(first) == "Stored draft\nQuick note")


def test_text_typed_before_a_chat_has_opened_is_kept_when_the_person_leaves_it_first(
        opened, loop, folders, monkeypatch):
    first, second, panel = typed_while_opening(opened, loop, folders, monkeypatch, 1.0)
    assert draft_of(panel) is None  # (not opened yet)
    opened.window.select_chat(second)
    wait_for(lambda: opened.cairn.chats.draft(first) == "Stored draft\nQuick note")


def test_text_typed_before_a_chat_has_opened_is_kept_at_a_quit(opened, loop, folders,
                                                              monkeypatch):
    first, _second, panel = typed_while_opening(opened, loop, folders, monkeypatch, 1.0)
    assert draft_of(panel) is None  # (not opened yet)
    run(panel.before_quit())
    assert opened.cairn.chats.draft(first) == "Stored draft\nQuick note"


def test_a_rename_goes_to_the_chat_it_was_typed_for(opened, loop, folders):
    (acme,) = folders("Acme Inc")
    first = new_chat(loop, opened, acme)
    second = new_chat(loop, opened, acme)
    window, title = opened.window, opened.window.chat_panel.header.title
    window.select_chat(first)
    wait_for(lambda: draft_of(window.chat_panel) == first)
    title.setFocus()
    title.selectAll()
    QTest.keyClicks(title, "Renamed first")
    window.select_chat(second)  # without Enter
    registry = opened.cairn.registry
    wait_for(lambda: registry.chat(first).title == "Renamed first")
    assert registry.chat(second).title != "Renamed first"


def test_copy_inside_a_selected_long_reply_copies_the_block_clicked(opened, loop, fake,
                                                                    folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    filler = ("Some words to fill a piece. " * 80).strip()
    reply = (f"{filler}\n\n```sh\nrm -rf ./build\n```\n\n{filler}\n\n"
             "```sh\nmake install\n```")
    assert len(pieces(reply)) >= 2  # the two blocks sit in different pieces
    fake.reply_text(reply, chunk=400)
    send(opened, "Two commands?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    view = opened.window.chat_panel.view
    index = view.conversation.index(1, 0)
    # The reply laid out in its last form (the live entry gives way to the stored one, and a
    # layout follows at most every 40 ms): under load the click could come before it.
    wait_for(lambda: view._anchor_of(index, None, "cairn:copy/1")[1] is not None)
    browser = view.open_selector(index)
    links = []
    doc = browser.document()
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if fmt.isAnchor() and fmt.anchorHref().startswith("cairn:copy/"):
                links.append(fmt.anchorHref())
            it += 1
        block = block.next()
    assert sorted(set(links)) == ["cairn:copy/0", "cairn:copy/1"]
    view._browser_anchor(entries(opened)[1], QUrl("cairn:copy/1"))
    assert QApplication.clipboard().text() == "make install"


def test_the_selection_overlay_covers_its_message_only(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "Short?", "A short answer.")
    view = opened.window.chat_panel.view
    browser = view.open_selector(view.conversation.index(1, 0))
    rect = view.visualRect(view.conversation.index(1, 0))
    assert browser.geometry().bottom() <= rect.bottom()  # never over the rows below


def test_a_long_code_line_wraps_inside_the_column(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    line = "curl -s https://api.example.com/v1/things?" + "&param=value" * 20
    fake.reply_text(f"```sh\n{line}\n```")
    send(opened, "The command?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    view = opened.window.chat_panel.view
    layout = view.messages.layout(entries(opened)[1], view.viewport().width(), 1)
    code = next(b for b in layout.blocks if b.code)
    assert code.doc.size().width() <= layout.column.width() + 1


def test_pasting_cells_with_a_picture_of_them_pastes_the_text(opened, loop, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    composer = opened.window.chat_panel.composer
    data = QMimeData()
    data.setText("Q1\t120\nQ2\t140")
    image = QImage(20, 10, QImage.Format.Format_RGB32)
    image.fill(QColor("#ffffff"))
    data.setImageData(image)
    composer.edit.insertFromMimeData(data)
    assert composer.text() == "Q1\t120\nQ2\t140" and composer.files() == []


def test_a_long_open_code_block_streams_in_boxes_laid_out_once():
    tail = "Here it is:\n\n```python\n" + "x = compute(1)  # a line of code\n" * 600
    chunks = streaming_chunks(tail)
    assert chunks[0] == "Here it is:" and len(chunks) > 3
    assert all(len(c) <= PIECE_CHARS + 100 for c in chunks[1:])
    assert all(c.endswith("```") for c in chunks[1:-1]) and not chunks[-1].endswith("```")


def test_an_archived_chat_offers_no_retry_or_edit(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    fake.reply_text("An answer.")
    send(opened, "A question")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    assert "edit" in entries(opened)[0].actions
    run(opened.ops.archive_chat(chat_id))
    wait_for(lambda: not any(e.actions for e in entries(opened)))


def test_code_blocks_and_links_are_reachable_from_the_keyboard(opened, loop, fake, folders):
    from ui.chat.view import links_in

    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    fake.reply_text("See [the guide](https://acme.example/guide).\n\n```sh\nmake\n```")
    send(opened, "How?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    view = opened.window.chat_panel.view
    layout = view.messages.layout(entries(opened)[1], view.viewport().width(), 1)
    assert links_in(layout) == ["https://acme.example/guide"]
    assert [c for b in layout.blocks for c in b.code] == ["make"]


def test_a_chat_with_no_message_yet_says_what_it_is_for(opened, loop, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    view = opened.window.chat_panel.view
    assert view.conversation.rowCount() == 0
    assert view.empty_text.startswith("Ask anything about Acme Inc.")
    loose = run(opened.ops.new_chat(folder=None))[0]
    opened.window.select_chat(loose.id)
    wait_for(lambda: draft_of(opened.window.chat_panel) == loose.id)
    assert view.empty_text.startswith("A chat outside any workspace")
