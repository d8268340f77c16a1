"""Messages in pages: a long chat opens at its end and loads older messages."""

from __future__ import annotations

import pytest

from app.store.messages import ChatStore


@pytest.fixture
def chats(registry):  # type: ignore[no-untyped-def]
    return ChatStore(registry.db)


def fill(chats: ChatStore, chat_id: str, count: int) -> list[int]:
    """Alternating user and assistant messages; their ids, oldest first."""
    return [chats.append(chat_id, ("user", "assistant")[n % 2],
                         [{"type": "text", "text": f"{chat_id} message {n}"}]).id
            for n in range(count)]


def ids(messages) -> list[int]:  # type: ignore[no-untyped-def]
    return [m.id for m in messages]


@pytest.fixture
def two_chats(registry, chats):  # type: ignore[no-untyped-def]
    """Two chats whose messages interleave in id order: 12 in `mine`, 12 in `other`."""
    mine, other = registry.new_chat(title="mine"), registry.new_chat(title="other")
    mine_ids, other_ids = [], []
    for _ in range(6):
        mine_ids += fill(chats, mine.id, 2)
        other_ids += fill(chats, other.id, 2)
    return mine.id, mine_ids, other.id, other_ids


def test_the_first_page_is_the_newest_messages_oldest_first(chats, two_chats):
    mine, mine_ids, _other, _ = two_chats
    page = chats.messages(mine, limit=5)
    assert ids(page) == mine_ids[-5:]
    assert page[-1].text == f"{mine} message 1" and page[-1].role == "assistant"


def test_walking_back_reaches_the_start_and_then_an_empty_page(chats, two_chats):
    mine, mine_ids, _other, _ = two_chats
    seen: list[int] = []
    page = chats.messages(mine, limit=5)
    pages = 0
    while page:
        seen[:0] = ids(page)
        pages += 1
        page = chats.messages(mine, before=page[0].id, limit=5)
    assert seen == mine_ids and pages == 3  # 5 + 5 + 2


def test_messages_from_another_chat_never_leak_in(chats, two_chats):
    mine, mine_ids, other, other_ids = two_chats
    assert ids(chats.messages(mine)) == mine_ids
    assert ids(chats.messages(other, limit=100)) == other_ids
    # A before taken from the other chat still pages only this one.
    assert ids(chats.messages(mine, before=other_ids[-1], limit=3)) == mine_ids[-3:]
    assert ids(chats.messages(other, before=mine_ids[4], limit=100)) == [
        i for i in other_ids if i < mine_ids[4]]
    assert chats.message_count(mine) == chats.message_count(other) == 12
    assert chats.last_message_id(mine) == mine_ids[-1]


def test_an_empty_chat(registry, chats, two_chats):
    empty = registry.new_chat(title="empty").id
    assert chats.messages(empty) == []
    assert chats.messages(empty, limit=50) == []
    assert chats.messages(empty, before=10**9, limit=50) == []
    assert chats.message_count(empty) == 0 and chats.last_message_id(empty) is None


def test_a_limit_larger_than_the_chat_returns_the_whole_chat(chats, two_chats):
    mine, mine_ids, _other, _ = two_chats
    assert ids(chats.messages(mine, limit=1_000)) == mine_ids
    assert ids(chats.messages(mine, before=mine_ids[3], limit=1_000)) == mine_ids[:3]


def test_before_the_oldest_message_is_an_empty_page(chats, two_chats):
    mine, mine_ids, _other, _ = two_chats
    assert chats.messages(mine, before=mine_ids[0], limit=50) == []
    assert chats.messages(mine, before=mine_ids[0]) == []
    assert ids(chats.messages(mine, before=mine_ids[1], limit=50)) == [mine_ids[0]]


def test_before_alone_and_limit_zero(chats, two_chats):
    mine, mine_ids, _other, _ = two_chats
    assert ids(chats.messages(mine, before=mine_ids[5])) == mine_ids[:5]
    assert chats.messages(mine, limit=0) == []
    with pytest.raises(ValueError):
        chats.messages(mine, limit=-1)


def test_a_page_is_read_through_the_index(registry, chats, two_chats):
    """A page walks up the shown path by primary key from where it starts: no statement
    scans the chat's messages, whatever the chat's length (the path of a tree)."""
    mine, mine_ids, _other, _ = two_chats
    statements: list[str] = []
    registry.db.set_trace(statements.append)
    try:
        chats.messages(mine, before=mine_ids[-1], limit=5)
        chats.messages(mine, limit=5)
    finally:
        registry.db.set_trace(None)
    reads = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert 2 <= len(reads) <= 3
    for sql in reads:
        plan = [str(row[3]) for row in registry.db.query("EXPLAIN QUERY PLAN " + sql)]
        assert not any(step.startswith("SCAN m") or step.startswith("SCAN message")
                       for step in plan), plan
