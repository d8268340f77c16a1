"""Typed events from the stores besides the registry: messages, knowledge,
files, settings, rebuilds and background work, emitted through ``cairn.registry.hub`` once per
change, after its commit (a listener reading the store during delivery sees the change), on
the thread that committed (the storage thread for a turn and a rebuild)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.errors import Refused
from app.events import (
    BranchShown,
    Event,
    FileAdded,
    KnowledgeSaved,
    MessageStored,
    RebuildApplied,
    RebuildFailed,
    RebuildQueued,
    RebuildStarted,
    SettingChanged,
    WorkEnded,
    WorkStarted,
)
from app.ops import Operations
from app.store.blobs import BlobStore
from app.store.documents import Change, Conflict, KnowledgeStore
from app.store.files import FileStore
from app.store.messages import FAILED, ChatStore
from app.store.settings import Settings
from tests.helpers import LONG, add_op, hold_knowledge_calls, watermark

STORE_EVENTS = (MessageStored, BranchShown, KnowledgeSaved, FileAdded, SettingChanged,
                RebuildQueued, RebuildStarted, RebuildApplied, RebuildFailed, WorkStarted,
                WorkEnded)


class Heard:
    """What the hub delivered: each event, the thread it came on, and what *look* read from
    the store while it was being delivered."""

    def __init__(self, cairn, look=lambda event: None) -> None:
        self.events: list[Event] = []
        self.threads: list[str] = []
        self.seen: list[object] = []
        self._look = look
        self.subscription = cairn.registry.hub.subscribe(self._hear, kinds=STORE_EVENTS)

    def _hear(self, event: Event) -> None:
        self.events.append(event)
        self.threads.append(threading.current_thread().name)
        self.seen.append(self._look(event))

    def of(self, kind):
        return [e for e in self.events if isinstance(e, kind)]

    def threads_of(self, kind):
        return [t for e, t in zip(self.events, self.threads) if isinstance(e, kind)]


@pytest.fixture
def cairn(online):
    return online


@pytest.fixture
def chat(cairn, workspace):
    return cairn.registry.new_chat(folder=workspace.path)


# ----------------------------------------------------------------------- messages


def test_every_stored_message_is_announced_once_after_its_commit(cairn, chat):
    heard = Heard(cairn, look=lambda e: cairn.chats.message(e.chat, e.message_id))
    question = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "When?"}])
    answer = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "Soon."}])
    assert heard.events == [MessageStored(chat.id, question.id, "user"),
                            MessageStored(chat.id, answer.id, "assistant")]
    assert heard.seen == [question, answer]  # readable while it was announced


def test_a_retry_shows_the_persons_message_as_the_end_of_the_path(cairn, chat):
    person = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "When?"}])
    failed = cairn.chats.append(chat.id, "assistant", [], status=FAILED, error="No network.")
    heard = Heard(cairn, look=lambda e: [m.id for m in cairn.chats.messages(chat.id)])
    assert cairn.chats.retry(chat.id) == person
    assert heard.events == [BranchShown(chat.id, person.id, person.id)]
    assert heard.seen == [[person.id]]
    again = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "Done."}])
    assert [m.id for m in cairn.chats.versions(chat.id, again.id)] == [failed.id, again.id]
    # A complete reply can be retried too (a new version of it).
    assert cairn.chats.retry(chat.id) == person
    assert heard.of(BranchShown) == [heard.events[0], heard.events[2]]
    with pytest.raises(Refused, match="holds no such message"):  # nothing announced
        cairn.chats.retry(chat.id, 10_000)
    assert len(heard.events) == 3


def test_an_edit_announces_the_new_version_then_its_branch(cairn, chat):
    first = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "When?"}])
    cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "In May."}])
    heard = Heard(cairn, look=lambda e: [m.id for m in cairn.chats.messages(chat.id)])
    edited = cairn.chats.resend(chat.id, first.id, "When, exactly?")
    assert heard.events == [MessageStored(chat.id, edited.id, "user"),
                            BranchShown(chat.id, edited.id, edited.id)]
    assert heard.seen == [[edited.id], [edited.id]]
    assert [m.id for m in cairn.chats.versions(chat.id, first.id)] == [first.id, edited.id]


def test_a_switch_announces_the_branch_shown_once(cairn, chat):
    first = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "When?"}])
    reply = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "In May."}])
    edited = cairn.chats.resend(chat.id, first.id, "When, exactly?")
    heard = Heard(cairn, look=lambda e: [m.id for m in cairn.chats.messages(chat.id)])
    assert cairn.chats.switch(chat.id, first.id) == reply.id
    assert cairn.chats.switch(chat.id, first.id) == reply.id  # already shown: no event
    assert heard.events == [BranchShown(chat.id, reply.id, first.id)]
    assert heard.seen == [[first.id, reply.id]]
    assert cairn.chats.switch(chat.id, edited.id) == edited.id


async def test_a_turn_announces_its_messages_on_the_storage_thread(cairn, fake, chat):
    heard = Heard(cairn, look=lambda e: (cairn.chats.message(e.chat, e.message_id)
                                         if isinstance(e, MessageStored) else None))
    fake.reply_text(LONG)
    result = await cairn.engine.send(chat.id, "When do we launch?")
    person, reply = cairn.chats.messages(chat.id)
    assert heard.of(MessageStored) == [MessageStored(chat.id, person.id, "user"),
                                       MessageStored(chat.id, reply.id, "assistant")]
    assert result.message_ids == (person.id, reply.id)
    assert [heard.seen[heard.events.index(e)] for e in heard.of(MessageStored)] == [person, reply]
    assert set(heard.threads_of(MessageStored)) == {"cairn-storage_0"}


# ----------------------------------------------------------------------- knowledge


def test_every_new_version_of_a_document_is_announced(cairn, workspace):
    owner = workspace.id
    heard = Heard(cairn, look=lambda e: cairn.knowledge.get(e.owner).version)
    first = cairn.knowledge.save(owner, "## Facts\n- One\n", source="user").document
    cairn.knowledge.save(owner, "## Facts\n- One\n", source="user")  # the same text: no version
    stale = cairn.knowledge.save(owner, "## Facts\n- Two\n", source="user", based_on=0)
    assert isinstance(stale, Conflict)  # nothing written, nothing announced
    cairn.knowledge.save(owner, "## Facts\n- Two\n", source="user", based_on=first.version)
    restored = cairn.knowledge.restore(owner, first.version)
    assert cairn.knowledge.save_if_unchanged(
        [Change(owner, "## Facts\n- Three\n", restored.version),
         Change("personal", "## Facts\n- Mine\n", 0)], source="rebuild")
    assert not cairn.knowledge.save_if_unchanged(  # moved on meanwhile: nothing announced
        [Change(owner, "## Facts\n- Four\n", restored.version)], source="rebuild")
    assert heard.events == [KnowledgeSaved(owner, 1, "user"), KnowledgeSaved(owner, 2, "user"),
                            KnowledgeSaved(owner, 3, "restore"),
                            KnowledgeSaved(owner, 4, "rebuild"),
                            KnowledgeSaved("personal", 1, "rebuild")]
    assert heard.seen == [1, 2, 3, 4, 1]  # the version announced is the one stored


async def test_the_windows_operations_report_the_store_events_they_caused(cairn, workspace,
                                                                        tmp_path):
    ops = Operations(cairn)
    saved, changes = await ops.save_knowledge(workspace.id, "## Facts\n- One\n", based_on=0)
    assert changes.of(KnowledgeSaved) == (KnowledgeSaved(workspace.id, 1, "user"),)
    notes = tmp_path / "notes.md"
    notes.write_text("notes")
    record, changes = await ops.add_file(workspace.id, notes)
    assert changes.of(FileAdded) == (FileAdded(workspace.id, record.id),)
    _, changes = await ops.set_setting("knowledge.idle_seconds", 5)
    assert changes.of(SettingChanged) == (SettingChanged("knowledge.idle_seconds"),)


# ----------------------------------------------------------------------- files and settings


def test_an_added_file_is_announced_after_its_commit(cairn, workspace, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("The launch is on 2027-04-15.")
    heard = Heard(cairn, look=lambda e: [f.id for f in cairn.files.of_workspaces([e.workspace])])
    record = cairn.files.add(workspace.id, notes)
    assert heard.events == [FileAdded(workspace.id, record.id)] and heard.seen == [[record.id]]
    with pytest.raises(Refused):
        cairn.files.add(workspace.id, tmp_path / "missing.md")
    assert len(heard.events) == 1


def test_a_saved_setting_is_announced_after_its_commit(cairn):
    stored = Settings(cairn.registry.db)  # another reader: it sees only what was committed
    heard = Heard(cairn, look=lambda e: (cairn.settings.get(e.key),
                                         Settings(cairn.registry.db).get(e.key)))
    cairn.settings.set("knowledge.idle_seconds", 45)
    with pytest.raises(Refused):
        cairn.settings.set("knowledge.idle_seconds", -1)
    assert heard.events == [SettingChanged("knowledge.idle_seconds")]
    assert heard.seen == [(45, 45)] and stored.get("knowledge.idle_seconds") == 20


def test_the_stores_work_without_a_hub(cairn, workspace, tmp_path):
    db = cairn.registry.db
    chat = cairn.registry.new_chat(folder=workspace.path)
    heard = Heard(cairn)
    ChatStore(db).append(chat.id, "user", [{"type": "text", "text": "Hi"}])
    KnowledgeStore(db).save(workspace.id, "## Facts\n- One\n", source="user")
    notes = tmp_path / "notes.md"
    notes.write_text("notes")
    FileStore(db, BlobStore(tmp_path / "blobs")).add(workspace.id, notes)
    Settings(db).set("knowledge.idle_seconds", 30)
    assert heard.events == []  # nothing to announce through, and nothing fails


# ----------------------------------------------------------------------- rebuilds


async def talk(cairn, fake, chat_id: str) -> None:
    fake.reply_text(LONG)
    assert (await cairn.engine.send(chat_id, "When do we launch?")).status == "complete"


async def test_a_background_rebuild_announces_itself_and_what_it_saved(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    cairn.settings.set("knowledge.idle_seconds", 0)
    heard = Heard(cairn, look=lambda e: (watermark(cairn, e.chat)
                                         if isinstance(e, RebuildApplied) else None))
    done = asyncio.Event()
    cairn.scheduler.listeners.append(lambda report: done.set())
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    await cairn.engine.send(chat.id, "When do we launch?")  # its end arms the idle timer
    await asyncio.wait_for(done.wait(), timeout=10)
    kinds = [type(e) for e in heard.events if not isinstance(e, MessageStored)
             and getattr(e, "kind", "background job") == "background job"]  # not the turn's
    assert kinds == [RebuildQueued, RebuildStarted, WorkStarted, KnowledgeSaved, RebuildApplied,
                     WorkEnded]
    assert heard.of(RebuildApplied) == [RebuildApplied(chat.id, (workspace.id,))]
    assert heard.of(KnowledgeSaved) == [KnowledgeSaved(workspace.id, 1, "rebuild")]
    assert heard.of(WorkStarted) == [WorkStarted(chat.id, "turn"),
                                     WorkStarted(chat.id, "background job")]
    assert heard.of(WorkEnded) == [WorkEnded(chat.id, "turn"),
                                   WorkEnded(chat.id, "background job")]
    last = cairn.chats.messages(chat.id)[-1].id
    assert heard.seen[heard.events.index(heard.of(RebuildApplied)[0])] == last  # committed
    loop = threading.current_thread().name
    assert heard.threads_of(RebuildApplied) == ["cairn-storage_0"]
    assert heard.threads_of(KnowledgeSaved) == ["cairn-storage_0"]
    assert set(heard.threads_of(RebuildQueued) + heard.threads_of(RebuildStarted)) == {loop}
    assert [t for e, t in zip(heard.events, heard.threads)
            if isinstance(e, (WorkStarted, WorkEnded)) and e.kind == "background job"] == [
        loop, loop]


async def test_a_failed_rebuild_is_announced_after_its_error_is_recorded(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id)

    def last_error(event):
        if not isinstance(event, RebuildFailed):
            return None
        rows = cairn.registry.db.query(
            "SELECT last_error FROM knowledge_status WHERE owner = ?", (workspace.id,))
        return rows[0][0] if rows else None

    heard = Heard(cairn, look=last_error)
    fake.reply_error_status(401, "authentication_error", "bad key")
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed"
    assert heard.of(RebuildFailed) == [RebuildFailed(chat.id, report.error)]
    assert heard.seen[heard.events.index(heard.of(RebuildFailed)[0])] == report.error
    assert heard.threads_of(RebuildFailed) == ["cairn-storage_0"]
    assert [type(e) for e in heard.events] == [RebuildStarted, WorkStarted, RebuildFailed,
                                               WorkEnded]


async def test_a_stopped_rebuild_ends_its_work_and_announces_no_result(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id)
    gate, entered, _calls = hold_knowledge_calls(cairn)
    heard = Heard(cairn)
    task = cairn.scheduler.run_now(chat.id)
    await asyncio.wait_for(entered.wait(), timeout=10)
    await asyncio.to_thread(cairn.registry.stop_and_archive_chat, chat.id)
    assert (await asyncio.wait_for(task, timeout=10)).status == "stopped"
    gate.set()
    kinds = [type(e) for e in heard.events]  # (queued when the turn ended, before we listened)
    assert kinds == [RebuildStarted, WorkStarted, WorkEnded]


async def test_an_archived_chat_is_still_learned_from_and_its_work_announced(cairn, fake,
                                                                            workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id)
    cairn.registry.archive_chat(chat.id)
    heard = Heard(cairn)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    assert heard.of(WorkStarted) == [WorkStarted(chat.id, "background job")]
    assert heard.of(WorkEnded) == [WorkEnded(chat.id, "background job")]
    assert heard.of(RebuildApplied) == [RebuildApplied(chat.id, (workspace.id,))]


async def test_a_rebuild_asked_for_while_one_runs_is_queued_once(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id)
    gate, entered, _calls = hold_knowledge_calls(cairn)
    heard = Heard(cairn)
    scheduler = cairn.scheduler
    first = scheduler.run_now(chat.id)  # the idle timer armed by the turn: queued already
    await asyncio.wait_for(entered.wait(), timeout=10)
    assert heard.of(RebuildQueued) == []
    scheduler.run_now(chat.id)
    scheduler.run_now(chat.id)
    assert heard.of(RebuildQueued) == [RebuildQueued(chat.id)]  # to run again, once
    fake.reply_json("update_knowledge", {"ops": []})  # (the second finds nothing new)
    gate.set()
    await asyncio.wait_for(first, timeout=10)
    await asyncio.wait_for(scheduler._tasks[chat.id], timeout=10)  # the one queued
    assert len(heard.of(RebuildQueued)) == 1
