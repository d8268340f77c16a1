"""An export as files: a zip (and the batch zips inside it) or its unpacked folder, bounded like
a bundle, and its JSON read one top-level value at a time.

Bounds, each refused in one sentence before anything is written (the import surveys the
whole export first, :mod:`app.history.survey`):

- member names: no absolute or drive path, no ``..``, no NUL, no link, no duplicate (as a
  case-insensitive disk would see them); no encrypted or unusually packed member;
- sizes: the export, each member and every member together; a member that unpacks to more
  than :data:`MAX_RATIO` times its packed size (a zip bomb); how many members;
- JSON: nesting deeper than :data:`MAX_DEPTH`, a single text longer than :data:`MAX_TEXT`
  characters, one chat (a top-level value of an array) longer than :data:`MAX_ITEM_BYTES`;
  read by ijson's event parser, which never recurses and never holds more than one token, so
  memory stays bounded whatever the file holds.  Once a file passed, the import reads it again
  with ijson's fast builder, one chat at a time, after checking it has not changed.

A batch zip inside the export (newer Claude.ai exports) is unpacked to a temporary file, with
the same checks, one level deep only.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NoReturn, Protocol

from app.base.paths import shown
from app.errors import Refused, os_reason

MAX_MEMBERS = 200_000
MAX_MEMBER_BYTES = 8_000_000_000  # one member unpacked (conversations.json of years)
MAX_TOTAL_BYTES = 32_000_000_000  # every member unpacked, batch zips' members included
MAX_RATIO = 100  # unpacked / packed, any member: past it, a zip bomb
RATIO_FLOOR = 4_096  # below this a member is too small to be a bomb
MAX_BATCH_BYTES = 8_000_000_000  # a batch zip copied out to be read
MAX_DEPTH = 64  # lists and objects within each other (a real export: about 15)
MAX_TEXT = 8_000_000  # characters in one JSON string (a model's whole context is far less)
MAX_ITEM_BYTES = 64_000_000  # one chat, one project: bytes of JSON
MAX_FILE_BYTES = 32_000_000  # an image or a document taken in (a knowledge file's bound)
MAX_FOLDER_DEPTH = 8  # an unpacked export's folders within each other
CHUNK = 1 << 16

DRIVE = re.compile(r"^[A-Za-z]:")


class Refuser:
    """Raises :class:`Refused` with ``cannot import '<source>': <why>``."""

    def __init__(self, source: Path) -> None:
        self.prefix = f"cannot import '{shown(str(source))}'"

    def __call__(self, why: str) -> NoReturn:
        raise Refused(f"{self.prefix}: {why}")


@dataclass(frozen=True, slots=True)
class Member:
    """One file of the export: its name inside it ("/" between parts, batch zips' members as
    ``batch.zip/inner/name``), its size unpacked, and where it is."""

    name: str
    size: int
    zip_index: int  # which open zip holds it (-1: a file of the unpacked folder)
    inner: str  # its name in that zip, or its path on disk

    @property
    def base(self) -> str:
        return self.name.rsplit("/", 1)[-1]


class Archive:
    """An open export: its members, readable as streams.  Use :func:`open_archive`."""

    def __init__(self, source: Path, refuse: Refuser) -> None:
        self.source = source
        self.refuse = refuse
        self.members: list[Member] = []
        self._zips: list[zipfile.ZipFile] = []
        self._stack = ExitStack()
        self._temp: Path | None = None
        self.stamp: tuple[int, int] = (0, 0)

    def close(self) -> None:
        self._stack.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self, member: Member) -> _Bounded:
        """The member's bytes; never more than its entry declares."""
        try:
            if member.zip_index < 0:
                return _Bounded(open(member.inner, "rb"), member.size, member.name, self.refuse)
            zf = self._zips[member.zip_index]
            return _Bounded(zf.open(member.inner), member.size, member.name, self.refuse)
        except (zipfile.BadZipFile, EOFError, NotImplementedError, KeyError) as error:
            self.refuse(f"it is damaged ({shown(str(error)[:120])})")
        except OSError as error:
            self.refuse(os_reason(error))

    def read(self, member: Member, limit: int = MAX_FILE_BYTES) -> bytes:
        if member.size > limit:
            self.refuse(f"the file '{shown(member.name)}' is larger than {limit:,} bytes")
        with self.open(member) as stream:
            return stream.read()

    def unchanged(self) -> bool:
        """Whether the export on disk is still the one surveyed (size and time)."""
        return _stamp(self.source) == self.stamp


