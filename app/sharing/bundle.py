"""The ``.cairn`` bundle: one workspace and its folders in a zip, described by a versioned
JSON manifest.  This module knows the format — reading it with every check, writing it — and
nothing of storage (``app.sharing.export`` exports and imports); the manifest's fields are checked
in ``app.sharing.manifest``.

Members (nothing else is allowed)::

    manifest.json      what the bundle holds (format below); UTF-8 JSON
    chats/<n>.json     one chat with its messages, when the export included chats
    files/<sha256>     the content of a knowledge file or an attachment, named by its SHA-256

Manifest, format version 2 (version 1, before branches, is still read)::

    {"format": "cairn-bundle", "format_version": 2, "cairn_version": "…", "created_at": "…",
     "workspaces": [                       # the workspace first, then its folders
       {"folder": "" | "Brand/Logos",      # relative to the workspace, "/" between names
        "title", "description", "instructions", "build_status", "created_at", "updated_at",
        "knowledge": null | {"text", "version", "updated_at", "source", "chat",
                             "history": null | [{"version", "text", "source", "saved_at",
                                                 "chat"}]},   # oldest first
        "files": [{"name", "media_type", "size", "sha256", "description", "created_at"}],
        "chats": ["chats/0.json", …]}]}   # in the workspace's manual order

    chats/<n>.json: {"title", "created_at", "updated_at", "watermark", "leaf", "messages": [
        {"role", "content", "status", "error", "model", "input_tokens",
         "cache_write_tokens", "cache_read_tokens", "output_tokens", "cost_usd",
         "created_at", "parent"}]}        # every branch, parents before their replies

``chat`` fields and ``watermark``/``leaf``/``parent`` are numbers: a chat's ``n``, a message's
place in its chat (``parent`` null: a version of the chat's first message; ``leaf``: the
message the chat shows last, null only without messages).  Format 1 had ``superseded_by``
(what a retry or an edit replaced) instead of ``parent`` and no ``leaf``: such a chat is read
as the tree the database's migration makes of it.  Never in a bundle: the API key, settings, personal memory, or any
absolute path of the machine that made it.

Reading refuses a crafted or broken bundle with one sentence before anything is written:
member names that leave the bundle, absolute or drive paths, links, duplicates, sizes over
the limits, a zip bomb's compression ratio (any member's), JSON that nests too deeply or
holds too many values, a missing or newer format version, a field that is unknown or of the
wrong type, message content of a shape Cairn does not write, content that does not match its
hash, text that is not UTF-8.  Memory stays bounded whatever the bundle holds: its JSON is
counted before it is parsed, and its chats are read one at a time (checked, let go, and read
again one at a time as an import stores them).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from app.base.paths import shown
from app.errors import Refused, os_reason
from app.records import ChatEntry
from app.sharing.manifest import (
    CHAT_MEMBER,
    DRIVE,
    FORMAT,
    FORMAT_VERSION,
    SHA,
    Bundle,
    attachments,
    folder_problem,
    parse_chat,
    parse_manifest,
)
from app.store.files import open_source

__all__ = ["FORMAT", "FORMAT_VERSION", "Bundle", "BundleReader", "attachments", "folder_problem",
           "open_bundle", "write_bundle"]

MANIFEST = "manifest.json"

# Limits: a bundle is refused past any of them before anything is unpacked.
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 64_000_000  # one member unpacked (a knowledge file is at most 32 MB)
MAX_TOTAL_BYTES = 2_000_000_000  # every member unpacked, and the bundle itself
MAX_RATIO = 100  # unpacked / packed, for every member: past it, a zip bomb
# Below this a member is too small to be a bomb, and deflate's own few bytes make any ratio.
RATIO_FLOOR = 4_096
MAX_CHATS_BYTES = 512_000_000  # every chat unpacked, together
MAX_JSON_VALUES = 1_000_000  # in one JSON member: strings, numbers, lists, objects, counted
MAX_JSON_DEPTH = 64  # lists and objects within each other (Cairn's own chats: about 8)
CHUNK = 1024 * 1024


# ===================================================================== reading


class BundleReader:
    """An open bundle, every check passed.  Use :func:`open_bundle`."""

    def __init__(self, zf: zipfile.ZipFile, bundle: Bundle, refuse: _Refuser) -> None:
        self._zf = zf
        self.bundle = bundle
        self._refuse = refuse

    def chat(self, number: int) -> ChatEntry:
        """The chat ``chats/<number>.json``, read and checked again (it was checked when the
        bundle opened, then let go: an import holds one chat at a time)."""
        member = f"chats/{number}.json"
        try:
            value = _json(self._zf, self._zf.getinfo(member), f"the chat '{member}'",
                          self._refuse)
        except (zipfile.BadZipFile, EOFError, KeyError) as error:
            self._refuse(f"it is damaged ({_zip_reason(error)})")
        return parse_chat(number, value, self._refuse, version=self.bundle.format_version)

    def blob(self, sha: str) -> bytes:
        """A files/ member's content, checked against its name again as it is read."""
        try:
            data = _read(self._zf, self._zf.getinfo(f"files/{sha}"), self._refuse)
        except (zipfile.BadZipFile, EOFError) as error:  # the file changed since it was checked
            self._refuse(f"it is damaged ({_zip_reason(error)})")
        if hashlib.sha256(data).hexdigest() != sha:
            self._refuse(f"the member 'files/{sha}' does not match its SHA-256")
        return data


