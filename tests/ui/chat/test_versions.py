"""Versions and forks in the window (DESIGN §13), in the real window against the fake
Anthropic server: Edit and Retry add versions (and send the shown path only), ‹ 2/3 › switches
them with the mouse and with Alt+Left / Alt+Right (the row stays where it was, the choice is
kept), a screen reader hears "version 2 of 3", Fork from here opens the new chat, a search
hit opens on its branch and find in the chat searches the shown path."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtTest import QTest

from app.store.messages import COMPLETE, Usage
from tests.ui.drivers import draft_of, idle
from tests.ui.helpers import run, wait_for
from ui.app import Starter

# ----------------------------------------------------------------- helpers

def panel_of(starter: Starter) -> Any:
    return starter.window.chat_panel


def entries(starter: Starter) -> list[Any]:
    return panel_of(starter).view.conversation.entries


def texts(starter: Starter) -> list[str]:
    return [e.text for e in entries(starter)]



def open_chat(starter: Starter, chat_id: str) -> None:
    starter.window.select_chat(chat_id)
    panel = panel_of(starter)
    wait_for(lambda: panel.chat_id == chat_id and draft_of(panel) == chat_id)


def new_chat(starter: Starter, folder: str, title: str = "") -> str:
    run(starter.ops.add_workspace(folder))
    chat, _ = run(starter.ops.new_chat(folder=folder, title=title))
    return chat.id


def send(starter: Starter, text: str) -> None:
    panel = panel_of(starter)
    panel.composer.set_text(text)
    panel.composer.edit.setFocus()
    panel.composer.send()


def sent_texts(fake: Any) -> list[str]:
    """The texts of the messages the last request to the model sent."""
    body = fake.message_requests[-1].body
    out = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        out.append("".join(b.get("text", "") for b in content if b.get("type") == "text"))
    return out


def say(starter: Starter, chat_id: str, role: str, text: str, **kw: Any) -> Any:
    """A message stored under the chat's leaf, as a turn stores it."""
    extra = {"model": "claude-sonnet-5-5", "usage": Usage(900, 0, 0, 60), "cost_usd": 0.003} \
        if role == "assistant" else {}
    extra.update(kw)
    message = starter.cairn.chats.append(chat_id, role, [{"type": "text", "text": text}],
                                         **extra)
    IDS[text] = message.id
    return message


def long_text(label: str) -> str:
    return "\n\n".join(f"{label}, paragraph {n}: the launch copy keeps to the brand voice and "
                       "says what the product does in plain words." for n in range(4))


IDS: dict[str, int] = {}  # the last branched chat's messages: text -> id


def branched_chat(starter: Starter, folder: str) -> tuple[str, list[int]]:
    """Three exchanges; the third reply has three versions, each with two more exchanges
    below it; the chat shows version 1.  Returns the chat and the three versions' ids (and
    every message's id by its text in ``IDS``)."""
    IDS.clear()
    chat_id = new_chat(starter, folder, "Headlines")
    for n in range(2):
        say(starter, chat_id, "user", f"Question {n}")
        say(starter, chat_id, "assistant", long_text(f"Answer {n}"))
    asked = say(starter, chat_id, "user", "Draft three launch headlines.")
    versions = []
    for v in range(1, 4):
        if v > 1:
            starter.cairn.chats.retry(chat_id, asked.id)
        versions.append(say(starter, chat_id, "assistant", long_text(f"Headlines v{v}")).id)
        for n in range(2):
            say(starter, chat_id, "user", f"Follow-up {n} on v{v}")
            say(starter, chat_id, "assistant", long_text(f"More on v{v}, {n}"))
    starter.cairn.chats.switch(chat_id, versions[0])
    return chat_id, versions


def row_of(starter: Starter, text_start: str) -> int:
    return next(i for i, e in enumerate(entries(starter)) if e.text.startswith(text_start))


