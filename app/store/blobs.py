"""Content-addressed files in the data folder: ``files/ab/abcdef…`` by SHA-256.

A blob is written to a temporary name, flushed to disk, then renamed: a crash leaves either
the whole blob or nothing under its name.  Identical content is stored once.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

CHUNK = 1024 * 1024  # what a streamed copy holds in memory at a time


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class TooLarge(Exception):
    """A streamed copy passed its size limit; nothing was stored."""

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.limit = limit


class BlobStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, sha256: str) -> Path:
        return self.folder / sha256[:2] / sha256

    def put(self, data: bytes, *, prefix: str = ".partial-") -> str:
        """Store *data*; a crash part-way leaves at most a temporary file named *prefix*…"""
        sha = hashlib.sha256(data).hexdigest()
        target = self.path(sha)
        if target.exists():
            return sha
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=prefix)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return sha

    def put_stream(self, reader: Readable, *, limit: int,
                   check: Callable[[bytes], None] | None = None) -> tuple[str, int]:
        """Copy *reader* into the store while hashing it, a chunk at a time: (sha256, size).

        Past *limit* bytes the copy stops with :class:`TooLarge`.  *check* sees every chunk,
        then ``b""`` at the end, and may raise to abandon the copy.  Whatever stops the copy,
        nothing is left behind: only a whole, checked blob ever gets its name.
        """
        self.folder.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        size = 0
        fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".partial-")
        try:
            with os.fdopen(fd, "wb") as out:
                while chunk := reader.read(CHUNK):
                    size += len(chunk)
                    if size > limit:
                        raise TooLarge(limit)
                    if check is not None:
                        check(chunk)
                    digest.update(chunk)
                    out.write(chunk)
                if check is not None:
                    check(b"")
                out.flush()
                os.fsync(out.fileno())
            sha = digest.hexdigest()
            target = self.path(sha)
            if target.exists():
                Path(temp).unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(temp, target)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
        return sha, size

    def head(self, sha256: str, size: int) -> bytes:
        """The first *size* bytes of a blob (what search indexes of a large file), never more
        read into memory."""
        with open(self.path(sha256), "rb") as blob:
            return blob.read(size)

    def read(self, sha256: str) -> bytes:
        return self.path(sha256).read_bytes()

    def delete(self, sha256: str) -> None:
        """Only for a blob no record uses any more (the caller checks)."""
        self.path(sha256).unlink(missing_ok=True)
