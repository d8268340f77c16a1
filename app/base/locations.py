"""Where Cairn keeps its data, its logs, and the first-use workspace."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "Cairn"


def data_dir() -> Path:
    """The data folder: ``CAIRN_DATA_DIR`` when set (every test sets its own), else the OS's."""
    override = os.environ.get("CAIRN_DATA_DIR")
    if override:
        return Path(override)
    import platformdirs  # (only when needed: the window's first paint waits for this)

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def log_dir() -> Path:
    """Logs follow the data folder when it is overridden, so a test never writes outside it."""
    if os.environ.get("CAIRN_DATA_DIR"):
        return data_dir() / "logs"
    import platformdirs

    return Path(platformdirs.user_log_dir(APP_NAME, appauthor=False))


def make_private(path: Path, *, folder: bool = False) -> None:
    """Only this user may read *path* from now on: 0700 for a folder, 0600 for a file.

    Chats, knowledge, logs and the models cache are the person's; where a home folder is
    readable by other local users, the default modes (0755/0644) would show them all.  On
    Windows a profile's folders are the user's already.
    """
    if os.name != "posix":
        return
    try:
        os.chmod(path, 0o700 if folder else 0o600)
    except FileNotFoundError:
        pass
    except OSError:  # a file system without modes (a FAT stick): nothing to tighten
        pass


def first_use_dir() -> Path:
    """The folder of the automatic first-use workspace: ``<Documents>/Cairn`` unless overridden."""
    override = os.environ.get("CAIRN_FIRST_USE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_documents_dir()) / APP_NAME
