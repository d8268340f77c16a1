"""Moving a chat into another workspace (or out to Ungrouped): the chat then runs in that
workspace's folder; refusals leave everything as it was."""

from __future__ import annotations

import pytest

from app import events as ev
from app.errors import Refused


def test_a_chat_moves_into_another_workspace_and_stays_there(open_registry, folders):
    registry = open_registry()
    first = registry.first_use_workspace_id
    if first:
        registry.remove_workspace(first)
    acme, thesis = folders("Acme", "Thesis")
    a, _ = registry.add_workspace(acme)
    t, _ = registry.add_workspace(thesis)
    chat = registry.new_chat(folder=acme, title="Draft")
    older = registry.new_chat(folder=thesis, title="Older")
    newer = registry.new_chat(folder=thesis, title="Newer")
    heard: list[ev.Event] = []
    registry.hub.subscribe(heard.append)
    moved = registry.move_chat_to(chat.id, t.id, index=1)
    assert moved.workspace_id == t.id and moved.folder == t.path
    assert [c.id for c in registry.chats_of(t.id)] == [newer.id, chat.id, older.id]
    assert registry.chats_of(a.id) == []
    regrouped = [e for e in heard if isinstance(e, ev.ChatsRegrouped)]
    assert regrouped == [ev.ChatsRegrouped(ids=(chat.id,), to=t.id, rows=(1,))]
    # Out to Ungrouped: no folder, ordered by age there.
    loose = registry.move_chat_to(older.id, None)
    assert loose.workspace_id is None and loose.folder is None
    registry.close()
    again = open_registry()  # as stored
    assert again.chat(chat.id).workspace_id == t.id
    assert [c.id for c in again.chats_of(t.id)] == [newer.id, chat.id]
    assert again.chat(older.id).workspace_id is None


def test_moving_is_refused_with_one_sentence_and_nothing_changes(registry, folders):
    acme, thesis = folders("Acme", "Thesis")
    a, _ = registry.add_workspace(acme)
    t, _ = registry.add_workspace(thesis)
    chat = registry.new_chat(folder=acme, title="Draft")
    with pytest.raises(Refused, match=f"cannot move session '{chat.id}': no workspace 'ws_x'"):
        registry.move_chat_to(chat.id, "ws_x")
    with pytest.raises(Refused, match="to position 5: that workspace shows 1 chat"):
        registry.move_chat_to(chat.id, t.id, index=4)
    work = registry.begin_work(chat.id, "turn", lambda: None)
    with pytest.raises(Refused, match="a reply or a knowledge update is running in it"):
        registry.move_chat_to(chat.id, t.id)
    registry.end_work(work)
    registry.archive_chat(chat.id)
    with pytest.raises(Refused, match="the session is archived"):
        registry.move_chat_to(chat.id, t.id)
    assert registry.chat(chat.id).workspace_id == a.id
    assert registry.chats_of(t.id) == []


def test_the_command_line_moves_a_chat_into_another_workspace(isolated, folders):
    import io
    import json

    from app.cli import main

    def cairn(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), stdout=out, stderr=err)
        return code, out.getvalue(), err.getvalue()

    acme, thesis = folders("Acme", "Thesis")
    cairn("workspace", "add", acme)
    code, out, _ = cairn("workspace", "add", thesis, "--json")
    target = json.loads(out)
    target_id = target.get("id") or target["workspace"]["id"]
    code, out, _ = cairn("chat", "new", "--folder", acme, "--json")
    chat_id = json.loads(out)["id"]
    code, out, _ = cairn("chat", "move", chat_id, "--workspace", target_id, "--json")
    assert code == 0 and json.loads(out)["workspace"] == target_id
    code, _, _ = cairn("chat", "move", chat_id)
    assert code == 2  # bad usage: --to or --workspace is needed
    code, out, _ = cairn("chat", "move", chat_id, "--workspace", "ungrouped", "--json")
    assert code == 0 and json.loads(out)["workspace"] is None
