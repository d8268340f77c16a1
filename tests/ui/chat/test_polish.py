"""The chat view's polish, in the real window against the fake server:
a code block's Copy says "Copied" for a moment, a quote has its bar, a sent image shows as a
thumbnail, and a click on a reply keeps its cost line in sight."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from tests.ui.drivers import entries, exchange, follow_link, idle, new_chat, send
from tests.ui.helpers import wait_for
from ui.chat.entries import PERSON, REPLY
from ui.chat.markdown import QUOTE_INDENT
from ui.chat.panel import COPIED_FOR_MS


def shown_text(starter, entry) -> str:  # type: ignore[no-untyped-def]
    view = starter.window.chat_panel.view
    layout = view.messages.layout(entry, view.viewport().width(),
                                  view.conversation.row_of(entry.key) or 0)
    return "\n".join(block.doc.toPlainText() for block in layout.blocks)


def test_a_code_blocks_copy_says_copied_for_a_moment(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "The CSS?",
             "Here:\n\n```css\n:root { --accent: #FF5500; }\n```\n\nAnd more.")
    reply = entries(opened)[1]
    assert "Copy" in shown_text(opened, reply) and "Copied" not in shown_text(opened, reply)
    panel = opened.window.chat_panel
    follow_link(panel, reply, "cairn:copy/0", ":root { --accent: #FF5500; }")  # the link's click
    assert QApplication.clipboard().text() == ":root { --accent: #FF5500; }"
    assert "Copied" in shown_text(opened, reply)
    wait_for(lambda: "Copied" not in shown_text(opened, reply),
             timeout=COPIED_FOR_MS / 1000 + 10)  # then it says Copy again
    assert "Copy" in shown_text(opened, reply)


def test_a_quote_has_its_bar(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "What did Dana say?",
             "Dana wrote:\n\n> Ship in April.\n> Not before.\n>\n> > As the board said.\n\nDone.")
    view = opened.window.chat_panel.view
    reply = entries(opened)[1]
    row = view.conversation.row_of(reply.key)
    assert row is not None
    layout = view.messages.layout(reply, view.viewport().width(), row)
    bars = [(block, bar) for block in layout.blocks for bar in block.bars]
    assert sorted(bar.x() for _b, bar in bars) == [2, QUOTE_INDENT + 2]  # one per level
    outer = max((bar for _b, bar in bars), key=lambda b: b.height())
    assert outer.height() > 2 * view.fontMetrics().height()  # along both quoted paragraphs
    block, bar = next((b, r) for b, r in bars if r is outer)
    wait_for(lambda: view.viewport().isVisible())
    shot = view.viewport().grab().toImage()
    rect = view.visualRect(view.conversation.index(row, 0))
    at = QPoint(int(rect.x() + block.x + bar.x() + 1), int(rect.y() + block.y + bar.center().y()))
    assert QColor(shot.pixel(at)) == QColor(view.messages.colours.rule)  # painted


def test_a_sent_image_shows_as_a_thumbnail(opened, loop, fake, folders, tmp_path):
    (acme,) = folders("Acme Inc")
    new_chat(loop, opened, acme)
    picture = tmp_path / "mock-up.png"
    image = QImage(640, 480, QImage.Format.Format_RGB32)
    image.fill(QColor("#FF5500"))
    assert image.save(str(picture))
    composer = opened.window.chat_panel.composer
    composer.ask_files = lambda: [str(picture)]
    composer.choose_files()
    wait_for(lambda: [p.name for p in composer.files()] == ["mock-up.png"])
    fake.reply_text("A bold orange mock-up.")
    send(opened, "What do you think?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2)
    person = entries(opened)[0]
    assert person.kind == PERSON and [n for n, _ in person.images] == ["mock-up.png"]
    wait_for(lambda: all(person.thumbs.get(sha) is not None for _n, sha in person.images))
    (thumb,) = person.thumbs.values()
    assert (thumb.width(), thumb.height()) == (160, 120)  # scaled to fit, its shape kept
    view = opened.window.chat_panel.view
    row = view.conversation.row_of(person.key)
    assert row is not None
    layout = view.messages.layout(person, view.viewport().width(), row)
    assert layout.bubble is not None and layout.bubble.height() > 120
    assert "mock-up.png" in layout.blocks[0].doc.toPlainText()  # its name stays beside it
    view.scrollToTop()
    shot = view.viewport().grab().toImage()
    rect = view.visualRect(view.conversation.index(row, 0))
    inside = [QColor(shot.pixel(x, y)) for x in range(int(rect.x() + layout.bubble.left()),
                                                        int(rect.x() + layout.bubble.right()), 4)
              for y in range(int(rect.y() + layout.bubble.top()),
                             min(int(rect.y() + layout.bubble.bottom()), shot.height()), 4)]
    assert QColor("#FF5500") in inside  # the picture itself is painted


def test_a_click_or_right_click_on_a_reply_keeps_its_cost_line(opened, loop, fake, folders):
    (acme,) = folders("Acme Inc")
    exchange(loop, opened, fake, acme, "Options?",
             "Three options:\n\n1. **One.** The first.\n2. **Two.**\n\n- [x] Spelling\n"
             "- [ ] Checked with Dana")
    view = opened.window.chat_panel.view
    reply = entries(opened)[1]
    assert reply.kind == REPLY
    row = view.conversation.row_of(reply.key)
    assert row is not None
    rect = view.visualRect(view.conversation.index(row, 0))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(rect.center().x(), rect.top() + 20))
    wait_for(lambda: view._selector is not None)
    browser = view._selector
    assert browser is not None
    text = browser.document().toPlainText()
    assert " out · $" in text.splitlines()[-1]  # the cost line is the selection's last line
    # ... and in sight: the text is as tall as the message painted, never cut off below.
    assert browser.document().size().height() <= browser.height()
    last = browser.document().lastBlock()
    assert last.textList() is None  # not a bullet of the list above it
    view.run_menu = lambda menu, where: None  # (the menu is not run in a test)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.RightButton,
                     Qt.KeyboardModifier.NoModifier, QPoint(rect.center().x(), rect.top() + 20))
    layout = view.messages.layout(reply, view.viewport().width(), row)
    assert " out · $" in layout.blocks[-1].doc.toPlainText()
