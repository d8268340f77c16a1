"""Spec 004 "How chats join a workspace" and "Archiving and pinning a chat"."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from app.base.live import BACKGROUND_JOB, TURN
from app.errors import Refused


def visible(registry, ws_id: str) -> list[str]:
    return [c.title for c in registry.chats_of(ws_id)]


# ------------------------------------------------------------------ joining


def test_chat_joins_the_workspace_of_its_folder(registry, folders, tmp_path):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    link = tmp_path / "acme-link"
    os.symlink(path, link)
    direct = registry.new_chat(folder=path, title="direct")
    aliased = registry.new_chat(folder=str(link) + "/", title="aliased")
    assert direct.workspace_id == aliased.workspace_id == ws.id
    assert aliased.folder == str(link) + "/"  # recorded as given


def test_match_is_exact_not_by_ancestor(registry, folders):
    acme, sub = folders("Acme", "Acme/sub")
    registry.add_workspace(acme)
    chat = registry.new_chat(folder=sub)
    assert chat.workspace_id is None


@pytest.mark.parametrize("folder", [None, "relative/dir", "", "/definitely/not/here", "\0"])
def test_chats_that_cannot_attach_stay_ungrouped(registry, folder):
    chat = registry.new_chat(folder=folder)
    assert chat.workspace_id is None and chat.folder == folder
    assert [c.id for c in registry.chat_listing().ungrouped] == [chat.id]


def test_chat_whose_folder_is_a_file_stays_ungrouped(registry, folders):
    (path,) = folders("Acme")
    registry.add_workspace(path)
    file = Path(path) / "notes.md"
    file.write_text("x")
    assert registry.new_chat(folder=str(file)).workspace_id is None


def test_chat_whose_folder_vanished_stays_ungrouped(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    shutil.rmtree(path)
    assert registry.new_chat(folder=path).workspace_id is None


def test_new_chats_attach_at_top_and_activity_never_reorders(registry, open_registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    for title in ("one", "two", "three"):
        registry.new_chat(folder=path, title=title)
    assert visible(registry, ws.id) == ["three", "two", "one"]
    one = next(c for c in registry.chats_of(ws.id) if c.title == "one")
    registry.rename_chat(one.id, "one renamed")  # activity on a chat
    registry.pin_chat(one.id)
    assert visible(registry, ws.id) == ["three", "two", "one renamed"]
    registry.close()
    assert visible(open_registry(), ws.id) == ["three", "two", "one renamed"]


def test_move_within_workspace(registry, open_registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    chats = {t: registry.new_chat(folder=path, title=t) for t in ("a", "b", "c", "d")}
    registry.move_chat(chats["a"].id, index=0)
    assert visible(registry, ws.id) == ["a", "d", "c", "b"]
    registry.archive_chat(chats["c"].id)
    registry.move_chat(chats["b"].id, index=1)  # among visible chats: a, b, d
    assert visible(registry, ws.id) == ["a", "b", "d"]
    registry.move_chat(chats["a"].id, index=2)
    assert visible(registry, ws.id) == ["b", "d", "a"]
    registry.unarchive_chat(chats["c"].id)
    registry.close()
    again = open_registry()
    # c kept its slot at the end; a went just after the last visible chat
    assert visible(again, ws.id) == ["b", "d", "a", "c"]


def test_move_refusals(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    chat = registry.new_chat(folder=path)
    loose = registry.new_chat()
    with pytest.raises(Refused, match=rf"^cannot move session '{loose.id}': the session belongs to no workspace$"):
        registry.move_chat(loose.id, index=0)
    with pytest.raises(Refused, match=r"to position 5: its workspace shows 1 chat$"):
        registry.move_chat(chat.id, index=4)
    with pytest.raises(Refused, match=r"^cannot move session 'ch_x': no such session$"):
        registry.move_chat("ch_x", index=0)
    registry.archive_chat(chat.id)
    with pytest.raises(Refused, match="the session is archived"):
        registry.move_chat(chat.id, index=0)


# ------------------------------------------------------------------ archive


def test_archive_hides_and_unarchive_returns_to_its_place(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    a, b, c = (registry.new_chat(folder=path, title=t) for t in "abc")
    registry.archive_chat(b.id)
    listing = registry.chat_listing()
    assert visible(registry, ws.id) == ["c", "a"]
    assert [x.id for x in listing.archived] == [b.id]
    assert b.id not in [x.id for x in listing.ungrouped]
    registry.new_chat(folder=path, title="d")
    registry.unarchive_chat(b.id)
    assert visible(registry, ws.id) == ["d", "c", "b", "a"]


def test_unarchive_of_a_chat_in_no_workspace_returns_it_to_ungrouped(registry, folders):
    chat = registry.new_chat(title="loose")
    registry.archive_chat(chat.id)
    assert registry.chat_listing().ungrouped == []
    registry.unarchive_chat(chat.id)
    assert [c.id for c in registry.chat_listing().ungrouped] == [chat.id]


def test_archive_unknown_chat_message(registry):
    with pytest.raises(Refused) as refused:
        registry.archive_chat("ch_ghost")
    assert str(refused.value) == (
        "cannot archive session 'ch_ghost': live sessions and session persistence hold no such session"
    )


def test_archiving_active_chat_is_refused_naming_its_kinds(registry):
    chat = registry.new_chat()
    job = registry.live.begin(chat.id, BACKGROUND_JOB, stop=lambda: None)
    turn = registry.live.begin(chat.id, TURN, stop=lambda: None)
    with pytest.raises(Refused) as refused:
        registry.archive_chat(chat.id)
    assert str(refused.value) == (
        f"cannot archive session '{chat.id}': the session is active (turn, background job)"
    )
    assert not registry.chat(chat.id).archived
    registry.live.end(turn)
    with pytest.raises(Refused, match=r"the session is active \(background job\)$"):
        registry.archive_chat(chat.id)
    registry.live.end(job)
    assert registry.archive_chat(chat.id).archived


def test_stop_and_archive_archives_first_then_stops(registry, caplog):
    chat = registry.new_chat()
    seen: list[bool] = []

    def stop_turn() -> None:
        seen.append(registry.chat(chat.id).archived)  # already archived when asked to stop

    def broken_stop() -> None:
        raise RuntimeError("cannot stop")

    registry.live.begin(chat.id, TURN, stop=stop_turn)
    registry.live.begin(chat.id, BACKGROUND_JOB, stop=broken_stop)
    archived = registry.stop_and_archive_chat(chat.id)
    assert archived.archived and seen == [True]
    assert registry.chat(chat.id).archived  # the failed stop did not undo it
    assert "could not stop background job" in caplog.text


# ------------------------------------------------------------------ pins


def test_pins_most_recent_first_and_keep_their_workspace_place(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    a, b, c = (registry.new_chat(folder=path, title=t) for t in "abc")
    registry.pin_chat(a.id)
    registry.pin_chat(c.id)
    registry.pin_chat(a.id)  # already pinned: unchanged
    listing = registry.chat_listing()
    assert [x.title for x in listing.pinned] == ["c", "a"]
    assert visible(registry, ws.id) == ["c", "b", "a"]
    registry.unpin_chat(c.id)
    assert [x.title for x in registry.chat_listing().pinned] == ["a"]


def test_archive_clears_pin_in_the_same_write_and_unarchive_does_not_restore_it(
        registry, open_registry):
    chat = registry.new_chat()
    registry.pin_chat(chat.id)
    statements: list[str] = []
    registry.db.set_trace(statements.append)
    registry.archive_chat(chat.id)
    registry.db.set_trace(None)
    # (a trigger's run is traced again as the statement that fired it: count each once)
    updates = list(dict.fromkeys(s for s in statements if s.startswith("UPDATE chat")))
    assert len(updates) == 1 and "archived_at" in updates[0] and "pin_seq" in updates[0]
    assert not registry.chat(chat.id).pinned
    registry.unarchive_chat(chat.id)
    registry.close()
    again = open_registry().chat(chat.id)
    assert not again.pinned and not again.archived


def test_pinning_archived_or_unknown_chat_refused(registry):
    chat = registry.new_chat()
    registry.archive_chat(chat.id)
    with pytest.raises(Refused) as refused:
        registry.pin_chat(chat.id)
    assert str(refused.value) == f"cannot pin session '{chat.id}': the session is archived"
    with pytest.raises(Refused, match=r"^cannot pin session 'ch_nope': no such session$"):
        registry.pin_chat("ch_nope")
    for verb in ("unpin", "unarchive", "show"):
        with pytest.raises(Refused, match=rf"^cannot {verb} session 'ch_nope': no such session$"):
            getattr(registry, "get_chat" if verb == "show" else f"{verb}_chat")("ch_nope")


def test_chat_listing_shape(registry, folders):
    a, b = folders("a", "b")
    wa, _ = registry.add_workspace(a)
    wb, _ = registry.add_workspace(b)
    ca = registry.new_chat(folder=a, title="in a")
    loose = registry.new_chat(title="loose")
    gone = registry.new_chat(title="gone")
    registry.pin_chat(ca.id)
    registry.archive_chat(gone.id)
    data = registry.chat_listing().to_json()
    assert [c["id"] for c in data["pinned"]] == [ca.id]
    assert [(w["id"], [c["id"] for c in w["chats"]]) for w in data["workspaces"]] == [
        (wb.id, []), (wa.id, [ca.id])]  # every workspace, even with no chats
    assert [c["id"] for c in data["ungrouped"]] == [loose.id]
    assert [c["id"] for c in data["archived"]] == [gone.id]
    assert set(data["pinned"][0]) >= {"id", "title", "folder", "workspace", "pinned", "archived"}
