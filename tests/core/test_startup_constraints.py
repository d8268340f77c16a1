"""The constraints do the checking: what they rule out is not scanned at every
start, so each one is shown refusing its inconsistency here; a database that lost one is
still stopped at start, with the message naming the problem, at the benchmark's scale."""

from __future__ import annotations

import random
import shutil
import sqlite3
from pathlib import Path

import pytest

from app.base.db import DB_NAME
from app.errors import Refused, StartupError
from app.store.registry.registry import Registry
from app.store.registry.state import FirstPaint
from tests.scale_data import build


def stored(isolated: Path, folders) -> tuple[sqlite3.Connection, dict[str, str]]:
    """A registry with two workspaces and a chat in the first, then a connection as a hand
    edit in the sqlite3 shell would make it: foreign keys off."""
    a, b = folders("a", "b")
    reg = Registry.open(isolated)
    wa, _ = reg.add_workspace(a)
    wb, _ = reg.add_workspace(b)
    chat = reg.new_chat(folder=a)
    loose = reg.new_chat()
    reg.close()
    conn = sqlite3.connect(isolated / DB_NAME, isolation_level=None)
    assert conn.execute("PRAGMA foreign_keys").fetchall() == [(0,)]
    return conn, {"a": wa.id, "b": wb.id, "chat": chat.id, "loose": loose.id}


def test_a_folder_claimed_twice_is_refused_by_the_database(isolated, folders):
    conn, ids = stored(isolated, folders)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE workspace SET path_key = (SELECT path_key FROM workspace"
                     " WHERE id = ?) WHERE id = ?", (ids["a"], ids["b"]))


def test_a_chat_accounted_by_two_workspaces_is_refused_by_the_database(isolated, folders):
    conn, ids = stored(isolated, folders)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO membership VALUES (?, ?, 5)", (ids["b"], ids["chat"]))


def test_an_order_that_repeats_a_workspace_is_refused_by_the_database(isolated, folders):
    conn, ids = stored(isolated, folders)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO display_order VALUES (100, ?)", (ids["a"],))


def test_a_membership_naming_an_unknown_chat_or_workspace_is_refused_without_foreign_keys(
        isolated, folders):
    conn, ids = stored(isolated, folders)
    for row in ((ids["a"], "ch_nobody", 9), ("ws_nobody", ids["loose"], 9)):
        with pytest.raises(sqlite3.IntegrityError, match="unknown chat or workspace"):
            conn.execute("INSERT INTO membership VALUES (?, ?, ?)", row)
    for change in ("chat_id = 'ch_nobody'", "workspace_id = 'ws_nobody'"):
        with pytest.raises(sqlite3.IntegrityError, match="unknown chat or workspace"):
            conn.execute(f"UPDATE membership SET {change}")
    with pytest.raises(sqlite3.IntegrityError, match="never changes"):
        conn.execute("UPDATE chat SET id = 'ch_other' WHERE id = ?", (ids["chat"],))
    with pytest.raises(sqlite3.IntegrityError, match="never changes"):
        conn.execute("UPDATE workspace SET id = 'ws_other' WHERE id = ?", (ids["a"],))


def test_deleting_a_chat_or_a_workspace_by_hand_takes_its_memberships_along(isolated, folders):
    conn, ids = stored(isolated, folders)
    conn.execute("DELETE FROM chat WHERE id = ?", (ids["chat"],))
    conn.execute("DELETE FROM workspace WHERE id = ?", (ids["b"],))
    assert conn.execute("SELECT count(*) FROM membership").fetchall() == [(0,)]
    conn.execute("DELETE FROM display_order WHERE workspace_id = ?", (ids["b"],))
    conn.close()
    reg = Registry.open(isolated)  # consistent: it starts
    try:
        shown = [ws.id for ws in reg.workspaces()]
        assert ids["a"] in shown and ids["b"] not in shown
        assert reg.chat_count(ids["a"]) == 0
    finally:
        reg.close()


def test_an_intact_start_scans_no_chat_for_what_the_constraints_rule_out(isolated, folders):
    conn, _ = stored(isolated, folders)
    conn.close()
    Registry.open(isolated).close()  # the first whole check, once
    statements: list[str] = []
    from app.base.db import Database

    real_open = Database.open.__func__  # type: ignore[attr-defined]

    def traced(cls, folder: Path, **options: bool) -> Database:
        db = real_open(cls, folder, **options)
        db.set_trace(statements.append)
        return db

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Database, "open", classmethod(traced))
        reg = Registry.open(isolated, first=FirstPaint())
    reg.close()
    scans = [s for s in statements if "GROUP BY chat_id" in s or "NOT IN (SELECT id FROM chat)" in s
             or "NOT IN (SELECT id FROM workspace)" in s]
    assert scans == []


def test_the_stored_counts_follow_every_change(isolated, folders):
    """chat_count (what the first paint shows before the chats are read) equals a count of
    the chats after a random run of the registry's changes."""
    rng = random.Random(5)
    paths = folders(*"abcd")
    reg = Registry.open(isolated)
    try:
        ws = [reg.add_workspace(p)[0].id for p in paths]
        chats = []
        for step in range(150):
            op = rng.randrange(7)
            try:
                if op == 0 or not chats:
                    chats.append(reg.new_chat(folder=rng.choice([*paths, None])).id)
                elif op == 1:
                    reg.archive_chat(rng.choice(chats))
                elif op == 2:
                    reg.unarchive_chat(rng.choice(chats))
                elif op == 3:
                    reg.move_chat_to(rng.choice(chats), rng.choice([*ws, None]))
                elif op == 4:
                    chat = reg.chat(rng.choice(chats))
                    if chat and chat.workspace_id and not chat.archived:
                        reg.move_chat(chat.id, index=0)
                elif op == 5 and step % 40 == 39:
                    gone = rng.choice(ws)
                    reg.remove_workspace(gone)
                    ws.remove(gone)
                elif op == 6:
                    reg.pin_chat(rng.choice(chats))
            except Refused:  # a refusal (archived, ...) changes nothing
                pass
        truth = dict.fromkeys([*ws, ""], (0, 0))
        for chat_id in chats:
            chat = reg.chat(chat_id)
            assert chat is not None
            shown, hidden = truth[chat.workspace_id or ""]
            truth[chat.workspace_id or ""] = (shown + (not chat.archived), hidden + chat.archived)
        counted = {place: (shown, hidden) for place, shown, hidden in reg.db.query(
            "SELECT place, visible, archived FROM chat_count")}
        assert {p: counted.get(p, (0, 0)) for p in truth} == truth
    finally:
        reg.close()


# ------------------------------------------------------------------ at scale: 50,000 chats


@pytest.fixture(scope="module")
def scale(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scale")
    build(root / "data", root / "folders", random.Random(3))
    Registry.open(root / "data").close()  # migrated and checked once, as a person's would be
    return root / "data" / DB_NAME


def break_at_scale(scale: Path, isolated: Path, *statements: str) -> tuple[str, str]:
    """The scale database, broken by hand; the message each kind of start stops with."""
    isolated.mkdir(parents=True, exist_ok=True)
    shutil.copy(scale, isolated / DB_NAME)
    conn = sqlite3.connect(isolated / DB_NAME, isolation_level=None)
    for statement in statements:
        conn.execute(statement)
    conn.close()
    before = (isolated / DB_NAME).read_bytes()
    messages = []
    for first in (FirstPaint(), None):  # the window's start and the command line's
        with pytest.raises(StartupError) as stopped:
            Registry.open(isolated, first=first)
        messages.append(str(stopped.value))
    assert (isolated / DB_NAME).read_bytes() == before  # nothing guessed, nothing written
    assert all(m.startswith("Cairn stopped before changing anything") for m in messages)
    return messages[0], messages[1]


def test_at_scale_a_folder_claimed_by_two_workspaces_stops_the_start(scale, isolated):
    for message in break_at_scale(
            scale, isolated, "DROP INDEX workspace_path_key",
            "UPDATE workspace SET path_key = (SELECT min(path_key) FROM workspace)"
            " WHERE rowid = (SELECT max(rowid) FROM workspace)"):
        assert "is claimed by 2 workspaces" in message


def test_at_scale_a_chat_accounted_by_two_stops_the_start(scale, isolated):
    for message in break_at_scale(
            scale, isolated, "DROP INDEX membership_chat",
            "INSERT INTO membership SELECT (SELECT max(workspace_id) FROM membership),"
            " (SELECT min(chat_id) FROM membership), 100000"):
        assert "is accounted by 2 workspaces" in message


def test_at_scale_an_order_that_repeats_a_workspace_stops_the_start(scale, isolated):
    for message in break_at_scale(
            scale, isolated, "DROP INDEX display_order_workspace",
            "INSERT INTO display_order SELECT 100000, min(workspace_id) FROM display_order"):
        assert "the display order repeats the workspace" in message


def test_at_scale_an_order_that_misses_a_workspace_stops_the_start(scale, isolated):
    for message in break_at_scale(
            scale, isolated,
            "DELETE FROM display_order WHERE position = (SELECT max(position) FROM display_order)"):
        assert "the display order misses the workspace" in message


def test_at_scale_a_membership_of_an_unknown_chat_stops_the_start_once_its_trigger_is_gone(
        scale, isolated):
    for message in break_at_scale(
            scale, isolated, "DROP TRIGGER chat_deleted",
            "DELETE FROM chat WHERE id = (SELECT min(chat_id) FROM membership)"):
        assert "accounts the unknown chat" in message
