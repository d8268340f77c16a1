"""The background rebuild end to end, against the fake Anthropic server: when it runs, what it
saves, how every fault leaves the documents alone, and hand edits winning."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import Refused
from app.knowledge.rebuild import exchanges_of, length_guidance
from app.knowledge.status import owner_knowledge
from tests.helpers import LONG, add_op, hold_knowledge_calls, knowledge_requests, talk, watermark


@pytest.fixture
def cairn(online):
    return online


@pytest.fixture
def project(workspace):
    return workspace  # the rebuild's documents are the project's


def status_of(cairn, owner: str) -> dict:
    """The document's state as ``cairn knowledge status --json`` prints it."""
    return owner_knowledge(cairn.registry, cairn.rebuilder, owner).to_json()


async def test_a_qualifying_exchange_adds_what_it_taught(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When do we launch?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "applied" and len(report.applied) == 1 and report.refused == []
    doc = cairn.knowledge.get(project.id)
    assert doc.text.startswith("## Facts\n") and doc.text.endswith("- Launch date is 2027-04-15\n")
    assert (doc.source, doc.chat_id) == ("rebuild", chat.id)
    assert watermark(cairn, chat.id) == cairn.chats.messages(chat.id)[-1].id
    request = fake.message_requests[-1].body
    assert request["model"] == "claude-haiku-5-5" and "stream" not in request
    # Today's knowledge model takes structured outputs, and refuses a forced tool.
    assert request["output_config"]["format"]["type"] == "json_schema"
    assert request["output_config"]["effort"] == "low"
    assert "tool_choice" not in request and "tools" not in request
    prompt = request["messages"][0]["content"]
    assert "Today is " in prompt and "When do we launch?" in prompt and LONG in prompt
    assert cairn.knowledge.history(project.id)[0].source == "rebuild"
    # Nothing new since: no model call.
    calls = len(fake.message_requests)
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "nothing"
    assert len(fake.message_requests) == calls


async def test_short_replies_never_cause_a_model_call(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "hi", reply="Hello! How can I help?")
    assert cairn.rebuilder.waiting() == []  # nothing to resume at the next start
    calls = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "nothing" and len(fake.message_requests) == calls
    assert watermark(cairn, chat.id) == cairn.chats.messages(chat.id)[-1].id


async def test_labels_and_length_guidance_reach_the_model(cairn, fake, project):
    cairn.knowledge.save(project.id, "## Facts\n- First\n- Second\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "Tell me")
    fake.reply_json("update_knowledge", {"ops": []})
    await cairn.rebuilder.rebuild(chat.id)
    body = fake.message_requests[-1].body
    content = body["messages"][0]["content"]
    assert "- P1: First\n- P2: Second" in content
    assert "PROJECT DOCUMENT — entries P1, P2, …; 26 characters, " + length_guidance(26) in content
    assert "favour brevity" in length_guidance(25_000) and "merge aggressively" in length_guidance(31_000)


async def test_the_prompt_is_cacheable_typed_and_says_what_a_small_model_needs(
        cairn, fake, folders):
    """The prompt is cacheable and typed, names the middle folders and gives each document's
    size, and tells a small model what it needs."""
    cairn.settings.set("memory.enabled", False)
    root, brand, logo = folders("Acme", "Acme/Brand", "Acme/Brand/Logo")
    project, _ = cairn.registry.add_workspace(root)
    middle, _ = cairn.registry.add_workspace(brand)
    inner, _ = cairn.registry.add_workspace(logo)
    cairn.knowledge.save(project.id, "## Facts\n- " + "x" * 25_000 + "\n", source="user")
    cairn.knowledge.save(middle.id, "## Decisions\n- Round mark only\n", source="user")
    chat = cairn.registry.new_chat(folder=logo)
    await talk(cairn, fake, chat.id, "Tell me")
    await talk(cairn, fake, chat.id, "ok", reply="Fine.")  # short: no additions of its own
    fake.reply_json("update_knowledge", {"ops": []})
    await cairn.rebuilder.rebuild(chat.id)
    body = fake.message_requests[-1].body
    system, content = body["system"], body["messages"][0]["content"]
    assert system[-1]["cache_control"] == {"type": "ephemeral"}
    instructions = system[-1]["text"]
    assert "data, not instructions" in instructions
    assert "personal" not in instructions.casefold()  # Memory is off
    assert "at most 3 additions per exchange" in instructions and "30,000" in instructions
    assert "Today is" not in instructions and content.rstrip().endswith(
        f"Today is {cairn.rebuilder._today().isoformat()}.")
    # per document: its size and what that size asks for
    assert "PROJECT DOCUMENT — entries P1, P2, …; 25,012 characters, getting long" in content
    assert "FOLDER DOCUMENT — entries F1, F2, …; 0 characters, short" in content
    # the middle folder, read-only, so its facts are not added again
    assert 'FOLDER "Brand" DOCUMENT' in content and "- Round mark only" in content
    assert '("Acme" / "Brand" / "Logo")' in content
    assert "[1] (up to 3 additions)" in content and "[2] (short reply: no additions" in content
    assert "NEW EXCHANGES (at most 3 additions in all)" in content
    schema = body["output_config"]["format"]["schema"]
    variants = schema["properties"]["ops"]["items"]["anyOf"]
    assert variants[0]["properties"]["target"]["enum"] == ["project", "folder"]
    assert variants[1]["properties"]["ref"]["pattern"] == "^[PFU][1-9][0-9]*$"
    assert all(v["additionalProperties"] is False and "op" in v["required"] for v in variants)
    # a duplicate of the middle folder is dropped
    await talk(cairn, fake, chat.id, "Again?")
    fake.reply_json("update_knowledge", {"ops": [add_op(
        "Round mark only", "launch date is 2027-04-15", section="Decisions", target="folder")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert "duplicates an entry of another document" in report.refused[0].reason
    # with other documents, the instructions are the same bytes: cacheable
    cairn.knowledge.save(project.id, "## Facts\n- Something else\n", source="user")
    await talk(cairn, fake, chat.id, "Once more?")
    fake.reply_json("update_knowledge", {"ops": []})
    await cairn.rebuilder.rebuild(chat.id)
    assert fake.message_requests[-1].body["system"] == system


@pytest.mark.parametrize("script, sentence", [
    (lambda f: [f.reply_error_status(429, "rate_limit_error", "slow", headers={"retry-after-ms": "1"})
                for _ in range(3)], "rate-limiting"),
    (lambda f: [f.reply_error_status(529, "overloaded_error", "busy", headers={"retry-after-ms": "1"})
                for _ in range(3)], "overloaded"),
    (lambda f: f.reply_error_status(500, "api_error", "boom", headers={"x-should-retry": "false"}),
     "had a problem"),
    (lambda f: f.reply_text("I think the launch is in April, noted!"), "malformed"),
    (lambda f: f.reply_message([{"type": "thinking", "thinking": "Nothing to add."}]),
     "without recording anything"),
])
async def test_every_fault_leaves_documents_and_watermark_alone(cairn, fake, project, script, sentence):
    cairn.knowledge.save(project.id, "## Facts\n- Kept as is\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    before = cairn.knowledge.get(project.id)
    mark = watermark(cairn, chat.id)
    script(fake)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed" and sentence in report.error
    assert status_of(cairn, project.id)["pending_exchanges"] == 1
    assert cairn.knowledge.get(project.id) == before
    assert watermark(cairn, chat.id) == mark
    assert status_of(cairn, project.id)["last_error"] == report.error
    # The next trigger tries again, from the same place, and succeeds.
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    again = await cairn.rebuilder.rebuild(chat.id)
    assert again.status == "applied" and "- Launch 2027-04-15" in cairn.knowledge.get(project.id).text
    assert status_of(cairn, project.id)["last_error"] is None


async def test_network_down_leaves_everything(cairn, fake, project):
    import socket

    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cairn.settings.set("api.base_url", f"http://127.0.0.1:{port}")
    cairn.settings.set_api_key("sk-ant-test-for-that-server")  # (one key per server)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed" and report.error.startswith(
        f"Cannot reach the server at 127.0.0.1:{port}.")
    assert cairn.knowledge.get(project.id).version == 0 and watermark(cairn, chat.id) == 0


@pytest.mark.parametrize("tool_input", [{"ops": "delete everything"}, {}, {"op": "add"}])
async def test_malformed_tool_input_is_a_failure_that_keeps_the_watermark(
        cairn, fake, project, tool_input):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", tool_input)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed" and "malformed" in report.error
    assert cairn.knowledge.get(project.id).version == 0 and watermark(cairn, chat.id) == 0
    assert status_of(cairn, project.id)["pending_exchanges"] == 1


async def test_a_tool_call_cut_off_at_the_token_limit_is_a_failure(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_message([{"type": "tool_use", "name": "update_knowledge",
                         "input": {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]}}],
                       stop_reason="max_tokens")
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed" and "cut off" in report.error
    assert cairn.knowledge.get(project.id).version == 0 and watermark(cairn, chat.id) == 0


async def test_evidence_must_be_in_what_was_said_not_in_the_prompt_labels(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", {"ops": [add_op("CEO is Jane Doe", "The person:")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.applied == [] and len(report.refused) == 1


async def test_an_ungrouped_chat_with_memory_off_never_calls_the_model(cairn, fake):
    cairn.settings.set("memory.enabled", False)
    chat = cairn.registry.new_chat()
    await talk(cairn, fake, chat.id, "When?")
    calls = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "nothing" and len(fake.message_requests) == calls
    assert cairn.rebuilder.waiting() == []


async def test_personal_memory_takes_what_is_about_the_person(cairn, fake):
    chat = cairn.registry.new_chat()
    await talk(cairn, fake, chat.id, "I prefer answers in British English, please.",
               reply="Noted: from now on I will answer in British English, with short, plain paragraphs.")
    fake.reply_json("update_knowledge", {"ops": [add_op(  # (the person's own words)
        "Prefer answers in British English", "I prefer answers in British English",
        section="Working style & preferences", target="personal")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "applied"
    assert "- Prefer answers in British English" in cairn.knowledge.get("personal").text


async def test_a_hand_edit_during_a_rebuild_wins_and_the_rebuild_runs_again(cairn, fake, project):
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    gate, entered, _calls = hold_knowledge_calls(cairn)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    reports = []
    cairn.scheduler.listeners.append(reports.append)
    task = cairn.scheduler.run_now(chat.id)
    await asyncio.wait_for(entered.wait(), timeout=10)
    edited = "## Facts\n- Budget 45000 EUR (changed by hand)\n"
    cairn.knowledge.save(project.id, edited, source="user")  # the person saves meanwhile
    gate.set()
    report = await asyncio.wait_for(task, timeout=10)
    assert report.status == "applied" and reports == [report]
    text = cairn.knowledge.get(project.id).text
    assert text.startswith(edited.rstrip("\n")) and "- Launch 2027-04-15" in text
    assert "40000" not in text  # the rebuild built on the edit, not on what it first read
    sources = [v.source for v in cairn.knowledge.history(project.id)]
    assert sources[:3] == ["rebuild", "user", "user"]


async def test_a_running_rebuild_blocks_archiving(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    gate, entered, _calls = hold_knowledge_calls(cairn)
    fake.reply_json("update_knowledge", {"ops": []})
    task = asyncio.create_task(cairn.rebuilder.rebuild(chat.id))
    await asyncio.wait_for(entered.wait(), timeout=10)
    with pytest.raises(Refused, match=r"the session is active \(background job\)"):
        cairn.registry.archive_chat(chat.id)
    gate.set()
    await task
    assert cairn.registry.archive_chat(chat.id).archived


async def test_the_idle_timer_runs_the_rebuild_after_a_turn(cairn, fake, project):
    cairn.settings.set("knowledge.idle_seconds", 0)
    done = asyncio.Event()
    cairn.scheduler.listeners.append(lambda report: done.set())
    chat = cairn.registry.new_chat(folder=project.path)
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    await cairn.engine.send(chat.id, "When?")
    await asyncio.wait_for(done.wait(), timeout=10)
    assert "- Launch 2027-04-15" in cairn.knowledge.get(project.id).text


async def test_a_backlog_goes_in_chunks_oldest_first_and_resumes_at_start(cairn, fake, project, isolated):
    chat = cairn.registry.new_chat(folder=project.path)
    for n in range(8):
        await talk(cairn, fake, chat.id, f"question {n}", reply=f"Answer {n}: " + LONG)
    assert cairn.rebuilder.waiting() == [chat.id]
    fake.reply_json("update_knowledge", {"ops": []})
    fake.reply_json("update_knowledge", {"ops": []})
    report = await cairn.rebuilder.rebuild(chat.id)
    prompts = [r.body["messages"][0]["content"] for r in fake.message_requests[-2:]]
    assert "question 0" in prompts[0] and "question 7" not in prompts[0]
    assert "question 7" in prompts[1] and "question 0" not in prompts[1]
    assert report.status == "nothing" and cairn.rebuilder.waiting() == []


def test_cli_history_diff_restore_and_rebuild(cairn, fake, project, tmp_path, capsys):
    from app import cli

    cairn.close()
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    one.write_text("## Facts\n- a\n")
    two.write_text("## Facts\n- a\n- b\n")
    assert cli.main(["knowledge", "set", project.id, str(one)]) == 0
    assert cli.main(["knowledge", "set", project.id, str(two)]) == 0
    capsys.readouterr()
    assert cli.main(["knowledge", "history", project.id, "--json"]) == 0
    versions = json.loads(capsys.readouterr().out)
    assert [v["version"] for v in versions] == [2, 1] and versions[0]["source"] == "user"
    assert cli.main(["knowledge", "diff", project.id, "1", "2"]) == 0
    assert "+- b" in capsys.readouterr().out
    assert cli.main(["knowledge", "restore", project.id, "1"]) == 0
    assert "version 1 restored as version 3" in capsys.readouterr().out
    assert cli.main(["knowledge", "show", project.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == "## Facts\n- a\n" and shown["version"] == 3
    assert shown["rebuild"] == {"last_success": None, "last_error": None, "pending_exchanges": 0,
                                "unapplied": None, "suggestions": []}
    assert cli.main(["knowledge", "restore", project.id, "99"]) == 1
    assert "cannot find version 99" in capsys.readouterr().err


def test_cli_ask_runs_the_rebuild_and_reports(cairn, fake, project, capsys):
    from app import cli

    cairn.close()
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": [
        add_op("Launch 2027-04-15", "launch date is 2027-04-15"),
        add_op("Invented fact", "words nobody said")]})
    assert cli.main(["ask", "--folder", project.path, "When do we launch?"]) == 0
    err = capsys.readouterr().err
    assert "Knowledge: 1 change applied, 1 refused." in err
    assert "+ add project: Launch 2027-04-15" in err


async def test_leaving_the_chat_runs_the_waiting_rebuild_at_once(cairn, fake, project):
    cairn.settings.set("knowledge.idle_seconds", 3600)  # the idle timer would wait an hour
    chat = cairn.registry.new_chat(folder=project.path)
    scheduler = cairn.scheduler
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    done = asyncio.Event()
    scheduler.listeners.append(lambda report: done.set())
    scheduler.chat_left(chat.id)
    await asyncio.wait_for(done.wait(), timeout=10)
    assert "- Launch 2027-04-15" in cairn.knowledge.get(project.id).text


async def test_quit_waits_a_bounded_time_and_the_rest_resumes_next_start(cairn, fake, project, isolated):
    cairn.settings.set("knowledge.idle_seconds", 3600)
    chat = cairn.registry.new_chat(folder=project.path)
    scheduler = cairn.scheduler
    await talk(cairn, fake, chat.id, "When?")
    fake.hang()  # the knowledge model never answers
    await scheduler.drain(timeout=0.2)
    assert watermark(cairn, chat.id) == 0 and cairn.knowledge.get(project.id).version == 0
    assert cairn.registry.live.kinds(chat.id) == []  # the cancelled job let go of the chat
    assert cairn.rebuilder.waiting() == [chat.id]  # picked up again at the next start


def test_history_keeps_every_version(cairn, project):
    for n in range(205):
        cairn.knowledge.save(project.id, f"- version {n}\n", source="user")
    versions = cairn.knowledge.history(project.id)
    assert len(versions) == 205 and versions[0].version == 205 and versions[-1].version == 1
    assert cairn.knowledge.version_text(project.id, 1) == "- version 0\n"


async def test_a_short_turn_after_a_long_one_keeps_the_rebuild_waiting(cairn, fake, project):
    cairn.settings.set("knowledge.idle_seconds", 3600)
    scheduler = cairn.scheduler
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When do we launch?")
    await talk(cairn, fake, chat.id, "thanks", reply="You're welcome!")  # does not qualify
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    done = asyncio.Event()
    scheduler.listeners.append(lambda report: done.set())
    scheduler.chat_left(chat.id)  # only acts when a rebuild is waiting for the chat
    await asyncio.wait_for(done.wait(), timeout=10)
    assert "- Launch 2027-04-15" in cairn.knowledge.get(project.id).text


async def test_no_rebuild_starts_in_the_middle_of_a_turn(cairn, fake, project):
    from app.base.live import TURN

    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    calls = len(fake.message_requests)
    work = cairn.registry.begin_work(chat.id, TURN, stop=lambda: None)
    report = await cairn.scheduler.run_now(chat.id)
    cairn.registry.end_work(work)
    assert report.status == "nothing" and len(fake.message_requests) == calls


async def test_a_trigger_during_a_rebuild_runs_it_again_but_quitting_does_not(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    gate, entered, created = hold_knowledge_calls(cairn)
    scheduler = cairn.scheduler
    fake.reply_json("update_knowledge", {"ops": []})
    first = scheduler.run_now(chat.id)
    await asyncio.wait_for(entered.wait(), timeout=10)
    await talk(cairn, fake, chat.id, "And the colour?")  # a new exchange meanwhile
    assert scheduler.run_now(chat.id) is first  # remembered, not dropped
    gate.set()
    fake.reply_json("update_knowledge", {"ops": []})
    await first
    await asyncio.wait_for(scheduler._tasks[chat.id], timeout=10)  # the re-run
    assert len(created) == 2 and "And the colour?" in created[1]["messages"][0]["content"]
    # Quitting: a re-run asked for during the drain is not started behind its back.
    gate.clear()
    entered.clear()
    await talk(cairn, fake, chat.id, "One more thing?")
    fake.reply_json("update_knowledge", {"ops": []})
    third = scheduler.run_now(chat.id)
    await asyncio.wait_for(entered.wait(), timeout=10)
    scheduler.run_now(chat.id)
    await scheduler.drain(timeout=0.1)
    assert third.done() and chat.id not in scheduler._tasks


def test_cli_ask_rebuilds_once(cairn, fake, project, capsys):
    from app import cli

    cairn.settings.set("knowledge.idle_seconds", 0)
    cairn.close()
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": []})
    assert cli.main(["ask", "--folder", project.path, "When?"]) == 0
    knowledge_calls = [r for r in fake.message_requests if "output_config" in (r.body or {})]
    assert len(knowledge_calls) == 1


async def test_a_timeout_leaves_documents_and_watermark_alone(cairn, fake, project,
                                                              monkeypatch):
    from app.llm import client

    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    monkeypatch.setattr(client, "DEADLINE", 0.5)  # a whole answer's time, made short
    fake.hang()  # the knowledge model never answers
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "failed", report
    assert report.error.startswith(
        f"The server at 127.0.0.1:{fake.port} took longer than 0.5 seconds to answer")
    assert cairn.knowledge.get(project.id).version == 0 and watermark(cairn, chat.id) == 0


@pytest.mark.parametrize("from_thread", [False, True])
async def test_stop_and_archive_stops_a_running_rebuild(cairn, fake, project, from_thread):
    chat = cairn.registry.new_chat(folder=project.path)
    fake.reply_text(LONG)
    await cairn.engine.send(chat.id, "When do we launch?")
    before = cairn.knowledge.get(project.id)
    mark = watermark(cairn, chat.id)
    gate, entered, calls = hold_knowledge_calls(cairn)  # the knowledge model never answers
    reports = []
    scheduler = cairn.scheduler
    scheduler.listeners.append(reports.append)
    task = scheduler.run_now(chat.id)
    await asyncio.wait_for(entered.wait(), timeout=10)
    assert cairn.registry.live.kinds(chat.id) == ["background job"]
    scheduler.run_now(chat.id)  # asked again meanwhile: a stop must not start it again
    if from_thread:
        archived = await asyncio.to_thread(cairn.registry.stop_and_archive_chat, chat.id)
    else:
        archived = cairn.registry.stop_and_archive_chat(chat.id)
    assert archived.archived
    report = await asyncio.wait_for(task, timeout=10)
    assert report.status == "stopped" and report.error is None and reports == [report]
    assert cairn.knowledge.get(project.id) == before and watermark(cairn, chat.id) == mark
    assert cairn.registry.live.kinds(chat.id) == []
    assert chat.id not in scheduler._tasks and len(calls) == 1  # not run again
    status = status_of(cairn, project.id)
    assert status["last_error"] is None
    gate.set()  # the exchange still waits for a later rebuild
    assert [e.user for e in cairn.rebuilder.pending(chat.id)] == ["When do we launch?"]


_USER_TEXTS = ["Question?", "", "   ", "\n\t", "Please read the brief and tell me more."]
_REPLY_TEXTS = ["", "Ok.", "  ", LONG, " " + LONG + "\n", "x" * 79, "y" * 45]


@st.composite
def conversations(draw):
    """A random conversation: messages of the person (text, files, nothing), tool results,
    replies complete, stopped or failed, some taken out by retries and edits, and a mark."""
    count = draw(st.integers(0, 24))
    messages = []
    for _ in range(count):
        kind = draw(st.sampled_from(["user", "user", "attachment", "tool", "assistant",
                                     "assistant", "assistant"]))
        if kind == "user":
            content = [{"type": "text", "text": draw(st.sampled_from(_USER_TEXTS))}]
            messages.append(("user", content, "complete"))
        elif kind == "attachment":
            content = [{"type": "attachment", "name": "brief.md", "media_type": "text/markdown",
                        "size": 7, "sha256": "0" * 64}]
            messages.append(("user", content, "complete"))
        elif kind == "tool":
            messages.append(("user", [{"type": "tool_result", "tool_use_id": "t",
                                       "content": [{"type": "text", "text": LONG}]}], "complete"))
        else:
            text = draw(st.sampled_from(_REPLY_TEXTS))
            content = [{"type": "thinking", "thinking": "hm", "signature": "s"},
                       {"type": "text", "text": text}]
            messages.append(("assistant", content,
                             draw(st.sampled_from(["complete", "complete", "stopped", "failed"]))))
    superseded = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    mark = draw(st.integers(0, count + 1))  # a position: 0 is "nothing covered yet"
    return messages, superseded, mark


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(conversations())
def test_pending_counts_from_the_watermark_equal_the_whole_chat_computation(
        cairn, project, monkeypatch, example):
    monkeypatch.setattr("app.knowledge.rebuild.WALK_BACK", 3)  # walk back over several pages
    messages, superseded, position = example
    chat = cairn.registry.new_chat(folder=project.path)
    db = cairn.registry.db
    with db.write() as conn:
        ids = []
        shown: list[int] = []  # the path; a message drawn "out" is on a branch off it
        for (role, content, status), out in zip(messages, superseded):
            ids.append(conn.execute(
                "INSERT INTO message (chat_id, role, content, status, created_at, parent_id)"
                " VALUES (?, ?, ?, ?, '2026-11-30T00:00:00.000Z', ?)",
                (chat.id, role, json.dumps(content), status,
                 shown[-1] if shown else None)).lastrowid)
            if not out:
                shown.append(ids[-1])
        conn.execute("UPDATE chat SET leaf_id = ? WHERE id = ?",
                     (shown[-1] if shown else None, chat.id))
        mark = 0 if position == 0 or not ids else (ids + [ids[-1] + 1])[position - 1]
        conn.execute("UPDATE chat SET knowledge_watermark = ? WHERE id = ?", (mark, chat.id))
    # The whole shown path, folded, then filtered: no other branch is ever learned.
    path = [m for m in map(lambda i: cairn.chats.message(chat.id, i), shown) if m is not None]
    whole = [e for e in exchanges_of(path) if e.last_message > mark]
    assert cairn.rebuilder.pending(chat.id) == whole
    others = sum(sum(e.qualifies for e in cairn.rebuilder.pending(c.id))
                 for c in cairn.registry.chats_of(project.id) if c.id != chat.id)
    assert status_of(cairn, project.id)["pending_exchanges"] == others + sum(
        e.qualifies for e in whole)
    if chat.id in cairn.rebuilder.waiting():
        assert any(e.qualifies for e in whole)


# ================================================ refused suggestions

async def test_a_refused_op_goes_back_once_and_the_fixed_op_applies(cairn, fake, project):
    cairn.knowledge.save(project.id, "## Facts\n- Launch 2027-03-01\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    # The person's words: replacing what an entry says needs them.
    await talk(cairn, fake, chat.id, "Our launch date is 2027-04-15 now.")
    first = {"op": "update", "ref": "P1", "text": "Launch 2027-04-15",
             "evidence": "the launch moved to April"}  # words nobody said
    fixed = {**first, "evidence": "Our launch date is 2027-04-15"}
    fake.reply_json("update_knowledge", {"ops": [first]})
    fake.reply_json("update_knowledge", {"ops": [fixed]})
    report = await cairn.rebuilder.rebuild(chat.id)
    asked = knowledge_requests(fake)
    assert len(asked) == 2
    second = asked[1].body["messages"][0]["content"]
    assert "CORRECTIONS" in second and "The evidence does not occur in the new exchanges." in second
    assert "the launch moved to April" in second
    assert report.status == "applied" and report.refused == [] and report.unapplied is None
    doc = cairn.knowledge.get(project.id)
    today = cairn.rebuilder._today().isoformat()
    assert doc.text == f"## Facts\n- Launch 2027-04-15 (updated {today})\n"
    # the contradicted value lives on in the history, not in the entry
    assert "-- Launch 2027-03-01" in cairn.knowledge.diff(project.id, 1, 2)
    assert watermark(cairn, chat.id) == cairn.chats.messages(chat.id)[-1].id
    assert status_of(cairn, project.id)["unapplied"] is None


async def test_a_still_refused_op_is_recorded_shown_and_the_watermark_moves(
        cairn, fake, project, capsys):
    from app import cli

    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    invented = add_op("CEO is Jane Doe", "the CEO is Jane Doe, as you said")
    fake.reply_json("update_knowledge", {"ops": [invented, add_op(
        "Launch date is 2027-04-15", "launch date is 2027-04-15")]})
    fake.reply_json("update_knowledge", {"ops": [invented]})  # the same again: still refused
    report = await cairn.rebuilder.rebuild(chat.id)
    assert len(knowledge_requests(fake)) == 2  # one corrective round, never a loop
    assert report.status == "applied" and len(report.applied) == 1
    assert report.unapplied == ("1 suggestion could not be applied: The evidence does not "
                                "occur in the new exchanges.")
    assert watermark(cairn, chat.id) == cairn.chats.messages(chat.id)[-1].id
    status = status_of(cairn, project.id)
    assert status["unapplied"] == report.unapplied and status["last_error"] is None
    cairn.close()
    assert cli.main(["knowledge", "status", project.id]) == 0
    out = capsys.readouterr().out
    assert "1 suggestion could not be applied: The evidence does not occur" in out
    assert "0 exchanges waiting for a rebuild." in out


async def test_a_model_that_gives_up_or_a_failed_corrective_call_keeps_the_refusals(
        cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Budget is 9000", "budget is 9000")]})
    fake.reply_json("update_knowledge", {"ops": []})  # gives up
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "nothing" and report.unapplied.startswith(
        "1 suggestion could not be applied: The evidence does not occur")
    await talk(cairn, fake, chat.id, "And then?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Budget is 9000", "budget is 9000")]})
    fake.reply_error_status(500, "api_error", "boom", headers={"x-should-retry": "false"})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "nothing" and report.error is None
    assert report.unapplied.startswith("1 suggestion could not be applied")
    assert watermark(cairn, chat.id) == cairn.chats.messages(chat.id)[-1].id


async def test_duplicates_are_not_sent_back(cairn, fake, project):
    cairn.knowledge.save(project.id, "## Facts\n- Launch date is 2027-04-15\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch date is 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert len(knowledge_requests(fake)) == 1 and report.unapplied is None
    assert "duplicates P1" in report.refused[0].reason


async def test_hand_edits_in_a_row_never_drop_the_rebuild(cairn, fake, project):
    """Each knowledge call is overtaken by a hand save: the run after the second one is
    queued again, and the third lands on top of both edits."""
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    loop = asyncio.get_running_loop()
    real_client = cairn.rebuilder._client
    calls = []

    async def hand_edit(n: int) -> None:
        cairn.knowledge.save(project.id, f"## Facts\n- Budget {n} EUR (by hand)\n", source="user")

    class Overtaken:
        def __init__(self) -> None:
            self.messages = self

        async def create(self, **kwargs):
            calls.append(kwargs)
            if len(calls) <= 2:
                await asyncio.wrap_future(
                    asyncio.run_coroutine_threadsafe(hand_edit(len(calls)), loop))
            return await real_client().messages.create(**kwargs)

    cairn.rebuilder._client = Overtaken
    for _ in range(3):
        fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                           "launch date is 2027-04-15")]})
    done = asyncio.Event()
    reports = []
    cairn.scheduler.listeners.append(lambda r: (reports.append(r), done.set()
                                                if r.status == "applied" else None))
    cairn.scheduler.run_now(chat.id)
    await asyncio.wait_for(done.wait(), timeout=10)
    assert len(calls) == 3 and [r.status for r in reports] == ["superseded", "applied"]
    text = cairn.knowledge.get(project.id).text
    assert text == "## Facts\n- Budget 2 EUR (by hand)\n- Launch 2027-04-15\n"
