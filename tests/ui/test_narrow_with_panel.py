"""At 800×600 with the knowledge panel shown by hand, the chat kept ~200 px
and its tables broke their words.  The sidebar steps aside for the panel instead, and comes
back when the panel closes or the window widens.  Pictures at 800×600 and 1280×800, light and
dark (``CAIRN_SHOTS=folder`` keeps them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.ui.drivers import bulk_messages
from tests.ui.helpers import close_window, configure, run, wait_for
from ui.app import start
from ui.columns import CHAT_MIN
from ui.theme import apply_theme

TABLE = """Here is the palette:

| Role | Colour | Hex | Use |
|:--|:--|:--|:--|
| Accent | Orange | `#FF5500` | Buttons, links, highlights |
| Secondary | Charcoal | `#2B2B2B` | Body text, dark backgrounds |
"""


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("size", [(800, 600), (1280, 800)], ids=["800x600", "1280x800"])
def test_the_chat_keeps_its_room_with_the_panel_shown(qapp, loop, isolated, fake, folders,
                                                      tmp_path, size, dark):
    configure(isolated, fake)
    starter = start(qapp, isolated, dark=dark)
    starter.begin()
    window = starter.window
    try:
        wait_for(lambda: starter.ops is not None and window.chat_panel is not None
                 and window.knowledge is not None)
        window.resize(*size)
        window.show()
        (acme,) = folders("Acme Inc")
        (ws, _), _ = run(starter.ops.add_workspace(acme))
        chat, _ = run(starter.ops.new_chat(workspace_id=ws.id, title="Palette"))
        bulk_messages(starter, chat.id, ["What are our colours?", TABLE])
        window.activateWindow()
        window.sidebar.tree.setFocus()
        window.select_chat(chat.id)
        wait_for(lambda: window.chat_panel.chat_id == chat.id
                 and len(window.chat_panel.view.conversation.entries) == 2)
        if not window.knowledge_action.isChecked():
            window.knowledge_action.trigger()  # shown by hand
        wait_for(lambda: window.knowledge.isVisible() and window.split.sizes()[2] > 0)
        wait_for(lambda: window.split.sizes()[1] >= CHAT_MIN)
        sidebar = window.split.widget(0)
        if size[0] == 800:
            assert sidebar.isHidden()  # stepped aside for the panel
            # The keyboard did not fall to the chat's title (a rename) as the sidebar went.
            assert not window.chat_panel.header.title.hasFocus()
        else:
            assert not sidebar.isHidden()
        folder = Path(os.environ.get("CAIRN_SHOTS", tmp_path))
        folder.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(folder / f"panel-{size[0]}x{size[1]}-"
                                        f"{'dark' if dark else 'light'}.png"))
        window.knowledge_action.trigger()  # the panel closes: the sidebar is back
        wait_for(lambda: not sidebar.isHidden() and sidebar.width() > 0)
        if size[0] == 800:
            window.knowledge_action.trigger()
            wait_for(lambda: sidebar.isHidden())
            window.resize(1280, 800)  # room for three again
            wait_for(lambda: not sidebar.isHidden() and window.split.sizes()[1] >= CHAT_MIN)
    finally:
        close_window(starter)
        apply_theme(qapp, dark=False)  # the next tests start in the light theme, as ever
