"""Where knowledge documents live: one per workspace, and ``personal`` for personal memory.

Every save bumps a version; a save can require the version it started from
(compare-and-swap), so a background rebuild never overwrites a hand edit made meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db import Database, utc_now

PERSONAL = "personal"
SOURCES = ("user", "rebuild", "import", "restore")


@dataclass(frozen=True, slots=True)
class Document:
    owner: str
    text: str
    version: int  # 0: never saved
    updated_at: str | None
    source: str | None
    chat_id: str | None


class KnowledgeStore:
    def __init__(self, db: Database) -> None:
        self._db = db

    def get(self, owner: str) -> Document:
        rows = self._db.query(
            "SELECT text, version, updated_at, source, chat_id FROM knowledge WHERE owner = ?",
            (owner,),
        )
        if not rows:
            return Document(owner, "", 0, None, None, None)
        return Document(owner, *rows[0])

    def save(self, owner: str, text: str, *, source: str, chat_id: str | None = None,
             expected_version: int | None = None) -> Document | None:
        """Store a new version; None when *expected_version* is stale (someone saved first)."""
        if source not in SOURCES:
            raise ValueError(source)
        now = utc_now()
        with self._db.write() as conn:
            row = conn.execute("SELECT version FROM knowledge WHERE owner = ?", (owner,)).fetchone()
            current = row[0] if row else 0
            if expected_version is not None and expected_version != current:
                return None
            conn.execute(
                "INSERT INTO knowledge (owner, text, version, updated_at, source, chat_id)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE SET text = excluded.text,"
                " version = excluded.version, updated_at = excluded.updated_at,"
                " source = excluded.source, chat_id = excluded.chat_id",
                (owner, text, current + 1, now, source, chat_id),
            )
        return Document(owner, text, current + 1, now, source, chat_id)