@contextmanager
def open_bundle(source: Path) -> Iterator[BundleReader]:
    """Open and check *source*; :class:`Refused` with one sentence when it does not pass."""
    refuse = _Refuser(f"cannot import '{shown(str(source))}'")
    stream, size = open_source(source, verb="import")
    with stream:
        if size > MAX_TOTAL_BYTES:  # before the zip reader loads its directory
            refuse(f"it is larger than {MAX_TOTAL_BYTES:,} bytes")
        try:
            zf = zipfile.ZipFile(stream)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
            refuse("it is not a Cairn bundle (it is not a zip file)")
        except OSError as error:
            refuse(os_reason(error))
        with zf:
            try:
                bundle = _check(zf, refuse)
            except (zipfile.BadZipFile, EOFError, OSError, NotImplementedError) as error:
                # Python's zip reader found damage the checks above did not (a bad CRC).
                refuse(f"it is damaged ({_zip_reason(error)})")
            yield BundleReader(zf, bundle, refuse)


def _zip_reason(error: BaseException) -> str:
    if isinstance(error, OSError) and not isinstance(error, zipfile.BadZipFile):
        return os_reason(error)
    text = str(error).strip().rstrip(".")
    return shown(text[:120]) if text else type(error).__name__


class _Refuser:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def __call__(self, why: str) -> NoReturn:
        raise Refused(f"{self.prefix}: {why}")


def _check(zf: zipfile.ZipFile, refuse: _Refuser) -> Bundle:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        refuse(f"it holds more than {MAX_MEMBERS:,} members")
    seen: set[str] = set()
    total = chats = 0
    for info in infos:
        size = _check_member(info, seen, refuse)
        total += size
        if total > MAX_TOTAL_BYTES:
            refuse(f"it unpacks to more than {MAX_TOTAL_BYTES:,} bytes")
        if info.orig_filename.startswith("chats/"):
            chats += size
            if chats > MAX_CHATS_BYTES:
                refuse(f"its chats unpack to more than {MAX_CHATS_BYTES:,} bytes")
    names = {info.filename for info in infos}
    if MANIFEST not in names:
        refuse("it has no manifest (manifest.json), so it is not a Cairn bundle")
    manifest = _json(zf, zf.getinfo(MANIFEST), "its manifest", refuse)
    sizes = {info.filename: int(info.file_size) for info in infos}
    bundle = parse_manifest(
        manifest, sizes,
        lambda member, what: _json(zf, zf.getinfo(member), what, refuse), refuse)
    # Every knowledge file and every attachment that came along matches its name.
    for sha in sorted(bundle.blobs):
        data_sha = hashlib.sha256()
        for chunk in _chunks(zf, zf.getinfo(f"files/{sha}"), refuse):
            data_sha.update(chunk)
        if data_sha.hexdigest() != sha:
            named = next((f.name for w in bundle.workspaces for f in w.files if f.sha256 == sha),
                         None)
            refuse(f"the file '{shown(named)}' does not match its SHA-256" if named else
                   f"the member 'files/{sha}' does not match its SHA-256")
    return bundle


