"""CAIRN.md on the disk: read without following a link, written without overwriting an edit.

The rule, at every place Cairn reads or writes CAIRN.md (and its conflict copies):

- **No link followed.**  The file is looked at with ``lstat`` and opened with ``O_NOFOLLOW``
  where the system has it (every POSIX system; Windows has no such flag, and a link there is
  refused by the ``lstat`` look and by the identity check after opening).  A CAIRN.md that is
  a symbolic link is never read: a ``git pull`` can deliver a link to ``~/.ssh/id_rsa``, and
  its target would become the knowledge sent to the model.
- **No special file read.**  Only a regular file is opened, non-blocking (a FIFO never holds
  the storage thread), and only its first 1 MB + 1 byte is read (a link to ``/dev/zero`` or a
  4 GB sparse file is refused by its size, never read whole).
- **The folder is the project's.**  The workspace's folder must still resolve to the path it
  was registered at: a nested folder replaced by a link (to outside the project) is neither
  read nor written.
- **A write never overwrites an edit.**  The new text is written beside the file and synced;
  right before it is moved over CAIRN.md, the file is read again, and when it is not what the
  write was decided on (an editor saved meanwhile) the write is dropped and the edit is taken
  in first.  (What remains is the instant between that look and the rename itself: no
  portable system call closes it.)
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from app.base.paths import path_key, shown
from app.errors import Refused, os_reason
from app.store.documents import MAX_DOCUMENT_BYTES

FILE_NAME = "CAIRN.md"

LINK = ("it is a symbolic link, and Cairn never follows one: the file it points to could be "
        "any file on this computer, so it is not read")
FOLDER = "it is a folder, not a file"
SPECIAL = "it is not a regular file (a pipe, a device or a socket), so it is not read"

# Dropbox (and Nextcloud): "CAIRN (Ana's conflicted copy 2026-12-01).md";
# Syncthing: "CAIRN.sync-conflict-20261201-101010-ABCDEFG.md".
_COPY = re.compile(r"(?i)\ACAIRN (\(.*conflicted copy.*\))\.md\Z|\ACAIRN\.sync-conflict-.+\.md\Z")


@dataclass(frozen=True, slots=True)
class Found:
    """What a look at the file found: its first bytes (at most 1 MB + 1; none past 1 MB), its
    size, and why it is not read when it is not (a link, a folder, a special file)."""

    data: bytes
    size: int
    refusal: str | None = None
    identity: tuple[int, int, int] | None = None  # (mtime, size, inode) at the look


def too_large(size: int) -> str:
    said = f"{size / 1_000_000:,.1f} MB" if size >= 10_000_000 else f"{size:,} bytes"
    return f"it is {said}, and a knowledge document can be at most 1 MB (1,000,000 bytes)"


def invalid_reason(data: bytes, size: int | None = None) -> str | None:
    """Why *data* (of a file of *size* bytes) cannot become the document (the tail of a
    sentence), None when it can."""
    size = len(data) if size is None else size
    if size > MAX_DOCUMENT_BYTES or len(data) > MAX_DOCUMENT_BYTES:
        return too_large(max(size, len(data)))
    if b"\0" in data:
        return "it is a binary file, not text"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return "it is a binary file, not text"
    return None


def why_not(found: Found) -> str | None:
    """Why the file *found* cannot become the document, None when it can."""
    return found.refusal or invalid_reason(found.data, found.size)


def look(path: Path) -> os.stat_result | None:
    """The file's own status (a link is a link), None when there is none."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def identity(st: os.stat_result | None) -> tuple[int, int, int] | None:
    return (st.st_mtime_ns, st.st_size, st.st_ino) if st is not None else None


