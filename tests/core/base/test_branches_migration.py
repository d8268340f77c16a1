"""The migration to branches: a database of the previous schema version becomes
one where every chat is a tree, after a backup; what a retry or an edit had replaced
(superseded_by) becomes the earlier versions; nothing said is lost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from app.base import db as dbmodule
from app.base.db import SCHEMA_VERSION, Database
from app.store.messages import ChatStore
from tests.helpers import database_before

# The version just before the branches' migration (found by what it does, not by its place).
PREVIOUS = next(i for i, m in enumerate(dbmodule.MIGRATIONS)
                if "ADD COLUMN parent_id" in m)
NOW = "2026-03-01T10:00:00.000Z"


def old_database(folder: Path) -> sqlite3.Connection:
    """A database exactly as the previous version of Cairn left it."""
    return database_before(folder, "ADD COLUMN parent_id")[0]


def chat(conn: sqlite3.Connection, chat_id: str) -> None:
    conn.execute("INSERT INTO chat (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)",
                 (chat_id, chat_id, NOW, NOW))


def say(conn: sqlite3.Connection, chat_id: str, role: str, text: str,
        status: str = "complete") -> int:
    cursor = conn.execute(
        "INSERT INTO message (chat_id, role, content, status, created_at) VALUES (?, ?, ?, ?, ?)",
        (chat_id, role, json.dumps([{"type": "text", "text": text}]), status, NOW))
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def supersede(conn: sqlite3.Connection, ids: list[int], by: int) -> None:
    conn.executemany("UPDATE message SET superseded_by = ? WHERE id = ?", [(by, i) for i in ids])


def tree(conn: sqlite3.Connection, chat_id: str) -> dict[int, int | None]:
    return dict(conn.execute("SELECT id, parent_id FROM message WHERE chat_id = ?", (chat_id,)))


def test_every_chat_becomes_a_tree_after_a_backup_and_the_old_versions_are_kept(isolated):
    conn = old_database(isolated)
    conn.execute("BEGIN")
    # A long chat: 5,000 messages, one branch.
    chat(conn, "ch_long")
    conn.executemany(
        "INSERT INTO message (chat_id, role, content, created_at) VALUES ('ch_long', ?, ?, ?)",
        [(("user", "assistant")[n % 2], json.dumps([{"type": "text", "text": f"long {n}"}]), NOW)
         for n in range(5000)])
    # A chat where a failed reply was retried, then a message edited (the old ways).
    chat(conn, "ch_edits")
    a = say(conn, "ch_edits", "user", "first question")
    b = say(conn, "ch_edits", "assistant", "first answer")
    p = say(conn, "ch_edits", "user", "second question")
    r1 = say(conn, "ch_edits", "assistant", "broken", status="failed")
    supersede(conn, [r1], by=p)  # retry: the failed reply out
    r2 = say(conn, "ch_edits", "assistant", "second answer")
    n = say(conn, "ch_edits", "user", "second question, edited")
    supersede(conn, [p, r2], by=n)  # edit of p: p and its reply out
    r3 = say(conn, "ch_edits", "assistant", "answer to the edit")
    # An edit of the very first message: the versions of the first message have no parent.
    a2 = say(conn, "ch_edits", "user", "first question, edited")
    supersede(conn, [a, b, n, r3], by=a2)
    r4 = say(conn, "ch_edits", "assistant", "answer to the first edit")
    chat(conn, "ch_empty")
    conn.execute("COMMIT")
    conn.close()

    db = Database.open(isolated)
    try:
        # The backup came first: it is the previous version, untouched.
        backups = list(isolated.glob(f"cairn-v{PREVIOUS}-*.db.bak"))
        assert len(backups) == 1
        old = sqlite3.connect(backups[0])
        assert old.execute("PRAGMA user_version").fetchone() == (PREVIOUS,)
        assert "parent_id" not in [r[1] for r in old.execute("PRAGMA table_info(message)")]
        assert old.execute("SELECT count(*) FROM message").fetchone() == (5000 + 9,)
        old.close()
        assert db.query("PRAGMA user_version") == [(SCHEMA_VERSION,)]

        w = db._conn
        long = tree(w, "ch_long")
        first = min(long)
        assert long[first] is None
        assert all(long[i] == i - 1 for i in long if i != first)
        assert w.execute("SELECT leaf_id FROM chat WHERE id = 'ch_long'").fetchone() == (max(long),)

        assert tree(w, "ch_edits") == {
            a: None, b: a, p: b, r1: p, r2: p, n: b, r3: n, a2: None, r4: a2}
        assert w.execute("SELECT leaf_id FROM chat WHERE id = 'ch_edits'").fetchone() == (r4,)
        assert w.execute("SELECT leaf_id FROM chat WHERE id = 'ch_empty'").fetchone() == (None,)
        assert w.execute("SELECT count(*) FROM message WHERE superseded_by IS NOT NULL"
                         ).fetchone() == (0,)

        chats = ChatStore(db)
        shown = chats.messages("ch_edits")
        assert [m.id for m in shown] == [a2, r4]
        assert [(m.version, m.versions) for m in shown] == [(2, 2), (1, 1)]
        assert [m.id for m in chats.versions("ch_edits", r2)] == [r1, r2]
        # The old branches are one switch away, the newest leaf below the version chosen.
        assert chats.switch("ch_edits", a) == r3
        assert [m.id for m in chats.messages("ch_edits")] == [a, b, n, r3]
        assert [(m.version, m.versions) for m in chats.messages("ch_edits")] == [
            (1, 2), (1, 1), (2, 2), (1, 1)]
        assert chats.switch("ch_edits", p) == r2
        assert [m.id for m in chats.messages("ch_edits")] == [a, b, p, r2]
        assert chats.message_count("ch_long") == 5000

        # What a retry or an edit had taken out of the index is found now, every branch.
        found = {r[0] for r in w.execute(
            "SELECT rowid FROM search_message WHERE search_message MATCH 'broken'")}
        assert found == {r1}
        assert w.execute("SELECT count(*) FROM search_message").fetchone() == (5009,)
    finally:
        db.close()


def test_the_tree_refuses_a_parent_from_another_chat_or_a_later_message(isolated):
    """The schema keeps the tree a tree: a parent is an earlier message of the same chat,
    and a message's place never changes (so no cycle can ever be stored)."""
    import pytest

    db = Database.open(isolated)
    try:
        with db.write() as conn:
            chat(conn, "ch_a")
            chat(conn, "ch_b")
            first = say(conn, "ch_a", "user", "hello")
        for parent, chat_id in ((first, "ch_b"), (first + 50, "ch_a")):
            with pytest.raises(sqlite3.IntegrityError, match="earlier message of its chat"):
                with db.write() as conn:
                    conn.execute("INSERT INTO message (chat_id, role, content, created_at,"
                                 " parent_id) VALUES (?, 'user', '[]', ?, ?)",
                                 (chat_id, NOW, parent))
        with pytest.raises(sqlite3.IntegrityError, match="never changes"):
            with db.write() as conn:
                conn.execute("UPDATE message SET parent_id = ? WHERE id = ?", (first, first))
        assert db.query("SELECT count(*) FROM message") == [(1,)]
    finally:
        db.close()


def test_a_cycle_made_by_hand_without_the_triggers_never_hangs_a_read(isolated):
    """Should the triggers be lost and a row edited by hand into a cycle, every walk of the
    tree still ends (ids fall going up): the path reads what it can, no read goes round."""
    db = Database.open(isolated)
    try:
        with db.write() as conn:
            chat(conn, "ch_a")
            a = say(conn, "ch_a", "user", "one")
            b = conn.execute("INSERT INTO message (chat_id, role, content, created_at, parent_id)"
                             " VALUES ('ch_a', 'assistant', '[]', ?, ?)", (NOW, a)).lastrowid
            conn.execute("UPDATE chat SET leaf_id = ? WHERE id = 'ch_a'", (b,))
            conn.execute("DROP TRIGGER message_parent_fixed")
            conn.execute("UPDATE message SET parent_id = ? WHERE id = ?", (b, a))  # a cycle
        chats = ChatStore(db)
        assert [m.id for m in chats.messages("ch_a")] == [a, b]
        assert chats.message_count("ch_a") == 2
        assert chats.switch("ch_a", a) == b
        assert chats.on_path("ch_a", a)
    finally:
        db.close()
