"""Which blobs a record still uses, and dropping those none does.

A blob is deleted only when no record uses it (docs/user-guide.md, "Where your data lives").  Records that use a blob: a
knowledge file (of a workspace on the list or recently removed), a message that carries it
as an attachment (its content names the SHA-256), and an import under way (its in-progress
marker lists the blobs it is writing before any of them lands).  The check and the deletion
run inside one write transaction, so no record can start using a blob between the two.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable

from app.base.db import Database
from app.store.blobs import BlobStore

log = logging.getLogger(__name__)


def in_use(conn: sqlite3.Connection, shas: Iterable[str], *, skip_pending: int | None = None
           ) -> set[str]:
    """The blobs among *shas* that some record uses (*skip_pending*: a marker not to count)."""
    wanted = set(shas)
    if not wanted:
        return set()
    used: set[str] = set()
    listed = list(wanted)
    for start in range(0, len(listed), 500):
        part = listed[start:start + 500]
        marks = ", ".join("?" * len(part))
        used.update(row[0] for row in conn.execute(
            f"SELECT DISTINCT sha256 FROM knowledge_file WHERE sha256 IN ({marks})", part))
    rest = wanted - used
    if rest:
        # Attachments live inside message content (JSON): one pass over the messages that
        # carry any, looking for each SHA-256 as text.  Conservative: a mention keeps a blob.
        for (content,) in conn.execute(
                "SELECT content FROM message WHERE instr(content, '\"sha256\"') > 0"):
            found = {sha for sha in rest if sha in content}
            if found:
                used |= found
                rest -= found
                if not rest:
                    break
    if rest:
        for pending_id, args in conn.execute(
                "SELECT id, args FROM pending_change WHERE op = 'import'"):
            if pending_id == skip_pending:
                continue
            try:
                listed_there = set(json.loads(args).get("blobs", ()))
            except (ValueError, AttributeError, TypeError):
                continue
            used |= rest & listed_there
    return used


def drop_unused(db: Database, blobs: BlobStore, shas: Iterable[str], *,
                pending: int | None = None) -> None:
    """Delete the blobs among *shas* that no record uses, then clear the marker *pending*.

    A crash part-way leaves the marker, and running this again finishes the job.
    """
    wanted = sorted(set(shas))
    with db.write() as conn:
        used = in_use(conn, wanted, skip_pending=pending)
        for sha in wanted:
            if sha not in used:
                blobs.delete(sha)
        if pending is not None:
            conn.execute("DELETE FROM pending_change WHERE id = ?", (pending,))
    log.info("dropped %d unused blob(s)", len([s for s in wanted if s not in used]))
