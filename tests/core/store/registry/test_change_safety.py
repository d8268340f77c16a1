"""Change safety beyond one process and one thread: catching up, busy writers, stale markers,
and the review's regressions."""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading

import pytest

from app.base import db as dbmod
from app.base.live import TURN
from app.errors import Refused, StartupError, StorageError
from app.store.registry.registry import Registry


def test_checks_run_on_the_stored_state_not_stale_memory(open_registry, folders):
    window = open_registry()
    window.remove_workspace(window.first_use_workspace_id)
    cli = open_registry()
    (path,) = folders("Acme")
    ws, _ = cli.add_workspace(path)
    a = cli.new_chat(folder=path, title="a")
    b = cli.new_chat(folder=path, title="b")
    # The window never saw these; each write catches up before it decides.
    assert window.rename_workspace(ws.id, "Acme Inc").title == "Acme Inc"
    assert window.advance_workspace(ws.id).build_status == "planning"
    assert cli.advance_workspace(ws.id).build_status == "building"  # no lost update
    assert window.move_chat(a.id, index=0).id == a.id
    assert window.pin_chat(b.id).pinned
    cli.archive_chat(b.id)
    with pytest.raises(Refused, match="the session is archived"):
        window.pin_chat(b.id)  # archived meanwhile in the other process
    assert [c.title for c in window.chats_of(ws.id)] == ["a"]


def test_a_folder_replaced_by_a_link_does_not_stop_the_start(open_registry, folders, tmp_path):
    acme, other = folders("Acme", "B")
    reg = open_registry()
    wa, _ = reg.add_workspace(acme)
    wb, _ = reg.add_workspace(other)
    reg.close()
    shutil.rmtree(other)
    os.symlink(acme, other)  # the disk now has one directory behind two stored paths
    again = open_registry()
    assert {ws.id for ws in again.workspaces()} >= {wa.id, wb.id}
    assert again.remove_workspace(wb.id) is True


def test_concurrent_writers_and_readers_in_threads(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(25):
                chat = registry.new_chat(folder=path, title=f"{n}-{i}")
                registry.pin_chat(chat.id)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    def read() -> None:
        try:
            for _ in range(200):
                registry.chat_listing()
                registry.workspaces()
        except BaseException as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(registry.chats_of(ws.id)) == 100
    pins = [c.pin_seq for c in registry.chat_listing().pinned]
    assert len(pins) == 100 and len(set(pins)) == 100


def test_a_busy_database_is_one_sentence_and_nothing_changes(registry, folders, monkeypatch):
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    reg = Registry.open(registry.db.path.parent)
    (path,) = folders("Acme")
    holder = sqlite3.connect(registry.db.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process is mid-write
    try:
        with pytest.raises(StorageError, match="^Cairn's data is busy: another Cairn"):
            reg.add_workspace(path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert reg.workspaces() == []
    assert reg.add_workspace(path)[1] is True  # and it works once the other is done
    reg.close()


def test_the_cli_says_busy_and_exits_1(isolated, folders, monkeypatch, capsys):
    from app import cli

    assert cli.main(["workspace", "list"]) == 0
    monkeypatch.setattr(dbmod, "BUSY_TIMEOUT_MS", 50)
    (path,) = folders("Acme")
    holder = sqlite3.connect(isolated / "cairn.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    capsys.readouterr()
    try:
        assert cli.main(["workspace", "add", path]) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("Cairn's data is busy") and err.count("\n") == 1


def test_a_data_folder_that_is_a_file_is_one_sentence(tmp_path, capsys):
    from app import cli

    (tmp_path / "afile").write_text("x")
    assert cli.main(["--data-dir", str(tmp_path / "afile"), "workspace", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"cannot use '{tmp_path / 'afile'}' as Cairn's data folder: ")


def test_a_pending_cleanup_waits_for_a_process_that_can_run_it(isolated, folders):
    def failing(ws_id: str) -> None:
        raise OSError("disk went away")

    reg = Registry.open(isolated, cleanup=[failing])
    (path,) = folders("Acme")
    ws, _ = reg.add_workspace(path)
    reg.remove_workspace(ws.id)
    reg.close()
    Registry.open(isolated).close()  # the command line: no cleanup of its own
    done: list[str] = []
    Registry.open(isolated, cleanup=[done.append]).close()
    assert done == [ws.id]


def test_membership_of_a_missing_chat_stops_the_start(isolated, folders):
    (path,) = folders("Acme")
    reg = Registry.open(isolated)
    ws, _ = reg.add_workspace(path)
    chat = reg.new_chat(folder=path)
    reg.close()
    conn = sqlite3.connect(isolated / "cairn.db")  # foreign keys are off in a plain client
    # The chat_deleted trigger takes the membership along even then
    # (tests/core/test_startup_constraints.py); a database that lost it can hold the dangling
    # membership, and the start-up check looks for it when the trigger is missing.
    conn.execute("DROP TRIGGER chat_deleted")
    conn.execute("DELETE FROM chat WHERE id = ?", (chat.id,))
    conn.commit()
    conn.close()
    with pytest.raises(StartupError, match=rf"accounts the unknown chat '{chat.id}'"):
        Registry.open(isolated)


def test_work_cannot_start_on_an_archived_or_unknown_chat(registry):
    chat = registry.new_chat()
    work = registry.begin_work(chat.id, TURN, stop=lambda: None)
    with pytest.raises(Refused, match=r"the session is active \(turn\)"):
        registry.archive_chat(chat.id)
    registry.end_work(work)
    registry.archive_chat(chat.id)
    with pytest.raises(Refused, match=rf"^cannot start work in session '{chat.id}': the session is archived$"):
        registry.begin_work(chat.id, TURN, stop=lambda: None)
    with pytest.raises(Refused, match="no such session"):
        registry.begin_work("ch_gone", TURN, stop=lambda: None)


def test_a_relative_first_use_folder_is_never_created_under_the_current_folder(
        isolated, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAIRN_FIRST_USE_DIR", "rel")
    reg = Registry.open(isolated)
    assert reg.workspaces() == [] and not (tmp_path / "rel").exists()
    reg.close()


def test_first_use_id_is_gone_once_removed(registry, isolated):
    assert registry.first_use_workspace_id is None  # the fixture removed it
    state = dict(registry.db.query("SELECT key, value FROM registry_state"))
    assert state["first_use"].startswith("ws_")  # still remembered in storage
