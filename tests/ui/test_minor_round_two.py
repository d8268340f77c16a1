"""Issue 36's Minor list, round two: each item with what holds it."""

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
