"""First start (regrouping from chat headers, the first-use workspace), interrupted changes,
and the start-up check that refuses to guess."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.base.db import Database
from app.errors import StartupError
from app.store.registry.registry import Registry


def raw(isolated: Path) -> sqlite3.Connection:
    """A plain connection to the test's database, as another program (or a crash) would leave it."""
    Database.open(isolated).close()  # create the schema without initialising the list
    conn = sqlite3.connect(isolated / "cairn.db", isolation_level=None)
    return conn


def add_header(conn: sqlite3.Connection, chat_id: str, folder: str | None, when: str,
               archived: bool = False) -> None:
    conn.execute(
        "INSERT INTO chat (id, title, folder, created_at, updated_at, archived_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (chat_id, chat_id, folder, when, when, when if archived else None),
    )


# ------------------------------------------------------------------ first-use workspace


def test_first_use_workspace_only_when_nothing_to_group(isolated, tmp_path):
    reg = Registry.open(isolated)
    (ws,) = reg.workspaces()
    first_use = tmp_path / "Documents" / "Cairn"
    assert ws.path == str(first_use) and first_use.is_dir() and ws.title == "Cairn"
    assert reg.first_use_workspace_id == ws.id
    reg.remove_workspace(ws.id)
    reg.close()
    again = Registry.open(isolated)
    assert again.workspaces() == []  # remembered: deleting it does not bring another
    again.close()


@pytest.mark.parametrize("archived", [False, True])
def test_any_chat_history_prevents_the_first_use_workspace(isolated, archived):
    conn = raw(isolated)
    add_header(conn, "ch_old", None, "2026-01-01T00:00:00.000Z", archived=archived)
    conn.close()
    reg = Registry.open(isolated)
    assert reg.workspaces() == [] and reg.first_use_workspace_id is None
    reg.close()


def test_interrupted_first_use_is_completed_at_next_start(isolated, tmp_path):
    conn = raw(isolated)
    target = tmp_path / "Docs" / "Cairn"
    conn.execute("INSERT INTO pending_change (op, args) VALUES ('first-use', ?)",
                 (json.dumps({"path": str(target)}),))
    conn.close()
    reg = Registry.open(isolated)
    (ws,) = reg.workspaces()
    assert ws.path == str(target) and reg.first_use_workspace_id == ws.id
    assert reg.db.query("SELECT count(*) FROM pending_change") == [(0,)]
    reg.close()


def test_first_use_folder_that_cannot_be_made_is_retried_later(isolated, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("CAIRN_FIRST_USE_DIR", str(blocker / "Cairn"))
    reg = Registry.open(isolated)
    assert reg.workspaces() == []
    reg.close()
    monkeypatch.setenv("CAIRN_FIRST_USE_DIR", str(tmp_path / "ok" / "Cairn"))
    reg = Registry.open(isolated)
    assert [ws.title for ws in reg.workspaces()] == ["Cairn"]
    reg.close()


# ------------------------------------------------------------------ regrouping from headers


def test_grouping_rebuilt_from_headers_in_order_of_first_appearance(isolated, folders):
    beta, alpha = folders("beta", "alpha")
    conn = raw(isolated)
    add_header(conn, "ch_1", beta, "2026-01-01T00:00:01.000Z")
    add_header(conn, "ch_2", alpha, "2026-01-01T00:00:02.000Z")
    add_header(conn, "ch_3", beta + "/", "2026-01-01T00:00:03.000Z", archived=True)
    add_header(conn, "ch_4", None, "2026-01-01T00:00:04.000Z")
    add_header(conn, "ch_5", "/no/such/folder", "2026-01-01T00:00:05.000Z")
    conn.close()
    reg = Registry.open(isolated)
    assert [ws.title for ws in reg.workspaces()] == ["beta", "alpha"]
    w_beta = reg.workspaces()[0]
    assert [reg.chat(c).workspace_id for c in ("ch_1", "ch_3")] == [w_beta.id, w_beta.id]
    assert [c.id for c in reg.chats_of(w_beta.id)] == ["ch_1"]  # ch_3 archived, in place
    assert {c.id for c in reg.chat_listing().ungrouped} == {"ch_4", "ch_5"}
    assert reg.first_use_workspace_id is None
    reg.close()
    # Runs only while the list has never been initialised.
    conn = sqlite3.connect(isolated / "cairn.db")
    add_header(conn, "ch_6", alpha, "2026-01-01T00:00:06.000Z")
    conn.commit()
    conn.close()
    reg = Registry.open(isolated)
    assert reg.chat("ch_6").workspace_id is None
    reg.close()


def test_regrouping_reads_headers_only(isolated, folders, monkeypatch):
    (beta,) = folders("beta")
    conn = raw(isolated)
    add_header(conn, "ch_1", beta, "2026-01-01T00:00:01.000Z")
    conn.execute("INSERT INTO message (chat_id, role, content, created_at)"
                 " VALUES ('ch_1', 'user', '\"secret body\"', '2026-01-01T00:00:02.000Z')")
    conn.close()
    statements: list[str] = []
    real_open = Database.open.__func__

    def traced(cls, folder: Path, **options: bool) -> Database:
        db = real_open(cls, folder, **options)
        db.set_trace(statements.append)
        return db

    monkeypatch.setattr(Database, "open", classmethod(traced))
    reg = Registry.open(isolated)
    reg.close()
    assert reg.chat("ch_1").workspace_id is not None  # the regrouping did run
    # (the start-up check's scan of a database checked for the first time reads chat ids)
    chat_reads = [s for s in statements if "FROM chat" in s and "FROM membership" not in s]
    assert chat_reads and set(chat_reads) == {  # the header query, and nothing else
        "SELECT id, title, folder, created_at, updated_at, archived_at, pin_seq"
        " FROM chat WHERE NOT EXISTS (SELECT 1 FROM removed_chat r WHERE r.chat_id = chat.id)"
        " ORDER BY created_at, rowid"
    }
    assert not any("message" in s for s in statements)


# ------------------------------------------------------------------ the start-up check


def inconsistent(isolated: Path, folders, break_it) -> str:
    a, b = folders("a", "b")
    reg = Registry.open(isolated)
    wa, _ = reg.add_workspace(a)
    wb, _ = reg.add_workspace(b)
    chat = reg.new_chat(folder=a)
    reg.close()
    conn = sqlite3.connect(isolated / "cairn.db", isolation_level=None)
    break_it(conn, wa.id, wb.id, chat.id)
    conn.close()
    before = (isolated / "cairn.db").read_bytes()
    with pytest.raises(StartupError) as stopped:
        Registry.open(isolated)
    assert (isolated / "cairn.db").read_bytes() == before  # nothing guessed, nothing written
    return str(stopped.value)


def test_folder_claimed_by_two_workspaces_stops_the_start(isolated, folders):
    def break_it(conn, wa, wb, chat):
        conn.execute("DROP INDEX workspace_path_key")
        conn.execute("UPDATE workspace SET path = (SELECT path FROM workspace WHERE id = ?),"
                     " path_key = (SELECT path_key FROM workspace WHERE id = ?) WHERE id = ?",
                     (wa, wa, wb))

    message = inconsistent(isolated, folders, break_it)
    assert message.startswith("Cairn stopped before changing anything")
    assert "is claimed by 2 workspaces" in message and "/a'" in message


def test_chat_accounted_by_two_stops_the_start(isolated, folders):
    def break_it(conn, wa, wb, chat):
        conn.execute("DROP INDEX membership_chat")
        conn.execute("INSERT INTO membership VALUES (?, ?, 0)", (wb, chat))

    message = inconsistent(isolated, folders, break_it)
    assert "is accounted by 2 workspaces" in message


def test_order_that_misses_a_workspace_stops_the_start(isolated, folders):
    def break_it(conn, wa, wb, chat):
        conn.execute("DELETE FROM display_order WHERE workspace_id = ?", (wb,))

    assert "the display order misses the workspace" in inconsistent(isolated, folders, break_it)


def test_order_that_repeats_a_workspace_stops_the_start(isolated, folders):
    def break_it(conn, wa, wb, chat):
        conn.execute("DROP INDEX display_order_workspace")
        conn.execute("INSERT INTO display_order VALUES (100, ?)", (wa,))

    assert "the display order repeats the workspace" in inconsistent(isolated, folders, break_it)


def test_the_cli_reports_the_problem_and_exits_1(isolated, folders, capsys):
    from app import cli

    def break_it(conn, wa, wb, chat):
        conn.execute("DELETE FROM display_order WHERE workspace_id = ?", (wa,))

    inconsistent(isolated, folders, break_it)
    assert cli.main(["workspace", "list"]) == 1
    assert "the display order misses the workspace" in capsys.readouterr().err
