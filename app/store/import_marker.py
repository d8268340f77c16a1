"""An import's in-progress marker and lock, and the roll-back start-up recovery runs.

An import (``app.sharing.importing``) commits an in-progress marker naming the blobs and
folders it will write, and holds a lock file while it runs.  If the process dies before the
import's last commit, the next start (``store.registry.first_start``) finds the marker and
calls :func:`roll_back_import`, unless the lock shows the import still running in another
process.  This lives in the store, below sharing, so recovery never reaches up to it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from app.base.db import Database
from app.errors import Refused
from app.store.blob_refs import in_use
from app.store.blobs import BlobStore

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

LOCKS = "imports"  # lock files of imports under way, in the data folder


# ===================================================================== writing


def mark_import(db: Database, token: str, blobs: list[str], made: list[str]) -> int:
    """Commit the in-progress marker naming what the import is about to write."""
    with db.write() as conn:
        pending = conn.execute(
            "INSERT INTO pending_change (op, args) VALUES ('import', ?)",
            (json.dumps({"token": token, "blobs": blobs, "made": made}),),
        ).lastrowid
    assert pending is not None
    return pending


# ===================================================================== undoing


def roll_back_import(db: Database, pending: int, args: dict[str, Any]) -> None:
    """At start-up: undo an import that never committed, unless it is still running."""
    token = str(args.get("token", ""))
    folder = db.path.parent
    lock = folder / LOCKS / f"{token}.lock"
    handle = _try_lock(lock) if token else None
    if token and handle is None and lock.exists():
        log.info("import %s is still running; left to it", token)
        return
    try:
        undo_import(db, BlobStore(folder / "files"), pending, token,
              [str(s) for s in args.get("blobs", ())], [str(m) for m in args.get("made", ())])
    finally:
        if handle is not None:
            handle.close()
        lock.unlink(missing_ok=True)


def undo_import(db: Database, blobs: BlobStore, pending: int, token: str, shas: list[str],
          made: list[str]) -> None:
    """The blobs the import wrote that no record uses, its half-written blobs, its marker,
    then the folders it made, when they are still empty."""
    with db.write() as conn:
        used = in_use(conn, shas, skip_pending=pending)
        for sha in shas:
            if sha not in used:
                blobs.delete(sha)
        if token and blobs.folder.is_dir():
            for partial in blobs.folder.glob(f"*/.import-{token}-*"):
                partial.unlink(missing_ok=True)
        conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
    for path in reversed(made):
        try:
            os.rmdir(path)
        except OSError:
            pass  # not empty (the person put something there), or never made


# ===================================================================== the lock of an import


class _Lock:
    def __init__(self, path: Path, handle: IO[bytes]) -> None:
        self.path = path
        self.handle = handle

    def release(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        self.path.unlink(missing_ok=True)


@contextmanager
def import_lock(data: Path, token: str) -> Iterator[_Lock]:
    """A lock file held while the import runs: the system lets it go when the process dies."""
    folder = data / LOCKS
    folder.mkdir(exist_ok=True)
    path = folder / f"{token}.lock"
    handle = _try_lock(path)
    if handle is None:  # pragma: no cover - a fresh random name
        raise Refused("cannot import: another import holds its lock")
    lock = _Lock(path, handle)
    try:
        yield lock
    finally:
        lock.release()


def _try_lock(path: Path) -> IO[bytes] | None:
    """Open and lock *path* without waiting; None when another process holds it."""
    try:
        handle = open(path, "a+b")
    except OSError:
        return None
    try:
        if os.name == "nt":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle
