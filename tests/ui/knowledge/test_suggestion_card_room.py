"""The suggestion card is not squeezed, at 800×600 (the knowledge panel
shown by hand) and 1280×800, light and dark: every text has the height its wrapped lines
need, no two texts overlap, and the buttons keep their words.  Each case is saved as a
picture (``CAIRN_SHOTS=folder`` keeps them) to be looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QApplication, QLabel, QPushButton

from app.store.suggestions import Proposed
from tests.ui.helpers import close_window, configure, run, wait_for
from ui.app import start
from ui.theme import apply_theme

LONG_REASON = ("Only your words replace a value you stated: Claude said this, not you, and "
               "the entry it changes was written by you in the document.")


def shoot(widget, name: str, tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CAIRN_SHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    widget.grab().save(str(path))
    return path


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("size", [(800, 600), (1280, 800)], ids=["800x600", "1280x800"])
def test_the_card_has_room_for_its_words(qapp, loop, isolated, fake, folders, tmp_path,
                                         size, dark):
    configure(isolated, fake)
    starter = start(qapp, isolated, dark=dark)  # (open_window's, in the theme asked for)
    starter.begin()
    wait_for(lambda: starter.ops is not None and starter.window.chat_panel is not None
             and starter.window.knowledge is not None)
    starter.window.resize(*size)
    starter.window.show()
    try:
        (acme,) = folders("Acme Inc")
        (ws, _), _ = run(starter.ops.add_workspace(acme))
        cairn = starter.cairn
        cairn.knowledge.save(ws.id, "## Facts\n- Launch date is 2027-04-15 (updated "
                             "2026-11-30)\n- Accent colour is orange #FF5500\n", source="user")
        chat = cairn.registry.new_chat(folder=acme, title="Launch copy")
        assert cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={},
                                            suggestions=[Proposed(
            ws.id, "update", "Facts", ("Launch date is 2027-04-15 (updated 2026-11-30)",),
            "Launch date is 2027-05-10 (moved after the investor meeting)", LONG_REASON,
            "I believe the launch moved to 2027-05-10 after the investor meeting", "claude")])
        window = starter.window
        window.select_workspace(ws.id)
        window.knowledge_action.setChecked(True)  # shown by hand, even at 800 wide
        panel = window.knowledge
        strip = panel.editor.suggestions
        wait_for(lambda: strip.shown and strip.card(strip.shown[0].id) is not None)
        card = strip.card(strip.shown[0].id)
        wait_for(lambda: card.isVisible() and card.width() > 0)

        def on_card(widget):
            return QRect(widget.mapTo(card, QPoint(0, 0)), widget.size())

        # Laid out once the status line above has its words (the room changes with them).
        wait_for(lambda: on_card(card.area).bottom() < on_card(card.accept_button).top(),
                 timeout=5)
        name = f"suggestion-card-{size[0]}x{size[1]}-{'dark' if dark else 'light'}"
        shoot(window, name, tmp_path)
        labels = [w for w in card.findChildren(QLabel) if w.isVisible() and w.text()]
        assert len(labels) >= 5  # heading, removed, added, why it waits, evidence
        for label in labels:
            if label.wordWrap():
                needed = label.heightForWidth(label.width())
                assert label.height() >= needed, f"{label.text()!r} is clipped"
        for n, one in enumerate(labels):
            for other in labels[n + 1:]:
                assert not on_card(one).intersects(on_card(other)), \
                    f"{one.text()!r} overlaps {other.text()!r}"
        for button in card.findChildren(QPushButton):
            assert button.width() >= button.sizeHint().width(), f"{button.text()} is cut"
            assert card.rect().contains(on_card(button))  # in sight, not scrolled away
            assert not on_card(card.area).intersects(on_card(button)), \
                f"{button.text()} is drawn over the words"
        assert card.width() >= 240  # a readable measure, not a sliver
    finally:
        apply_theme(qapp, dark=False)
        close_window(starter)
        QApplication.processEvents()
