"""Folder rules: which paths can become a workspace, their canonical form and de-duplication key.

The string rules for both systems are pure functions, so the Windows rules are tested on
macOS/Linux and the other way round. Only the second half of this module touches the disk.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import unicodedata
from dataclasses import dataclass

from app.errors import Refused

# Read at call time (not baked into defaults) so tests can pretend to be another system.
_ON_WINDOWS = os.name == "nt"
_ON_MAC = sys.platform == "darwin"

_SEPS = re.compile(r"[\\/]")
_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_VOLUME = re.compile(r"Volume\{[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\}[\\/]")


# ---------------------------------------------------------------- pure string rules


def _share_end(path: str, start: int) -> int | None:
    """End index of ``server\\share`` starting at ``start``; None unless both parts are there."""
    parts = _SEPS.split(path[start:], maxsplit=2)
    if len(parts) < 2 or not parts[0] or not parts[1]:
        return None
    return start + len(parts[0]) + 1 + len(parts[1])


def _windows_root(path: str) -> str | None:
    """The root of a fully qualified Windows path, spelled as given; None when not qualified.

    A drive root includes its separator (``C:\\``) because ``C:`` alone is drive-relative; a
    share root does not (``\\\\server\\share``), because that is how people write shares.
    """
    if not path or "\0" in path:
        return None
    if _DRIVE.match(path):
        return path[:3]
    if len(path) < 2 or path[0] not in "\\/" or path[1] not in "\\/":
        return None  # relative, drive-relative (C:work) or rooted without a drive (\work)
    if len(path) >= 4 and path[2] in "?." and path[3] in "\\/":
        # Device namespace (\\?\ or \\.\): only the forms that name a drive, share or volume.
        rest = path[4:]
        if _DRIVE.match(rest):
            return path[:7]
        volume = _VOLUME.match(rest)
        if volume:
            return path[: 4 + volume.end()]
        if rest[:4].upper() in ("UNC\\", "UNC/"):
            end = _share_end(path, 8)
            return path[:end] if end is not None else None
        return None
    end = _share_end(path, 2)
    return path[:end] if end is not None else None


def is_fully_qualified_windows(path: str) -> bool:
    """A drive with a root, a UNC share with both parts, or a \\\\?\\ form naming one of those."""
    return _windows_root(path) is not None


def is_fully_qualified_posix(path: str) -> bool:
    """An absolute POSIX path without NUL (the kernel would cut the string there)."""
    return bool(path) and path.startswith("/") and "\0" not in path


def is_fully_qualified(path: str, *, windows: bool | None = None) -> bool:
    """The fully-qualified check for ``windows`` rules, or for this machine when None."""
    if not isinstance(path, str):
        return False
    if _ON_WINDOWS if windows is None else windows:
        return is_fully_qualified_windows(path)
    return is_fully_qualified_posix(path)


# Characters that would break a message across lines or reorder it on screen (bidi controls).
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _SHORT:
        return _SHORT[char]
    if char not in _BIDI and unicodedata.category(char) not in ("Cc", "Zl", "Zp", "Cs"):
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(path: str) -> str:
    """The path as it appears inside a message: verbatim, but always one printable line.

    Lone surrogates (undecodable bytes from the OS) are escaped too, so the message can be
    encoded to UTF-8 for a log or a terminal.
    """
    if path.isprintable():  # fast path: nothing isprintable() accepts needs escaping
        return path
    return "".join(_escape(char) for char in path)


def _posix_root(path: str) -> str | None:
    if not path.startswith("/"):
        return None
    return path[: len(path) - len(path.lstrip("/"))]


def title_for(canonical: str, *, windows: bool | None = None) -> str:
    """The default title: the final segment, or the root itself, spelled as given."""
    win = _ON_WINDOWS if windows is None else windows
    root = (_windows_root(canonical) if win else _posix_root(canonical)) or ""
    seps = "\\/" if win else "/"
    rest = canonical[len(root) :].rstrip(seps)
    if not rest:
        return canonical  # a root (C:\, /, \\server\share\) keeps its own spelling
    return (_SEPS.split(rest) if win else rest.split("/"))[-1]


def parent_keys(key: str, *, windows: bool | None = None) -> list[str]:
    """Keys of every ancestor directory, nearest first, ending at the root.

    Ancestors are rebuilt from the root as ``_windows_root`` spells it, which is also how
    ``resolve_folder`` spells a root, so a registered root matches its descendants' lists.
    """
    if _ON_WINDOWS if windows is None else windows:
        root, sep = _windows_root(key), "\\"
        if root is None:
            return []
        parts = [part for part in _SEPS.split(key[len(root) :]) if part]
    else:
        if not key.startswith("/"):
            return []
        root, sep = "/", "/"  # realpath folds a leading // to /, so "/" is the root's key
        parts = [part for part in key.split("/") if part]
    joiner = root if root.endswith(("\\", "/")) else root + sep
    return [joiner + sep.join(parts[:i]) if i else root for i in range(len(parts) - 1, -1, -1)]


# ---------------------------------------------------------------- the current machine


@dataclass(frozen=True, slots=True)
class Folder:
    canonical: str
    key: str
    identity: tuple[int, int] | None


def _reason(error: BaseException, path: str = "") -> str:
    """The system's own words for an error, as the tail of a one-line sentence."""
    if isinstance(error, OSError) and error.errno == errno.ENAMETOOLONG:
        # It may well exist: the system cannot look up a path this long in one piece.
        if any(len(part) > 255 for part in _SEPS.split(path)):
            return "a folder name in the path is longer than this system allows"
        return "path is longer than this system allows"
    if _missing(error):
        return "path does not exist"
    text = (getattr(error, "strerror", None) or "the path cannot be read").strip().rstrip(".")
    return shown(text.lower())


