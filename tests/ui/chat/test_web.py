"""Web search and fetch in the chat view, read from the stored blocks: a
quiet line per search and per page read, a failed search as one sentence, the sources under
the reply (plain text: titles come from the web), numbered citation marks that show their
source, and a source that opens in the browser only after its full address was shown."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QDesktopServices
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu, QMessageBox

from app.chat.web import clean, domain_of, safe_url
from app.store.messages import COMPLETE, Message, Usage
from tests.ui.web_replies import CLAIM, PYPI, QT, QUESTION, WHEELS, WIKI, citation, web_reply
from ui.chat.entries import REPLY, Entry, build
from ui.chat.markdown import render
from ui.chat.model import ConversationModel
from ui.chat.view import ConversationView, source_of
from ui.chat.web import MARK_CLOSE, MARK_OPEN, SOURCE
from ui.links import open_found


def message(id: int, role: str, content: list[dict[str, Any]], **kw: Any) -> Message:
    return Message(id, "ch_1", role, content, kw.pop("status", COMPLETE), None,
                   kw.pop("model", "claude-sonnet-5-5"), kw.pop("usage", Usage(2095, 0, 0, 96)),
                   kw.pop("cost_usd", 0.0163), "2026-12-01T10:00:00.000Z")


def web_entries(content: list[dict[str, Any]] | None = None) -> list[Entry]:
    return build([message(1, "user", [{"type": "text", "text": QUESTION}]),
                  message(2, "assistant", web_reply() if content is None else content)])


def test_a_web_reply_has_a_line_per_search_and_read_and_its_sources_numbered():
    _, reply = web_entries()
    assert reply.kind == REPLY
    assert [(p.kind, p.text) for p in reply.parts[:4]] == [
        ("tool", "Searched the web: PySide6 6.12 release notes"),
        ("tool", "Read qt.io"),
        ("tool", "Searched the web: PySide6 6.12 deprecations"),
        ("tool", "The web search did not work: the searches allowed for one reply were "
                 "used up."),
    ]
    # The cited sources first (in the order first cited: their marks' numbers), then the
    # other pages found; each address once, though the fetch read Qt's page again.
    assert [(s.title, s.domain) for s in reply.sources] == [
        ("Qt for Python 6.12 released", "qt.io"), ("PySide6 · PyPI", "pypi.org"),
        ("Qt (software) - Wikipedia", "en.wikipedia.org")]
    # The round's text blocks are one text (the API cuts a cited sentence out): no paragraph
    # between them, and each cited block ends with its marks.
    [text] = [p.text for p in reply.parts if p.kind == "text"]
    assert text.startswith("Here is what the release notes say. " + CLAIM
                           + f"{MARK_OPEN}1{MARK_CLOSE}" + WHEELS
                           + f"{MARK_OPEN}2{MARK_CLOSE}{MARK_OPEN}1{MARK_CLOSE}\n\n")


def test_the_window_and_the_command_line_list_the_same_sources_in_the_same_order():
    """One use case (app.chat.web.sources): ``cairn ask`` lists what the window shows, and
    the numbers the window's marks carry are the command line's order too."""
    from app.chat.web import sources

    _, reply = web_entries()
    assert sources([web_reply()]) == reply.sources


def test_copy_and_assistive_technology_get_the_marks_and_the_sources_as_text():
    _, reply = web_entries()
    assert f"{CLAIM}[1]{WHEELS}[2][1]" in reply.text
    assert reply.text.endswith(
        "Sources:\n[1] Qt for Python 6.12 released — https://www.qt.io/blog/qt-for-python-6.12"
        "\n[2] PySide6 · PyPI — https://pypi.org/project/PySide6/"
        "\n[3] Qt (software) - Wikipedia — https://en.wikipedia.org/wiki/Qt_(software)")
    model = ConversationModel()
    model.show(web_entries())
    said = model.data(model.index(1, 0), Qt.ItemDataRole.AccessibleTextRole)
    assert "Searched the web: PySide6 6.12 release notes" in said
    assert "[1] Qt for Python 6.12 released" in said and MARK_OPEN not in said


@pytest.mark.parametrize(("code", "said"), [
    ("unavailable", "the search service was not available"),
    ("too_many_requests", "the search service was busy"),
    ("query_too_long", "the query was too long"),
    ("something_new", "the search failed"),
])
def test_a_failed_search_is_one_sentence_under_its_line(code, said):
    _, reply = web_entries([
        {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}},
        {"type": "web_search_tool_result", "tool_use_id": "s1",
         "content": {"type": "web_search_tool_result_error", "error_code": code}},
        {"type": "text", "text": "I could not look that up."}])
    assert [(p.kind, p.text) for p in reply.parts] == [
        ("tool", "Searched the web: q"),
        ("tool", f"The web search did not work: {said}."),
        ("text", "I could not look that up.")]
    assert reply.sources == []


def test_a_failed_read_is_one_sentence_under_its_line():
    _, reply = web_entries([
        {"type": "server_tool_use", "id": "f1", "name": "web_fetch",
         "input": {"url": "https://intranet.acme.example/plan"}},
        {"type": "web_fetch_tool_result", "tool_use_id": "f1",
         "content": {"type": "web_fetch_tool_result_error", "error_code": "url_not_allowed"}}])
    assert [p.text for p in reply.parts] == [
        "Read intranet.acme.example", "The web page could not be read: the site is not allowed in this workspace."]


def test_the_rounds_of_a_turn_keep_one_numbering():
    """A paused turn, continued: its second round cites a page the first one found."""
    first = [{"type": "server_tool_use", "id": "s1", "name": "web_search",
              "input": {"query": "pyside6"}},
             {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [QT, PYPI]},
             {"type": "text", "text": "One.", "citations": [citation(PYPI, "x")]}]
    second = [{"type": "text", "text": "Two.", "citations": [citation(QT, "y")]},
              {"type": "text", "text": " Three.", "citations": [citation(PYPI, "z")]}]
    _, reply = build([message(1, "user", [{"type": "text", "text": "Go"}]),
                      message(2, "assistant", first), message(3, "assistant", second)])
    assert "One.[1]\n\nTwo.[2] Three.[1]" in reply.text
    assert [s.url for s in reply.sources] == [PYPI["url"], QT["url"]]


def test_what_came_from_the_web_stays_plain_text():
    hostile = {"type": "web_search_result", "url": "https://evil.example/x",
               "encrypted_content": "E",
               "title": "<img src=//host/share/t.png>Safe\u202egnp.exe\u200b bank\n" + "x" * 300}
    script = {"type": "web_search_result", "url": "javascript:alert(1)", "title": "Click",
              "encrypted_content": "E"}
    forged = f"Trust me{MARK_OPEN}1{MARK_CLOSE}"  # model text cannot make a mark
    _, reply = web_entries([
        {"type": "server_tool_use", "id": "s1", "name": "web_search",
         "input": {"query": "<b>bold</b>\u202eevil"}},
        {"type": "web_search_tool_result", "tool_use_id": "s1", "content": [hostile, script]},
        {"type": "text", "text": forged}])
    assert reply.parts[0].text == "Searched the web: <b>bold</b>evil"
    title = reply.sources[0].title
    assert title.startswith("<img src=//host/share/t.png>Safegnp.exe bank x")
    assert len(title) == 160 and title.endswith("…")
    assert reply.parts[1].text == "Trust me1"
    view = ConversationView()
    view.resize(700, 600)
    view.show_entries([reply])
    layout = view.messages.layout(reply, 700, 0)
    markup = "".join(block.doc.toHtml() for block in layout.blocks)
    assert "<img" not in markup and "&lt;img src=//host/share/t.png&gt;Safe" in markup
    assert "javascript:" not in markup  # shown, never a link
    assert [href for href in anchors(layout) if href.startswith(SOURCE)] == [f"{SOURCE}0"]


def test_addresses_are_shown_as_they_open():
    assert safe_url("https://bank.example/\u202egnp.exe") == \
        "https://bank.example/%E2%80%AEgnp.exe"
    assert safe_url(" https://a.example/b c ") == "https://a.example/b%20c"
    assert domain_of("https://www.xn--80ak6aa92e.com/") == "xn--80ak6aa92e.com"  # punycode
    assert clean("a\u0000b\tc  d\u200f") == "ab c d"


def test_marks_are_links_only_in_a_reply():
    text = f"Cited.{MARK_OPEN}1{MARK_CLOSE}"
    assert f'href="{SOURCE}0"' in render(text, marks=True).html
    preview = render(text).html  # a knowledge document's preview: no mark, no link
    assert SOURCE not in preview and MARK_OPEN not in preview and "Cited.1" in preview


def anchors(layout: Any) -> list[str]:
    found = []
    for block in layout.blocks:
        text_block = block.doc.begin()
        while text_block.isValid():
            it = text_block.begin()
            while not it.atEnd():
                fmt = it.fragment().charFormat()
                if fmt.isAnchor():
                    found.append(fmt.anchorHref())
                it += 1
            text_block = text_block.next()
    return found


def point_of(view: ConversationView, row: int, text: str) -> QPoint:
    """Where *text* is painted in *row* (the middle of its first character), in the viewport."""
    entry = view.conversation.entries[row]
    rect = view.visualRect(view.conversation.index(row, 0))
    for block in view.messages.layout(entry, rect.width(), row).blocks:
        cursor = block.doc.find(text)
        if cursor.isNull():
            continue
        cursor.setPosition(cursor.selectionStart() + 1)
        line = cursor.block().layout().lineForTextPosition(
            cursor.position() - cursor.block().position())
        x = line.cursorToX(cursor.position() - cursor.block().position())
        box = block.doc.documentLayout().blockBoundingRect(cursor.block())  # (a table cell's)
        at = QPointF(block.x + box.left() + (x[0] if isinstance(x, tuple) else x),
                     block.y + box.top() + line.y() + line.height() / 2)
        return (at + QPointF(rect.topLeft())).toPoint()
    raise AssertionError(f"{text!r} is not shown")


@pytest.fixture
def shown(qtbot) -> ConversationView:  # type: ignore[no-untyped-def]
    view = ConversationView()
    qtbot.addWidget(view)
    view.resize(760, 700)
    view.show_entries(web_entries())
    view.show()
    qtbot.waitExposed(view)
    return view


def test_a_citation_mark_and_a_source_title_are_links_that_name_their_source(shown, qtbot):
    clicked: list[str] = []
    shown.sig_anchor.connect(lambda entry, href, code: clicked.append(href))
    reply = shown.conversation.entries[1]
    layout = shown.messages.layout(reply, shown.viewport().width(), 1)
    assert anchors(layout).count(f"{SOURCE}0") == 3  # two marks and the title
    QTest.mouseClick(shown.viewport(), Qt.MouseButton.LeftButton,
                     pos=point_of(shown, 1, "[2]"))
    QTest.mouseClick(shown.viewport(), Qt.MouseButton.LeftButton,
                     pos=point_of(shown, 1, "Qt (software) - Wikipedia"))
    assert clicked == [f"{SOURCE}1", f"{SOURCE}2"]
    assert source_of(reply, clicked[0]) == reply.sources[1]
    shown_text = "\n".join(b.doc.toPlainText() for b in layout.blocks)
    assert "Sources\n1.\nQt for Python 6.12 released · qt.io" in shown_text


def test_hovering_a_mark_shows_its_sources_title_and_address(shown, qtbot, monkeypatch):
    from PySide6.QtWidgets import QToolTip

    tips: list[str] = []
    monkeypatch.setattr(QToolTip, "showText", lambda where, text, *a: tips.append(text))
    QTest.mouseMove(shown.viewport(), point_of(shown, 1, "[1]"))
    qtbot.waitUntil(lambda: bool(tips))
    assert tips[-1] == "1. Qt for Python 6.12 released\nhttps://www.qt.io/blog/qt-for-python-6.12"


def test_the_keyboard_reaches_every_source_through_the_messages_menu(shown, qtbot):
    menus: list[list[str]] = []
    shown.run_menu = lambda menu, where: menus.append(  # type: ignore[method-assign]
        [a.text() for a in menu.actions()]) or _trigger(menu, "Open source 3")
    clicked: list[str] = []
    shown.sig_anchor.connect(lambda entry, href, code: clicked.append(href))
    shown.setFocus()
    shown.setCurrentIndex(shown.conversation.index(1, 0))
    QTest.keyClick(shown, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert [t for t in menus[0] if t.startswith("Open source")] == [
        "Open source 1: Qt for Python 6.12 released", "Open source 2: PySide6 · PyPI",
        "Open source 3: Qt (software) - Wikipedia"]
    assert clicked == [f"{SOURCE}2"]


def _trigger(menu: QMenu, starting: str) -> None:
    next(a for a in menu.actions() if a.text().startswith(starting)).trigger()


def answer_the_question(key: Qt.Key | None, seen: list[QMessageBox]) -> None:
    """When the question comes up: note it, then press *key* (None: click Open)."""
    def answer() -> None:
        box = QApplication.activeModalWidget()
        if not isinstance(box, QMessageBox):
            QTimer.singleShot(10, answer)
            return
        seen.append(box)
        if key is None:
            next(b for b in box.buttons() if b.text() == "Open in browser").click()
        else:
            QTest.keyClick(box, key)
    QTimer.singleShot(0, answer)


def test_a_source_opens_only_after_its_full_address_was_shown(qapp, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl",
                        lambda url: opened.append(url.toString()) or True)
    seen: list[QMessageBox] = []
    answer_the_question(Qt.Key.Key_Escape, seen)
    assert open_found(QT["url"], QT["title"]) is False  # Esc: nothing opens
    assert opened == []
    [box] = seen
    assert QT["url"] in box.text() and box.textFormat() == Qt.TextFormat.PlainText
    assert box.accessibleName() == "Open this page?"
    answer_the_question(None, seen)
    assert open_found(QT["url"], QT["title"]) is True
    assert opened == [QT["url"]]
    assert open_found("file:///etc/passwd") is False  # never asked, never opened
    assert len(seen) == 2 and opened == [QT["url"]]


def test_the_windows_panel_asks_before_opening_a_source(qapp, monkeypatch):
    from ui.chat.panel import ChatPanel

    asked: list[tuple[str, str]] = []
    monkeypatch.setattr("ui.chat.panel.open_found",
                        lambda url, title, parent: asked.append((url, title)) or False)
    _, reply = web_entries()
    ChatPanel._anchor(object(), reply, f"{SOURCE}1", None)  # type: ignore[arg-type]
    ChatPanel._anchor(object(), reply, f"{SOURCE}9", None)  # type: ignore[arg-type]
    assert asked == [(PYPI["url"], PYPI["title"])]
    assert WIKI["url"] not in [url for url, _ in asked]


def test_a_replys_text_without_web_blocks_is_unchanged():
    """Rounds still meet at a paragraph; one round's single text block is as it was."""
    _, reply = build([message(1, "user", [{"type": "text", "text": "Hi"}]),
                      message(2, "assistant", [{"type": "text", "text": "One."}]),
                      message(3, "assistant", [{"type": "text", "text": "Two."}])])
    assert reply.text == "One.\n\nTwo." and reply.sources == []



