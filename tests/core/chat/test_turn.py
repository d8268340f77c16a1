"""Turns as handles, against the fake Anthropic server: one turn per chat, events in order,
stale events dropped after Stop, stop-and-archive, retry and edit-and-resend with nothing lost
(and nothing replaced learned), and no write or model call on the event-loop thread."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.chat.turn import (
    KnowledgePulling,
    RoundStored,
    TextDelta,
    ThinkingDelta,
    ToolCall,
    ToolResult,
    TurnEnded,
    TurnFailed,
    TurnFinished,
    TurnStopped,
)
from app.errors import Refused
from app.knowledge.status import owner_knowledge
from tests.helpers import LONG, add_op, watermark


@pytest.fixture
def cairn(online):
    return online


def collect(turn):
    """Subscribe to *turn*: (events, an asyncio.Event set at the first text delta)."""
    events, first_text = [], asyncio.Event()

    def hear(event):
        events.append(event)
        if isinstance(event, TextDelta):
            first_text.set()

    turn.subscribe(hear)
    return events, first_text


def kinds(events):
    """Event types in order, runs of the same type folded into one."""
    folded = []
    for event in events:
        if not folded or folded[-1] is not type(event):
            folded.append(type(event))
    return folded


# ----------------------------------------------------------------------- one turn per chat


async def test_a_second_turn_in_a_chat_is_refused_while_one_streams(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Working on it")
    turn = await cairn.engine.start_turn(chat.id, "Write the plan.")
    _events, first_text = collect(turn)
    await asyncio.wait_for(first_text.wait(), timeout=10)
    stored = cairn.chats.message_count(chat.id)
    busy = f"'{chat.id}': a reply is still streaming; stop it first"
    with pytest.raises(Refused, match=f"^cannot send to session {busy}$"):
        await cairn.engine.start_turn(chat.id, "And another thing")
    with pytest.raises(Refused, match=f"^cannot retry in session {busy}$"):
        await cairn.engine.retry(chat.id)
    with pytest.raises(Refused, match=f"^cannot edit a message in session {busy}$"):
        await cairn.engine.edit_and_resend(chat.id, cairn.chats.messages(chat.id)[0].id, "x")
    assert cairn.chats.message_count(chat.id) == stored  # nothing stored by the refusals
    assert cairn.engine.running(chat.id) is turn
    turn.cancel()
    assert (await asyncio.wait_for(turn.result(), timeout=10)).status == "stopped"
    assert cairn.engine.running(chat.id) is None
    fake.reply_text("Here it is.")
    assert (await cairn.engine.send(chat.id, "Now?")).status == "complete"


async def test_two_sends_at_once_start_one_turn(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Only once.")
    first, second = await asyncio.gather(cairn.engine.start_turn(chat.id, "one"),
                                         cairn.engine.start_turn(chat.id, "two"),
                                         return_exceptions=True)
    assert isinstance(second, Refused) and "a reply is still streaming" in str(second)
    assert (await first.result()).status == "complete"
    assert [m.text for m in cairn.chats.messages(chat.id)] == ["one", "Only once."]


async def test_other_chats_stream_meanwhile(cairn, fake, workspace):
    busy = cairn.registry.new_chat(folder=workspace.path)
    other = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Slow")
    slow = await cairn.engine.start_turn(busy.id, "Take your time")
    await asyncio.wait_for(asyncio.to_thread(fake.hung.wait), timeout=10)
    fake.reply_text("Quick answer.")
    assert (await cairn.engine.send(other.id, "Quick?")).text == "Quick answer."
    slow.cancel()
    await slow.result()


# ----------------------------------------------------------------------- events


async def test_each_round_s_text_is_its_own_paragraph(cairn, fake, workspace, tmp_path):
    """"Let me read your notes." and "Your notes say…" never glued, in
    what streams, in the result, and as stored (a message per round)."""
    notes = tmp_path / "notes.md"
    notes.write_text("The launch is on 2027-04-15.")
    record = cairn.files.add(workspace.id, notes)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id},
                        text_before="Let me read your notes.")
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id})  # a round with no text
    fake.reply_text("Your notes say the launch is on 2027-04-15.")
    streamed: list[str] = []
    result = await cairn.engine.send(chat.id, "When is the launch?", on_text=streamed.append)
    whole = "Let me read your notes.\n\nYour notes say the launch is on 2027-04-15."
    assert result.text == whole and "".join(streamed) == whole
    said = [m.text for m in cairn.chats.messages(chat.id) if m.role == "assistant" and m.text]
    assert said == ["Let me read your notes.", "Your notes say the launch is on 2027-04-15."]


def test_paragraph_breaks_are_never_doubled():
    from app.chat.turn import paragraphs

    assert paragraphs("", "B") == "B" and paragraphs("A", "") == "A"
    assert paragraphs("A", "B") == "A\n\nB"
    assert paragraphs("A\n", "B") == "A\n\nB" and paragraphs("A\n\n", "B") == "A\n\nB"


async def test_a_tool_round_delivers_its_events_in_order(cairn, fake, workspace, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("The launch is on 2027-04-15.")
    record = cairn.files.add(workspace.id, notes)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id}, text_before="Reading. ")
    fake.reply_text("It is on 2027-04-15.")
    everywhere = []
    hub = cairn.engine.subscribe(lambda turn, event: everywhere.append((turn, event)))
    turn = await cairn.engine.start_turn(chat.id, "When is the launch?")
    events, _ = collect(turn)
    result = await turn.result()
    hub.close()
    assert kinds(events) == [KnowledgePulling, ThinkingDelta, TextDelta, RoundStored, ToolCall,
                             ToolResult, ThinkingDelta, TextDelta, RoundStored, TurnFinished]
    assert events[0] == KnowledgePulling(turn.id, chat.id, "Acme Inc", generation=turn.generation)
    call = next(e for e in events if isinstance(e, ToolCall))
    answer = next(e for e in events if isinstance(e, ToolResult))
    assert (call.name, call.input) == ("readWorkspaceFile", {"file_id": record.id})
    assert (answer.name, answer.summary, answer.is_error) == (
        "readWorkspaceFile", "notes.md — page 1 of 1", False)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == result.text
    stored = [m.id for m in cairn.chats.messages(chat.id)]
    assert result.message_ids == tuple(stored) and len(stored) == 4
    assert [e.message_id for e in events if isinstance(e, RoundStored)] == [stored[1], stored[3]]
    assert sum((e.usage for e in events if isinstance(e, RoundStored)),
               start=type(result.usage)()) == result.usage
    assert events[-1].result == result and result.status == "complete"
    assert {e.turn_id for e in events} == {turn.id}
    assert {e.generation for e in events} == {turn.generation}
    assert [e for t, e in everywhere if t is turn] == events  # the engine hears the same


async def test_an_ungrouped_chat_pulls_no_project_knowledge(cairn, fake):
    chat = cairn.registry.new_chat()
    fake.reply_text("Hello.")
    turn = await cairn.engine.start_turn(chat.id, "Hi")
    events, _ = collect(turn)
    await turn.result()
    assert not any(isinstance(e, KnowledgePulling) for e in events)


async def test_a_failed_turn_ends_with_its_sentence(cairn, fake, workspace):
    fake.reply_error_status(401, "authentication_error", "invalid x-api-key")
    chat = cairn.registry.new_chat(folder=workspace.path)
    turn = await cairn.engine.start_turn(chat.id, "Hello?")
    events, _ = collect(turn)
    result = await turn.result()
    assert isinstance(events[-1], TurnFailed)
    assert events[-1].sentence == result.error and result.error.startswith(
        f"The server at 127.0.0.1:{fake.port} rejected")


@pytest.mark.parametrize("where", ["a subscriber", "another thread"])
async def test_no_stale_event_reaches_anyone_after_cancel(cairn, fake, workspace, where):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("word " * 200, chunk=5, delay=0.002)  # 200 small deltas, still streaming
    turn = await cairn.engine.start_turn(chat.id, "Talk for a while")
    heard: dict[str, list] = {"first": [], "second": [], "engine": []}
    cancelled = threading.Event()
    late: list = []

    def first(event):
        heard["first"].append(event)
        if cancelled.is_set() and not isinstance(event, TurnEnded):
            late.append(event)
        deltas = sum(isinstance(e, TextDelta) for e in heard["first"])
        if isinstance(event, TextDelta) and deltas == 5 and not cancelled.is_set():
            if where == "a subscriber":
                turn.cancel()
            else:  # stop-and-archive from a worker: the loop learns of it later
                stopper = threading.Thread(target=turn.cancel)
                stopper.start()
                stopper.join()
            cancelled.set()

    def second(event):
        heard["second"].append(event)
        if cancelled.is_set() and not isinstance(event, TurnEnded):
            late.append(event)

    turn.subscribe(first)
    turn.subscribe(second)
    hub = cairn.engine.subscribe(lambda _turn, event: heard["engine"].append(event))
    result = await asyncio.wait_for(turn.result(), timeout=10)
    hub.close()
    assert result.status == "stopped" and late == []
    for name in ("second", "engine"):  # the delta in delivery when Stop came is dropped too
        deltas = [e for e in heard[name] if isinstance(e, TextDelta)]
        assert len(deltas) == 4, name
        assert isinstance(heard[name][-1], TurnStopped)
    assert isinstance(heard["first"][-1], TurnStopped) and heard["first"][-1].result == result
    a_delta = next(e for e in heard["first"] if isinstance(e, TextDelta))
    assert not turn.is_current(a_delta)  # a queued delta is stale when taken off the queue
    assert cairn.engine.generation(chat.id) > turn.generation
    stored = cairn.chats.messages(chat.id)[-1]
    assert stored.status == "stopped" and stored.text == result.text
    assert result.text.startswith("".join(e.text for e in heard["first"]
                                          if isinstance(e, TextDelta)))


async def test_stop_and_archive_stops_a_streaming_turn(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Half of it")
    turn = await cairn.engine.start_turn(chat.id, "Go")
    _events, first_text = collect(turn)
    await asyncio.wait_for(first_text.wait(), timeout=10)
    archived = await asyncio.to_thread(cairn.registry.stop_and_archive_chat, chat.id)
    assert archived.archived
    result = await asyncio.wait_for(turn.result(), timeout=10)
    assert (result.status, result.text) == ("stopped", "Half of it")
    assert cairn.registry.live.kinds(chat.id) == []


# ----------------------------------------------------------------------- retry


async def test_retry_after_a_failure_answers_the_same_message(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_error_status(401, "authentication_error", "bad key")
    failed = await cairn.engine.send(chat.id, "When do we launch?")
    assert failed.status == "failed"
    fake.reply_text(LONG)
    turn = await cairn.engine.retry(chat.id)
    result = await turn.result()
    assert result.status == "complete" and result.text == LONG
    person, reply = cairn.chats.messages(chat.id)  # the conversation: no duplicate message
    assert (person.text, reply.text) == ("When do we launch?", LONG)
    assert result.message_ids == (reply.id,)
    # The failed reply is kept as version 1 of the reply, the new one is version 2.
    assert (reply.parent_id, reply.version, reply.versions) == (person.id, 2, 2)
    assert [(m.status, m.parent_id) for m in cairn.chats.versions(chat.id, reply.id)] == [
        ("failed", person.id), ("complete", person.id)]
    sent = fake.message_requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user"]
    assert [e.user for e in cairn.rebuilder.pending(chat.id)] == ["When do we launch?"]


async def test_retry_after_a_stop_drops_the_partial_reply_from_the_conversation(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="The first half")
    turn = await cairn.engine.start_turn(chat.id, "Write it all")
    _events, first_text = collect(turn)
    await asyncio.wait_for(first_text.wait(), timeout=10)
    turn.cancel()
    assert (await turn.result()).status == "stopped"
    fake.reply_text(LONG)
    again = await cairn.engine.retry(chat.id)
    events, _ = collect(again)
    result = await again.result()
    assert result.status == "complete" and isinstance(events[-1], TurnFinished)
    assert again.generation > turn.generation
    sent = fake.message_requests[-1].body["messages"]
    assert sent == [{"role": "user", "content": [
        {"type": "text", "text": "Write it all", "cache_control": {"type": "ephemeral"}}]}]
    assert [m.text for m in cairn.chats.messages(chat.id)] == ["Write it all", LONG]
    reply = cairn.chats.messages(chat.id)[-1]
    stopped = cairn.chats.versions(chat.id, reply.id)[0]
    assert (stopped.status, stopped.text) == ("stopped", "The first half")
    assert cairn.chats.message_count(chat.id) == 2


async def test_retry_of_a_complete_reply_adds_a_version_and_nothing_is_refused_twice(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    with pytest.raises(Refused, match="there is no message of yours to send again"):
        await cairn.engine.retry(chat.id)
    fake.reply_text("Done.")
    await cairn.engine.send(chat.id, "Do it")
    fake.reply_text("Done, differently.")
    result = await (await cairn.engine.retry(chat.id)).result()
    person, reply = cairn.chats.messages(chat.id)
    assert (reply.text, reply.version, reply.versions) == ("Done, differently.", 2, 2)
    assert [m.text for m in cairn.chats.versions(chat.id, reply.id)] == [
        "Done.", "Done, differently."]
    assert result.message_ids == (reply.id,)
    # Only the shown path was sent: the person's message, never the first reply.
    assert [m["role"] for m in fake.message_requests[-1].body["messages"]] == ["user"]
    with pytest.raises(Refused, match=f"^cannot retry message 999999: session '{chat.id}' "
                                      "holds no such message$"):
        await cairn.engine.retry(chat.id, 999_999)
    assert cairn.engine.running(chat.id) is None and cairn.registry.live.kinds(chat.id) == []
    assert cairn.chats.leaf(chat.id) == reply.id


# ----------------------------------------------------------------------- edit and resend


async def test_edit_and_resend_sends_the_edited_history_and_keeps_the_rest(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    for question in ("When do we launch?", "And the colour?"):
        fake.reply_text(f"About '{question}': " + LONG)
        await cairn.engine.send(chat.id, question)
    fake.reply_json("update_knowledge", {"ops": []})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "nothing"
    before = cairn.chats.messages(chat.id)
    assert watermark(cairn, chat.id) == before[-1].id
    first = before[0]
    fake.reply_text("For April: " + LONG)
    turn = await cairn.engine.edit_and_resend(chat.id, first.id, "We launch in April now.")
    result = await turn.result()
    assert result.status == "complete"
    sent = fake.message_requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user"]
    assert sent[0]["content"][0]["text"] == "We launch in April now."
    edited, reply = cairn.chats.messages(chat.id)
    assert (edited.text, reply.text) == ("We launch in April now.", "For April: " + LONG)
    assert result.message_ids == (edited.id, reply.id)
    assert (edited.version, edited.versions) == (2, 2)
    # Nothing lost: the first version's whole branch is one switch away.
    assert cairn.engine.switch(chat.id, first.id) == before[-1].id
    assert [m.id for m in cairn.chats.messages(chat.id)] == [m.id for m in before]
    assert cairn.engine.switch(chat.id, edited.id) == reply.id
    # The rebuild learns the new exchange only: never what the edit replaced.
    pending = cairn.rebuilder.pending(chat.id)
    assert [(e.user, e.reply) for e in pending] == [("We launch in April now.", reply.text)]
    assert owner_knowledge(cairn.registry, cairn.rebuilder, workspace.id).waiting == 1
    fake.reply_json("update_knowledge", {"ops": [add_op("We launch in April", "We launch in April")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "applied"
    prompt = fake.message_requests[-1].body["messages"][0]["content"]
    assert "We launch in April now." in prompt and "And the colour?" not in prompt
    assert "About 'When do we launch?'" not in prompt
    assert watermark(cairn, chat.id) == reply.id and cairn.rebuilder.pending(chat.id) == []


async def test_edit_keeps_the_attachments_and_refuses_what_is_not_the_persons(
        cairn, fake, workspace, tmp_path):
    brief = tmp_path / "brief.md"
    brief.write_text("# Brief")
    notes = tmp_path / "notes.md"
    notes.write_text("notes")
    record = cairn.files.add(workspace.id, notes)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id})
    fake.reply_text("Read both.")
    await cairn.engine.send(chat.id, "Read this", attachments=[brief])
    person, call, results, reply = cairn.chats.messages(chat.id)
    verb = f"^cannot edit message {{}} in session '{chat.id}'"
    for message in (call, results, reply):
        with pytest.raises(Refused, match=verb.format(message.id) + ": it is a reply, and only"
                                          " your own messages can be edited"):
            await cairn.engine.edit_and_resend(chat.id, message.id, "x")
    with pytest.raises(Refused, match=verb.format(999_999) + ": the session holds no such"):
        await cairn.engine.edit_and_resend(chat.id, 999_999, "x")
    fake.reply_text("Read it again.")
    turn = await cairn.engine.edit_and_resend(chat.id, person.id, "Read this, please")
    await turn.result()
    edited = cairn.chats.messages(chat.id)[0]
    assert edited.content[0] == {"type": "text", "text": "Read this, please"}
    assert edited.content[1] == person.content[1]  # the attachment goes along
    sent = fake.message_requests[-1].body["messages"][0]["content"]
    assert sent[0]["text"].startswith('<file name="brief.md">')  # the file before the question
    assert sent[1]["text"] == "Read this, please"
    # An earlier version can be edited too: a third version, beside the other two.
    fake.reply_text("Third time.")
    await (await cairn.engine.edit_and_resend(chat.id, person.id, "again")).result()
    third = cairn.chats.messages(chat.id)[0]
    assert (third.text, third.version, third.versions) == ("again", 3, 3)


# ----------------------------------------------------------------------- storage


async def test_turn_and_rebuild_writes_never_run_on_the_event_loop_thread(
        cairn, fake, workspace, tmp_path):
    attachment = tmp_path / "brief.md"
    attachment.write_text("# Brief")
    chat = cairn.registry.new_chat(folder=workspace.path)
    loop_thread = threading.get_ident()
    writes: list[tuple[int, str]] = []

    def trace(sql: str) -> None:
        if sql.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "COMMIT", "BEGIN")):
            writes.append((threading.get_ident(), sql))

    cairn.registry.db.set_trace(trace)
    try:
        fake.reply_error_status(401, "authentication_error", "bad key")
        await cairn.engine.send(chat.id, "When do we launch?", attachments=[attachment])
        fake.reply_text(LONG)
        await (await cairn.engine.retry(chat.id)).result()
        fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                           "launch date is 2027-04-15")]})
        assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    finally:
        cairn.registry.db.set_trace(None)
    assert writes and [sql for thread, sql in writes if thread == loop_thread] == []
    assert cairn.registry.chat(chat.id).title == "When do we launch?"  # renamed off the loop


async def test_stop_closes_the_stream_on_the_network_thread(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Half of it")
    turn = await cairn.engine.start_turn(chat.id, "Go")
    _events, first_text = collect(turn)
    await asyncio.wait_for(first_text.wait(), timeout=10)
    turn.cancel()
    assert (await asyncio.wait_for(turn.result(), timeout=10)).text == "Half of it"
    assert await asyncio.to_thread(fake.disconnected.wait, 10)  # the server saw it hang up


async def test_no_model_call_runs_on_the_event_loop_thread(cairn, fake, workspace,
                                                           monkeypatch):
    """The SDK builds, encodes, sends and parses every request on the network thread; the
    models file is written, and a rebuild labelled and validated, off the loop too."""
    import anthropic

    import app.knowledge.prompt as prompt
    import app.knowledge.rebuild as rebuild
    import app.llm.catalog

    where: list[tuple[str, str]] = []

    def traced(what, real):
        def call(*args, **kwargs):
            where.append((what, threading.current_thread().name))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(anthropic.AsyncAnthropic, "request",
                        traced("request", anthropic.AsyncAnthropic.request))
    monkeypatch.setattr(app.llm.catalog.Catalog, "_save", traced("save", app.llm.catalog.Catalog._save))
    monkeypatch.setattr(rebuild, "apply_ops", traced("apply_ops", rebuild.apply_ops))
    monkeypatch.setattr(prompt, "labelled", traced("labelled", prompt.labelled))
    entry = fake.model("claude-haiku-4-5")  # announcing a deprecation writes the models file
    entry.update(lifecycle="deprecated", retires_at="2027-02-01T00:00:00Z")
    cairn.settings.set("model.chat", "claude-haiku-4-5")
    cairn.settings.set("model.knowledge", "claude-haiku-4-5")
    fake.refuse_structured.add("claude-haiku-4-5")  # so the shape that worked is remembered
    cairn.knowledge.save(workspace.id, "## Facts\n- The budget is 45,000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text(LONG)
    result = await cairn.engine.send(chat.id, "When do we launch?")
    assert result.status == "complete" and "deprecated" in result.notice
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    loop = threading.current_thread().name
    assert {what for what, _ in where} == {"request", "save", "apply_ops", "labelled"}
    assert [what for what, thread in where if thread == loop] == []
    assert {thread for what, thread in where if what == "request"} == {"cairn-network"}
