"""Knowledge files (uploaded into a workspace, read by the model on demand) and attachments
(sent with one message).

Knowledge files are only *listed* in the context; the model reads one through the
``readWorkspaceFile`` tool, which serves only files of the chat's own workspace chain, in
pages for large text.  An attachment sends the document itself: text as a text block, PDF as
a document block, images as image blocks.
"""

from __future__ import annotations

import base64
import codecs
import html
import mimetypes
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from app.base.db import Database, utc_now
from app.base.ids import new_id
from app.base.paths import shown
from app.base.titles import MAX_LINE, MAX_NAME, one_line
from app.errors import Refused, os_reason
from app.events import FileAdded, FileChanged, FileRemoved, Hub
from app.store.blobs import CHUNK, BlobStore, TooLarge
from app.store.search_index import MAX_FILE_TEXT, file_text, index_file_text

PAGE_CHARS = 20_000  # one page of text a tool reads (about 5,000 tokens; app/tools)
MAX_IMAGE_BYTES = 5 * 1024 * 1024  # the API's limit per image
MAX_PDF_BYTES = 32 * 1024 * 1024  # the API's limit per request for PDFs
# A knowledge file or a text attachment: copied into storage a chunk at a time, never whole.
MAX_FILE_BYTES = 32_000_000
_SHA = re.compile(r"[0-9a-f]{64}")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TEXT_SUFFIXES = {
    ".md", ".txt", ".csv", ".tsv", ".json", ".yaml", ".yml", ".toml", ".ini", ".xml", ".html",
    ".css", ".js", ".ts", ".tsx", ".jsx", ".py", ".rs", ".go", ".java", ".c", ".h", ".cpp",
    ".hpp", ".cs", ".rb", ".php", ".swift", ".kt", ".sql", ".sh", ".ps1", ".bat", ".log",
    ".tex", ".rst", ".org", ".svg",
}

@dataclass(frozen=True, slots=True)
class KnowledgeFile:
    id: str
    workspace_id: str
    name: str
    media_type: str
    size: int
    sha256: str
    description: str
    created_at: str

    def to_json(self, *, scope: str) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "size": self.size, "scope": scope,
                "description": self.description, "media_type": self.media_type,
                "workspace": self.workspace_id, "created_at": self.created_at}


def scope(workspace_id: str, chain: Sequence[str]) -> str:
    """How the manifest names where a file lives, for a chat whose workspaces are *chain*
    (the project first): ``project`` for the project's files, ``folder`` for a folder's."""
    return "project" if chain and workspace_id == chain[0] else "folder"


