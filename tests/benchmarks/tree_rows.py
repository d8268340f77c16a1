"""Messages written in bulk for a benchmark, each chat's rows one path: each row
goes under the chat's previous one (the first under the chat's leaf), with explicit ids so
that one ``executemany`` writes them all, and each chat's leaf is its last row."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any


def insert_paths(conn: sqlite3.Connection, columns: str, values: str,
                 rows: Sequence[Sequence[Any]]) -> list[int]:
    """``INSERT INTO message (id, parent_id, <columns>) VALUES (?, ?, <values>)`` for each
    row (its first value the chat's id); returns the ids, in the rows' order."""
    base = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM message").fetchone()[0]
    last: dict[str, int | None] = {}
    written = []
    for i, row in enumerate(rows):
        chat = row[0]
        if chat not in last:
            last[chat] = conn.execute("SELECT leaf_id FROM chat WHERE id = ?",
                                      (chat,)).fetchone()[0]
        written.append((base + i, last[chat], *row))
        last[chat] = base + i
    conn.executemany(f"INSERT INTO message (id, parent_id, {columns}) VALUES (?, ?, {values})",
                     written)
    conn.executemany("UPDATE chat SET leaf_id = ? WHERE id = ?",
                     [(leaf, chat) for chat, leaf in last.items()])
    return [row[0] for row in written]
