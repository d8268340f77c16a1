"""Branches in the core: fork in one transaction and learned once, the rebuild
learning the shown path only, search across branches and opening a hit on its branch, find
in the chat on the shown path, a turn that keeps its own branch."""

from __future__ import annotations

import sqlite3

import pytest

from app.errors import Refused
from app.events import BranchShown, ChatAdded
from app.ops import Operations
from tests.helpers import LONG, add_op, knowledge_requests, talk, watermark


@pytest.fixture
def cairn(online):
    return online


def prompt_of(request) -> str:  # type: ignore[no-untyped-def]
    return str(request.body["messages"][0]["content"])


async def test_a_fork_copies_the_path_in_one_transaction_and_is_learned_once(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path, title="Launch")
    await talk(cairn, fake, chat.id, "When do we launch the zeppelin?")
    await talk(cairn, fake, chat.id, "And the colour of the zeppelin?",
               "The zeppelin is orange #FF5500, as agreed in the meeting today with Ann.")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    first, answer, _colour, _orange = cairn.chats.messages(chat.id)
    learned = len(knowledge_requests(fake))

    ops = Operations(cairn)
    fork, changes = await ops.fork(chat.id, answer.id)
    assert fork.title == "Launch (fork)" and fork.workspace_id == workspace.id
    assert [type(e) for e in changes.events] == [ChatAdded]
    assert cairn.registry.chats_of(workspace.id)[0].id == fork.id  # at the top of its list
    copied = cairn.chats.messages(fork.id)
    assert [m.text for m in copied] == [first.text, answer.text]
    assert [m.parent_id for m in copied] == [None, copied[0].id]
    # Paid once: the copies carry no tokens or cost; the source keeps its own.
    assert all(m.usage is None and m.cost_usd is None for m in copied)
    assert answer.usage is not None and answer.cost_usd is not None
    assert cairn.registry.db.query(
        "SELECT copied_from FROM message WHERE chat_id = ? ORDER BY id", (fork.id,)) == [
        (first.id,), (answer.id,)]

    # Learned once: the fork has nothing to learn; its own new exchange is learned alone.
    assert watermark(cairn, fork.id) == copied[-1].id
    assert cairn.rebuilder.pending(fork.id) == []
    assert (await cairn.rebuilder.rebuild(fork.id)).status == "nothing"
    assert len(knowledge_requests(fake)) == learned
    await talk(cairn, fake, fork.id, "Where does the zeppelin land?",
               "The zeppelin lands in Friedrichshafen, on the old airfield by the lake, at dawn.")
    fake.reply_json("update_knowledge", {"ops": []})
    await cairn.rebuilder.rebuild(fork.id)
    after = knowledge_requests(fake)[learned:]
    assert len(after) == 1
    assert "Where does the zeppelin land?" in prompt_of(after[0])
    assert "When do we launch the zeppelin?" not in prompt_of(after[0])
    assert LONG not in prompt_of(after[0])


def test_a_fork_that_fails_half_way_leaves_nothing(cairn, workspace):
    """The chat's record and the copies are one transaction: a failure while copying (here a
    trigger refusing the second copy) leaves no chat, in the database or in memory."""
    chat = cairn.registry.new_chat(folder=workspace.path, title="Launch")
    person = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "Hello"}])
    reply = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "Hi"}])
    with cairn.registry.db.write() as conn:
        conn.execute("CREATE TRIGGER no_second_copy BEFORE INSERT ON message"
                     " WHEN NEW.copied_from = " + str(reply.id) +
                     " BEGIN SELECT RAISE(ABORT, 'disk trouble'); END")
    chats_before = cairn.registry.db.query("SELECT id FROM chat ORDER BY id")
    listed = [c.id for c in cairn.registry.chats_of(workspace.id)]
    with pytest.raises(sqlite3.IntegrityError):
        cairn.engine.fork(chat.id, reply.id)
    assert cairn.registry.db.query("SELECT id FROM chat ORDER BY id") == chats_before
    assert cairn.registry.db.query("SELECT count(*) FROM message WHERE copied_from IS NOT NULL"
                                   ) == [(0,)]
    assert [c.id for c in cairn.registry.chats_of(workspace.id)] == listed
    with pytest.raises(Refused, match=f"^cannot fork session '{chat.id}' from message 999999: "
                                      "the session holds no such message$"):
        cairn.engine.fork(chat.id, 999_999)
    assert person.id < reply.id


