"""The rule for a path Claude names inside a workspace's folder.

A path is relative to the folder, written with ``/`` (``\\`` is taken as one too).  Refused,
as the tail of one sentence: ``..`` segments, absolute paths, drive letters (``C:``), UNC and
device paths (``\\\\server\\share``, ``\\\\?\\``), NUL, Windows device names (``CON``, ``NUL``,
``COM1``…).  The string rule is a pure function, the same on every system; the disk half
(:func:`resolve_inside`) refuses what resolves outside the folder — a symbolic link, a
junction — and anything but a directory or a regular file (devices, FIFOs, sockets).

The folder's other rules live here too, so that whichever module answers the folder tools
applies the same ones:

- a regular file with more than one name on the disk (a hard link) is not read: its other
  name may be outside the folder (``~/.ssh/id_rsa`` linked in by a repository's script), and
  nothing short of searching the whole disk can tell where;
- the likely secrets (:data:`SECRETS`), never listed or read unless the person allowed them;
- a ``.gitignore`` is read only when it is a regular file (never through a link) of at most
  :data:`MAX_GITIGNORE_BYTES`; otherwise its folder's contents count as left out, with the
  reason (:func:`gitignore_lines`);
- on a disk that ignores letter case, ``.gitignore`` rules match in any case
  (:func:`ignores_case`, probed per folder's volume);
- a listing looks at most at :data:`MAX_LISTED` entries of one folder (:func:`scan`).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

_DEVICE = re.compile(r"(?i)^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$")
_DRIVE = re.compile(r"^[A-Za-z]:")

# Likely secrets: never listed or read unless allowed (hidden names are caught anyway), in
# any letter case: keys and certificates, keystores and password databases, PuTTY keys,
# Terraform state (it holds every secret of what it made), cloud credentials.
SECRETS = (".env*", ".git", ".ssh", "*.pem", "*.key", "id_*", "*.p12", "*.pfx", "*.ppk",
           "*.kdbx", "*.jks", "*.keystore", "*.tfstate", "*.tfstate.*", "credentials.json",
           "secrets.*")
MAX_GITIGNORE_BYTES = 1_000_000  # a real one is a few KB; git itself stops at 100 MB
MAX_LISTED = 5_000  # entries of one folder a listing looks at (100,000 took 5 s per page)
HARD_LINK = ("it has another name on the disk (a hard link), which may be outside the "
             "folder; a copy of it can be read")


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
    if hard_linked(st):
        return HARD_LINK
    rel = os.path.relpath(real, root)
    real_parts = () if rel == "." else tuple(Path(rel).parts)
    return Inside(parts, Path(real), real_parts, stat.S_ISDIR(st.st_mode),
                  (st.st_dev, st.st_ino))


def hard_linked(st: os.stat_result) -> bool:
    """A regular file with another name somewhere on its disk (folders always have several).
    (On Windows ``os.scandir``'s entries say 0: only ``os.stat`` and ``os.fstat`` tell.)"""
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1


def is_secret(name: str) -> bool:
    """Does the name of one file or folder look like a secret's (in any letter case)?"""
    return _secret().match(name.lower()) is not None


@functools.cache
def _secret() -> re.Pattern[str]:
    """SECRETS as one pattern (a listing asks for every entry)."""
    import fnmatch

    return re.compile("|".join(fnmatch.translate(pattern) for pattern in SECRETS))


def gitignore_lines(path: Path) -> tuple[int, int, int] | str | None:
    """Whether the ``.gitignore`` at *path* can be read: None when there is none, the reason
    when it cannot be (the tail of a sentence), else its identity for a cache (mtime, size,
    inode).  Never follows a link: :func:`read_gitignore` reads it the same way."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return "cannot be read"
    if stat.S_ISLNK(st.st_mode):
        return "is a link"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    if st.st_size > MAX_GITIGNORE_BYTES:
        return f"is larger than {MAX_GITIGNORE_BYTES / 1_000_000:g} MB"
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def read_gitignore(path: Path) -> list[str] | str:
    """The rules' lines of the ``.gitignore`` at *path*, read from a handle that is the file
    checked (no link followed, no FIFO opened for good), at most MAX_GITIGNORE_BYTES; else
    the reason (as :func:`gitignore_lines`)."""
    checked = gitignore_lines(path)
    if checked is None:
        return []
    if isinstance(checked, str):
        return checked
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return "is a link, or cannot be read"
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_ino != checked[2]:
            return "changed while it was being read"
        data = handle.read(MAX_GITIGNORE_BYTES + 1)
    if len(data) > MAX_GITIGNORE_BYTES:  # (it grew since the look)
        return f"is larger than {MAX_GITIGNORE_BYTES / 1_000_000:g} MB"
    return data.decode("utf-8", errors="replace").splitlines()


def ignores_case(folder: str) -> bool:
    """Does the disk that holds *folder* ignore letter case (macOS's and Windows' usually
    do)?  Probed once per volume; where it cannot be told, the system's default."""
    from app.base.paths import case_insensitive

    return case_insensitive(folder)


class scan:  # noqa: N801 - used as ``with scan(folder) as listing``, like os.scandir
    """``os.scandir`` that yields at most *limit* (MAX_LISTED) entries, in the disk's order;
    ``more`` says afterwards whether the folder held more.  Raises OSError as scandir."""

    def __init__(self, folder: Path | str, limit: int | None = None) -> None:
        self._limit = MAX_LISTED if limit is None else limit
        self._listing = os.scandir(folder)
        self.more = False

    def __enter__(self) -> scan:
        return self

    def __exit__(self, *_: object) -> None:
        self._listing.close()

    def __iter__(self) -> Iterator[os.DirEntry[str]]:
        for count, item in enumerate(self._listing):
            if count == self._limit:
                self.more = True
                return
            yield item