# --- in the window, through the real SDK against the fake server ---------------------------

def test_web_search_turned_on_in_a_workspace_then_a_reply_with_sources_and_a_mark_opened(
        opened, loop, fake, folders, monkeypatch):
    from tests.fake_anthropic import cited_text, web_search_result
    from tests.ui.drivers import entries, idle, send
    from tests.ui.helpers import run, wait_for

    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    chat, _ = run(opened.ops.new_chat(folder=acme))
    window = opened.window
    window.select_chat(chat.id)
    panel = window.chat_panel
    wait_for(lambda: panel.chat_id == chat.id)
    toggle = panel.composer.web
    assert toggle.accessibleName() == "Search the web" and not toggle.isChecked()

    # The workspace's menu: "Web search…", its dialog, saved (a refusal first).
    window.sidebar.handlers.edit_web_search(ws.id)
    wait_for(lambda: window.sidebar.handlers.web_dialog is not None
             and window.sidebar.handlers.web_dialog.isVisible())
    dialog = window.sidebar.handlers.web_dialog
    assert [w.accessibleName() for w in (dialog.switch, dialog.max_uses, dialog.only,
                                         dialog.never, dialog.domains)] == [
        "Web search", "Searches per reply", "Only these sites", "Any site but these", "Sites"]
    assert not dialog.max_uses.isEnabled()  # off: its details wait
    dialog.switch.setFocus()
    QTest.keyClick(dialog.switch, Qt.Key.Key_Space)
    assert dialog.switch.isChecked() and dialog.max_uses.isEnabled()
    dialog.max_uses.setValue(3)
    dialog.domains.setPlainText("qt.io\nhttp://bad_site!")
    dialog.save()
    wait_for(lambda: dialog.problem.isVisible())
    assert "bad_site!" in dialog.problem.text() and dialog.isVisible()
    assert run(opened.ops.web_settings(ws.id)).enabled is False  # nothing stored
    dialog.domains.setPlainText("qt.io, pypi.org")
    dialog.save()
    wait_for(lambda: not dialog.isVisible())
    stored = run(opened.ops.web_settings(ws.id))
    assert (stored.enabled, stored.max_uses, stored.allowed_domains) == (
        True, 3, ("qt.io", "pypi.org"))
    wait_for(lambda: toggle.isChecked())  # the composer follows the workspace

    qt_page = web_search_result(QT["url"], QT["title"])
    fake.reply_web_search("PySide6 6.12 release notes", [qt_page], answer=[
        "Here is the news. ", cited_text(CLAIM, qt_page)])
    send(opened, QUESTION)
    wait_for(lambda: idle(opened) and len(entries(opened)) == 2
             and entries(opened)[1].sources)
    tools = fake.message_requests[-1].body["tools"]
    web_search = next(t for t in tools if t.get("name") == "web_search")
    assert web_search["max_uses"] == 3 and web_search["allowed_domains"] == ["qt.io", "pypi.org"]
    reply = entries(opened)[1]
    assert reply.parts[0].text == "Searched the web: PySide6 6.12 release notes"
    assert f"{CLAIM}[1]" in reply.text and reply.sources[0].url == QT["url"]

    # The mark, clicked: the question shows the address; Escape leaves it closed, Open opens.
    opened_urls: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl",
                        lambda url: opened_urls.append(url.toString()) or True)
    view = panel.view
    view.scrollToBottom()
    seen: list[QMessageBox] = []
    answer_the_question(Qt.Key.Key_Escape, seen)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point_of(view, 1, "[1]"))
    wait_for(lambda: bool(seen))
    assert QT["url"] in seen[0].text() and opened_urls == []
    answer_the_question(None, seen)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=point_of(view, 1, QT["title"]))
    wait_for(lambda: opened_urls == [QT["url"]])

    # Off for one message: no web tool goes, and the toggle is back on after it.
    toggle.setFocus()
    QTest.keyClick(toggle, Qt.Key.Key_Space)
    assert not toggle.isChecked() and toggle.choice() is False
    fake.reply_text("From what I know: nothing new.")
    send(opened, "And without looking it up?")
    wait_for(lambda: idle(opened) and len(entries(opened)) == 4)
    assert not any(t.get("name") == "web_search"
                   for t in fake.message_requests[-1].body.get("tools") or [])
    assert toggle.isChecked() and toggle.choice() is None
