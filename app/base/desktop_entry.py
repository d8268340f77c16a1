"""``cairn install-desktop``: Cairn in the Linux desktop's menus, with its icon, and ``.cairn``
bundles known as Cairn's (a double-click starts the import, in the running window when there
is one).  Everything goes under the person's own ``$XDG_DATA_HOME`` (default
``~/.local/share``): no ``sudo``, and removing those files undoes it.

The desktop's caches are refreshed by ``update-mime-database`` and
``update-desktop-database`` and the bundle type is given to Cairn by ``xdg-mime``, each only
when it is installed (a desktop without them reads the files at its next login).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.base.cairn_link import SCHEME
from app.base.file_types import APP_ID, MIME_TYPE, shared_mime_info
from app.errors import Refused, os_reason

SCHEME_HANDLER = f"x-scheme-handler/{SCHEME}"  # cairn:// links open in Cairn
ICONS = Path(__file__).resolve().parents[2] / "resources" / "icons"
Which = Callable[[str], str | None]
Run = Callable[[Sequence[str]], None]


def data_home(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME`` when it is an absolute path (the spec ignores a relative one), else
    ``~/.local/share``."""
    env = os.environ if env is None else env
    value = env.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path(env.get("HOME") or Path.home()) / ".local" / "share"


def launch_command() -> list[str]:
    """How the desktop starts this very Cairn: the bundle's executable, the installed
    ``cairn`` script, or this Python running ``ui.main`` (a source checkout)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    script = shutil.which("cairn")
    if script:
        return [os.path.abspath(script)]
    return [sys.executable, "-m", "ui.main"]


def _exec_word(word: str) -> str:
    """One word of an ``Exec=`` line: quoted by the Desktop Entry rules when it needs it
    (a space, a quote, `$`…), then with each backslash doubled for the string value."""
    if word and not any(c in word for c in " \t\n\"'\\><~|&;$*?#()`="):
        return word
    inner = "".join("\\" + c if c in '"`$\\' else c for c in word)
    return f'"{inner}"'.replace("\\", "\\\\")


def desktop_entry(command: Sequence[str]) -> str:
    """The ``.desktop`` file: the application, and what it opens (``%u``: one file, as a
    path or a ``file://`` URL, or one ``cairn://`` link: app/base/cairn_link.py)."""
    exec_line = " ".join(_exec_word(w) for w in command) + " %u"
    return (
        "[Desktop Entry]\n"
        "Type=Application\n"
        "Name=Cairn\n"
        "GenericName=AI chat with local knowledge\n"
        "Comment=Chat with Claude inside local folders that keep their own knowledge\n"
        f"Exec={exec_line}\n"
        f"Icon={APP_ID}\n"
        "Terminal=false\n"
        "Categories=Office;Utility;\n"
        f"MimeType={MIME_TYPE};{SCHEME_HANDLER};\n"
        "StartupNotify=true\n"
        "StartupWMClass=Cairn\n"
    )


@dataclass
class Installed:
    files: list[Path] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)  # the tools that refreshed the desktop
    missing: list[str] = field(default_factory=list)  # the ones not installed here


def _write(path: Path, data: bytes) -> None:
    """Written beside, then renamed: a desktop reading the folder never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def _run_quietly(argv: Sequence[str]) -> None:
    subprocess.run(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=60, check=False)


def install(home: Path, command: Sequence[str], *, which: Which = shutil.which,
            run: Run = _run_quietly) -> Installed:
    """Write the entry, the icons and the MIME type under *home* (an XDG data folder), then
    refresh the desktop's caches with whichever of the tools are installed."""
    done = Installed()
    files = {
        home / "applications" / f"{APP_ID}.desktop": desktop_entry(command).encode(),
        home / "mime" / "packages" / f"{APP_ID}.xml": shared_mime_info().encode(),
        home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg":
            (ICONS / "cairn.svg").read_bytes(),
        home / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png":
            (ICONS / "cairn.png").read_bytes(),
    }
    try:
        for path, data in files.items():
            _write(path, data)
            done.files.append(path)
    except OSError as error:
        raise Refused(f"cannot install the desktop entry in '{home}': "
                      f"{os_reason(error)}") from None
    steps = [
        ["update-mime-database", str(home / "mime")],
        ["update-desktop-database", str(home / "applications")],
        ["xdg-mime", "default", f"{APP_ID}.desktop", MIME_TYPE],
        ["xdg-mime", "default", f"{APP_ID}.desktop", SCHEME_HANDLER],
    ]
    for argv in steps:
        tool = which(argv[0])
        if tool is None:
            if argv[0] not in done.missing:
                done.missing.append(argv[0])
            continue
        try:
            run([tool, *argv[1:]])
            done.ran.append(argv[0])
        except (OSError, subprocess.SubprocessError):
            done.missing.append(argv[0])  # (it failed: the files are in place regardless)
    return done
