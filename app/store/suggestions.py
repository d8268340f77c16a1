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
class Place:
    """Where one entry stood when a suggestion was made: the section it was under (one of the
    six, or None), its position among that section's entries (from 0), and its whole text
    (every line, sub-items included, as written).  Accepting finds the entry again by all
    three, never by its first line alone: two entries may open with the same line."""

    section: str | None
    position: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"section": self.section, "position": self.position, "text": self.text}


def _places(raw: str | None) -> tuple[Place, ...]:
    try:
        items = json.loads(raw) if raw else []
    except ValueError:
        return ()
    return tuple(Place(i.get("section") if isinstance(i.get("section"), str) else None,
                       int(i["position"]), str(i["text"]))
                 for i in items if isinstance(i, dict) and isinstance(i.get("text"), str)
                 and isinstance(i.get("position"), int))


def _places_json(places: Sequence[Place]) -> str:
    return json.dumps([p.to_json() for p in places], ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """One suggestion as stored.  *targets* are the leading lines of the entries it changes,
    as they read when it was made (an add has none); *places* the same entries whole, with
    their section and position (empty for a suggestion made before they were recorded).

    *section* is where the text goes: an update whose section is not its entry's moves the
    entry there (an answered open question accepted as a decision).  *position* is where in
    that section (None: after its last entry).  *removes* are entries accepting it takes
    out, found like *places* (the question an answer replaces)."""

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
    places: tuple[Place, ...] = ()
    position: int | None = None
    removes: tuple[Place, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "owner": self.owner, "kind": self.kind, "section": self.section,
                "targets": list(self.targets), "text": self.text, "reason": self.reason,
                "evidence": self.evidence, "said_by": self.said_by, "chat": self.chat_id,
                "created_at": self.created_at, "position": self.position,
                "places": [p.to_json() for p in self.places],
                "removes": [p.to_json() for p in self.removes]}


@dataclass(frozen=True, slots=True)
class Proposed:
    """A suggestion before it is stored (what a rebuild hands the store).

    "Put this text in section X at position N and remove entry R" is
    ``Proposed(owner, "add", X, (), text, reason, evidence, said_by, position=N,
    removes=(Place(R's section, R's position, R's whole text),))``; an update of entry E that
    moves it to section X is ``kind="update"``, ``section=X``, ``targets=(E's first line,)``,
    ``places=(Place(E's section, its position, E's whole text),)``.  *places* left empty are
    filled from the document the rebuild saw when the rebuild is saved
    (:attr:`app.store.documents.KnowledgeStore.placing`)."""

    owner: str
    kind: str
    section: str | None
    targets: tuple[str, ...]
    text: str
    reason: str
    evidence: str = ""
    said_by: str | None = None
    places: tuple[Place, ...] = ()
    position: int | None = None
    removes: tuple[Place, ...] = ()

    @property
    def key(self) -> tuple[object, ...]:
        """Two proposals with the same key are one suggestion (a model repeating itself)."""
        return (self.owner, self.kind, self.section, self.targets, self.text,
                tuple(p.text for p in self.removes))


# A read: ``Database.query`` (never waits for a writer) or a write transaction's ``execute``.
Query = Callable[[str, Sequence[Any]], Iterable[Sequence[Any]]]

_COLUMNS = ("id, owner, kind, section, targets, text, reason, evidence, said_by, chat_id,"
            " created_at, places, position, removes")


def _row(row: Sequence[Any]) -> Suggestion:
    targets = json.loads(row[4]) if row[4] else []
    return Suggestion(int(row[0]), row[1], row[2], row[3],
                      tuple(str(t) for t in targets if isinstance(t, str)), row[5], row[6],
                      row[7], row[8], row[9], row[10], _places(row[11]),
                      int(row[12]) if row[12] is not None else None, _places(row[13]))


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
        removes = _places_json(item.removes)
        exists = conn.execute(
            "SELECT 1 FROM knowledge_suggestion WHERE owner = ? AND kind = ? AND"
            " section IS ? AND targets = ? AND text = ? AND removes = ?",
            (item.owner, item.kind, item.section, targets, item.text, removes)).fetchone()
        if exists:
            continue
        conn.execute(
            "INSERT INTO knowledge_suggestion (owner, kind, section, targets, text, reason,"
            " evidence, said_by, chat_id, created_at, places, position, removes)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item.owner, item.kind, item.section, targets, item.text, item.reason,
             item.evidence, item.said_by, chat_id, now, _places_json(item.places),
             item.position, removes))
        added += 1
    return added


def put_back(conn: sqlite3.Connection, item: Suggestion) -> int:
    """A dismissed suggestion waiting again, as it was (its id when still free); its id."""
    taken = conn.execute("SELECT 1 FROM knowledge_suggestion WHERE id = ?",
                         (item.id,)).fetchone()
    cursor = conn.execute(
        "INSERT INTO knowledge_suggestion (id, owner, kind, section, targets, text, reason,"
        " evidence, said_by, chat_id, created_at, places, position, removes)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (None if taken else item.id, item.owner, item.kind, item.section,
         json.dumps(list(item.targets), ensure_ascii=False), item.text, item.reason,
         item.evidence, item.said_by, item.chat_id, item.created_at,
         _places_json(item.places), item.position, _places_json(item.removes)))
    return int(cursor.lastrowid or item.id)


def drop(conn: sqlite3.Connection, suggestion_id: int) -> bool:
    return conn.execute("DELETE FROM knowledge_suggestion WHERE id = ?",
                        (suggestion_id,)).rowcount > 0
