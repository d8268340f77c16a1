"""The window from the keyboard: Down from the filter lands on the first
row, Enter on a section heading never folds the section, the focus shows as a ring in the
sidebar and a frame in the transcript, and Enter takes the archive question's visible
default button."""

from __future__ import annotations

from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton

from tests.ui.drivers import chat_open_in
from tests.ui.helpers import run, wait_for
from ui.sidebar import CHAT, ID_ROLE, KIND_ROLE, WORKSPACES


def picture(widget: Any, rect: QRect) -> QImage:
    return widget.grab(rect).toImage()


def focus(widget: Any) -> None:
    widget.window().activateWindow()
    widget.setFocus(Qt.FocusReason.TabFocusReason)
    wait_for(widget.hasFocus)


def test_down_from_the_filter_lands_on_the_first_match_with_a_focus_ring(opened, folders):
    window = opened.window
    sidebar = window.sidebar
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    run(opened.ops.new_chat(workspace_id=ws.id, title="Launch plan"))
    first, _ = run(opened.ops.new_chat(workspace_id=ws.id, title="Launch copy"))
    wait_for(lambda: sidebar.model.is_settled())
    focus(sidebar.filter)
    QTest.keyClicks(sidebar.filter, "launch")
    wait_for(lambda: sidebar.tree.model() is sidebar.proxy)
    QTest.keyClick(sidebar.filter, Qt.Key.Key_Down)
    assert sidebar.tree.hasFocus()
    current = sidebar.tree.currentIndex()
    assert current.data(KIND_ROLE) == CHAT and current.data(ID_ROLE) == first.id
    row = sidebar.tree.visualRect(current)
    ringed = picture(sidebar.tree.viewport(), row)
    focus(sidebar.filter)
    assert picture(sidebar.tree.viewport(), row) != ringed  # the ring is what changed
    wait_for(lambda: chat_open_in(window) == first.id)  # and it opens, as arrow keys do


def test_enter_on_a_section_heading_does_not_fold_the_section(opened, folders):
    sidebar = opened.window.sidebar
    (acme,) = folders("Acme")
    run(opened.ops.add_workspace(acme))
    wait_for(lambda: sidebar.model.is_settled())
    heading = sidebar.model.section_index(WORKSPACES)
    assert sidebar.tree.isExpanded(heading)
    sidebar.tree.setCurrentIndex(heading)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Return)
    assert sidebar.tree.isExpanded(heading)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Left)  # folding is Left's, as in any tree
    assert not sidebar.tree.isExpanded(heading)
    QTest.keyClick(sidebar.tree, Qt.Key.Key_Return)  # Enter unfolds a folded one
    assert sidebar.tree.isExpanded(heading)


def test_the_transcript_shows_where_the_keyboard_is(opened, loop, fake, folders):
    from tests.ui.drivers import exchange

    (acme,) = folders("Acme")
    exchange(loop, opened, fake, acme, "Hello?", "Hello, how can I help?")
    view = opened.window.chat_panel.view
    focus(opened.window.chat_panel.composer.edit)
    last = view.model().index(view.model().rowCount() - 1, 0)
    assert not view.currentIndex().isValid()
    plain = picture(view.viewport(), view.viewport().rect())
    focus(view)  # Tab into the transcript
    assert view.currentIndex() == last
    assert picture(view.viewport(), view.viewport().rect()) != plain


def test_enter_takes_the_archive_questions_default_button(opened, folders):
    sidebar = opened.window.sidebar
    seen: list[tuple[str, bool]] = []
    texts: list[tuple[str, str]] = []

    def press_enter() -> None:
        box = QApplication.activeModalWidget()
        assert isinstance(box, QMessageBox)
        default = box.defaultButton()
        assert isinstance(default, QPushButton)
        seen.append((default.text(), default.isVisible() and box.focusWidget() is default
                     and default.font().bold()))
        texts.append((box.windowTitle(), box.text()))
        QTest.keyClick(box, Qt.Key.Key_Return)

    QTimer.singleShot(0, press_enter)
    assert sidebar.handlers.confirm("Archive chat?", "It can be unarchived.", "Archive") is True
    assert seen == [("Archive", True)]
    # The title bar says the title; the text is the question, once.
    assert texts == [("Archive chat?", "It can be unarchived.")]
    # Removing a workspace keeps Cancel as the button Enter takes.
    QTimer.singleShot(0, press_enter)
    assert sidebar.handlers.confirm("Remove “Acme” from Cairn?", "…", "Remove") is False
    assert seen[-1] == ("Cancel", True)


@pytest.mark.parametrize("dialog", ["settings", "question"])
def test_quit_from_a_dialog_cancels_it_and_quits(opened, qtbot, dialog):
    """Ctrl+Q in Settings or in a question: Qt keeps the window's shortcut from a modal dialog,
    so the key did nothing; now the dialog is cancelled and the window closes (Cairn quits)."""
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QDialog

    from ui.text import confirm

    seen: list[QDialog] = []

    def press_ctrl_q() -> None:  # once the dialog is up (a question runs its own loop)
        shown = QApplication.activeModalWidget()
        if not isinstance(shown, QDialog):
            QTimer.singleShot(20, press_ctrl_q)
            return
        seen.append(shown)
        QTest.keyClick(shown.focusWidget() or shown, Qt.Key.Key_Q,
                       Qt.KeyboardModifier.ControlModifier)
        # (were the key to do nothing, the question's own loop must still end: a failure,
        # not a test that never returns)
        QTimer.singleShot(3000, lambda: shiboken6.isValid(shown) and shown.isVisible()
                          and shown.reject())

    QTimer.singleShot(20, press_ctrl_q)
    if dialog == "settings":
        opened.window.sig_settings_requested.emit()
    else:  # a question as the sidebar asks one: its own event loop, outside any task
        assert confirm(QMessageBox.Icon.Question, "Archive chat?", "Archive chat?", "Archive",
                       parent=opened.window) is False  # cancelled, not answered
    qtbot.waitUntil(lambda: len(seen) == 1 and not opened.window.isVisible()
                    and not (shiboken6.isValid(seen[0]) and seen[0].isVisible()))