def link_point(view: Any, row: int, href: str) -> QPoint:
    """Where the link *href* of row *row* is, in the viewport's coordinates."""
    index = view.conversation.index(row, 0)
    rect = view.visualRect(index)
    entry = view.conversation.entries[row]
    hovered = view.messages.hovered_row
    layout = view.messages.layout(entry, rect.width(), hovered if hovered == row else -1)
    for block in layout.blocks:
        text_block = block.doc.begin()
        while text_block.isValid():
            it = text_block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.charFormat().anchorHref() == href:
                    offset = fragment.position() - text_block.position() + 1
                    line = text_block.layout().lineForTextPosition(offset)
                    x = line.cursorToX(offset)
                    x = x[0] if isinstance(x, tuple) else x
                    top = block.doc.documentLayout().blockBoundingRect(text_block).top()
                    point = QPointF(rect.x() + block.x + x, rect.y() + block.y + top + line.y()
                                    + line.height() / 2)
                    return point.toPoint()
                it += 1
            text_block = text_block.next()
    raise AssertionError(f"no {href} link in row {row}")


def hover(view: Any, row: int) -> None:
    """The mouse over row *row* (its links show)."""
    rect = view.visualRect(view.conversation.index(row, 0))
    QTest.mouseMove(view.viewport(), rect.center())
    wait_for(lambda: view.messages.hovered_row == row)


# ----------------------------------------------------------------- edit and retry

def test_edit_adds_a_version_streams_its_reply_and_sends_only_the_shown_path(opened, fake,
                                                                             folders):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(opened, acme)
    open_chat(opened, chat_id)
    panel = panel_of(opened)
    view = panel.view
    for question, answer in (("Frist question", "First answer."),
                             ("Follow-up", "Second answer.")):
        fake.reply_text(answer)
        send(opened, question)
        wait_for(lambda a=answer: idle(opened) and texts(opened)[-1:] == [a])
    # Edit on the first message (not the last exchange): hovered, its Edit link clicked.
    view.scrollToTop()
    hover(view, 0)
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     link_point(view, 0, "cairn:edit"))
    wait_for(lambda: panel.composer.editing is not None)
    assert panel.composer.text() == "Frist question"
    fake.reply_text("A better answer.", chunk=4, delay=0.01)
    panel.composer.set_text("First question")
    panel.composer.send()
    wait_for(lambda: idle(opened) and texts(opened) == ["First question", "A better answer."])
    person, reply = entries(opened)
    assert (person.nth, person.of) == (2, 2) and (reply.nth, reply.of) == (1, 1)
    assert sent_texts(fake) == ["First question"]  # the shown path only: no other branch
    switch = view.switch_of(0)
    assert switch is not None and switch.count.text() == "2/2" and switch.isVisible()
    assert view.switch_of(1) is None
    # The first version is one click away, with everything below it.
    QTest.mouseClick(switch.previous, Qt.MouseButton.LeftButton)
    wait_for(lambda: texts(opened) == ["Frist question", "First answer.", "Follow-up",
                                       "Second answer."])
    assert view.switch_of(0).count.text() == "1/2"
    stored = opened.cairn.chats.messages(chat_id)
    assert opened.cairn.chats.leaf(chat_id) == stored[-1].id and stored[-1].text == \
        "Second answer."
    # The composer continues the branch shown.
    fake.reply_text("Third answer.")
    send(opened, "And then?")
    wait_for(lambda: idle(opened) and texts(opened)[-1:] == ["Third answer."])
    assert sent_texts(fake) == ["Frist question", "First answer.", "Follow-up",
                                "Second answer.", "And then?"]


