"""The folder one click away (issue 23, item 3): the command each system runs to reveal a
workspace's folder or open a terminal there, and the refusal for a missing folder."""

from __future__ import annotations

import subprocess

import pytest

from app.base import desktop
from app.base.desktop import LINUX, MAC, WINDOWS, Command, reveal_command, terminal_command
from app.errors import Refused


def which_of(*found: str):
    return lambda name: f"/usr/bin/{name}" if name in found else None


def test_reveal_runs_each_systems_file_manager():
    assert reveal_command("C:\\Work\\Acme", WINDOWS) == Command(("explorer.exe", "C:\\Work\\Acme"))
    assert reveal_command("/Users/a/Acme", MAC) == Command(("open", "/Users/a/Acme"))
    assert reveal_command("/home/a/Acme", LINUX) == Command(("xdg-open", "/home/a/Acme"))


def test_open_in_terminal_on_windows_prefers_windows_terminal_else_cmd():
    assert terminal_command("C:\\Acme", WINDOWS, env={}, which=which_of("wt.exe")) == Command(
        ("wt.exe", "-d", "C:\\Acme"))
    assert terminal_command("C:\\Acme", WINDOWS, env={}, which=which_of()) == Command(
        ("cmd.exe", "/K"), cwd="C:\\Acme")


def test_open_in_terminal_on_macos_uses_terminal_app():
    assert terminal_command("/Users/a/Acme", MAC, env={}, which=which_of()) == Command(
        ("open", "-a", "Terminal", "/Users/a/Acme"))


def test_open_in_terminal_on_linux_uses_terminal_else_x_terminal_emulator():
    env = {"TERMINAL": "kitty"}
    assert terminal_command("/a", LINUX, env=env, which=which_of("kitty")) == Command(
        ("kitty",), cwd="/a")
    assert terminal_command("/a", LINUX, env=env, which=which_of("x-terminal-emulator")) == \
        Command(("x-terminal-emulator",), cwd="/a")
    assert terminal_command("/a", LINUX, env={}, which=which_of()) is None


def test_a_missing_folder_is_refused_in_one_sentence_and_nothing_runs(tmp_path, monkeypatch):
    started: list[object] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    gone = str(tmp_path / "gone")
    with pytest.raises(Refused, match=r"^cannot show '.*gone': the folder is missing"):
        desktop.reveal(gone)
    with pytest.raises(Refused, match=r"^cannot open a terminal in '.*gone': the folder is "
                                      "missing"):
        desktop.open_terminal(gone)
    assert started == []


def test_reveal_starts_the_command_detached(tmp_path, monkeypatch):
    started: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **k: started.append((argv, k)))
    monkeypatch.setattr(desktop, "system", lambda: LINUX)
    desktop.reveal(str(tmp_path))
    (argv, options), = started
    assert argv == ["xdg-open", str(tmp_path)] and options["start_new_session"] is True
