"""The window's New chat, pressed again and again, keeps one empty
"New chat" per list (the same in ``cairn chat list``), not one per press."""

from __future__ import annotations

from app.store.messages import ChatStore


def titles(registry, ws_id):
    return [c.title for c in registry.chats_of(ws_id)]


def test_an_untouched_chat_is_given_again(registry, folders):
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    first = registry.new_chat(folder=acme, reuse_untouched=True)
    again = registry.new_chat(folder=acme, reuse_untouched=True)
    assert again.id == first.id
    assert titles(registry, ws.id) == ["New chat"]


def test_a_chat_with_a_message_a_draft_a_title_or_a_pin_is_not(registry, folders):
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    store = ChatStore(registry.db)
    talked = registry.new_chat(folder=acme, reuse_untouched=True)
    store.append(talked.id, "user", [{"type": "text", "text": "hello"}])
    drafted = registry.new_chat(folder=acme, reuse_untouched=True)
    assert drafted.id != talked.id
    store.save_draft(drafted.id, "half a thought")
    pinned = registry.new_chat(folder=acme, reuse_untouched=True)
    assert pinned.id not in (talked.id, drafted.id)
    registry.pin_chat(pinned.id)
    named = registry.new_chat(folder=acme, title="Plans", reuse_untouched=True)
    assert named.id not in (talked.id, drafted.id, pinned.id)
    fresh = registry.new_chat(folder=acme, reuse_untouched=True)
    assert fresh.id not in (talked.id, drafted.id, pinned.id, named.id)
    assert registry.new_chat(folder=acme, reuse_untouched=True).id == fresh.id


def test_the_one_reused_comes_back_to_the_top(registry, folders):
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    empty = registry.new_chat(folder=acme, reuse_untouched=True)
    registry.new_chat(folder=acme, title="Plans")
    assert titles(registry, ws.id) == ["Plans", "New chat"]
    assert registry.new_chat(folder=acme, reuse_untouched=True).id == empty.id
    assert titles(registry, ws.id) == ["New chat", "Plans"]


def test_each_list_keeps_its_own(registry, folders):
    acme, thesis = folders("Acme", "Thesis")
    a, _ = registry.add_workspace(acme)
    t, _ = registry.add_workspace(thesis)
    in_acme = registry.new_chat(folder=acme, reuse_untouched=True)
    in_thesis = registry.new_chat(folder=thesis, reuse_untouched=True)
    ungrouped = registry.new_chat(folder=None, reuse_untouched=True)
    assert len({in_acme.id, in_thesis.id, ungrouped.id}) == 3
    assert registry.new_chat(folder=None, reuse_untouched=True).id == ungrouped.id


def test_without_reuse_every_call_makes_a_chat(registry, folders):
    """``cairn chat new`` makes the chat it is asked for (a script counts on that)."""
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    registry.new_chat(folder=acme)
    registry.new_chat(folder=acme)
    assert titles(registry, ws.id) == ["New chat", "New chat"]