async def test_the_rebuild_learns_the_shown_path_and_a_switch_never_unlearns(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "When do we launch?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    learned_text = cairn.knowledge.get(workspace.id).text
    await talk(cairn, fake, chat.id, "Which printer do we use for the posters?",
               "We use the Risograph printer on the third floor for every poster run we print.")
    _q1, _r1, question, _riso = cairn.chats.messages(chat.id)
    # The person edits that question before any rebuild: the first version waits on a
    # branch they left, and is never learned.
    fake.reply_text("We use the big Epson printer downstairs for all of the posters, from this week on.")
    await (await cairn.engine.edit_and_resend(
        chat.id, question.id, "Which printer for the posters, now that the Riso broke?")).result()
    pending = cairn.rebuilder.pending(chat.id)
    assert [e.user for e in pending] == ["Which printer for the posters, now that the Riso broke?"]
    before = len(knowledge_requests(fake))
    fake.reply_json("update_knowledge", {"ops": []})
    await cairn.rebuilder.rebuild(chat.id)
    (request,) = knowledge_requests(fake)[before:]
    assert "Epson" in prompt_of(request) and "Risograph" not in prompt_of(request)
    # Back to the first branch: nothing is unlearned, and nothing of it is learned now.
    shown_leaf = cairn.engine.switch(chat.id, question.id)
    assert shown_leaf == _riso.id
    assert cairn.knowledge.get(workspace.id).text == learned_text
    assert cairn.rebuilder.pending(chat.id) == []
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "nothing"
    assert len(knowledge_requests(fake)) == before + 1


async def test_search_finds_every_branch_and_opens_the_chat_on_the_hits_branch(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "Name the mascot", "The mascot is a marmot called Pip.")
    first_reply = cairn.chats.messages(chat.id)[-1]
    fake.reply_text("The mascot is a heron called Ada.")
    await (await cairn.engine.retry(chat.id)).result()
    heron = cairn.chats.messages(chat.id)[-1]
    assert heron.version == 2
    # Find in the chat: the shown path only (the heron, not the marmot).
    assert cairn.search.in_chat(chat.id, "mascot") == [cairn.chats.messages(chat.id)[0].id,
                                                       heron.id]
    assert cairn.search.in_chat(chat.id, "marmot") == []
    assert cairn.search.in_chat_counted(chat.id, "marmot") == []
    # Search: every branch, each hit with its message.
    (hit,) = [h for h in cairn.search.find("marmot") if h.kind == "message"]
    assert (hit.chat, hit.message) == (chat.id, first_reply.id)
    ops = Operations(cairn)
    leaf, changes = await ops.reveal(chat.id, hit.message)
    assert leaf == first_reply.id
    assert changes.of(BranchShown) == (BranchShown(chat.id, first_reply.id, first_reply.id),)
    assert [m.id for m in await ops.page(chat.id)][-1] == first_reply.id
    # A hit on the shown path changes nothing.
    again, changes = await ops.reveal(chat.id, hit.message)
    assert again == first_reply.id and not changes
    versions = await ops.versions(chat.id, heron.id)
    assert [(m.id, m.version, m.versions) for m in versions] == [
        (first_reply.id, 1, 2), (heron.id, 2, 2)]
    switched, changes = await ops.switch(chat.id, heron.id)
    assert switched == heron.id and changes.of(BranchShown)


async def test_a_switch_is_refused_while_a_reply_streams_and_the_turn_keeps_its_branch(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "First question")
    person, _reply = cairn.chats.messages(chat.id)
    fake.hang(text_before="Streaming")
    turn = await cairn.engine.start_turn(chat.id, "Second question")
    with pytest.raises(Refused, match=f"^cannot switch versions in session '{chat.id}': a "
                                      "reply is still streaming; stop it first$"):
        cairn.engine.switch(chat.id, person.id)
    turn.cancel()
    result = await turn.result()
    assert result.status == "stopped"
    second, stopped = cairn.chats.messages(chat.id)[2:]
    assert stopped.parent_id == second.id and cairn.chats.leaf(chat.id) == stopped.id


def test_a_reply_stored_after_the_person_switched_away_stays_on_its_branch(cairn, workspace):
    """The store's rule for a turn whose chat shows another branch meanwhile: the reply goes
    under its own message, and the chat keeps showing what the person chose."""
    chat = cairn.registry.new_chat(folder=workspace.path)
    a = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "A"}])
    b = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "B"}])
    edited = cairn.chats.resend(chat.id, a.id, "A, edited")
    cairn.chats.switch(chat.id, a.id)
    late = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "late"}],
                              parent=edited.id)
    assert cairn.chats.leaf(chat.id) == b.id
    assert [m.id for m in cairn.chats.messages(chat.id, leaf=late.id)] == [edited.id, late.id]
    assert cairn.chats.switch(chat.id, edited.id) == late.id
