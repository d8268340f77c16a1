"""Sentences and small dialogs: sentences start with a capital, a new chat with
nothing selected says where it went, the Rename dialog has room for its title, an edited
suggestion is accepted with Ctrl+Enter and its dialog does not linger."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QDialog

from tests.ui.drivers import chat_open_in
from tests.ui.helpers import wait_for
from ui.knowledge.suggestions import EditDialog
from ui.sidebar.actions import TitleDialog
from ui.text import sentence


def test_a_core_sentence_starts_with_a_capital():
    assert sentence("cannot create a chat in 'Thesis': its folder is missing") == (
        "Cannot create a chat in 'Thesis': its folder is missing")
    assert sentence("run `cairn key set`") == "Run cairn key set"
    assert sentence("2 files") == "2 files" and sentence("") == ""


def test_a_new_chat_with_nothing_selected_says_where_it_went(opened):
    window = opened.window
    assert window.selected_workspace_id() is None
    window.new_chat()
    wait_for(lambda: chat_open_in(window) is not None and window.notice.isVisible())
    assert "Ungrouped" in window.notice.label.text()


def test_the_rename_dialog_has_room_for_its_title(qapp):
    dialog = TitleDialog(None, "Rename workspace", "Title", "Acme Inc")
    dialog.show()
    assert dialog.width() >= dialog.fontMetrics().horizontalAdvance("Rename workspace") + 160
    dialog.close()


def test_ctrl_enter_accepts_an_edited_suggestion(qapp):
    dialog = EditDialog("Keep answers short.")
    dialog.show()
    QTest.keyClick(dialog.text, Qt.Key.Key_End, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(dialog.text, " Really.")
    QTest.keyClick(dialog.text, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.result() == QDialog.DialogCode.Accepted
    assert dialog.text.toPlainText() == "Keep answers short. Really."  # no line break added


def test_the_edit_dialog_goes_after_use(opened, tmp_path):
    from tests.ui.drivers import PREFERENCES, strip_of, with_document

    ws_id = with_document(opened, tmp_path, PREFERENCES)
    strip = strip_of(opened, ws_id)

    def cancel() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, EditDialog)
        box.reject()

    for _ in range(2):
        QTimer.singleShot(0, cancel)
        assert strip.ask_edit("text") is None
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    assert strip.findChildren(EditDialog) == []
