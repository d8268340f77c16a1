"""A workspace's folder, one click away: reveal it in the file manager, open a
terminal there.  The commands are pure functions of the system, so each system's command is
tested on every machine; :func:`run` checks the folder and starts the command detached.

A folder's name is never an argument to a program that parses its arguments:
Windows Terminal splits every argument at ``;`` and runs what follows (a folder
``Notes;calc``), Explorer reads commas and switches (``a,/root,…``).  On Windows the folder is
the started program's working folder instead (``CreateProcess``'s own field, parsed by no
one) and the program is told ``.``; elsewhere it is one absolute argument (it starts with
``/``, so it is never an option) to a program that opens it as a path, never through a shell.

- Reveal: Explorer started in the folder (``explorer.exe .``), Finder (``open -R <folder>``:
  shows the folder in its parent, never launches a folder that is an ``.app``), the
  desktop's default on Linux and the BSDs (``xdg-open <folder>``).
- Terminal: Windows Terminal (``wt.exe -d .``) or else ``cmd.exe``, both started in the
  folder; macOS's Terminal.app (``open -a Terminal <folder>``); elsewhere ``$TERMINAL`` or
  ``x-terminal-emulator``, started in the folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from app.base.paths import shown
from app.errors import Refused, os_reason

WINDOWS, MAC, LINUX = "windows", "mac", "linux"


def system() -> str:
    if os.name == "nt":
        return WINDOWS
    return MAC if sys.platform == "darwin" else LINUX


@dataclass(frozen=True, slots=True)
class Command:
    argv: tuple[str, ...]
    cwd: str | None = None  # started in this folder (a terminal that takes no folder argument)


def reveal_command(folder: str, where: str) -> Command:
    if where == WINDOWS:
        return Command(("explorer.exe", "."), cwd=folder)
    if where == MAC:
        return Command(("open", "-R", folder))
    return Command(("xdg-open", folder))


def terminal_command(folder: str, where: str, *, env: Mapping[str, str],
                     which: Callable[[str], str | None] = shutil.which) -> Command | None:
    """The terminal to open in *folder*; None when this system has none Cairn knows."""
    if where == WINDOWS:
        if which("wt.exe") or which("wt"):
            return Command(("wt.exe", "-d", "."), cwd=folder)
        return Command(("cmd.exe", "/K"), cwd=folder)
    if where == MAC:
        return Command(("open", "-a", "Terminal", folder))
    chosen = env.get("TERMINAL", "").strip()
    if chosen and which(chosen):
        return Command((chosen,), cwd=folder)
    if which("x-terminal-emulator"):
        return Command(("x-terminal-emulator",), cwd=folder)
    return None


def check_folder(folder: str, verb: str) -> None:
    """Refused in one sentence unless *folder* is there, as an absolute path (a relative one
    could be read as an option by the program that is given it)."""
    if not os.path.isdir(folder):
        raise Refused(f"cannot {verb} '{shown(folder)}': the folder is missing (use “Move to "
                      "folder…” if it moved)")
    if not os.path.isabs(folder):
        raise Refused(f"cannot {verb} '{shown(folder)}': it is not an absolute path")


def run(command: Command, *, verb: str, folder: str) -> None:
    """Start *command* detached (its window outlives nothing of Cairn's)."""
    options: dict[str, object] = {"cwd": command.cwd, "stdin": subprocess.DEVNULL,
                                  "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if os.name == "nt":
        options["creationflags"] = getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(
            subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
    else:
        options["start_new_session"] = True
    try:  # (a list, never a shell: no argument is read by a command interpreter)
        subprocess.Popen(list(command.argv), **options)  # type: ignore[call-overload]  # noqa: S603
    except OSError as error:
        raise Refused(f"cannot {verb} '{shown(folder)}': {command.argv[0]} could not be "
                      f"started, because {os_reason(error)}") from None


def reveal(folder: str) -> None:
    check_folder(folder, "show")
    run(reveal_command(folder, system()), verb="show", folder=folder)


def open_terminal(folder: str) -> None:
    check_folder(folder, "open a terminal in")
    command = terminal_command(folder, system(), env=os.environ)
    if command is None:
        raise Refused(f"cannot open a terminal in '{shown(folder)}': no terminal was found "
                      "(set TERMINAL to the one you use)")
    run(command, verb="open a terminal in", folder=folder)
