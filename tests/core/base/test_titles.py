"""A title must show something: the core refuses invisible-only titles, for the window too."""

from __future__ import annotations

import pytest

from app.base.titles import visible
from app.errors import Refused


@pytest.mark.parametrize("text, shows", [
    ("Acme", True), ("\ue000", True), ("   ", False), ("\u200b\u200d", False),
    ("\u3164", False), ("\u2800", False), ("\u0301", False), ("é", True),
])
def test_what_shows(text, shows):
    assert visible(text) is shows


def test_the_registry_refuses_titles_nobody_can_see(registry, folders):
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    chat = registry.new_chat(folder=acme, title="Launch copy")
    with pytest.raises(Refused, match="only invisible characters"):
        registry.rename_workspace(ws.id, "\u200b\u3164")
    with pytest.raises(Refused, match="only invisible characters"):
        registry.rename_chat(chat.id, "\u2800")
    with pytest.raises(Refused, match="only invisible characters"):
        registry.new_chat(folder=acme, title="\u200d")
    assert registry.workspace(ws.id).title == "Acme"
    assert registry.chat(chat.id).title == "Launch copy"
