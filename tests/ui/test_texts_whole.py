"""Texts shown whole and places found at once: a nested folder's panel title, the import
instruction in its dialog, folder hints and card paths cut at whole parts, the board over the
window, the About box, a table's borders, the toolbar's tab stops, the welcome's command and
the shortcuts list."""

from __future__ import annotations

from tests.ui.helpers import run, wait_for


def test_a_nested_folders_panel_title_is_whole(opened, folders):
    """The panel's title kept no room beside the document box for a nested folder: "…"."""
    project, nested = folders("Renovation of the house", "Renovation of the house/Quotes")
    run(opened.ops.add_workspace(project))
    (ws, _), _ = run(opened.ops.add_workspace(nested))
    chat = opened.cairn.registry.new_chat(folder=nested, title="Tiles")
    window = opened.window
    window.show_knowledge_panel(True)
    window.select_chat(chat.id)
    panel = window.knowledge
    wait_for(lambda: panel.owner_box.isVisible() and panel.title.text() != "")
    assert panel.title.toolTip() and panel.title.text() == "Quotes"
    assert panel.title.width() >= panel.title.fontMetrics().horizontalAdvance("Quotes")


def test_imports_instruction_is_in_the_dialog_not_only_its_title(opened, loop):
    """The instruction lived in the window title alone, cut to "Import Acme into which…"."""
    import asyncio

    from PySide6.QtWidgets import QApplication

    from ui.dialogs import FolderDialog

    asked = asyncio.ensure_future(opened.window.sharing._ask_import_folder("Acme"))
    wait_for(lambda: isinstance(QApplication.activeModalWidget(), FolderDialog))
    dialog = QApplication.activeModalWidget()
    assert dialog.windowTitle() == "Import “Acme”"
    assert dialog.instruction is not None and dialog.instruction.isVisible()
    assert "an empty folder, or type the name of a new one" in dialog.instruction.text()
    dialog.reject()
    wait_for(asked.done)
    assert asked.result() is None


def test_folder_hints_and_card_paths_drop_whole_parts_never_fragments(qapp):
    """"Docume…e Copy": a repeated title's hint and a card's path were cut in the middle."""
    from PySide6.QtGui import QFont, QFontMetrics

    from ui.board.delegate import elide_parts
    from ui.sidebar.delegate import fitted_hint

    metrics = QFontMetrics(QFont())
    room = metrics.horizontalAdvance("Documents/Ca")
    hint = fitted_hint("Documents/Cairn Copy", "Cairn", metrics, room)
    assert hint.startswith("Cairn") and "Docu" not in hint  # the part that differs
    assert fitted_hint("work/Acme", "Acme", metrics, metrics.horizontalAdvance("work/A")) == \
        "work"  # the parent tells two "Acme" apart
    assert fitted_hint("work/Acme", "Acme", metrics, 1000) == "work/Acme"
    path = "~/Documents/Projects/Cairn Copy"
    width = metrics.horizontalAdvance("~/…/Cairn Copy") + 2
    assert elide_parts(path, metrics, width) == "~/…/Cairn Copy"
    trail = "in Acme › Marketing › Campaigns 2027"
    assert elide_parts(trail, metrics, metrics.horizontalAdvance("in Acme › … › Campaigns 2027")
                       + 2) == "in Acme › … › Campaigns 2027"


def test_the_board_opens_over_the_window_and_counts_projects(opened, folders):
    """It opened in the screen's corner with narrow cards, and counted folders as
    workspaces."""
    project, nested, other = folders("Acme", "Acme/Brand", "Thesis")
    for path in (project, nested, other):
        run(opened.ops.add_workspace(path))
    window = opened.window
    window.resize(1280, 800)
    window.move(200, 150)
    opened.show_board()
    board = opened._board
    wait_for(lambda: board.isVisible())
    assert board.width() >= int(window.frameGeometry().width() * 0.9) - 1
    centre, own = window.frameGeometry().center(), board.geometry().center()
    assert abs(centre.x() - own.x()) < 40 and abs(centre.y() - own.y()) < 60
    board.refresh()
    counts = board._counts["idea"].text()
    first_use = 1 if opened.cairn.registry.first_use_workspace_id else 0
    assert counts == f"{2 + first_use} + 1 folder"
    board.close()


def test_the_about_box_says_what_cairn_is_and_where_its_data_lives(qapp, isolated):
    from ui.about import AboutDialog

    dialog = AboutDialog()
    text = dialog.about.text()
    assert "Claude" in text and str(isolated) in text and "Python 3." in text
    dialog.close()


def test_a_table_draws_all_four_borders_in_the_light_theme(qapp):
    """Qt's outset border lost its top and left edges on a light background."""
    from PySide6.QtGui import QTextDocument, QTextFrameFormat, QTextTable

    from ui.chat.markdown import render

    document = QTextDocument()
    document.setHtml(render("| a | b |\n|---|---|\n| 1 | 2 |\n").html)
    tables = [f for f in document.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert tables
    assert tables[0].format().borderStyle() == QTextFrameFormat.BorderStyle.BorderStyle_Solid


# ---------------------------------------------------------------- found in the hour


def test_tab_through_the_toolbar_stops_only_at_its_named_buttons(opened):
    """The hour as a new user: Tab stopped on the toolbar's blank spacer (no name, no
    focus ring) between Board and Settings."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QWidget

    bar = opened.window._bar
    stops = [w for w in bar.findChildren(QWidget)
             if w.focusPolicy() & Qt.FocusPolicy.TabFocus and w.isVisible()]
    assert stops and all(w.accessibleName() for w in stops), [
        type(w).__name__ for w in stops if not w.accessibleName()]
    assert [w.accessibleName() for w in stops if w.accessibleName() in (
        "Add workspace", "New chat", "Board", "Settings")] == [
        "Add workspace", "New chat", "Board", "Settings"]


def test_the_welcome_never_splits_the_command_it_names(opened):
    """The hour: at 1280 px the welcome wrapped "cairn" and "PATH" onto two lines."""
    window = opened.window
    window.resize(1280, 800)
    window._show_welcome()
    assert "cairn\u00a0PATH" in window.center_text.text()


def test_the_shortcuts_list_shows_each_description_whole(qapp):
    """The hour: long descriptions ended in "…" in the shortcuts list."""
    from PySide6.QtCore import Qt

    from ui.shortcuts import ShortcutsDialog

    dialog = ShortcutsDialog()
    dialog.show()
    table = dialog.table
    assert table.wordWrap() and table.textElideMode() == Qt.TextElideMode.ElideNone
    metrics = table.fontMetrics()
    for row in range(table.rowCount()):
        text = table.item(row, 1).text()
        lines = -(-metrics.horizontalAdvance(text) // max(1, table.columnWidth(1) - 12))
        assert table.rowHeight(row) >= lines * metrics.lineSpacing(), text
    dialog.close()
