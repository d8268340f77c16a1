"""The workspace's Tools page, in the real window offscreen, with the real mcp-server-time:
each server with its switch for this workspace; an "always" stored by the chat seen and taken
back without starting anything; Show tools starts the server and lists its tools with their
policies and what the server claims of them (shown, not trusted); a tool set to Off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QPushButton

from app.store.mcp import ServerConfig
from tests.ui.drivers import named, panel_of, show
from tests.ui.helpers import run, wait_for
from ui.app import Starter

TIME = str(Path(sys.executable).parent / "mcp-server-time")



@pytest.fixture
def opened(offline_window: Starter) -> Starter:
    """The window with no server configured: these tests start only the MCP servers."""
    return offline_window

def _tools_tab(opened, ws_id):
    panel = show(opened, ws_id)
    page = panel.tools
    panel.tabs.setCurrentWidget(page)
    wait_for(lambda: page.servers and page.isVisible())
    return panel, page


def _never_started(opened) -> bool:
    servers = opened.cairn._mcp_servers
    return servers is None or servers.owner("time") is None


def _choose(box: QComboBox, value: str) -> None:
    box.setCurrentIndex(box.findData(value))
    box.activated.emit(box.currentIndex())


def test_switch_policies_and_always_taken_back(opened, folders):
    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    mcp = opened.cairn.mcp
    mcp.add(ServerConfig("time", command=TIME, args=("--local-timezone", "UTC")))
    mcp.add(ServerConfig("docs", url="https://mcp.example.com/mcp"))
    mcp.set_policy("time", "get_current_time", ws.id, "allow")  # as Always allow stores it
    panel, page = _tools_tab(opened, ws.id)
    assert panel.tabs.tabText(panel.tabs.indexOf(page)) == "Tools"
    switch = named(page, QCheckBox, "Use time in this workspace")
    assert not switch.isChecked() and not named(page, QCheckBox,
                                                "Use docs in this workspace").isChecked()
    assert named(page, QLabel, "What time runs").text() == f"{TIME} --local-timezone UTC"
    # The "always" is seen though the server does not run, and nothing was started.
    box = named(page, QComboBox, "Policy of get_current_time on time")
    assert box.currentText() == "Always allow"
    assert _never_started(opened)
    # On in this workspace, by mouse.
    switch.click()
    wait_for(lambda: mcp.on_in([ws.id]) == ["time"])
    wait_for(lambda: named(page, QCheckBox, "Use time in this workspace").isChecked())
    # Taken back: Ask again (no row stored), and still nothing started.
    _choose(named(page, QComboBox, "Policy of get_current_time on time"), "ask")
    wait_for(lambda: mcp.policies([ws.id]) == {})
    wait_for(lambda: not any(k == ("time", "get_current_time") for k in page.policy_boxes))
    assert _never_started(opened)
    # Show tools: starts it (its program runs) and lists its tools with their policies.
    with_tools = named(page, QPushButton, "Show tools of time")
    with_tools.click()
    wait_for(lambda: ("time", "convert_time") in page.policy_boxes, timeout=60)
    assert {t for s, t in page.policy_boxes if s == "time"} == {"get_current_time",
                                                                "convert_time"}
    assert named(page, QComboBox, "Policy of get_current_time on time").currentText() == "Ask"
    claims = named(page, QLabel, "What time says of get_current_time").text()
    assert claims == "read-only, idempotent"  # the server's claim, shown as its own
    _choose(named(page, QComboBox, "Policy of convert_time on time"), "off")
    wait_for(lambda: mcp.policies([ws.id]) == {("time", "convert_time"): "off"})
    # Opened again: listed from the running server, not started again.
    owner = opened.cairn.mcp_servers.owner("time")
    assert owner is not None and owner.starts == 1
    page.hide()
    page.show()
    wait_for(lambda: named(page, QComboBox, "Policy of convert_time on time").currentText()
             == "Off")
    assert owner.starts == 1
    assert list(page.show_buttons) == ["docs"]  # time runs: its tools show, no button


def test_a_server_that_cannot_start_is_one_sentence(opened, folders):
    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    opened.cairn.mcp.add(ServerConfig("gone", command="no-such-mcp-server-42"))
    panel, page = _tools_tab(opened, ws.id)
    said: list[str] = []
    panel.sig_error.connect(said.append)
    named(page, QPushButton, "Show tools of gone").click()
    wait_for(lambda: said)
    assert said == ["The MCP server gone could not start: there is no program "
                    "'no-such-mcp-server-42' on this computer."]
    wait_for(lambda: named(page, QPushButton, "Show tools of gone").isEnabled())


def test_no_servers_says_where_to_add_them(opened, folders):
    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    panel = show(opened, ws.id)
    page = panel.tools
    panel.tabs.setCurrentWidget(page)
    wait_for(lambda: page.findChildren(QLabel, options=Qt.FindChildOption.FindChildrenRecursively)
             and any(w.accessibleName() == "No MCP servers" for w in page.findChildren(QLabel)))
    assert panel_of(opened) is panel


def test_the_keyboard_switches_and_stays_where_it_was(opened, folders):
    (acme,) = folders("Acme Inc")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    mcp = opened.cairn.mcp
    mcp.add(ServerConfig("time", command=TIME))
    mcp.set_policy("time", "get_current_time", ws.id, "allow")
    panel, page = _tools_tab(opened, ws.id)
    opened.window.activateWindow()
    switch = named(page, QCheckBox, "Use time in this workspace")
    switch.setFocus(Qt.FocusReason.TabFocusReason)
    wait_for(switch.hasFocus)
    QTest.keyClick(switch, Qt.Key.Key_Space)
    wait_for(lambda: mcp.on_in([ws.id]) == ["time"])
    wait_for(lambda: named(page, QCheckBox, "Use time in this workspace").isChecked())
    wait_for(lambda: named(page, QCheckBox, "Use time in this workspace").hasFocus())
    # The policy by keyboard: Ask again (the "always" taken back).
    box = named(page, QComboBox, "Policy of get_current_time on time")
    box.setFocus()
    QTest.keyClick(box, Qt.Key.Key_Up)  # (a closed combo box steps through its choices)
    wait_for(lambda: mcp.policies([ws.id]) == {})
    # (the server does not run: with no policy left, the tool's row goes)
    wait_for(lambda: ("time", "get_current_time") not in page.policy_boxes)
    wait_for(lambda: named(page, QCheckBox, "Use time in this workspace").hasFocus())


def test_a_folder_shows_what_its_project_allows(opened, folders):
    """An "always" stored in the project applies in its folders (where they set none): the
    folder's page says so, though its own policy is Ask."""
    acme, brand = folders("Acme Inc", "Acme Inc/Brand")
    (project, _), _ = run(opened.ops.add_workspace(acme))
    (folder, _), _ = run(opened.ops.add_workspace(brand))
    mcp = opened.cairn.mcp
    mcp.add(ServerConfig("time", command=TIME))
    mcp.turn_on("time", project.id)
    mcp.set_policy("time", "get_current_time", project.id, "allow")
    panel, page = _tools_tab(opened, folder.id)
    assert named(page, QLabel, "time is on in the project").isVisible()
    assert named(page, QComboBox, "Policy of get_current_time on time").currentText() == "Ask"
    assert named(page, QLabel, "Policy of get_current_time on time in the project").text() \
        == "Always allow in the project"
    assert not named(page, QCheckBox, "Use time in this workspace").isChecked()
