"""Suggestions: what the knowledge model proposed that code would not apply by itself.

A rebuild applies a change to a document only when it is provably safe (the validator's
rule).  Everything else it proposed, and that was not moot (a duplicate, a change that says
the same), is kept here — the proposed entry or change, why it was not applied, the
evidence it quoted and whose words those are, the chat it came from — until the person
accepts it (the entry is then theirs), edits it first, or dismisses it.  Nothing a later
rebuild does erases one: rows leave only by the person's decision, or with their document
when a removed workspace is purged.

The rows are written in the rebuild's own transaction (:meth:`KnowledgeStore.save_rebuild`),
so a rebuild that a hand edit superseded leaves none behind.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

KINDS = ("add", "update", "merge")


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One suggestion as stored.  *targets* are the leading lines of the entries it changes,
    as they read when it was made (an add has none)."""

    id: int
    owner: str
    kind: str  # add | update | merge
    section: str | None
    targets: tuple[str, ...]
    text: str
    reason: str
    evidence: str
    said_by: str | None  # "person" | "claude" | None (the evidence was not found)
    chat_id: str | None
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "owner": self.owner, "kind": self.kind, "section": self.section,
                "targets": list(self.targets), "text": self.text, "reason": self.reason,
                "evidence": self.evidence, "said_by": self.said_by, "chat": self.chat_id,
                "created_at": self.created_at}


@dataclass(frozen=True, slots=True)
class Proposed:
    """A suggestion before it is stored (what a rebuild hands the store)."""

    owner: str
    kind: str
    section: str | None
    targets: tuple[str, ...]
    text: str
    reason: str
    evidence: str = ""
    said_by: str | None = None

    @property
    def key(self) -> tuple[str, str, str | None, tuple[str, ...], str]:
        """Two proposals with the same key are one suggestion (a model repeating itself)."""
        return (self.owner, self.kind, self.section, self.targets, self.text)


# A read: ``Database.query`` (never waits for a writer) or a write transaction's ``execute``.
Query = Callable[[str, Sequence[Any]], Iterable[Sequence[Any]]]

_COLUMNS = ("id, owner, kind, section, targets, text, reason, evidence, said_by, chat_id,"
            " created_at")


def _row(row: Sequence[Any]) -> Suggestion:
    targets = json.loads(row[4]) if row[4] else []
    return Suggestion(int(row[0]), row[1], row[2], row[3],
                      tuple(str(t) for t in targets if isinstance(t, str)), row[5], row[6],
                      row[7], row[8], row[9], row[10])


def of(query: Query, owners: Sequence[str]) -> list[Suggestion]:
    """The suggestions waiting for *owners*' documents, oldest first."""
    if not owners:
        return []
    marks = ", ".join("?" * len(owners))
    return [_row(r) for r in query(
        f"SELECT {_COLUMNS} FROM knowledge_suggestion WHERE owner IN ({marks})"
        " ORDER BY id", list(owners))]


def one(query: Query, suggestion_id: int) -> Suggestion | None:
    found = list(query(f"SELECT {_COLUMNS} FROM knowledge_suggestion WHERE id = ?",
                       (suggestion_id,)))
    return _row(found[0]) if found else None


def record(conn: sqlite3.Connection, proposed: Iterable[Proposed], *, chat_id: str | None,
           now: str) -> int:
    """Store the proposals not already waiting (the same change proposed again is one
    suggestion); how many were new."""
    added = 0
    for item in proposed:
        if item.kind not in KINDS:
            raise ValueError(item.kind)
        targets = json.dumps(list(item.targets), ensure_ascii=False)
        exists = conn.execute(
            "SELECT 1 FROM knowledge_suggestion WHERE owner = ? AND kind = ? AND"
            " section IS ? AND targets = ? AND text = ?",
            (item.owner, item.kind, item.section, targets, item.text)).fetchone()
        if exists:
            continue
        conn.execute(
            "INSERT INTO knowledge_suggestion (owner, kind, section, targets, text, reason,"
            " evidence, said_by, chat_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item.owner, item.kind, item.section, targets, item.text, item.reason,
             item.evidence, item.said_by, chat_id, now))
        added += 1
    return added


def drop(conn: sqlite3.Connection, suggestion_id: int) -> bool:
    return conn.execute("DELETE FROM knowledge_suggestion WHERE id = ?",
                        (suggestion_id,)).rowcount > 0