def test_retry_adds_a_sibling_reply_from_the_keyboard(opened, fake, folders, monkeypatch):
    (acme,) = folders("Acme Inc")
    chat_id = new_chat(opened, acme)
    open_chat(opened, chat_id)
    panel = panel_of(opened)
    view = panel.view
    fake.reply_text("Answer one.")
    send(opened, "Name a colour.")
    wait_for(lambda: idle(opened) and texts(opened) == ["Name a colour.", "Answer one."])
    assert entries(opened)[1].status == COMPLETE and "retry" in entries(opened)[1].actions
    # Shift+F10 on the reply: its menu; Retry chosen from it.
    chosen: list[str] = []

    def pick(menu: Any, _where: Any) -> None:
        for action in menu.actions():
            if action.text() == "Retry":
                chosen.append(action.text())
                action.trigger()

    monkeypatch.setattr(view, "run_menu", pick)
    view.setFocus()
    view.setCurrentIndex(view.conversation.index(1, 0))
    fake.reply_text("Answer two.", chunk=3, delay=0.01)
    QTest.keyClick(view, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert chosen == ["Retry"]
    wait_for(lambda: idle(opened) and texts(opened) == ["Name a colour.", "Answer two."])
    reply = entries(opened)[1]
    assert (reply.nth, reply.of) == (2, 2)
    assert sent_texts(fake) == ["Name a colour."]  # the old reply is not sent
    assert view.switch_of(1) is not None and view.switch_of(1).count.text() == "2/2"
    versions = opened.cairn.chats.versions(chat_id, reply.message_ids[0])
    assert [m.text for m in versions] == ["Answer one.", "Answer two."]


# ----------------------------------------------------------------- switching

def test_switch_with_the_mouse_keeps_the_message_in_place_and_is_remembered(opened, folders):
    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    open_chat(opened, chat_id)
    view = panel_of(opened).view
    row = row_of(opened, "Headlines v1")
    assert (entries(opened)[row].nth, entries(opened)[row].of) == (1, 3)
    index = view.conversation.index(row, 0)
    # The keyboard was on the last message (its row goes with the switch: no jump to it).
    view.setCurrentIndex(view.conversation.index(view.conversation.rowCount() - 1, 0))
    view.scrollTo(index, view.ScrollHint.PositionAtCenter)
    wait_for(lambda: not view.pinned)
    top = view.visualRect(index).top()
    switch = view.switch_of(row)
    assert switch.count.text() == "1/3" and not switch.previous.isEnabled()
    # The switch sits in the row's footer, over the gap left for it.
    assert view.visualRect(index).contains(switch.geometry())
    QTest.mouseClick(switch.next, Qt.MouseButton.LeftButton)
    wait_for(lambda: entries(opened)[row].text.startswith("Headlines v2"))
    assert texts(opened)[row + 1:] == ["Follow-up 0 on v2", long_text("More on v2, 0"),
                                       "Follow-up 1 on v2", long_text("More on v2, 1")]
    assert texts(opened)[:row] == ["Question 0", long_text("Answer 0"), "Question 1",
                                   long_text("Answer 1"), "Draft three launch headlines."]
    assert view.visualRect(view.conversation.index(row, 0)).top() == top  # not moved
    assert view.switch_of(row).count.text() == "2/3"
    assert view.visualRect(view.conversation.index(row, 0)).contains(
        view.switch_of(row).geometry())
    # Kept: the chat's leaf is the newest message below version 2, and it opens there again.
    leaf = opened.cairn.chats.leaf(chat_id)
    assert opened.cairn.chats.messages(chat_id)[-1].text == long_text("More on v2, 1")
    other = new_chat(opened, acme, "Other")
    open_chat(opened, other)
    open_chat(opened, chat_id)
    assert entries(opened)[row_of(opened, "Headlines v2")].nth == 2
    assert opened.cairn.chats.leaf(chat_id) == leaf


def test_switch_with_alt_arrows_on_the_message_the_keyboard_is_on(opened, folders):
    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    open_chat(opened, chat_id)
    view = panel_of(opened).view
    row = row_of(opened, "Headlines v1")
    view.setFocus()
    view.setCurrentIndex(view.conversation.index(row, 0))
    QTest.keyClick(view, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    wait_for(lambda: entries(opened)[row].text.startswith("Headlines v2"))
    QTest.keyClick(view, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    wait_for(lambda: entries(opened)[row].text.startswith("Headlines v3"))
    assert view.currentIndex().row() == row and view.hasFocus()  # the keyboard stays there
    QTest.keyClick(view, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)  # the last: stays
    QTest.keyClick(view, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    wait_for(lambda: entries(opened)[row].text.startswith("Headlines v2"))
    assert opened.cairn.chats.on_path(chat_id, versions[1])
    # A message without versions: Alt+arrows do nothing.
    view.setCurrentIndex(view.conversation.index(0, 0))
    QTest.keyClick(view, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
    assert opened.cairn.chats.on_path(chat_id, versions[1])
    # The switch's buttons take the keyboard too (Tab reaches them; Space presses).
    switch = view.switch_of(row)
    switch.next.setFocus(Qt.FocusReason.TabFocusReason)
    QTest.keyClick(switch.next, Qt.Key.Key_Space)
    wait_for(lambda: entries(opened)[row].text.startswith("Headlines v3"))
    new_switch = view.switch_of(row)
    wait_for(lambda: new_switch.previous.hasFocus())  # next is off at the last: previous
    # Help › Keyboard shortcuts (Ctrl+/) lists the keys.
    from ui.shortcuts import SHORTCUTS

    assert any(keys == "Alt+Left / Alt+Right" and where == "Conversation"
               for keys, _what, where in SHORTCUTS)


def test_a_screen_reader_hears_the_version_and_the_buttons_names(opened, folders):
    from PySide6.QtCore import Qt as _Qt

    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    opened.cairn.chats.switch(chat_id, versions[1])
    open_chat(opened, chat_id)
    view = panel_of(opened).view
    row = row_of(opened, "Headlines v2")
    index = view.conversation.index(row, 0)
    assert index.data(_Qt.ItemDataRole.AccessibleDescriptionRole) == "version 2 of 3"
    assert "version 2 of 3" in index.data(_Qt.ItemDataRole.AccessibleTextRole)
    assert view.conversation.index(0, 0).data(_Qt.ItemDataRole.AccessibleDescriptionRole) \
        is None  # no versions: nothing said
    switch = view.switch_of(row)
    assert switch.previous.accessibleName() == "Previous version"
    assert switch.next.accessibleName() == "Next version"
    assert switch.accessibleDescription() == "version 2 of 3"
    assert switch.previous.isEnabled() and switch.next.isEnabled()
    assert switch.previous.focusPolicy() & _Qt.FocusPolicy.TabFocus
    # The footer leaves room for it: the gap is in the painted footer.
    from ui.chat.delegate import GAP_URL

    layout = view.messages.layout(entries(opened)[row], view.viewport().width(), row)
    assert GAP_URL in layout.blocks[-1].doc.toHtml() and layout.switch is not None


# ----------------------------------------------------------------- fork

def test_fork_from_here_opens_a_new_chat_with_the_path_up_to_the_message(opened, folders,
                                                                          monkeypatch):
    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    opened.cairn.chats.switch(chat_id, versions[2])
    open_chat(opened, chat_id)
    panel = panel_of(opened)
    view = panel.view
    row = row_of(opened, "Headlines v3")
    offered: list[list[str]] = []

    def pick(menu: Any, _where: Any) -> None:
        offered.append([a.text() for a in menu.actions()])
        for action in menu.actions():
            if action.text() == "Fork from here":
                action.trigger()

    monkeypatch.setattr(view, "run_menu", pick)
    view.setFocus()
    view.setCurrentIndex(view.conversation.index(row, 0))
    QTest.keyClick(view, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
    assert "Fork from here" in offered[0]
    assert "Previous version (Alt+Left)" in offered[0]
    wait_for(lambda: panel.chat_id not in (None, chat_id) and draft_of(panel) == panel.chat_id)
    fork = opened.cairn.registry.chat(panel.chat_id)
    source = opened.cairn.registry.chat(chat_id)
    assert fork.title == "Headlines (fork)" and fork.workspace_id == source.workspace_id
    assert texts(opened) == ["Question 0", long_text("Answer 0"), "Question 1",
                             long_text("Answer 1"), "Draft three launch headlines.",
                             long_text("Headlines v3")]
    assert all(e.of == 1 for e in entries(opened))  # a fork holds one path
    wait_for(lambda: opened.window.sidebar.current_id() == fork.id)
    wait_for(lambda: panel.composer.edit.hasFocus())  # ready to write in
    # The chat forked from is as it was.
    assert opened.cairn.chats.on_path(chat_id, versions[2])
    assert [m.id for m in opened.cairn.chats.versions(chat_id, versions[0])] == versions


# ----------------------------------------------------------------- search and find

def test_a_search_hit_on_another_branch_opens_the_chat_on_that_branch(opened, folders):
    from ui.search.box import Target

    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    # A second reply to a follow-up on version 2's branch: two branches away from the shown.
    hidden = opened.cairn.chats.append(chat_id, "assistant", [
        {"type": "text", "text": "The zeppelin headline, kept on its own branch."}],
        parent=IDS["Follow-up 0 on v2"])
    assert not opened.cairn.chats.on_path(chat_id, hidden.id)
    window = opened.window
    window.open_search()
    answered: list[str] = []
    window.search_box.sig_answered.connect(answered.append)
    window.search_box.field.setText("zeppelin")
    wait_for(lambda: "zeppelin" in answered)
    target = window.search_box.current()
    assert isinstance(target, Target) and target.message == hidden.id
    QTest.keyClick(window.search_box.field, Qt.Key.Key_Return)
    panel = panel_of(opened)
    wait_for(lambda: panel.chat_id == chat_id and any(
        "zeppelin" in e.text for e in entries(opened)))
    row = row_of(opened, "The zeppelin headline")
    wait_for(lambda: panel.view.currentIndex().row() == row)
    assert opened.cairn.chats.on_path(chat_id, hidden.id)  # the branch is the one kept
    assert entries(opened)[row_of(opened, "Headlines v2")].nth == 2
    assert entries(opened)[row].nth == 2 and entries(opened)[row].of == 2


def test_find_in_the_chat_searches_the_shown_path(opened, folders):
    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    open_chat(opened, chat_id)  # version 1 shown: "v3" is only on another branch
    panel = panel_of(opened)
    bar = panel.find_bar
    bar.open_bar()
    with_answer: list[int] = []
    bar.sig_searched.connect(lambda: with_answer.append(1))
    bar.field.setText("v3")
    wait_for(lambda: with_answer)
    assert bar.count.text() == "No matches"
    with_answer.clear()
    bar.field.setText("v1")
    wait_for(lambda: with_answer)
    # Each "v1" of the version shown and of the messages below it; none of the others'.
    assert bar.count.text() == "14 of 14"
    assert all(panel.view.conversation.row_of(f"m{m}") is not None
               for m, _ in bar.matches)


def test_a_branch_the_command_line_shows_shows_in_the_open_chat(opened, folders, isolated):
    """`cairn chat switch` (another process) while the chat is open: the window follows,
    to an older branch too (whose ids are all below the one shown)."""
    from app.cairn import Cairn

    (acme,) = folders("Acme Inc")
    chat_id, versions = branched_chat(opened, acme)
    opened.cairn.chats.switch(chat_id, versions[2])
    open_chat(opened, chat_id)
    assert entries(opened)[-1].text == long_text("More on v3, 1")
    elsewhere = Cairn.open(isolated)  # another process, as far as SQLite can tell
    try:
        elsewhere.chats.switch(chat_id, versions[0])
    finally:
        elsewhere.close()
    wait_for(lambda: entries(opened)[-1].text == long_text("More on v1, 1"))
    assert entries(opened)[row_of(opened, "Headlines v1")].nth == 1