def _missing(error: BaseException) -> bool:
    if isinstance(error, (FileNotFoundError, NotADirectoryError, ValueError, RecursionError)):
        return True  # ValueError: embedded NUL/undecodable; RecursionError: huge symlink chains
    return isinstance(error, OSError) and error.errno in (errno.ENOENT, errno.ENOTDIR)


def _tidy_windows_root(canonical: str) -> str:
    """A share root is spelled without its trailing separator, whatever realpath returned."""
    root = _windows_root(canonical)
    if root and not root.endswith(("\\", "/")) and not canonical[len(root) :].strip("\\/"):
        return root
    return canonical


def resolve_folder(path: str) -> Folder:
    """Validate, then canonicalise: the folder a workspace would be created for.

    Validation comes first on purpose: realpath (via abspath) would quietly turn ``.`` or
    ``C:work`` into a full path under the current directory, which the spec refuses.
    """
    if not is_fully_qualified(path):
        raise Refused(f"Workspace path is not fully qualified: '{shown(str(path))}'")
    prefix = f"cannot create a workspace at '{shown(path)}'"
    try:
        canonical = os.path.realpath(path, strict=True)
        if _ON_WINDOWS:
            canonical = _tidy_windows_root(canonical)
        info = os.stat(canonical)
    except (OSError, ValueError, RecursionError) as error:
        raise Refused(f"{prefix}: {_reason(error, path)}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise Refused(f"cannot create a workspace at '{shown(canonical)}': path is not a directory")
    ident = (info.st_dev, info.st_ino) if info.st_ino else None
    return Folder(canonical=canonical, key=path_key(canonical), identity=ident)


def try_resolve_folder(path: str | None) -> Folder | None:
    """The folder, or None when there is none, it does not resolve, or it is not a directory."""
    if not isinstance(path, str):
        return None
    try:
        return resolve_folder(path)
    except Refused:
        return None


# Per volume (st_dev): does that volume ignore letter case? Probed once, then remembered.
_CASE_CACHE: dict[int, bool] = {}


def _swap_one(name: str) -> str | None:
    """``name`` with its first reversibly cased letter's case swapped; None if it has none."""
    for index, char in enumerate(name):
        other = char.swapcase()
        if other != char and len(other) == 1 and other.swapcase() == char:
            return name[:index] + other + name[index + 1 :]
    return None


def _probe(existing: str, dev: int) -> bool | None:
    """Look the deepest cased component up with its case swapped; None when undecidable.

    Only components whose parent lies on the same volume count: a lookup is decided by the
    filesystem of the directory it happens in.
    """
    current = existing
    while True:
        parent, name = os.path.split(current)
        if not name or parent == current:
            return None
        try:
            if os.stat(parent).st_dev != dev:
                return None
            swapped = _swap_one(name)
            if swapped is not None:
                mine = os.stat(current)
                try:
                    theirs = os.stat(os.path.join(parent, swapped))
                except FileNotFoundError:
                    return False
                return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)
        except (OSError, ValueError):
            return None
        current = parent


def _case_insensitive(path: str) -> bool:
    default = _ON_WINDOWS or _ON_MAC  # their default volumes ignore case
    existing = path
    while True:  # a stored path may be gone; its nearest surviving ancestor names the volume
        try:
            dev = os.stat(existing).st_dev
            break
        except (OSError, ValueError):
            parent = os.path.dirname(existing)
            if parent == existing:
                return default
            existing = parent
    if dev not in _CASE_CACHE:
        answer = _probe(existing, dev)
        if answer is None:
            return default  # not cached: a later path on this volume may be probeable
        _CASE_CACHE[dev] = answer
    return _CASE_CACHE[dev]


def case_insensitive(path: str) -> bool:
    """Does the volume that holds *path* ignore letter case (probed once per volume)?"""
    return _case_insensitive(path)


def _fold(text: str) -> str:
    """Case-fold one character at a time, as filesystems do.

    str.casefold() maps ß to ss, which no filesystem does; two distinct folders must never
    share a key, so only one-to-one mappings are applied.
    """
    if text.isascii():
        return text.lower()
    out = []
    for char in text:
        upper = char.upper()
        upper = upper if len(upper) == 1 else char
        lower = upper.lower()
        out.append(lower if len(lower) == 1 else upper)
    return "".join(out)


def _windows_key_form(canonical: str) -> str:
    r"""Drop the \\?\ prefix where a plain form exists, so both spellings share a key."""
    if canonical[:8].upper() == "\\\\?\\UNC\\":
        return "\\\\" + canonical[8:]
    if canonical.startswith("\\\\?\\") and _DRIVE.match(canonical[4:]):
        return canonical[4:]
    return canonical


def path_key(canonical: str) -> str:
    """The de-duplication key: the canonical path with the aliases realpath misses folded."""
    key = canonical
    if _ON_WINDOWS:
        return _fold(_windows_key_form(key))  # NTFS and FAT ignore case
    if _ON_MAC:
        key = unicodedata.normalize("NFC", key)  # HFS+ stores NFD, APFS accepts both
    return _fold(key) if _case_insensitive(canonical) else key


def identity(path: str) -> tuple[int, int] | None:
    """(st_dev, st_ino) of a directory; None when missing, not a directory, or no inode (0)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError, TypeError):
        return None
    if not stat.S_ISDIR(info.st_mode) or not info.st_ino:
        return None
    return (info.st_dev, info.st_ino)


def folder_status(canonical: str) -> str:
    """``ok`` when the folder is a directory now, ``missing-dir`` otherwise."""
    try:
        return "ok" if os.path.isdir(canonical) else "missing-dir"
    except (OSError, ValueError, TypeError):
        return "missing-dir"
