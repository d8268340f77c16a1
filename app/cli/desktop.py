"""``cairn install-desktop``: the Linux desktop entry, icon and ``.cairn`` file type, for
this person (no data folder opened, no ``sudo``)."""

from __future__ import annotations

import argparse
import sys

from app.base.paths import shown
from app.cli.output import Commands, JsonFlag, Out
from app.errors import Refused


def add_parser(commands: Commands, json_flag: JsonFlag) -> None:
    json_flag(commands.add_parser(
        "install-desktop", help="add Cairn and its .cairn file type to the Linux desktop's "
                                "menus (under $XDG_DATA_HOME, no sudo)"))


def run(args: argparse.Namespace, out: Out) -> int:
    from app.base import desktop_entry

    if sys.platform in ("darwin", "win32"):
        raise Refused("cannot install a desktop entry here: it is for Linux desktops; on "
                      f"{'macOS the app' if sys.platform == 'darwin' else 'Windows the installer'}"
                      " registers Cairn and its .cairn files")
    home = desktop_entry.data_home()
    done = desktop_entry.install(home, desktop_entry.launch_command())
    data = {"files": [str(p) for p in done.files], "ran": done.ran, "missing": done.missing}

    def text() -> str:
        lines = [f"Installed {shown(str(p))}" for p in done.files]
        if done.missing:
            lines.append(f"Not installed here: {', '.join(done.missing)}; the desktop reads the "
                         "new files at its next login.")
        return "\n".join(lines)

    out.emit(data, text)
    return 0