def human_size(size: int) -> str:
    """Sizes as people read them: 512 B, 12.3 KB, 5.0 MB (powers of 1,000, as Finder shows)."""
    if size < 1000:
        return f"{size} B"
    value = float(size)
    for unit in ("KB", "MB", "GB"):
        value /= 1000
        if value < 999.95:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def image_type(head: bytes) -> str | None:
    """The image type the bytes *head* (a file's first 16 or more) start with: PNG, JPEG,
    GIF or WebP by their magic numbers; None for anything else, whatever its name says."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def media_type_of(path: Path, head: bytes | None = None) -> str:
    """What a file is sent and listed as.  An image by its bytes (*head*, its first bytes),
    whatever its name says: a JPEG named ``.png`` is a JPEG, and a file named ``.png`` that is
    no image is not one.  Anything else by its name."""
    if head is not None:
        image = image_type(head)
        if image is not None:
            return image
    if path.suffix.lower() in TEXT_SUFFIXES:
        return "text/markdown" if path.suffix.lower() == ".md" else "text/plain"
    guessed, _ = mimetypes.guess_type(path.name)
    if guessed in IMAGE_TYPES and head is not None:
        return "application/octet-stream"  # named like an image, and is none
    return guessed or "application/octet-stream"


def file_name(name: str) -> str:
    """A file's name as Cairn keeps and shows it: one line, NFC, no control or bidi-override
    character, at most ``MAX_NAME`` characters (:func:`app.base.titles.one_line`)."""
    return one_line(name, limit=MAX_NAME) or "file"


def _head(reader: BinaryIO) -> bytes:
    """The first bytes of a file opened by :func:`open_source`, the stream back at its start."""
    head = reader.read(32)
    reader.seek(0)
    return head


class FileStore:
    """Knowledge files and attachments.  With a *hub*, a new knowledge file is announced
    there (``FileAdded``) after its commit, on the committing thread."""

    def __init__(self, db: Database, blobs: BlobStore, *, hub: Hub | None = None) -> None:
        self._db = db
        self.blobs = blobs
        self._hub = hub

    # ----------------------------------------------------------------- knowledge files

    def add(self, workspace_id: str, source: Path, *, description: str = "") -> KnowledgeFile:
        """Copy *source* into the workspace's knowledge files (at most 32 MB, any type)."""
        reader, size = open_source(source, verb="add")
        with reader:
            media_type = media_type_of(source, _head(reader))
            if size > MAX_FILE_BYTES:
                raise Refused(f"cannot add '{shown(str(source))}': it is {human_size(size)}, and a "
                              "knowledge file can be at most 32 MB")
            sha, size = self._store(reader, source, verb="add", limit=MAX_FILE_BYTES,
                                    too_large="it grew past 32 MB while it was read, and a "
                                              "knowledge file can be at most 32 MB")
        record = KnowledgeFile(
            id=new_id("wf"), workspace_id=workspace_id, name=file_name(source.name),
            media_type=media_type, size=size, sha256=sha,
            description=one_line(description, limit=MAX_LINE), created_at=utc_now(),
        )
        text = self._searchable(record)  # read before the write: the writer never waits on it
        with self._db.write() as conn:
            conn.execute(
                "INSERT INTO knowledge_file (id, workspace_id, name, media_type, size, sha256,"
                " description, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (record.id, record.workspace_id, record.name, record.media_type, record.size,
                 record.sha256, record.description, record.created_at),
            )
            index_file_text(conn, record.id, text)  # (its name and description: a trigger)
        if self._hub is not None:
            self._hub.emit(FileAdded(workspace_id, record.id))
        return record

    def _searchable(self, record: KnowledgeFile) -> str:
        """The text search indexes of a stored file: a text file's, a PDF's (read whole: at
        most 32 MB), '' for an image or a binary."""
        if record.media_type.startswith("image/"):
            return ""
        try:
            if record.media_type == "application/pdf":
                return file_text(self.blobs.read(record.sha256), record.media_type, record.name)
            # Only what is indexed is read (a 20 MB file is never held whole): the head, and a
            # few bytes more to tell a cut character from an invalid one.
            if not _looks_like_text(self.blobs.head(record.sha256, 8192)):
                return ""  # a binary: nothing to index, and nothing more read
            data = self.blobs.head(record.sha256, MAX_FILE_TEXT * 4 + 4)
            return file_text(data, record.media_type, record.name)
        except OSError:
            return ""

    def get(self, file_id: str) -> KnowledgeFile:
        rows = self._db.query(
            "SELECT id, workspace_id, name, media_type, size, sha256, description, created_at"
            " FROM knowledge_file WHERE id = ?", (file_id,))
        if not rows:
            raise Refused(f"cannot find knowledge file '{file_id}': it was removed")
        return KnowledgeFile(*rows[0])

    def describe(self, file_id: str, description: str) -> KnowledgeFile:
        """Set a knowledge file's description (one line: the manifest shows it after the
        file's name)."""
        description = one_line(description, limit=MAX_LINE)
        with self._db.write() as conn:
            found = conn.execute("SELECT workspace_id, description FROM knowledge_file"
                                 " WHERE id = ?", (file_id,)).fetchone()
            if found is None:
                raise Refused(f"cannot describe knowledge file '{file_id}': it was removed")
            if found[1] == description:
                return self.get(file_id)
            conn.execute("UPDATE knowledge_file SET description = ? WHERE id = ?",
                         (description, file_id))
        if self._hub is not None:
            self._hub.emit(FileChanged(found[0], file_id))
        return self.get(file_id)

    def remove(self, file_id: str) -> KnowledgeFile:
        """Remove a knowledge file.  Its blob goes too, unless another knowledge file or an
        attachment of a stored message still uses it (the same bytes are stored once)."""
        with self._db.write() as conn:
            row = conn.execute(
                "SELECT id, workspace_id, name, media_type, size, sha256, description,"
                " created_at FROM knowledge_file WHERE id = ?", (file_id,)).fetchone()
            if row is None:
                raise Refused(f"cannot remove knowledge file '{file_id}': it was removed "
                              "already")
            record = KnowledgeFile(*row)
            conn.execute("DELETE FROM knowledge_file WHERE id = ?", (file_id,))
            used = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM knowledge_file WHERE sha256 = ?)"
                " OR EXISTS (SELECT 1 FROM message WHERE instr(content, ?) > 0)",
                (record.sha256, record.sha256)).fetchone()[0]
            if not used:
                # Inside the write transaction: no other writer can take the blob up
                # between the check and the deletion.
                try:
                    self.blobs.delete(record.sha256)
                except OSError:  # a blob left behind costs space, never correctness
                    pass
        if self._hub is not None:
            self._hub.emit(FileRemoved(record.workspace_id, file_id))
        return record

    def readable(self, record: KnowledgeFile) -> bool:
        """Can the model read this file through ``readWorkspaceFile``?  Text, PDFs and images
        can; anything else is listed to the model by name, size and description only."""
        if record.media_type in IMAGE_TYPES:
            return record.size <= MAX_IMAGE_BYTES
        if record.media_type == "application/pdf":
            return record.size <= MAX_PDF_BYTES
        probe = _TextProbe()
        try:
            with self.blobs.path(record.sha256).open("rb") as blob:
                while probe.text and (chunk := blob.read(CHUNK)):
                    probe(chunk)
        except OSError:
            return False
        probe(b"")
        return probe.text

    def _store(self, reader: BinaryIO, source: Path, *, verb: str, limit: int, too_large: str,
               check: Callable[[bytes], None] | None = None) -> tuple[str, int]:
        """Stream *reader* into the blob store; every failure is one sentence."""
        name = shown(str(source)) if verb == "add" else shown(source.name)
        try:
            return self.blobs.put_stream(_Reading(reader), limit=limit, check=check)
        except TooLarge:  # it grew while read, or its size was not known (/proc, a pipe)
            raise Refused(f"cannot {verb} '{name}': {too_large}") from None
        except _ReadFailed as failed:
            raise Refused(f"cannot {verb} '{name}': it could not be read to the end, because "
                          f"{os_reason(failed.error)}") from None
        except OSError as error:
            raise Refused(f"cannot {verb} '{name}': Cairn could not keep a copy in its data "
                          f"folder, because {os_reason(error)}") from None

    def of_workspaces(self, workspace_ids: list[str]) -> list[KnowledgeFile]:
        """The files of these workspaces: in the order given, then oldest first (stable)."""
        if not workspace_ids:
            return []
        marks = ", ".join("?" * len(workspace_ids))
        rows = self._db.query(
            "SELECT id, workspace_id, name, media_type, size, sha256, description, created_at"
            f" FROM knowledge_file WHERE workspace_id IN ({marks}) ORDER BY created_at, id",
            workspace_ids,
        )
        rank = {ws: i for i, ws in enumerate(workspace_ids)}
        files = [KnowledgeFile(*row) for row in rows]
        return sorted(files, key=lambda f: rank[f.workspace_id])

    def manifest(self, chain: Sequence[str], *, own: bool = False
                 ) -> list[tuple[KnowledgeFile, str]]:
        """The files a chat in *chain*'s last workspace sees (*chain* runs from the project
        down to it), each with its :func:`scope`, in the manifest's order; with *own*, only
        that workspace's own files (what its knowledge panel lists)."""
        listed = list(chain[-1:] if own else chain)
        return [(f, scope(f.workspace_id, chain)) for f in self.of_workspaces(listed)]

    # ----------------------------------------------------------------- attachments

    def check_attachment(self, source: Path) -> dict[str, Any]:
        """What :meth:`attach` would refuse, said now and nothing stored: the window checks a
        file when it is attached (a chip, or the sentence), long before Send.  Returns the
        name, media type and size it would be sent with."""
        reader, size = open_source(source, verb="attach")
        with reader:
            media_type, limit, too_large, check = _attachment_rules(source, _head(reader))
            if size > limit:
                raise Refused(f"cannot attach '{shown(source.name)}': {too_large}")
            if check is not None:
                try:
                    while chunk := reader.read(CHUNK):
                        check(chunk)
                    check(b"")
                except OSError as error:
                    raise Refused(f"cannot attach '{shown(source.name)}': it could not be read "
                                  f"to the end, because {os_reason(error)}") from None
        return {"name": file_name(source.name), "media_type": media_type, "size": size}

    def attach(self, source: Path) -> dict[str, Any]:
        """Store a file sent with a message; the message keeps this reference."""
        reader, size = open_source(source, verb="attach")
        with reader:
            media_type, limit, too_large, check = _attachment_rules(source, _head(reader))
            if size > limit:
                raise Refused(f"cannot attach '{shown(source.name)}': {too_large}")
            sha, size = self._store(reader, source, verb="attach", limit=limit,
                                    too_large=too_large, check=check)
        return {"type": "attachment", "name": file_name(source.name), "media_type": media_type,
                "size": size, "sha256": sha}

    def keep_pasted_image(self, data: bytes, suffix: str = ".png") -> Path:
        """An image pasted into the composer, as a file to attach: kept in the data folder's
        ``pasted/`` as "Pasted image 2026-11-30 10.00.00.png" (a number added when that
        name is taken) until it is sent; the blob store keeps its own copy then."""
        if not re.fullmatch(r"\.[A-Za-z0-9]{1,10}", suffix):
            raise Refused(f"cannot keep the pasted image: '{shown(suffix[:40])}' is not a file "
                          "name extension such as .png")
        folder = self._db.path.parent / "pasted"
        stamp = utc_now()[:19].replace(":", ".").replace("T", " ")
        try:
            folder.mkdir(parents=True, exist_ok=True)
            n = 1
            while True:
                path = folder / (f"Pasted image {stamp}{suffix}" if n == 1 else
                                 f"Pasted image {stamp} ({n}){suffix}")
                try:
                    out = path.open("xb")  # never over another paste of the same second
                except FileExistsError:
                    n += 1
                    continue
                with out:
                    try:
                        out.write(data)
                    except OSError:
                        path.unlink(missing_ok=True)  # no half image left to attach later
                        raise
                return path
        except OSError as error:
            raise Refused(f"cannot keep the pasted image: Cairn could not write it into its data "
                          f"folder, because {os_reason(error)}") from None

    def image_of(self, sha256: str) -> bytes | None:
        """A sent image's bytes, to show it (a thumbnail): None when *sha256* names no stored
        file, or one whose bytes are not an image."""
        if not _SHA.fullmatch(sha256):  # never a path of its own
            return None
        try:
            data = self.blobs.read(sha256)
        except OSError:
            return None
        return data if image_type(data[:32]) is not None else None

    def expand(self, reference: dict[str, Any]) -> dict[str, Any]:
        """The content block the API receives for a stored attachment."""
        sha = reference.get("sha256")
        if not isinstance(sha, str) or not _SHA.fullmatch(sha):  # never a path of its own
            raise FileNotFoundError(f"no stored file {shown(str(sha)[:80])}")
        data = self.blobs.read(sha)
        name = file_name(str(reference.get("name", "")))
        claimed = reference.get("media_type")
        image = image_type(data[:32])  # what its bytes are, whatever the reference says
        if image is not None and (claimed in IMAGE_TYPES or _decode(data) is None):
            return _image_block(image, data)
        if claimed == "application/pdf":
            return _pdf_block(data, name)
        return {"type": "text",
                "text": f"<file name=\"{html.escape(name)}\">\n{_decode(data) or ''}\n</file>"}


