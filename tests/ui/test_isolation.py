"""Each widget test starts with no window of an earlier test alive.

A closed window is only hidden; before tests/ui/conftest.py deleted what a test left, the
windows of every earlier test lived on with their core closed: a later test walking
``QApplication.allWidgets()`` read a sidebar whose registry was gone (KeyError in
tests/ui/test_hostile_text.py after tests/ui/test_startup_load.py), and every theme change
restyled them all.  The two tests here run in this order in one process."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QWidget

from tests.ui.helpers import close_window, open_window


def test_a_test_leaves_its_window_closed_but_not_deleted(qapp, loop, isolated):
    starter = open_window(qapp, isolated)
    close_window(starter)
    left = QWidget()  # (and a widget it made and never closed)
    left.show()
    assert starter.window in QApplication.topLevelWidgets()


def test_the_next_test_finds_no_widget_of_the_one_before(qapp):
    assert QApplication.topLevelWidgets() == []
    assert QApplication.allWidgets() == []
