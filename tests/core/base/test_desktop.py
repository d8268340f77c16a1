"""The folder one click away: the command each system runs to reveal a
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
    assert reveal_command("C:\\Work\\Acme", WINDOWS) == Command(("explorer.exe", "."),
                                                                cwd="C:\\Work\\Acme")
    # Finder shows the folder in its parent: an `open` of a folder that is an .app runs it.
    assert reveal_command("/Users/a/Acme", MAC) == Command(("open", "-R", "/Users/a/Acme"))
    assert reveal_command("/home/a/Acme", LINUX) == Command(("xdg-open", "/home/a/Acme"))


def test_open_in_terminal_on_windows_prefers_windows_terminal_else_cmd():
    assert terminal_command("C:\\Acme", WINDOWS, env={}, which=which_of("wt.exe")) == Command(
        ("wt.exe", "-d", "."), cwd="C:\\Acme")
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


# Folder names that a program parsing its arguments would take for more than a path:
# Windows Terminal splits at ';' and runs the rest, Explorer reads commas and switches,
# cmd.exe reads & | ^ % and quotes.  Legal on NTFS, and a bundle can make
# them (a nested folder `Notes;calc`, titled "Notes" in the sidebar).
HOSTILE_WINDOWS = ["C:\\Work\\Notes;calc", "C:\\Work\\a,/root,C:\\Windows\\System32\\calc.exe",
                   "C:\\Work\\x & calc", "C:\\Work\\x\" ; calc ; \"", "C:\\Work\\%PATH%^|calc",
                   "C:\\Work\\new-tab -d C:\\ ; calc", "\\\\server\\share\\Notes;calc"]
HOSTILE_POSIX = ["/home/a/Notes;calc", "/home/a/$(calc)", "/home/a/x & calc", "/home/a/-e calc",
                 "/home/a/a,b", "/home/a/`calc`", "/Users/a/Trojan.app"]


@pytest.mark.parametrize("folder", HOSTILE_WINDOWS)
def test_on_windows_no_folder_name_is_ever_an_argument(folder):
    """The folder is the started program's working folder (CreateProcess's field, which no
    program parses), and the program is told '.': nothing of the name is on a command line."""
    for which in (which_of("wt.exe"), which_of()):
        commands = [reveal_command(folder, WINDOWS),
                    terminal_command(folder, WINDOWS, env={}, which=which)]
        for command in commands:
            assert command is not None and command.cwd == folder
            line = subprocess.list2cmdline(list(command.argv))
            assert line in ("explorer.exe .", "wt.exe -d .", "cmd.exe /K"), line
            assert not any(part in line for part in ("Notes", "calc", "Work", "PATH"))


@pytest.mark.parametrize("folder", HOSTILE_POSIX)
def test_on_macos_and_linux_a_folder_is_one_absolute_argument_or_the_working_folder(folder):
    """No shell reads it; as an argument it is whole and starts with '/' (never an option)."""
    commands = [reveal_command(folder, MAC), reveal_command(folder, LINUX),
                terminal_command(folder, MAC, env={}, which=which_of()),
                terminal_command(folder, LINUX, env={"TERMINAL": "kitty"},
                                 which=which_of("kitty")),
                terminal_command(folder, LINUX, env={}, which=which_of("x-terminal-emulator"))]
    for command in commands:
        assert command is not None
        named = [arg for arg in command.argv if folder in arg]
        assert named in ([], [folder]) and folder.startswith("/")
        assert named or command.cwd == folder
        assert not any(folder in arg and arg != folder for arg in command.argv)
    assert reveal_command(folder, MAC).argv[:2] == ("open", "-R")


def test_the_command_starts_without_a_shell_in_the_folder(tmp_path, monkeypatch):
    """What `run` hands the system: the argument list as built, the folder as the working
    folder, never a shell (so no interpreter reads the name on any system)."""
    hostile = tmp_path / "Notes;calc & x"
    hostile.mkdir()
    started: list[tuple[list[str], dict]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **k: started.append((argv, k)))
    monkeypatch.setattr(desktop, "system", lambda: WINDOWS)
    desktop.open_terminal(str(hostile))
    desktop.reveal(str(hostile))
    assert [(argv, k["cwd"]) for argv, k in started] == [
        (["cmd.exe", "/K"], str(hostile)), (["explorer.exe", "."], str(hostile))]
    assert not any(k.get("shell") for _argv, k in started)


def test_a_relative_folder_is_refused(tmp_path, monkeypatch):
    started: list[object] = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-e calc").mkdir()
    with pytest.raises(Refused, match="it is not an absolute path"):
        desktop.reveal("-e calc")
    assert started == []
