"""Relevance by SQLite's FTS5 bm25, over texts held in memory (nothing is stored).

The context uses it to pick the knowledge entries most relevant to a message when a document
is too large to inject whole (docs/user-guide.md, "What Claude sees").  It lives here, beside the database, so that SQL
stays in the base and store packages.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


def bm25_scores(texts: Iterable[tuple[int, str]], words: Iterable[str]) -> dict[int, float]:
    """Each matching text's bm25 score by its number (lower is better); any word may match.
    Unmatched texts are left out."""
    query = " OR ".join('"' + w.replace('"', '""') + '"' for w in dict.fromkeys(words))
    if not query:
        return {}
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE entry USING fts5(body)")
        conn.executemany("INSERT INTO entry (rowid, body) VALUES (?, ?)", texts)
        return dict(conn.execute(
            "SELECT rowid, bm25(entry) FROM entry WHERE entry MATCH ?", (query,)))
    finally:
        conn.close()