def _stamp(path: Path) -> tuple[int, int]:
    try:
        if path.is_dir():
            total, newest = 0, 0
            for root, _dirs, files in os.walk(path):
                for name in files:
                    info = os.lstat(os.path.join(root, name))
                    total += info.st_size
                    newest = max(newest, info.st_mtime_ns)
            return total, newest
        info = os.stat(path)
        return info.st_size, info.st_mtime_ns
    except (OSError, ValueError):
        return (-1, -1)


class _Bounded:
    """A stream that refuses to give more than *size* bytes (a member lying about itself)."""

    def __init__(self, raw: IO[bytes], size: int, name: str, refuse: Refuser) -> None:
        self._raw = raw
        self._left = size
        self._name = name
        self._refuse = refuse

    def read(self, n: int = -1) -> bytes:
        try:
            data = self._raw.read(n if n is not None and n >= 0 else self._left + 1)
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            self._refuse(f"the file '{shown(self._name)}' is damaged ({shown(str(error)[:120])})")
        self._left -= len(data)
        if self._left < 0:
            self._refuse(f"the file '{shown(self._name)}' holds more than it declares")
        return data

    def close(self) -> None:
        self._raw.close()

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_archive(source: Path) -> Archive:
    """Open *source* (a zip or a folder) and check every member's entry; :class:`Refused`
    in one sentence when it does not pass.  Close it (a context manager)."""
    refuse = Refuser(source)
    archive = Archive(source, refuse)
    try:
        archive.stamp = _stamp(source)
        try:  # a name too long, a NUL, a folder without access: one sentence, not a trace
            is_folder = source.is_dir()
        except (OSError, ValueError) as error:
            refuse(os_reason(error))
        if is_folder:
            _walk_folder(archive, source)
        else:
            _open_zip(archive, source, "", refuse)
        names: set[str] = set()
        for m in archive.members:
            folded = m.name.casefold()
            if folded in names:
                refuse(f"the file name '{shown(m.name)}' appears twice")
            names.add(folded)
    except BaseException:
        archive.close()
        raise
    return archive


def _walk_folder(archive: Archive, root: Path) -> None:
    refuse = archive.refuse
    total = 0
    try:
        for here, dirs, files in os.walk(root):
            depth = len(Path(here).relative_to(root).parts)
            if depth > MAX_FOLDER_DEPTH:
                refuse(f"its folders nest more than {MAX_FOLDER_DEPTH} deep")
            for name in sorted(files):
                path = os.path.join(here, name)
                info = os.lstat(path)
                if not stat.S_ISREG(info.st_mode):
                    continue  # links and devices are not part of an export
                rel = Path(path).relative_to(root).as_posix()
                total += info.st_size
                _check_size(rel, info.st_size, total, refuse)
                if len(archive.members) >= MAX_MEMBERS:
                    refuse(f"it holds more than {MAX_MEMBERS:,} files")
                if name.lower().endswith(".zip") and depth == 0:
                    _open_zip(archive, Path(path), rel + "/", refuse)
                    continue
                archive.members.append(Member(rel, info.st_size, -1, path))
            dirs[:] = [d for d in sorted(dirs) if not os.path.islink(os.path.join(here, d))]
    except OSError as error:
        refuse(os_reason(error))


def _check_size(name: str, size: int, total: int, refuse: Refuser) -> None:
    if size > MAX_MEMBER_BYTES:
        refuse(f"the file '{shown(name)}' is larger than {MAX_MEMBER_BYTES:,} bytes")
    if total > MAX_TOTAL_BYTES:
        refuse(f"it unpacks to more than {MAX_TOTAL_BYTES:,} bytes")