def _check_member(info: zipfile.ZipInfo, seen: set[str], refuse: _Refuser) -> int:
    """The checks of one member's entry, before any of it is read: its unpacked size."""
    name = info.orig_filename.replace("\\", "/")  # as a Windows unpacker would read it
    if "\0" in name:
        refuse(f"the member name '{shown(name)}' holds a NUL character")
    if name.startswith("/"):
        refuse(f"the member '{shown(name)}' has an absolute path")
    if DRIVE.match(name):
        refuse(f"the member '{shown(name)}' names a drive")
    if ".." in name.split("/"):
        refuse(f"the member '{shown(name)}' points outside the bundle")
    mode = info.external_attr >> 16
    if stat.S_ISLNK(mode):
        refuse(f"the member '{shown(name)}' is a link")
    folded = name.casefold()
    if folded in seen:
        refuse(f"the member name '{shown(name)}' appears twice")
    seen.add(folded)
    if info.flag_bits & 0x1:
        refuse(f"the member '{shown(name)}' is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        refuse(f"the member '{shown(name)}' is packed in a way Cairn does not read")
    raw = info.orig_filename
    if not (raw == MANIFEST or CHAT_MEMBER.fullmatch(raw)
            or (raw.startswith("files/") and SHA.fullmatch(raw[6:]))):
        refuse(f"it holds a member Cairn does not know: '{shown(raw)}'")
    if info.file_size > MAX_MEMBER_BYTES:
        refuse(f"the member '{shown(name)}' unpacks to more than "
               f"{MAX_MEMBER_BYTES:,} bytes")
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        refuse(f"the member '{shown(name)}' unpacks to more than {MAX_RATIO} times its packed "
               "size, the mark of a zip bomb")
    return int(info.file_size)


def _chunks(zf: zipfile.ZipFile, info: zipfile.ZipInfo, refuse: _Refuser) -> Iterator[bytes]:
    """A member's content a chunk at a time, never past what its entry declares."""
    count = 0
    with zf.open(info) as member:
        while chunk := member.read(CHUNK):
            count += len(chunk)
            if count > info.file_size or count > MAX_MEMBER_BYTES:
                refuse(f"the member '{shown(info.filename)}' holds more than it declares")
            yield chunk


def _read(zf: zipfile.ZipFile, info: zipfile.ZipInfo, refuse: _Refuser) -> bytes:
    return b"".join(_chunks(zf, info, refuse))


def _json(zf: zipfile.ZipFile, info: zipfile.ZipInfo, what: str, refuse: _Refuser) -> Any:
    data = _read(zf, info, refuse)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        refuse(f"{what} is not UTF-8 text")
    del data
    if _values(text) > MAX_JSON_VALUES:  # counted before a single object is made
        refuse(f"{what} holds more than {MAX_JSON_VALUES:,} values")
    value = _parse(text, what, refuse)
    if _depth(value) > MAX_JSON_DEPTH:
        refuse(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    return value


def _values(text: str) -> int:
    """How many values parsing *text* would make, about (every string, and every comma,
    ``[`` and ``{`` outside strings; never fewer than there are): a count in C, over the whole
    text, when even counting those inside strings stays within the limit; else a walk from
    string to string that stops past the limit."""
    def structural(start: int, end: int) -> int:
        return (text.count(",", start, end) + text.count("[", start, end)
                + text.count("{", start, end))

    if text.count('"') // 2 + 1 + structural(0, len(text)) <= MAX_JSON_VALUES:
        return 0  # even counting too much, within the limit
    count = position = 0
    while count <= MAX_JSON_VALUES:
        quote = text.find('"', position)
        count += structural(position, len(text) if quote < 0 else quote)
        if quote < 0:
            break
        count += 1
        end = _STRING_END.match(text, quote + 1)
        if end is None:
            break  # an unterminated string: the parser says so
        position = end.end()
    return count


# The end of a JSON string from just after its opening quote: escapes skipped.
_STRING_END = re.compile(r'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.S)


def _depth(value: Any) -> int:
    """How deeply lists and objects sit within each other in *value* (a scalar: 0), without
    recursion; it stops counting past the limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            break
        stack.extend((child, level + 1) for child in item
                     if isinstance(child, (dict, list)))
    return deepest


def _parse(text: str, what: str, refuse: _Refuser) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in items:
            if key in result:
                raise ValueError(f"the field '{key}' appears twice")
            result[key] = value
        return result

    def constant(name: str) -> NoReturn:
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except RecursionError:
        refuse(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    except ValueError as error:
        reason = str(error) if "appears twice" in str(error) or "JSON allows" in str(error) \
            else "it is not valid JSON"
        refuse(f"{what} cannot be read: {shown(reason)}")


# ===================================================================== writing


def write_bundle(target: Path, manifest: dict[str, Any], chats: dict[int, dict[str, Any]],
                 blobs: dict[str, Path], *, replace: bool) -> int:
    """Write the bundle next to *target*, then move it into place in one step: its size.

    A crash or a failure leaves *target* as it was.  Without *replace* an existing file is
    never overwritten.
    """
    folder = target.parent
    listed = json.dumps(manifest, ensure_ascii=False, indent=1).encode("utf-8")
    if len(listed) > MAX_MEMBER_BYTES:
        raise TooLarge(f"its manifest would be {len(listed):,} bytes, and an import reads at "
                       f"most {MAX_MEMBER_BYTES:,}")
    fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as out:
            with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                _write_member(zf, MANIFEST, listed)
                del listed
                for number, chat in sorted(chats.items()):
                    _write_member(zf, f"chats/{number}.json",
                                  json.dumps(chat, ensure_ascii=False).encode("utf-8"))
                for sha, path in sorted(blobs.items()):
                    zf.write(path, f"files/{sha}")
            out.flush()
            os.fsync(out.fileno())
        size = os.path.getsize(temp)
        if replace:
            os.replace(temp, target)
        else:
            _link_new(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return size


class TooLarge(ValueError):
    """The bundle would pass a limit its import checks: it could never be read back."""


def _write_member(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    """*data* as the member *name*, deflated, or stored as it is when deflating would pack
    it tighter than an import accepts (a long knowledge history of small edits, a document
    of repeated lines): such a member is honest, not a zip bomb, and must import."""
    info = zipfile.ZipInfo(name, date_time=time.localtime(time.time())[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o600 << 16
    if len(data) > RATIO_FLOOR:
        packer = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
        packed = len(packer.compress(data)) + len(packer.flush())
        if len(data) > MAX_RATIO * max(packed, 1):
            info.compress_type = zipfile.ZIP_STORED
    zf.writestr(info, data)


def _link_new(temp: str, target: Path) -> None:
    """Move *temp* to *target* only if nothing is there (FileExistsError otherwise)."""
    try:
        os.link(temp, target)
    except FileExistsError:
        raise
    except OSError:  # no hard links here: the same, less atomically
        if target.exists():
            raise FileExistsError(target) from None
        os.replace(temp, target)
        return
    os.unlink(temp)
