"""The errors the core raises, each carrying one sentence a person can read."""

from __future__ import annotations

import errno


class CairnError(Exception):
    """Base of every error Cairn reports to a person; ``str(error)`` is the sentence."""


class Refused(CairnError):
    """An operation was refused; nothing stored was changed (the CLI exits 1)."""


class StartupError(CairnError):
    """Stored data cannot be opened safely; Cairn stops instead of guessing."""


class StorageError(CairnError):
    """A write could not be stored (busy database, full disk); it was rolled back whole."""



# The system's errors as a person reads them (missing names are absent on some systems).
_OS_WORDS: dict[int, str] = {
    getattr(errno, name): text for name, text in (
        ("ENOENT", "it does not exist"),
        ("ENOTDIR", "a part of its path is not a folder"),
        ("EISDIR", "it is a folder, not a file"),
        ("EEXIST", "a file is in the way of a folder it needs"),
        ("EACCES", "permission was denied"),
        ("EPERM", "permission was denied"),
        ("ENOSPC", "the disk is full"),
        ("EDQUOT", "the disk quota is used up"),
        ("EROFS", "the disk is read-only"),
        ("ENAMETOOLONG", "its path is longer than this system allows"),
        ("ELOOP", "its path has too many symbolic links"),
        ("EIO", "the disk reported an input/output error"),
        ("EFBIG", "it is larger than this disk allows"),
        ("EMFILE", "too many files are open"),
        ("ENXIO", "it is a device that is not there"),
    ) if hasattr(errno, name)
}


def os_reason(error: BaseException) -> str:
    """What went wrong with a file or folder, in words: the tail of a one-line sentence.

    Never Python's own text (``[Errno 2] No such file or directory: '/p'``), which repeats
    the path and names the error by its number.
    """
    if isinstance(error, UnicodeError):
        return "its name cannot be spelled on this system"
    if isinstance(error, ValueError):  # an embedded NUL: the system would cut the name there
        return "its name contains a NUL character"
    code = getattr(error, "errno", None)
    if isinstance(code, int) and code in _OS_WORDS:
        return _OS_WORDS[code]
    strerror = getattr(error, "strerror", None)
    if isinstance(strerror, str) and strerror.strip():
        return strerror.strip().rstrip(".").lower()  # the system's words, without the number
    return "the system refused it"