def read(path: Path) -> Found | None:
    """The file's bytes, never through a link nor from a special file (then only why);
    None when there is no file.  Never blocks: a FIFO is not opened, and a file swapped for
    one between the look and the open is opened non-blocking and refused."""
    st = look(path)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Found(b"", 0, LINK, identity(st))
    if stat.S_ISDIR(st.st_mode):
        return Found(b"", 0, FOLDER, identity(st))
    if not stat.S_ISREG(st.st_mode):
        return Found(b"", 0, SPECIAL, identity(st))
    if st.st_size > MAX_DOCUMENT_BYTES:  # said by invalid_reason, from the size alone
        return Found(b"", st.st_size, None, identity(st))
    flags = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
             | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError:  # ELOOP: it became a link since the look
        return Found(b"", 0, LINK, identity(st))
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode) or (opened.st_dev, opened.st_ino) != (
                st.st_dev, st.st_ino):
            return Found(b"", 0, SPECIAL, identity(st))  # swapped between the look and open
        chunks: list[bytes] = []
        left = MAX_DOCUMENT_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return Found(b"".join(chunks), opened.st_size, None, identity(opened))
    finally:
        os.close(fd)


def folder_problem(folder: str) -> str | None:
    """Why CAIRN.md in *folder* (a workspace's registered, resolved path) is neither read nor
    written (a sentence), None when it may be: the folder must be a directory that still
    resolves to that path, so a folder replaced by a link never leads outside the project."""
    st = look(Path(folder))
    if st is None or not stat.S_ISDIR(st.st_mode) and not stat.S_ISLNK(st.st_mode):
        return f"The folder is missing, so {FILE_NAME} cannot be written."
    try:
        real = os.path.realpath(folder, strict=True)
    except (OSError, RuntimeError):
        return f"The folder is missing, so {FILE_NAME} cannot be written."
    if stat.S_ISLNK(st.st_mode) or path_key(real) != path_key(folder):
        return (f"The folder is now a symbolic link to '{shown(real)}', so {FILE_NAME} is "
                "neither read nor written there (it could be outside the project).")
    return None


def write(path: Path, data: bytes, *, expect: Found | None) -> bool:
    """Atomic replace: written and synced beside the file, then moved over it, but only
    when the file still is what the write was decided on (*expect*: its bytes then, None when
    there was none).  False, nothing changed, when it is not (an editor saved meanwhile).
    Refused in one sentence when the disk says no."""
    temp = path.with_name(f".{FILE_NAME}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "xb") as out:  # exclusive: never through a link planted at that name
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        now = read(path)
        if not _same(now, expect):
            temp.unlink()
            return False
        os.replace(temp, path)
        return True
    except OSError as error:
        try:
            temp.unlink()
        except OSError:
            pass
        raise Refused(f"cannot write '{shown(str(path))}': {os_reason(error)}") from None


def _same(now: Found | None, then: Found | None) -> bool:
    if now is None or then is None:
        return now is None and then is None
    return (now.data, now.refusal) == (then.data, then.refusal)


# ----------------------------------------------------------------- conflict copies


@dataclass(frozen=True, slots=True)
class Copy:
    """A sync service's conflict copy of CAIRN.md beside it."""

    name: str
    sha: str
    text: str | None  # None: not readable as a document (then *problem* says why)
    problem: str | None = None


def is_copy_name(name: str) -> bool:
    return bool(_COPY.match(name))


def copies(folder: Path) -> list[tuple[str, Found]]:
    """The conflict copies in *folder* (by name), each read by the rule above (a link or a
    special file is listed with why it is not read)."""
    try:
        names = sorted(entry.name for entry in os.scandir(folder) if is_copy_name(entry.name))
    except OSError:
        return []
    found: list[tuple[str, Found]] = []
    for name in names[:20]:  # a folder with hundreds is not a folder to merge from
        item = read(folder / name)
        if item is not None:
            found.append((name, item))
    return found


__all__ = ["FILE_NAME", "Copy", "Found", "copies", "folder_problem", "identity",
           "invalid_reason", "is_copy_name", "look", "read", "too_large", "why_not", "write"]
