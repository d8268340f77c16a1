"""The rule for a path Claude names inside a workspace's folder (issue 23, folder access).

A path is relative to the folder, written with ``/`` (``\\`` is taken as one too).  Refused,
as the tail of one sentence: ``..`` segments, absolute paths, drive letters (``C:``), UNC and
device paths (``\\\\server\\share``, ``\\\\?\\``), NUL, Windows device names (``CON``, ``NUL``,
``COM1``…).  The string rule is a pure function, the same on every system; the disk half
(:func:`resolve_inside`) refuses what resolves outside the folder — a symbolic link, a
junction — and anything but a directory or a regular file (devices, FIFOs, sockets).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

_DEVICE = re.compile(r"(?i)^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$")
_DRIVE = re.compile(r"^[A-Za-z]:")


def parts_of(path: str) -> tuple[str, ...] | str:
    """The path's segments (``()`` for the folder itself), or why it is refused."""
    if "\0" in path:
        return "it contains a NUL character"
    if path.startswith(("\\\\", "//")):
        return "it is a UNC or device path; give a path relative to the folder"
    if _DRIVE.match(path):
        return "it names a drive; give a path relative to the folder"
    if path.startswith(("/", "\\")) or path.startswith("~"):
        return "it is an absolute path; give a path relative to the folder"
    parts: list[str] = []
    for part in re.split(r"[\\/]", path):
        if part in ("", "."):
            continue
        if part == "..":
            return "it leaves the folder with '..'"
        if _DEVICE.match(part.rstrip(" .")):
            return f"'{part}' is a device name on Windows"
        if ":" in part:  # an alternate data stream (file.txt:secret) or a stray drive
            return "it contains ':'"
        parts.append(part)
    return tuple(parts)


@dataclass(frozen=True, slots=True)
class Inside:
    """A path that passed the rule: where it resolves, and what it is there."""

    parts: tuple[str, ...]  # as named, relative to the folder
    real: Path  # resolved (links followed), inside the folder
    real_parts: tuple[str, ...]  # *real* relative to the folder's own resolved path
    is_dir: bool
    identity: tuple[int, int]  # (st_dev, st_ino) at the check: the read's handle must match


def within(real: str, root: str) -> bool:
    """Is the resolved *real* the resolved *root* or under it (pure; case as given)?"""
    root = root.rstrip("\\/") or root
    return real == root or real.startswith(root + os.sep) or (
        os.sep != "/" and real.startswith(root + "/"))


def resolve_inside(folder: str, path: str) -> Inside | str:
    """*path* inside *folder* on the disk, or why it is refused (the tail of a sentence)."""
    parts = parts_of(path)
    if isinstance(parts, str):
        return parts
    root = os.path.realpath(folder)
    target = os.path.join(folder, *parts) if parts else folder
    if not os.path.lexists(target):
        return "there is no such file or folder"
    real = os.path.realpath(target)
    if not within(real, root):
        return "it is a link (or junction) that leads outside the folder"
    try:
        st = os.stat(real)
    except OSError:
        return "it cannot be read"
    if not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
        return "it is not a regular file or folder (a device, a pipe or a socket)"
    rel = os.path.relpath(real, root)
    real_parts = () if rel == "." else tuple(Path(rel).parts)
    return Inside(parts, Path(real), real_parts, stat.S_ISDIR(st.st_mode),
                  (st.st_dev, st.st_ino))
