"""A first start with no API key: the window says so at once, with a
button that opens Settings, before any message fails; without a keychain that can keep a
key, it points to ANTHROPIC_API_KEY as Settings does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import keyring
import pytest
from keyring.backends import null
from PySide6.QtWidgets import QApplication

from tests.ui.helpers import close_window, open_window, wait_for


@pytest.fixture
def keyless(qapp: Any, loop: Any, isolated: Any) -> Iterator[Any]:
    starter = open_window(qapp, isolated)  # no key stored, none in the environment
    yield starter
    close_window(starter)


def test_a_first_start_without_a_key_says_so_at_once_and_offers_settings(keyless):
    from ui.settings import SettingsDialog

    window = keyless.window
    banner = window.key_notice
    wait_for(banner.isVisible)
    assert banner.label.text().startswith("No API key yet: add your Anthropic API key")
    assert banner.action.isVisible() and banner.action.text() == "Add your API key…"
    banner.action.click()
    wait_for(lambda: any(isinstance(w, SettingsDialog) and w.isVisible()
                         for w in QApplication.topLevelWidgets()))
    dialog = next(w for w in QApplication.topLevelWidgets()
                  if isinstance(w, SettingsDialog) and w.isVisible())
    keyless.cairn.settings.set_api_key("sk-ant-test")
    dialog.reject()  # closed: the window looks again, and the banner goes
    wait_for(lambda: not banner.isVisible())


def test_without_a_keychain_the_banner_points_to_the_environment(qapp, loop, isolated):
    keyring.set_keyring(null.Keyring())  # Linux with no keychain service
    starter = open_window(qapp, isolated)
    try:
        banner = starter.window.key_notice
        wait_for(banner.isVisible)
        text = banner.label.text()
        assert text.startswith("No API key: no usable system keychain was found. Set "
                               "ANTHROPIC_API_KEY")
    finally:
        close_window(starter)
