"""The chat view, driven in the real window against the fake Anthropic server (today's API
shape): send and watch the reply stream, the knowledge line before the first token, stop,
retry after a failure, edit and resend, attachments (dialog, drop, paste), the cost line,
thinking folded, the draft across a restart, older pages as the person scrolls up."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QDropEvent, QImage
from PySide6.QtWidgets import QApplication

from app.store.messages import COMPLETE, FAILED, STOPPED
from tests.ui.drivers import draft_of, entries, exchange, follow_link, idle, new_chat, send
from tests.ui.helpers import close_window, configure, open_window, run, wait_for
from ui.chat.delegate import STREAMING
from ui.chat.entries import PERSON, REPLY


def test_send_and_watch_the_reply_stream_with_the_knowledge_line_first(opened, loop, fake,
                                                                       folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    panel = opened.window.chat_panel
    seen: list[str] = []
    panel.header.status.setText = lambda t, f=panel.header.status.setText: (seen.append(t), f(t))
    reply = "Our colours are **#FF5500** and `#111111`.\n\n" + "More words. " * 60
    fake.reply_text(reply, chunk=12, delay=0.01)
    send(opened, "What are our brand colours?")
    wait_for(lambda: any(e.status == STREAMING for e in entries(opened)))
    wait_for(lambda: any(e.status == STREAMING and e.parts for e in entries(opened)))
    streamed = next(e for e in entries(opened) if e.status == STREAMING)
    assert 0 < len(streamed.parts[0].text) < len(reply)  # it arrives a piece at a time
    assert panel.composer.stop_button.isVisible() and not panel.composer.send_button.isVisible()
    wait_for(lambda: idle(opened))
    shown = entries(opened)
    assert [e.kind for e in shown] == [PERSON, REPLY]
    assert shown[0].text == "What are our brand colours?"
    assert shown[1].text == reply and shown[1].status == COMPLETE
    # "Pulling Acme Inc knowledge…" from Send to the first token, then the model's name.
    assert "Pulling Acme Inc knowledge…" in seen
    pulling = seen.index("Pulling Acme Inc knowledge…")
    assert all(s == "Sending…" for s in seen[:pulling])  # (storing the message)
    after = seen[pulling:]
    first_other = next(i for i, s in enumerate(after) if s != "Pulling Acme Inc knowledge…")
    assert first_other > 0 and "Pulling" not in "".join(after[first_other:])
    assert seen[-1] and "Pulling" not in seen[-1]
    assert panel.composer.text() == ""
    assert opened.cairn.chats.message_count(chat_id) == 2
    # The accessible text of each row is its whole message.
    model = panel.view.conversation
    spoken = model.index(1, 0).data(Qt.ItemDataRole.AccessibleTextRole)
    assert spoken.startswith(f"Claude: {reply}\n\n") and " out · " in spoken  # and its cost


def test_the_cost_line_is_under_the_reply(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    fake.reply_text("Short answer.", usage={"input_tokens": 1240, "output_tokens": 212,
                                            "cache_read_input_tokens": 3900,
                                            "cache_creation_input_tokens": 0})
    send(opened, "Hello")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    reply = entries(opened)[1]
    view = opened.window.chat_panel.view
    layout = view.messages.layout(reply, view.viewport().width(), 1)
    footer = layout.blocks[-1].doc.toPlainText()
    assert "1,240 in" in footer and "3,900 cached" in footer and "212 out" in footer
    assert "$" in footer


def test_stop_keeps_the_partial_reply_marked_stopped(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    fake.hang(text_before="The first half of an answer")
    send(opened, "Tell me a long story")
    wait_for(lambda: any(e.status == STREAMING and e.parts for e in entries(opened)))
    panel = opened.window.chat_panel
    panel.composer.edit.setFocus()
    from PySide6.QtTest import QTest

    QTest.keyClick(panel.composer.edit, Qt.Key.Key_Escape)  # Esc is Stop
    wait_for(lambda: idle(opened))
    reply = entries(opened)[-1]
    assert reply.status == STOPPED and reply.text == "The first half of an answer"
    stored = opened.cairn.chats.messages(chat_id)
    assert stored[-1].status == STOPPED
    assert "retry" in reply.actions
    # What streamed is counted, as an estimate said so, never "1 out".
    view = panel.view
    footer = view.messages.layout(reply, view.viewport().width(), 1).blocks[-1].doc
    shown = footer.toPlainText()
    assert " · ~7 out (estimated) · ~$" in shown and " 1 out" not in shown


def test_a_failure_is_one_sentence_with_retry_and_the_message_kept(opened, loop, fake,
                                                                   folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    fake.reply_error_status(529, "overloaded_error", "Overloaded")
    fake.reply_error_status(529, "overloaded_error", "Overloaded")
    fake.reply_error_status(529, "overloaded_error", "Overloaded")
    send(opened, "Are you there?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2, timeout=60)
    person, failed = entries(opened)
    assert person.text == "Are you there?"
    assert failed.status == FAILED and failed.error and failed.error.endswith(".")
    assert "retry" in failed.actions
    while fake.pending:  # whatever the client's own retries did not use
        fake._replies.pop()
    fake.reply_text("Yes, here now.")
    panel = opened.window.chat_panel
    follow_link(panel, failed, "cairn:retry", None)
    wait_for(lambda: idle(opened) and entries(opened)[-1].status == COMPLETE, timeout=30)
    assert [e.text for e in entries(opened)] == ["Are you there?", "Yes, here now."]
    assert [m.text for m in opened.cairn.chats.messages(chat_id)] == [
        "Are you there?", "Yes, here now."]


def test_a_rejected_key_says_the_message_is_kept_without_backticks(opened, loop, fake,
                                                                   folders):
    """The 401 sentence says the message is kept, and the window shows the
    command line's `code` as plain words (no raw backticks), in the row and to a screen
    reader."""
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    fake.reply_error_status(401, "authentication_error", "invalid x-api-key")
    send(opened, "Hello?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    failed = entries(opened)[1]
    assert failed.status == FAILED and "`" in (failed.error or "")  # stored as the core said
    view = opened.window.chat_panel.view
    footer = view.messages.layout(failed, view.viewport().width(), 1).blocks[-1].doc
    shown = footer.toPlainText()
    assert "with cairn key set; your message is kept." in shown and "`" not in shown
    spoken = view.conversation.index(1, 0).data(Qt.ItemDataRole.AccessibleTextRole)
    assert "your message is kept" in spoken and "`" not in spoken
    assert opened.cairn.chats.messages(chat_id)[0].text == "Hello?"


def test_a_refusal_in_the_banner_shows_no_backticks(opened, folders):
    """The banner shows a core refusal that names a command as plain words."""
    import shutil

    import pytest

    from app.errors import Refused

    (thesis,) = folders("Thesis")
    (ws, _), _ = run(opened.ops.add_workspace(thesis))
    shutil.rmtree(thesis)
    with pytest.raises(Refused) as refused:
        opened.cairn.registry.chat_folder(ws.id)
    assert "`cairn workspace move ID PATH`" in str(refused.value)
    notice = opened.window.notice
    notice.say(str(refused.value))
    assert "(or cairn workspace move ID PATH)." in notice.label.text()
    assert "`" not in notice.label.text() + notice.label.accessibleDescription()


def test_edit_and_resend_replaces_the_last_exchange(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    fake.reply_text("First answer.")
    send(opened, "Frist question")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    person = entries(opened)[0]
    assert "edit" in person.actions
    panel = opened.window.chat_panel
    follow_link(panel, person, "cairn:edit", None)
    assert panel.composer.editing == person.message_ids[0]
    assert panel.composer.text() == "Frist question"
    fake.reply_text("Second answer.")
    panel.composer.set_text("First question")
    panel.composer.send()
    wait_for(lambda: idle(opened) and [e.text for e in entries(opened)] == [
        "First question", "Second answer."])
    assert [m.text for m in opened.cairn.chats.messages(chat_id)] == [
        "First question", "Second answer."]
    # Nothing replaced: the first version and its answer are one switch away.
    first, second = opened.cairn.chats.versions(chat_id, person.message_ids[0])
    assert (first.text, second.text) == ("Frist question", "First question")
    assert opened.cairn.chats.switch(chat_id, first.id) == first.id + 1
    assert [m.text for m in opened.cairn.chats.messages(chat_id)] == [
        "Frist question", "First answer."]


def test_thinking_is_folded_and_opens_on_click(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    fake.reply_message([{"type": "thinking", "thinking": "The person asks about colours."},
                        {"type": "text", "text": "Orange."}])
    send(opened, "Colour?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    reply = entries(opened)[1]
    assert reply.thinking == "The person asks about colours." and not reply.thinking_open
    view = opened.window.chat_panel.view
    width = view.viewport().width()
    texts = [b.doc.toPlainText() for b in view.messages.layout(reply, width, 1).blocks]
    assert texts[0] == "▸ Thinking" and not any("asks about" in t for t in texts)
    href, _ = view.messages.anchor_at(reply, width, 1, _centre_of(view, reply, 0))
    assert href == "cairn:thinking"
    follow_link(opened.window.chat_panel, reply, href, None)
    texts = [b.doc.toPlainText() for b in view.messages.layout(reply, width, 1).blocks]
    assert texts[0] == "▾ Thinking" and texts[1] == "The person asks about colours."


def _centre_of(view: Any, entry: Any, block: int) -> QPointF:
    layout = view.messages.layout(entry, view.viewport().width(), -1)
    found = layout.blocks[block]
    doc = found.doc
    # The first character of the block's text.
    return QPointF(found.x + 4, found.y + doc.size().height() / 2)


def test_a_code_block_has_a_copy_link(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "CSS please",
             "Here:\n\n```css\n.brand { color: #FF5500; }\n```\n\nDone.")
    view = opened.window.chat_panel.view
    reply = entries(opened)[1]
    layout = view.messages.layout(reply, view.viewport().width(), 1)
    block = next(b for b in layout.blocks if b.code)
    assert block.code == [".brand { color: #FF5500; }"]
    assert "css" in block.doc.toPlainText() and "Copy" in block.doc.toPlainText()
    follow_link(opened.window.chat_panel, reply, "cairn:copy/0", block.code[0])
    assert QApplication.clipboard().text() == ".brand { color: #FF5500; }"


def test_copied_going_back_to_copy_never_reaches_a_deleted_window(qapp, loop, isolated, fake,
                                                                 folders, monkeypatch):
    """The "Copied" that goes back to "Copy" a moment later: a window deleted within that
    moment takes the timer with it (it reached the deleted view: RuntimeError)."""
    from PySide6.QtCore import QEvent

    import ui.chat.panel

    (acme,) = folders("Acme Inc")
    configure(isolated, fake)
    starter = open_window(qapp, isolated)
    exchange(loop, starter, fake, acme, "CSS please", "```css\n.brand { color: red; }\n```")
    reply = entries(starter)[1]
    close_window(starter)
    monkeypatch.setattr(ui.chat.panel, "COPIED_FOR_MS", 0)  # due at the next events
    follow_link(starter.window.chat_panel, reply, "cairn:copy/0", ".brand { color: red; }")
    assert reply.copied == ".brand { color: red; }"
    starter.window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    qapp.processEvents()  # (pytest-qt fails the test on an exception raised in here)


def test_attach_by_dialog_by_drop_and_by_paste(opened, loop, fake, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\nLaunch 2027-04-15\n")
    brief = tmp_path / "brief.txt"
    brief.write_text("The brief.\n")
    binary = tmp_path / "tool.bin"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    composer = opened.window.chat_panel.composer
    composer.ask_files = lambda: [str(notes)]
    composer.choose_files()
    wait_for(lambda: [p.name for p in composer.files()] == ["notes.md"])
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(brief)), QUrl.fromLocalFile(str(binary))])
    drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                      Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    opened.window.chat_panel.dropEvent(drop)  # on the composer: the chat panel takes it
    wait_for(lambda: composer.problem.text() != "")
    assert composer.problem.text() == ("Cannot attach 'tool.bin': Cairn can send text files, "
                                       "PDFs and images (PNG, JPEG, GIF, WebP)")
    assert [p.name for p in composer.files()] == ["notes.md", "brief.txt"]
    image = QImage(40, 30, QImage.Format.Format_RGB32)
    image.fill(QColor("#FF5500"))
    pasted = QMimeData()
    pasted.setImageData(image)
    composer.edit.insertFromMimeData(pasted)
    wait_for(lambda: len(composer.files()) == 3)
    assert composer.files()[2].suffix == ".png"
    # The pasted image shows small in its chip before it is sent.
    chip = composer._chips()[2]
    wait_for(lambda: chip.preview is not None)
    shown = chip.preview.pixmap().toImage()
    assert (shown.width(), shown.height()) == (40, 30)
    assert shown.pixelColor(5, 5) == QColor("#FF5500")
    assert chip.preview.accessibleName().startswith("Preview of Pasted image")
    assert all(c.preview is None for c in composer._chips()[:2])  # files: no preview
    fake.reply_text("Got all three.")
    send(opened, "Here are the files")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    person = entries(opened)[0]
    names = [name for name, _ in person.attachments]
    assert names[:2] == ["notes.md", "brief.txt"] and names[2].startswith("Pasted image")
    assert composer.files() == []
    request = fake.message_requests[-1].body
    blocks = request["messages"][-1]["content"]
    assert any(b.get("type") == "image" for b in blocks)
    assert any("Launch 2027-04-15" in str(b.get("text", "")) for b in blocks)
    stored = opened.cairn.chats.messages(chat_id)[0]
    assert [b["name"] for b in stored.content if b["type"] == "attachment"][:2] == [
        "notes.md", "brief.txt"]


def test_the_draft_is_kept_across_a_restart(qapp, loop, isolated, fake, folders):
    configure(isolated, fake)
    starter = open_window(qapp, isolated)
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, starter, acme)
    panel = starter.window.chat_panel
    panel.composer.edit.setFocus()
    from PySide6.QtTest import QTest

    QTest.keyClicks(panel.composer.edit, "Half a thought")
    QTest.keyClick(panel.composer.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(panel.composer.edit, "and a second line")
    assert panel.composer.text() == "Half a thought\nand a second line"  # Shift+Enter breaks
    close_window(starter)  # at once: the draft is saved at quit, not only after a pause
    again = open_window(qapp, isolated)
    try:
        again.window.select_chat(chat_id)
        wait_for(lambda: draft_of(again.window.chat_panel) == chat_id)
        assert again.window.chat_panel.composer.text() == "Half a thought\nand a second line"
    finally:
        close_window(again)


def test_a_long_chat_opens_at_its_end_and_loads_older_pages_upward(opened, loop, folders):
    from app.store.messages import Usage

    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    chats = opened.cairn.chats
    for i in range(400):
        chats.append(chat_id, "user", [{"type": "text", "text": f"Question {i}"}])
        chats.append(chat_id, "assistant", [{"type": "text", "text": f"Answer {i}\n\n" +
                                             "Some detail. " * 20}],
                     model="claude-sonnet-5-5", usage=Usage(10, 0, 0, 40), cost_usd=0.001)
    window = opened.window
    window.select_workspace(window.cairn.registry.chat(chat_id).workspace_id)
    window.select_chat(chat_id)
    panel = window.chat_panel
    wait_for(lambda: len(entries(opened)) > 0)
    view = panel.view
    first = len(entries(opened))
    assert first < 800 and entries(opened)[-1].text.startswith("Answer 399")
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum()  # at its end
    bottom_entry = view.indexAt(view.viewport().rect().center()).row()
    in_sight = entries(opened)[bottom_entry]
    view.verticalScrollBar().setValue(0)  # the person scrolls to the top
    wait_for(lambda: len(entries(opened)) > first)
    assert entries(opened)[0].kind == PERSON  # a page starts where a turn starts
    assert not view.older_pending
    # The messages that were in sight are still where the person left them (no jump).
    assert in_sight in entries(opened)
    assert view.jump.isVisible()
    view.jump.click()
    assert bar.value() == bar.maximum() and not view.jump.isVisible()
    while view.has_older:
        view.verticalScrollBar().setValue(0)
        count = len(entries(opened))
        wait_for(lambda: len(entries(opened)) > count or not view.has_older)
    assert [e.text for e in entries(opened)][:2] == [
        "Question 0", "Answer 0\n\n" + ("Some detail. " * 20)]
    assert len(entries(opened)) == 800


def test_text_is_selectable_and_copyable_and_links_open_in_the_browser(opened, loop, fake,
                                                                        folders, monkeypatch):
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtTest import QTest

    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    fake.reply_text("See [the guidelines](https://acme.example/brand) for the palette.")
    send(opened, "Where are the guidelines?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    view = opened.window.chat_panel.view
    reply = entries(opened)[1]
    index = view.conversation.index(1, 0)
    rect = view.visualRect(index)
    layout = view.messages.layout(reply, rect.width(), 1)
    body = layout.blocks[0]
    # A press on the text puts a selectable copy of the message over it.
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.topLeft() +
                     QPointF(body.x + body.doc.size().width() - 4, body.y + 4).toPoint())
    browser = view._selector
    assert browser is not None and browser.isVisible()
    assert "for the palette." in browser.toPlainText()
    browser.selectAll()
    browser.copy()
    assert "See the guidelines for the palette." in QApplication.clipboard().text()
    # Ctrl+C with nothing selected copies the whole message as markdown.
    QTest.keyClick(view.viewport(), Qt.Key.Key_Escape)
    view.setFocus()
    view.setCurrentIndex(index)
    QTest.keySequence(view, "Ctrl+C")
    assert QApplication.clipboard().text() == (
        "See [the guidelines](https://acme.example/brand) for the palette.")
    opened_urls: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened_urls.append(url.toString()))
    follow_link(opened.window.chat_panel, reply, "https://acme.example/brand", None)
    follow_link(opened.window.chat_panel, reply, "file:///etc/passwd", None)  # never opened
    assert opened_urls == ["https://acme.example/brand"]


def test_the_title_is_renamed_in_place(opened, loop, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    from PySide6.QtTest import QTest

    header = opened.window.chat_panel.header
    assert header.trail.toolTip() == "Acme Inc ›"
    title = header.title
    title.setFocus()
    title.selectAll()
    QTest.keyClicks(title, "Launch copy")
    QTest.keyClick(title, Qt.Key.Key_Return)
    wait_for(lambda: opened.cairn.registry.chat(chat_id).title == "Launch copy")
    assert title.text() == "Launch copy"


def test_enter_and_shift_enter_swap_with_the_setting(opened, loop, fake, folders):
    from PySide6.QtTest import QTest

    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    run(opened.ops.set_setting("chat.enter_sends", False))
    composer = opened.window.chat_panel.composer
    wait_for(lambda: not composer.edit.enter_sends)
    composer.edit.setFocus()
    QTest.keyClicks(composer.edit, "line one")
    QTest.keyClick(composer.edit, Qt.Key.Key_Return)
    QTest.keyClicks(composer.edit, "line two")
    assert composer.text() == "line one\nline two" and not entries(opened)
    fake.reply_text("Two lines received.")
    QTest.keyClick(composer.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    assert entries(opened)[0].text == "line one\nline two"


def test_new_chat_with_ctrl_n_is_ready_to_write_in(opened, loop, folders):
    from PySide6.QtTest import QTest

    (acme,) = folders("Acme Inc")
    run(opened.ops.add_workspace(acme))
    window = opened.window
    ws = next(w for w in opened.cairn.registry.top_level() if w.path == acme)
    window.select_workspace(ws.id)
    window.activateWindow()
    QTest.keySequence(window, "Ctrl+N")
    wait_for(lambda: window.chat_panel.chat_id is not None)
    chat = opened.cairn.registry.chat(window.chat_panel.chat_id)
    assert chat.workspace_id == ws.id
    assert window.center_stack.currentWidget() is window.chat_panel
    assert window.chat_panel.composer.edit.hasFocus() or QApplication.focusWidget() is \
        window.chat_panel.composer.edit


def test_a_file_read_shows_as_a_quiet_line(opened, loop, fake, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    guide = tmp_path / "brand-guidelines.txt"
    guide.write_text("Orange #FF5500 is the accent.\n")
    ws = next(w for w in opened.cairn.registry.top_level() if w.path == acme)
    record, _ = run(opened.ops.add_file(ws.id, guide))
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id}, text_before="Let me check.")
    fake.reply_text("The accent is orange.")
    send(opened, "What is the accent colour?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    reply = entries(opened)[1]
    assert [(p.kind, p.text) for p in reply.parts] == [
        ("text", "Let me check."), ("tool", "Read brand-guidelines.txt"),
        ("text", "The accent is orange.")]



def test_a_reply_the_command_line_stores_shows_in_the_open_chat(opened, loop, folders, isolated):
    from app.cairn import Cairn
    from app.store.messages import Usage

    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    elsewhere = Cairn.open(isolated)  # another process, as far as SQLite can tell
    try:
        elsewhere.chats.append(chat_id, "user", [{"type": "text", "text": "From a terminal"}])
        elsewhere.chats.append(chat_id, "assistant", [{"type": "text", "text": "Answered."}],
                               model="claude-sonnet-5-5", usage=Usage(5, 0, 0, 2),
                               cost_usd=0.0001)
    finally:
        elsewhere.close()
    wait_for(lambda: [e.text for e in entries(opened)] == ["From a terminal", "Answered."])


def test_an_archived_chat_is_read_not_written_in(opened, loop, folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    composer = opened.window.chat_panel.composer
    run(opened.ops.archive_chat(chat_id))
    wait_for(lambda: composer.edit.isReadOnly())
    assert "archived" in composer.edit.placeholderText()
    assert not composer.attach.isEnabled() and not composer.send_button.isEnabled()
    run(opened.ops.unarchive_chat(chat_id))
    wait_for(lambda: not composer.edit.isReadOnly())
    assert composer.send_button.isEnabled()


def test_a_rate_limit_wait_is_counted_down_in_the_header_and_stop_ends_it(opened, loop, fake,
                                                                         folders):
    """A 429 asking to wait says so and for how long, counting down, and
    Stop ends the wait (nothing is sent again)."""
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(loop, opened, acme)
    panel = opened.window.chat_panel
    fake.reply_error_status(429, "rate_limit_error", "Slow down.", headers={"retry-after": "40"})
    send(opened, "Hello?")
    wait_for(lambda: "rate-limiting" in panel.header.status.text())
    said = panel.header.status.text()
    # (the fake is not Anthropic's server, and the window says which it is)
    assert said.startswith(f"The server at 127.0.0.1:{fake.port} is rate-limiting this key; "
                           "trying again in ")
    assert said.endswith("seconds. Stop ends the wait.")
    left = int(said.split("again in ")[1].split()[0])
    assert 30 <= left <= 40
    wait_for(lambda: panel.header.status.text() != said)  # it counts down
    assert "rate-limiting" in panel.header.status.text()
    panel.composer.stop_button.click()
    wait_for(lambda: idle(opened))
    assert "rate-limiting" not in panel.header.status.text()
    assert len(fake.message_requests) == 1
    assert opened.cairn.chats.message_count(chat_id) >= 1


def test_rows_reflow_when_the_chat_column_changes_width(opened, loop, fake, folders):
    """After the column narrows or widens (a splitter drag, the knowledge
    panel folded, the window resized), every row in sight has the height of its text at the
    new width: no bubble covers the line above, no gap opens."""
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    panel = opened.window.chat_panel
    long_text = "A sentence that wraps onto several lines in a narrow column. " * 12
    for n in range(3):
        fake.reply_text(f"Reply {n}. {long_text}")
        send(opened, f"Question {n}: {long_text}")
        wait_for(lambda n=n: idle(opened) and len(entries(opened)) == 2 * (n + 1))
    view = panel.view

    def laid_out_at_width() -> bool:
        width = view.viewport().width()
        model = view.conversation
        rects = [view.visualRect(model.index(row, 0)) for row in range(model.rowCount())]
        shown = [(row, r) for row, r in enumerate(rects) if r.isValid() and r.height() > 0]
        exact = all(r.height() == view.messages.layout(model.entries[row], width, row).height
                    for row, r in shown if r.intersects(view.viewport().rect()))
        stacked = all(a.bottom() < b.top() + 1 for (_, a), (_, b) in zip(shown, shown[1:]))
        return exact and stacked

    wait_for(laid_out_at_width)
    window = opened.window
    for width in (900, 1400, 1000):  # the window resized
        window.resize(width, window.height())
        wait_for(lambda w=width: window.width() == w)
        wait_for(laid_out_at_width)
    window.knowledge_action.trigger()  # the knowledge panel folded, and back
    wait_for(laid_out_at_width)
    window.knowledge_action.trigger()
    wait_for(laid_out_at_width)


def test_shift_f10_opens_a_messages_menu_as_the_menu_key_does(opened, loop, fake, folders,
                                                              monkeypatch):
    """The keyboard's way to a message's actions."""
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "Hello", "A short reply.")
    view = opened.window.chat_panel.view
    shown: list[list[str]] = []
    monkeypatch.setattr(view, "run_menu", lambda menu, where: shown.append(
        [action.text() for action in menu.actions()]))
    view.setFocus()
    view.setCurrentIndex(view.conversation.index(1, 0))
    from PySide6.QtTest import QTest

    QTest.keyClick(view, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert shown and shown[0][0] == "Copy message as markdown"


def test_a_live_reply_shows_each_round_s_text_as_its_own_paragraph():
    """In the window: the deltas as a turn publishes them, with a round's
    paragraph break, read as the stored reply reads (no blank line opening a part)."""
    from ui.chat.entries import REPLY, Entry

    entry = Entry(key="live", kind=REPLY)
    for delta in ("Let me read ", "your notes.", "\n\nYour notes say", " 2027-04-15."):
        entry.add_text(delta)
    assert entry.text == "Let me read your notes.\n\nYour notes say 2027-04-15."
    entry = Entry(key="live", kind=REPLY)
    entry.add_text("Let me check.")
    entry.add_tool_line("Read brand-guidelines.txt")
    entry.add_text("\n\nThe accent is orange.")
    assert [(p.kind, p.text) for p in entry.parts][-1] == ("text", "The accent is orange.")