def _open_zip(archive: Archive, path: Path, prefix: str, refuse: Refuser) -> None:
    try:
        zf = zipfile.ZipFile(archive._stack.enter_context(open(path, "rb")))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        if prefix:
            refuse(f"the batch '{shown(prefix[:-1])}' is not a zip file")
        refuse("it is neither a zip file nor a folder")
    except OSError as error:
        refuse(os_reason(error))
    archive._stack.enter_context(zf)
    index = len(archive._zips)
    archive._zips.append(zf)
    infos = zf.infolist()
    if len(infos) + len(archive.members) > MAX_MEMBERS:
        refuse(f"it holds more than {MAX_MEMBERS:,} files")
    total = sum(m.size for m in archive.members)
    for info in infos:
        name = info.orig_filename.replace("\\", "/")
        _check_name(name, refuse)
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            refuse(f"the file '{shown(name)}' is a link")
        if info.is_dir():
            continue
        if info.flag_bits & 0x1:
            refuse(f"the file '{shown(name)}' is encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            refuse(f"the file '{shown(name)}' is packed in a way Cairn does not read")
        size = int(info.file_size)
        if size > RATIO_FLOOR and size > MAX_RATIO * max(info.compress_size, 1):
            refuse(f"the file '{shown(prefix + name)}' unpacks to more than {MAX_RATIO} times "
                   "its packed size, the mark of a zip bomb")
        total += size
        _check_size(prefix + name, size, total, refuse)
        if name.lower().endswith(".zip") and not prefix and "/" not in name.strip("/"):
            _open_batch(archive, zf, info, name, refuse)
            continue
        archive.members.append(Member(prefix + name, size, index, info.filename))


def _check_name(name: str, refuse: Refuser) -> None:
    if "\0" in name:
        refuse(f"the file name '{shown(name)}' holds a NUL character")
    if name.startswith("/"):
        refuse(f"the file '{shown(name)}' has an absolute path")
    if DRIVE.match(name):
        refuse(f"the file '{shown(name)}' names a drive")
    if ".." in name.split("/"):
        refuse(f"the file '{shown(name)}' points outside the export")


def _open_batch(archive: Archive, zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str,
                refuse: Refuser) -> None:
    """A batch zip inside the export: copied out (bounded), then read as one more zip."""
    if info.file_size > MAX_BATCH_BYTES:
        refuse(f"the batch '{shown(name)}' is larger than {MAX_BATCH_BYTES:,} bytes")
    if archive._temp is None:
        archive._temp = Path(tempfile.mkdtemp(prefix="cairn-history-"))
    target = archive._temp / f"batch-{len(archive._zips)}.zip"
    try:
        with zf.open(info) as src, open(target, "wb") as out:
            copied = 0
            while chunk := src.read(CHUNK * 16):
                copied += len(chunk)
                if copied > info.file_size:
                    refuse(f"the batch '{shown(name)}' holds more than it declares")
                out.write(chunk)
    except (zipfile.BadZipFile, EOFError) as error:
        refuse(f"the batch '{shown(name)}' is damaged ({shown(str(error)[:120])})")
    except OSError as error:
        refuse(os_reason(error))
    _open_zip(archive, target, name + "/", refuse)


# ===================================================================== JSON, bounded


class _Readable(Protocol):
    def read(self, n: int = -1, /) -> bytes: ...


class _Counting:
    """A stream that counts what it gives, and refuses once one top-level value is read past
    :data:`MAX_ITEM_BYTES` (the reader marks where each one starts)."""

    def __init__(self, raw: _Readable, name: str, refuse: Refuser) -> None:
        self._raw = raw
        self._name = name
        self._refuse = refuse
        self.read_bytes = 0
        self.mark = 0

    def read(self, n: int = -1) -> bytes:
        data = self._raw.read(n)
        self.read_bytes += len(data)
        if self.read_bytes - self.mark > MAX_ITEM_BYTES + 2 * CHUNK:
            self._refuse(f"the file '{shown(self._name)}' holds one value larger than "
                         f"{MAX_ITEM_BYTES:,} bytes")
        return data


def _ijson() -> Any:
    import ijson

    return ijson


@dataclass(slots=True)
class Summary:
    """What :func:`check_json` saw of a JSON file, without building it: whether it is an
    array or an object, the keys of its first element (or of the object), how many elements,
    and for each element its short scalar fields named in *fields* and how many objects
    stand in each of its lists or objects (``counts[i]["chat_messages"]``)."""

    top: str = "other"  # array | object | other
    keys: frozenset[str] = frozenset()
    elements: list[dict[str, Any]] | None = None

    @property
    def count(self) -> int:
        return len(self.elements or ())


SCALARS = frozenset({"uuid", "id", "name", "title", "updated_at", "update_time",
                     "conversation_id", "project_uuid"})


def check_json(archive: Archive, member: Member) -> Summary:
    """Walk *member*'s JSON with every bound, building nothing: its :class:`Summary`.

    Refused in one sentence: not JSON, not UTF-8, nesting past :data:`MAX_DEPTH`, a text past
    :data:`MAX_TEXT` characters, one value past :data:`MAX_ITEM_BYTES` bytes."""
    ijson = _ijson()
    refuse = archive.refuse
    what = f"the file '{shown(member.name)}'"
    summary = Summary()
    elements: list[dict[str, Any]] = []
    keys: set[str] = set()
    with archive.open(member) as raw:
        stream = _Counting(raw, member.name, refuse)
        depth = 0
        key: str | None = None  # the element's field being read
        current: dict[str, Any] = {}
        at = 2  # the depth of an element's fields: 2 in an array, 1 in an object
        try:
            for event, value in ijson.basic_parse(stream, buf_size=CHUNK):
                if event == "map_key":
                    if depth == at:
                        key = value
                        if len(elements) == 1:
                            keys.add(value)
                elif event == "start_map" or event == "start_array":
                    depth += 1
                    if depth > MAX_DEPTH:
                        refuse(f"{what} nests deeper than {MAX_DEPTH} levels")
                    if depth == 1:
                        summary.top = "object" if event == "start_map" else "array"
                        at = 1 if event == "start_map" else 2
                    if depth == at and (at == 1 or event == "start_map"):
                        current = {}
                        elements.append(current)
                        stream.mark = stream.read_bytes
                        key = None
                    elif depth == at + 2 and key is not None and event == "start_map":
                        counted = current.get(key, 0)
                        current[key] = counted + 1 if isinstance(counted, int) else 1
                elif event == "end_map" or event == "end_array":
                    depth -= 1
                elif event == "string":
                    if len(value) > MAX_TEXT:
                        refuse(f"{what} holds a text longer than {MAX_TEXT:,} characters")
                    if depth == at and key in SCALARS:
                        current[key] = value[:200]
                elif event == "number" and depth == at and key in SCALARS:
                    current[key] = value
        except Refused:
            raise
        except UnicodeDecodeError:
            refuse(f"{what} is not UTF-8 text")
        except Exception as error:  # ijson's JSONError, IncompleteJSONError, the backend's
            if type(error).__module__.startswith("ijson") or "JSON" in type(error).__name__:
                refuse(f"{what} is not valid JSON ({shown(str(error)[:80])})")
            raise
    summary.keys = frozenset(keys)
    summary.elements = elements
    return summary


def items(archive: Archive, member: Member) -> Iterator[Any]:
    """The top-level values of *member* (each element when it is an array; the document when
    it is an object), built one at a time.  Call only on a member :func:`check_json` passed:
    the builder trusts the file's depth."""
    ijson = _ijson()
    refuse = archive.refuse
    if not archive.unchanged():
        refuse("it changed on disk while it was read; import it again")
    with archive.open(member) as raw:
        stream = _Counting(raw, member.name, refuse)
        first = _first_byte(stream)
        try:
            if first == b"[":
                for value in ijson.items(_Prefixed(first, stream), "item", buf_size=CHUNK,
                                         use_float=True):
                    yield value
                    stream.mark = stream.read_bytes
            elif first == b"{":
                for value in ijson.items(_Prefixed(first, stream), "", buf_size=CHUNK,
                                         use_float=True):
                    yield value
        except Refused:
            raise
        except Exception as error:
            if type(error).__module__.startswith("ijson") or "JSON" in type(error).__name__:
                refuse(f"the file '{shown(member.name)}' is not valid JSON "
                       f"({shown(str(error)[:80])})")
            raise


def _first_byte(stream: _Counting) -> bytes:
    while True:
        b = stream.read(1)
        if not b:
            return b""
        if b in b" \t\r\n":
            continue
        if b == b"\xef":  # a byte-order mark
            stream.read(2)
            continue
        return b


class _Prefixed:
    def __init__(self, head: bytes, stream: _Counting) -> None:
        self._head = head
        self._stream = stream

    def read(self, n: int = -1) -> bytes:
        if n == 0:
            return b""
        if self._head:
            head, self._head = self._head, b""
            return head + self._stream.read(max(n - 1, 0) if n and n > 0 else -1)
        return self._stream.read(n)
