"""Recently removed workspaces: what removal keeps, Restore, the 30-day purge."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app import cli
from app.errors import Refused
from app.events import ChatsRegrouped, WorkspaceAdded
from app.store.blobs import BlobStore
from app.store.documents import KnowledgeStore
from app.store.files import FileStore
from app.store.registry.registry import Registry


@pytest.fixture
def registry(open_registry):  # type: ignore[no-untyped-def]
    """An empty list and an empty bin: the first-use workspace removed and forgotten."""
    reg = open_registry()
    first = reg.first_use_workspace_id
    if first:
        reg.remove_workspace(first)
        with reg.db.write() as conn:
            conn.execute("DELETE FROM removed_workspace")
    return reg


def _stuff(reg: Registry, ws_id: str, tmp_path: Path, content: bytes = b"brand colours\n"):
    knowledge = KnowledgeStore(reg.db)
    knowledge.save(ws_id, "## Facts\n- Launch 2027-04-15\n", source="user")
    knowledge.save(ws_id, "## Facts\n- Launch 2027-04-16\n", source="user")
    source = tmp_path / "colours.md"
    source.write_bytes(content)
    files = FileStore(reg.db, BlobStore(reg.db.path.parent / "files"))
    record = files.add(ws_id, source, description="palette")
    return knowledge, files, record


def _age(data: Path, ws_id: str, days: int) -> None:
    conn = sqlite3.connect(data / "cairn.db")
    then = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    conn.execute("UPDATE removed_workspace SET removed_at = ? WHERE id = ?", (then, ws_id))
    conn.commit()
    conn.close()


def test_removal_keeps_what_only_cairn_holds(registry, folders, tmp_path):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    registry.update_workspace(ws.id, description="Brand work", instructions="British English",
                              build_status="building")
    knowledge, files, record = _stuff(registry, ws.id, tmp_path)
    chat = registry.new_chat(folder=path, title="Launch")
    assert registry.remove_workspace(ws.id) is True
    assert registry.workspace(ws.id) is None
    assert registry.chat(chat.id).workspace_id is None  # spec 004: Ungrouped
    (removed,) = registry.removed_workspaces()
    assert (removed.id, removed.title, removed.path) == (ws.id, "Acme", path)
    assert (removed.description, removed.instructions, removed.build_status) == (
        "Brand work", "British English", "building")
    assert removed.chats == (chat.id,) and removed.files == 1
    assert knowledge.get(ws.id).version == 2 and len(knowledge.history(ws.id)) == 2
    assert [f.id for f in files.of_workspaces([ws.id])] == [record.id]
    assert files.blobs.path(record.sha256).exists()


def test_restore_brings_back_the_identity_and_still_ungrouped_chats(registry, folders, tmp_path):
    (path, other) = folders("Acme", "Other")
    ws, _ = registry.add_workspace(path)
    registry.update_workspace(ws.id, description="Brand work", build_status="planning")
    knowledge, files, record = _stuff(registry, ws.id, tmp_path)
    first = registry.new_chat(folder=path, title="first")
    second = registry.new_chat(folder=path, title="second")
    third = registry.new_chat(folder=path, title="third")
    registry.archive_chat(second.id)
    before = [c.id for c in registry.chats_of(ws.id)]
    registry.remove_workspace(ws.id)
    # Meanwhile another process gave one of its chats another home: it stays there.
    other_ws, _ = registry.add_workspace(other)
    conn = sqlite3.connect(registry.db.path)
    conn.execute("INSERT INTO membership (workspace_id, chat_id, position) VALUES (?, ?, 0)",
                 (other_ws.id, first.id))
    conn.commit()
    conn.close()
    restored = registry.restore_workspace(ws.id)
    assert restored.id == ws.id and restored.path == path and restored.title == "Acme"
    assert (restored.description, restored.build_status) == ("Brand work", "planning")
    assert registry.workspaces()[0].id == ws.id  # it leads the list, like a new one
    assert [c.id for c in registry.chats_of(ws.id)] == [c for c in before if c != first.id]
    assert registry.chat(second.id).workspace_id == ws.id and registry.chat(second.id).archived
    assert registry.chat(first.id).workspace_id == other_ws.id
    assert knowledge.get(ws.id).version == 2
    assert [f.id for f in files.of_workspaces([ws.id])] == [record.id]
    assert registry.removed_workspaces() == []
    # Memory and storage agree.
    again = Registry.open(registry.db.path.parent)
    try:
        assert [c.id for c in again.chats_of(ws.id)] == [third.id]
        assert again.workspace(ws.id).description == "Brand work"
    finally:
        again.close()


def test_restore_announces_the_workspace_then_its_chats(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    one = registry.new_chat(folder=path, title="one")
    two = registry.new_chat(folder=path, title="two")
    registry.archive_chat(one.id)
    registry.remove_workspace(ws.id)
    seen: list = []
    registry.hub.subscribe(seen.append)
    registry.restore_workspace(ws.id)
    added, regrouped = seen
    assert isinstance(added, WorkspaceAdded) and (added.id, added.row) == (ws.id, 0)
    assert isinstance(regrouped, ChatsRegrouped)
    assert (regrouped.ids, regrouped.to, regrouped.rows) == ((two.id, one.id), ws.id, (0, None))
    assert registry.chat_listing().ungrouped == []


def test_restore_re_nests_folders_lifted_by_the_removal(registry, folders):
    acme, brand = folders("Acme", "Acme/Brand")
    w_acme, _ = registry.add_workspace(acme)
    w_brand, _ = registry.add_workspace(brand)
    registry.remove_workspace(w_acme.id)
    assert registry.parent_of(w_brand.id) is None
    registry.restore_workspace(w_acme.id)
    assert registry.parent_of(w_brand.id) == w_acme.id


def test_restore_of_a_gone_folder_speaks_of_restoring_and_offers_another_folder(
        registry, folders, tmp_path):
    """The refusal says restore (not "cannot create a workspace"), the
    list flags the missing folder first, and "Restore into another folder" brings it back
    there with its id, knowledge and chats."""
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    chat = registry.new_chat(folder=path, title="Plans")
    registry.remove_workspace(ws.id)
    moved = tmp_path / "elsewhere" / "Acme"
    moved.parent.mkdir()
    Path(path).rename(moved)
    (listed,) = registry.removed_workspaces()
    assert listed.folder_missing and listed.to_json()["folder_missing"] is True
    with pytest.raises(Refused) as refused:
        registry.restore_workspace(ws.id)
    assert str(refused.value) == (
        f"cannot restore workspace 'Acme': its folder '{path}' is missing. Restore it into "
        "another folder with “Restore into another folder…” (or `cairn workspace restore ID "
        "--into PATH`).")
    Path(path).write_text("now a file")
    with pytest.raises(Refused, match="^cannot restore workspace 'Acme': its folder"):
        registry.restore_workspace(ws.id)
    with pytest.raises(Refused) as refused:
        registry.restore_workspace(ws.id, into=str(tmp_path / "nowhere"))
    assert str(refused.value) == (f"cannot restore workspace 'Acme' into "
                                  f"'{tmp_path / 'nowhere'}': that is not a folder that exists")
    assert registry.workspace(ws.id) is None and len(registry.removed_workspaces()) == 1
    back = registry.restore_workspace(ws.id, into=str(moved))
    assert (back.id, back.path, back.title) == (ws.id, str(moved.resolve()), "Acme")
    assert registry.chat(chat.id).workspace_id == ws.id
    assert registry.removed_workspaces() == []


def test_restore_refuses_a_folder_another_workspace_holds(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    registry.remove_workspace(ws.id)
    fresh, created = registry.add_workspace(path)  # spec 004: a fresh identity
    assert created and fresh.id != ws.id
    with pytest.raises(Refused) as refused:
        registry.restore_workspace(ws.id)
    assert str(refused.value) == (f"cannot restore workspace 'Acme' at '{path}': that folder "
                                  "is already the workspace 'Acme'")
    assert [w.id for w in registry.workspaces()] == [fresh.id]
    assert [r.id for r in registry.removed_workspaces()] == [ws.id]


def test_restore_of_an_unknown_id_is_refused(registry):
    with pytest.raises(Refused, match="cannot restore workspace 'ws_nope': it is not among the "
                                      "recently removed workspaces"):
        registry.restore_workspace("ws_nope")


def test_purge_after_30_days_at_start_up(isolated, registry, folders, tmp_path):
    a, b = folders("Old", "Recent")
    old, _ = registry.add_workspace(a)
    recent, _ = registry.add_workspace(b)
    knowledge, files, kept_alone = _stuff(registry, old.id, tmp_path, b"only the old one\n")
    shared_src = tmp_path / "shared.txt"
    shared_src.write_bytes(b"both have this\n")
    shared_old = files.add(old.id, shared_src)
    shared_recent = files.add(recent.id, shared_src)
    assert shared_old.sha256 == shared_recent.sha256
    # A chat attachment also uses a blob: it must survive the purge of the file's workspace.
    att_src = tmp_path / "sent.txt"
    att_src.write_bytes(b"sent in a chat\n")
    attached = files.add(old.id, att_src)
    chat = registry.new_chat(title="c")
    from app.store.messages import ChatStore
    ChatStore(registry.db).append(chat.id, "user", [files.attach(att_src)])
    registry.remove_workspace(old.id)
    registry.remove_workspace(recent.id)
    registry.close()
    _age(isolated, old.id, 31)
    _age(isolated, recent.id, 29)
    reg = Registry.open(isolated)
    try:
        assert [r.id for r in reg.removed_workspaces()] == [recent.id]
        assert reg.db.query("SELECT count(*) FROM knowledge WHERE owner = ?", (old.id,)) == [(0,)]
        assert reg.db.query("SELECT count(*) FROM knowledge_version WHERE owner = ?",
                            (old.id,)) == [(0,)]
        assert reg.db.query("SELECT count(*) FROM knowledge_file WHERE workspace_id = ?",
                            (old.id,)) == [(0,)]
        assert reg.db.query("SELECT count(*) FROM pending_change") == [(0,)]
        assert not files.blobs.path(kept_alone.sha256).exists()  # no record uses it
        assert files.blobs.path(shared_recent.sha256).exists()  # the recent one still does
        assert files.blobs.path(attached.sha256).exists()  # a message still does
        assert KnowledgeStore(reg.db).get(old.id).version == 0
        with pytest.raises(Refused):
            reg.restore_workspace(old.id)
        assert reg.restore_workspace(recent.id).id == recent.id
    finally:
        reg.close()


def test_a_purge_interrupted_before_dropping_blobs_finishes_at_next_start(isolated, registry,
                                                                          folders, tmp_path):
    (a,) = folders("Old")
    old, _ = registry.add_workspace(a)
    _, files, record = _stuff(registry, old.id, tmp_path)
    registry.remove_workspace(old.id)
    registry.close()
    _age(isolated, old.id, 40)
    # The purge's transaction committed, the process died before the blobs went.
    conn = sqlite3.connect(isolated / "cairn.db")
    conn.execute("DELETE FROM knowledge_file WHERE workspace_id = ?", (old.id,))
    conn.execute("DELETE FROM removed_workspace WHERE id = ?", (old.id,))
    conn.execute("INSERT INTO pending_change (op, args) VALUES ('drop-blobs', ?)",
                 (json.dumps({"blobs": [record.sha256]}),))
    conn.commit()
    conn.close()
    assert files.blobs.path(record.sha256).exists()
    Registry.open(isolated).close()
    assert not files.blobs.path(record.sha256).exists()
    conn = sqlite3.connect(isolated / "cairn.db")
    assert conn.execute("SELECT count(*) FROM pending_change").fetchone() == (0,)
    conn.close()


# ------------------------------------------------------------------ the command line


def test_cli_removed_and_restore(registry, folders, capsys):
    registry.close()
    (path,) = folders("Acme")
    assert cli.main(["workspace", "add", path, "--json"]) == 0
    ws_id = json.loads(capsys.readouterr().out)["id"]
    assert cli.main(["workspace", "removed"]) == 0
    assert "No recently removed workspaces" in capsys.readouterr().out
    assert cli.main(["workspace", "remove", ws_id]) == 0
    out = capsys.readouterr().out
    assert "restore" in out
    assert cli.main(["workspace", "removed", "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)
    assert item["id"] == ws_id and item["path"] == path and item["purge_after"] > item["removed_at"]
    assert cli.main(["workspace", "removed"]) == 0
    assert ws_id in capsys.readouterr().out
    assert cli.main(["workspace", "restore", ws_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == ws_id and shown["path"] == path and shown["status"] == "ok"
    assert cli.main(["workspace", "restore", ws_id]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (f"cannot restore workspace '{ws_id}': it is not among the "
                                 "recently removed workspaces\n")
    assert cli.main(["workspace", "restore"]) == 2
    # A folder gone: flagged in the list; --into restores it elsewhere.
    assert cli.main(["workspace", "remove", ws_id]) == 0
    capsys.readouterr()
    moved = Path(path).parent / "Acme moved"
    Path(path).rename(moved)
    assert cli.main(["workspace", "removed"]) == 0
    assert "(folder missing: restore with --into PATH)" in capsys.readouterr().out
    assert cli.main(["workspace", "restore", ws_id, "--into", str(moved), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == ws_id and shown["path"] == str(moved)
