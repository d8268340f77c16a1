"""Delete chat: gone from every list and from search at once, kept 30
days among the recently removed chats, restorable, what was learned from it kept."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from app import cli
from app.errors import Refused
from app.events import ChatAdded, ChatRemoved, ChatUnpinned, Event, Reset
from app.store.registry.registry import Registry
from app.store.registry.state import FirstPaint
from tests.helpers import database_before


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


def _events(registry: Registry) -> list[Event]:
    seen: list[Event] = []
    registry.hub.subscribe(seen.append)
    return seen


def _counts(registry: Registry) -> dict[str, tuple[int, int]]:
    return {p: (v, a) for p, v, a in registry.db.query(
        "SELECT place, visible, archived FROM chat_count") if v or a}


def _age(data: Path, chat_id: str, days: int) -> None:
    conn = sqlite3.connect(data / "cairn.db")
    then = (datetime.now(timezone.utc) - timedelta(days=days)).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")
    conn.execute("UPDATE removed_chat SET removed_at = ? WHERE chat_id = ?", (then, chat_id))
    conn.commit()
    conn.close()


def test_delete_takes_the_chat_out_of_every_list_and_search_restore_brings_it_back(
        quiet_cairn, folders):
    cairn = quiet_cairn
    registry = cairn.registry
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    keep = registry.new_chat(folder=path, title="Keep me")
    gone = registry.new_chat(folder=path, title="Zeppelin plans")
    registry.pin_chat(gone.id)
    cairn.chats.append(gone.id, "user", text("the zeppelin lands at noon"))
    # What a rebuild learned from it: a version of the document naming the chat.
    cairn.knowledge.save(ws.id, "## Facts\n\n- The zeppelin lands at noon\n", source="rebuild",
                         chat_id=gone.id)
    assert {(h.kind, h.chat) for h in cairn.search.find("zeppelin")} == {
        ("chat", gone.id), ("message", gone.id), ("knowledge", None)}
    counts = _counts(registry)
    seen = _events(registry)

    removed = registry.remove_chat(gone.id)

    assert removed.id == gone.id
    assert seen == [ChatUnpinned(gone.id, 0), ChatRemoved(gone.id, ws.id, 0, None)]
    assert registry.chat(gone.id) is None
    assert [c.id for c in registry.chats_of(ws.id)] == [keep.id]
    listing = registry.chat_listing()
    assert listing.pinned == [] and all(gone.id not in [c.id for c in chats]
                                        for _, chats in listing.workspaces)
    # Neither its title nor its message; what was learned from it is still found.
    assert [h.kind for h in cairn.search.find("zeppelin")] == ["knowledge"]
    assert _counts(registry) == {ws.id: (1, 0)} != counts
    # Knowledge is untouched: the document and its history still say what was learned.
    assert "zeppelin" in cairn.knowledge.get(ws.id).text
    assert any(v.chat_id == gone.id for v in cairn.knowledge.history(ws.id))
    (item,) = registry.removed_chats()
    assert (item.id, item.title, item.workspace_id, item.workspace_title, item.messages) == (
        gone.id, "Zeppelin plans", ws.id, "Acme", 1)
    assert item.purge_after > item.removed_at
    with pytest.raises(Refused, match="no such session"):
        registry.rename_chat(gone.id, "x")

    seen.clear()
    back = registry.restore_chat(gone.id)
    assert seen == [ChatAdded(gone.id, ws.id, 0, back)]
    assert [c.id for c in registry.chats_of(ws.id)] == [gone.id, keep.id]
    assert not back.pinned and not back.archived
    assert {(h.kind, h.chat) for h in cairn.search.find("zeppelin")} == {
        ("chat", gone.id), ("message", gone.id), ("knowledge", None)}
    assert registry.removed_chats() == []
    assert _counts(registry) == {ws.id: (2, 0)}
    with pytest.raises(Refused, match="it is not among the recently removed chats"):
        registry.restore_chat(gone.id)


def test_an_archived_chat_leaves_archived_and_comes_back_unarchived(registry):
    chat = registry.new_chat(title="Old")
    registry.archive_chat(chat.id)
    seen = _events(registry)
    registry.remove_chat(chat.id)
    assert seen == [ChatRemoved(chat.id, None, None, 0)]
    assert registry.chat_listing().archived == []
    assert _counts(registry) == {}
    back = registry.restore_chat(chat.id)
    assert not back.archived and [c.id for c in registry.chat_listing().ungrouped] == [chat.id]
    assert _counts(registry) == {"": (1, 0)}


def test_delete_is_refused_while_a_reply_runs_unless_it_stops_it(registry):
    chat = registry.new_chat(title="Busy")
    stopped: list[str] = []
    work = registry.begin_work(chat.id, "turn", lambda: stopped.append("stop"))
    with pytest.raises(Refused, match="cannot delete chat 'Busy': a reply or a knowledge update"):
        registry.remove_chat(chat.id)
    assert registry.chat(chat.id) is not None and registry.removed_chats() == []
    registry.remove_chat(chat.id, stop=True)
    assert stopped == ["stop"] and registry.chat(chat.id) is None
    registry.end_work(work)
    with pytest.raises(Refused, match="cannot delete chat 'ch_nope': no such chat"):
        registry.remove_chat("ch_nope")


def test_restore_goes_to_ungrouped_when_its_workspace_is_gone_and_a_workspace_restore_leaves_it(
        registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    deleted = registry.new_chat(folder=path, title="Deleted")
    stays = registry.new_chat(folder=path, title="Stays")
    registry.remove_chat(deleted.id)
    registry.remove_workspace(ws.id)
    registry.restore_workspace(ws.id)  # takes back its chats, not the deleted one
    assert [c.id for c in registry.chats_of(ws.id)] == [stays.id]
    assert registry.chat(deleted.id) is None
    registry.remove_workspace(ws.id)
    back = registry.restore_chat(deleted.id)
    assert back.workspace_id is None
    assert deleted.id in [c.id for c in registry.chat_listing().ungrouped]


def test_a_deleted_chat_is_not_loaded_at_the_next_start_nor_by_pages(isolated, registry,
                                                                     folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    deleted = registry.new_chat(folder=path, title="Deleted")
    loose = registry.new_chat(title="Loose")
    registry.pin_chat(loose.id)
    registry.remove_chat(loose.id)
    registry.remove_chat(deleted.id)
    registry.close()
    whole = Registry.open(isolated)
    try:
        assert whole.chat(deleted.id) is None and whole.chat(loose.id) is None
        assert whole.chat_listing().ungrouped == [] and whole.chats_of(ws.id) == []
    finally:
        whole.close()
    paged = Registry.open(isolated, first=FirstPaint(expanded=[ws.id], chat=loose.id))
    try:
        assert paged.chat(loose.id) is None and paged.chat(deleted.id) is None
        assert paged.chat_count(None) == 0 and paged.chat_count(ws.id) == 0
        while paged.load_step():
            pass
        assert paged.chat_listing().ungrouped == [] and paged.pinned_count() == 0
    finally:
        paged.close()


def test_another_process_deleting_is_seen_at_the_next_catch_up(isolated, registry):
    chat = registry.new_chat(title="Shared")
    other = Registry.open(isolated)
    try:
        other.remove_chat(chat.id)
    finally:
        other.close()
    seen = _events(registry)
    assert registry.sync() is True
    assert seen == [Reset()] and registry.chat(chat.id) is None


def test_purge_after_30_days_deletes_the_chat_its_messages_and_unused_attachments(
        isolated, quiet_cairn, tmp_path):
    cairn = quiet_cairn
    registry = cairn.registry
    old = registry.new_chat(title="Old")
    recent = registry.new_chat(title="Recent")
    alone, shared = tmp_path / "alone.txt", tmp_path / "shared.txt"
    alone.write_bytes(b"only the old chat sent this\n")
    shared.write_bytes(b"both chats sent this\n")
    a = cairn.files.attach(alone)
    s = cairn.files.attach(shared)
    cairn.chats.append(old.id, "user", [a, s, *text("hello")])
    cairn.chats.append(recent.id, "user", [cairn.files.attach(shared)])
    registry.remove_chat(old.id)
    registry.remove_chat(recent.id)
    _age(isolated, old.id, 31)
    _age(isolated, recent.id, 29)
    reopened = Registry.open(isolated)
    try:
        assert [r.id for r in reopened.removed_chats()] == [recent.id]
        assert reopened.db.query("SELECT count(*) FROM chat WHERE id = ?", (old.id,)) == [(0,)]
        assert reopened.db.query("SELECT count(*) FROM message WHERE chat_id = ?",
                                 (old.id,)) == [(0,)]
        assert reopened.db.query("SELECT count(*) FROM pending_change") == [(0,)]
        assert not cairn.files.blobs.path(a["sha256"]).exists()
        assert cairn.files.blobs.path(s["sha256"]).exists()  # the recent chat still uses it
        assert {p: (v, h) for p, v, h in reopened.db.query(
            "SELECT place, visible, archived FROM chat_count") if v or h} == {}
        with pytest.raises(Refused):
            reopened.restore_chat(old.id)
        assert reopened.restore_chat(recent.id).id == recent.id
    finally:
        reopened.close()


def test_the_migration_on_a_database_of_the_previous_version(isolated):
    """A database one step older (no removed_chat) with chats: it opens, counts as before,
    and a chat can be deleted and restored."""
    from app.base import db as dbmod

    conn, before = database_before(isolated, "CREATE TABLE removed_chat")
    now = "2026-01-01T00:00:00.000Z"
    conn.execute("INSERT INTO chat (id, title, created_at, updated_at) VALUES"
                 " ('ch_old', 'Harbour crane', ?, ?)", (now, now))
    conn.close()
    registry = Registry.open(isolated)
    try:
        assert registry.db.query("PRAGMA user_version") == [(len(dbmod.MIGRATIONS),)]
        assert registry.chat("ch_old") is not None
        registry.remove_chat("ch_old")
        assert registry.db.query("SELECT visible FROM chat_count WHERE place = ''") == [(0,)]
        registry.restore_chat("ch_old")
        assert registry.db.query("SELECT visible FROM chat_count WHERE place = ''") == [(1,)]
    finally:
        registry.close()
    assert list(isolated.glob("backups/cairn-v*")) or list(isolated.glob("**/cairn-v*"))


def test_cli_delete_removed_and_restore(registry, capsys):
    chat = registry.new_chat(title="Tea")
    registry.close()
    assert cli.main(["chat", "removed"]) == 0
    assert "No recently removed chats." in capsys.readouterr().out
    assert cli.main(["chat", "delete", chat.id]) == 0
    assert f"cairn chat restore {chat.id}" in capsys.readouterr().out
    assert cli.main(["chat", "list", "--json"]) == 0
    assert chat.id not in capsys.readouterr().out
    assert cli.main(["chat", "removed", "--json"]) == 0
    (item,) = json.loads(capsys.readouterr().out)
    assert item["id"] == chat.id and item["title"] == "Tea" and item["workspace"] is None
    assert cli.main(["chat", "delete", chat.id]) == 1
    assert capsys.readouterr().err == f"cannot delete chat '{chat.id}': no such chat\n"
    assert cli.main(["chat", "show", chat.id]) == 1  # says where it went
    assert capsys.readouterr().err == (f"cannot show chat '{chat.id}': it was deleted; `cairn "
                                       f"chat restore {chat.id}` brings it back\n")
    assert cli.main(["chat", "restore", chat.id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == chat.id
    assert cli.main(["chat", "restore", chat.id]) == 1
    assert capsys.readouterr().err == (f"cannot restore chat '{chat.id}': it is not among the "
                                       "recently removed chats\n")


async def test_a_deleted_chat_is_not_learned_from_and_comes_back_to_be_learned(online, fake,
                                                                              workspace):
    """A rebuild due for a chat deleted meanwhile does nothing (no model call, no failure);
    restored, its exchanges are learned."""
    from tests.helpers import add_op, talk

    cairn = online
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "When is the launch?")
    cairn.registry.remove_chat(chat.id)
    calls = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "nothing" and len(fake.message_requests) == calls
    assert cairn.knowledge.get(workspace.id).version == 0
    cairn.registry.restore_chat(chat.id)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