def _attachment_rules(source: Path, head: bytes) -> tuple[str, int, str, _TextProbe | None]:
    """What an attachment is sent as (an image by its first bytes, *head*), its size limit,
    the end of the sentence that refuses a larger one, and (for anything but an image or a
    PDF) the probe that it is text."""
    media_type = media_type_of(source, head)
    if media_type in IMAGE_TYPES:
        return media_type, MAX_IMAGE_BYTES, "images can be at most 5 MB", None
    if media_type == "application/pdf":
        return media_type, MAX_PDF_BYTES, "PDFs can be at most 32 MB", None
    return media_type, MAX_FILE_BYTES, "text files can be at most 32 MB", _TextProbe(
        refuse=f"cannot attach '{shown(source.name)}': Cairn can send text files, PDFs and "
               "images (PNG, JPEG, GIF, WebP)")


def open_source(source: Path, *, verb: str) -> tuple[BinaryIO, int]:
    """Open a file the person named, for reading: (stream, size).  Only a regular file.

    The open never waits (a FIFO with no writer would block it forever) and anything but a
    regular file is refused (``/dev/zero`` never ends).  Every refusal is one sentence.
    """
    name = shown(str(source))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(source, flags)
    except (OSError, ValueError) as error:
        if isinstance(error, OSError) and _is_folder(source):
            raise Refused(f"cannot {verb} '{name}': it is a folder, not a file") from None
        raise Refused(f"cannot {verb} '{name}': {os_reason(error)}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            return os.fdopen(fd, "rb"), info.st_size
        reason = ("it is a folder, not a file" if stat.S_ISDIR(info.st_mode)
                  else "it is not a regular file (it is a device, a pipe or a socket)")
    except OSError as error:
        reason = os_reason(error)
    os.close(fd)
    raise Refused(f"cannot {verb} '{name}': {reason}")


def _is_folder(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


class _ReadFailed(Exception):
    """Reading the person's file failed (not writing Cairn's copy of it)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error)
        self.error = error


class _Reading:
    """A reader whose failures are told apart from the blob store's own."""

    def __init__(self, reader: BinaryIO) -> None:
        self._reader = reader

    def read(self, size: int) -> bytes:
        try:
            return self._reader.read(size)
        except OSError as error:
            raise _ReadFailed(error) from error


class _TextProbe:
    """Follows a stream a chunk at a time: is it text (UTF-8, no NUL in its first 8 KB)?

    With *refuse*, the first chunk that is not text raises it as :class:`Refused`; ``b""``
    marks the end of the stream.
    """

    def __init__(self, *, refuse: str | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._seen = 0
        self._refuse = refuse
        self.text = True

    def __call__(self, chunk: bytes) -> None:
        if not self.text:
            return
        head = max(0, 8192 - self._seen)
        self._seen += len(chunk)
        try:
            if b"\0" in chunk[:head]:
                raise UnicodeError("NUL")
            self._decoder.decode(chunk, final=not chunk)
        except UnicodeError:
            self.text = False
            if self._refuse is not None:
                raise Refused(self._refuse) from None


def _decode(data: bytes) -> str | None:
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _image_block(media_type: str, data: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type,
                                        "data": base64.b64encode(data).decode("ascii")}}


def _pdf_block(data: bytes, name: str) -> dict[str, Any]:
    return {"type": "document", "title": name,
            "source": {"type": "base64", "media_type": "application/pdf",
                       "data": base64.b64encode(data).decode("ascii")}}


def _looks_like_text(head: bytes) -> bool:
    """Whether a file's first bytes read as UTF-8 text (no NUL; a character cut at the end of
    the sample is fine): random or binary bytes almost never do."""
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.start >= len(head) - 3
    return True
