"""Turns against the fake Anthropic server with the real SDK: streaming, storage, the tool
loop, failures in a person's words, cancel, attachments, and the key never leaving keyring."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from app.base.live import TURN
from app.cairn import Cairn
from app.errors import Refused
from tests.memory_keyring import TEST_KEY


@pytest.fixture
def cairn(online):
    return online


async def test_a_streamed_turn_is_stored_with_usage_and_cost(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Our colours are orange and black. " * 4,
                    usage={"input_tokens": 1200, "output_tokens": 40,
                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 3900})
    pieces: list[str] = []
    result = await cairn.engine.send(chat.id, "What are our brand colours?", on_text=pieces.append)
    assert result.status == "complete" and result.error is None
    assert len(pieces) > 1 and "".join(pieces) == result.text
    assert result.usage.input == 1200 and result.usage.cache_read == 3900
    assert result.usage.output == 40
    assert result.cost_usd == pytest.approx((1200 * 2 + 3900 * 0.10 + 40 * 10) / 1e6)  # Sonnet 5.5
    user, reply = cairn.chats.messages(chat.id)
    assert (user.role, user.text) == ("user", "What are our brand colours?")
    assert (reply.role, reply.status, reply.text) == ("assistant", "complete", result.text)
    assert reply.usage == result.usage and reply.model == "claude-sonnet-5-5"
    assert cairn.registry.chat(chat.id).title == "What are our brand colours?"
    request = fake.message_requests[0]
    assert request.api_key == TEST_KEY
    body = request.body
    assert body["model"] == "claude-sonnet-5-5" and body["stream"] is True
    # A short context is below Sonnet's 1,024-token cache minimum: only the conversation's
    # breakpoint (see tests/core/llm/test_models.py for the context above and below each model's minimum).
    assert "cache_control" not in body["system"][-1]
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "WORKSPACE CONTEXT" in body["system"][-1]["text"]
    assert body["thinking"] == {"type": "adaptive"}
    assert not {"temperature", "top_p", "top_k"} & set(body)


async def test_system_prompt_is_byte_identical_across_turns(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    cairn.knowledge.save(workspace.id, "## Facts\n- Launch 2027-04-15\n", source="user")
    fake.reply_text("First answer, long enough to matter.")
    fake.reply_text("Second answer.")
    await cairn.engine.send(chat.id, "one")
    await cairn.engine.send(chat.id, "two")
    first, second = (r.raw for r in fake.message_requests)
    assert json.loads(first)["system"] == json.loads(second)["system"]
    system_bytes = [json.dumps(json.loads(r)["system"]).encode() for r in (first, second)]
    assert system_bytes[0] == system_bytes[1]
    messages = json.loads(second)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    # One breakpoint on the conversation: the last block only.
    marks = [b for m in messages for b in m["content"] if "cache_control" in b]
    assert marks == [messages[-1]["content"][-1]]


async def test_tool_loop_reads_a_file_in_pages(cairn, fake, workspace, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("".join(f"line {i:05d}\n" for i in range(4_000)))  # 44,000 characters
    record = cairn.files.add(workspace.id, notes, description="meeting notes")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id}, text_before="Reading. ")
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id, "page": 3})
    fake.reply_text("The notes end at line 03999.")
    result = await cairn.engine.send(chat.id, "How do the notes end?")
    assert result.status == "complete" and result.text == "Reading. \n\nThe notes end at line 03999."
    requests = [r.body for r in fake.message_requests]
    assert len(requests) == 3
    assert requests[0]["tools"][0]["name"] == "readWorkspaceFile"
    first_result = requests[1]["messages"][-1]["content"][0]
    assert first_result["type"] == "tool_result" and "is_error" not in first_result
    assert first_result["content"][0]["text"].startswith("[notes.md — page 1 of 3; read page 2 next]\nline 00000")
    last_page = requests[2]["messages"][-1]["content"][0]["content"][0]["text"]
    assert last_page.startswith("[notes.md — page 3 of 3]\n") and last_page.endswith("line 03999\n")
    assert sum(m.usage.output for m in cairn.chats.messages(chat.id) if m.usage) == result.usage.output


async def test_a_foreign_file_id_gets_an_error_never_content(cairn, fake, workspace, folders, tmp_path):
    (other_root,) = folders("Other")
    other, _ = cairn.registry.add_workspace(other_root)
    secret = tmp_path / "secret.txt"
    secret.write_text("the other project's secret plan")
    foreign = cairn.files.add(other.id, secret)
    mine = tmp_path / "mine.txt"
    mine.write_text("ours")
    cairn.files.add(workspace.id, mine)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": foreign.id})
    fake.reply_text("I could not read that.")
    await cairn.engine.send(chat.id, "read it")
    result_block = fake.message_requests[1].body["messages"][-1]["content"][0]
    assert result_block["is_error"] is True
    assert "secret plan" not in json.dumps(fake.message_requests[1].body)
    assert f"No file '{foreign.id}' in this workspace" in result_block["content"][0]["text"]


async def test_no_key_keeps_the_message(cairn, fake, workspace):
    cairn.settings.forget_api_key()
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "hello?")
    assert result.status == "failed" and result.error.startswith("No API key is set.")
    user, failed = cairn.chats.messages(chat.id)
    assert user.text == "hello?" and failed.status == "failed" and failed.error == result.error
    assert fake.message_requests == []


@pytest.mark.parametrize("script, sentence", [
    (lambda f: f.reply_error_status(401, "authentication_error", "invalid x-api-key"),
     "{Who} rejected the API key."),
    (lambda f: f.reply_error_status(404, "not_found_error", "model: claude-sonnet-5-5"),
     "The chat model 'claude-sonnet-5-5' was not found on this server"),
    (lambda f: [f.reply_error_status(429, "rate_limit_error", "slow down",
                                     headers={"retry-after-ms": "1"}) for _ in range(3)],
     "{Who} is rate-limiting this key right now, even after retrying."),
    (lambda f: [f.reply_error_status(529, "overloaded_error", "Overloaded",
                                     headers={"retry-after-ms": "1"}) for _ in range(3)],
     "{Who} is overloaded right now, even after retrying."),
    (lambda f: f.reply_error_status(400, "invalid_request_error",
                                    "prompt is too long: 250000 tokens > 200000 maximum"),
     "This conversation is now longer than the model can read."),
    # Mid-stream nothing was retried: the sentence says what happened, not "after retrying".
    (lambda f: f.reply_stream_error("Half an ans", "overloaded_error", "Overloaded"),
     "{Who} became overloaded in the middle of the reply."),
])
async def test_each_failure_is_one_sentence_and_the_message_is_kept(
        cairn, fake, workspace, script, sentence):
    script(fake)
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "Please draft the launch email.")
    # (the fake is not Anthropic's server: every sentence names it)
    sentence = sentence.format(Who=f"The server at 127.0.0.1:{fake.port}")
    assert result.status == "failed" and result.error.startswith(sentence)
    assert "\n" not in result.error
    messages = cairn.chats.messages(chat.id)
    assert messages[0].text == "Please draft the launch email."
    assert messages[-1].status == "failed" and messages[-1].error == result.error
    assert fake.pending == 0  # the SDK's own retries used every scripted answer
    assert cairn.registry.live.kinds(chat.id) == []


async def test_an_overloaded_stream_before_any_text_is_sent_again_and_the_wait_is_said(
        cairn, fake, workspace, monkeypatch):
    from app.llm import client

    monkeypatch.setattr(client, "OVERLOADED_STREAM_WAITS", (0.01, 0.01))
    fake.reply_stream_error("", "overloaded_error", "Overloaded")
    fake.reply_text("Here after the wait.")
    chat = cairn.registry.new_chat(folder=workspace.path)
    heard = []
    result = await cairn.engine.send(chat.id, "Hello?", on_wait=heard.append)
    assert (result.status, result.text) == ("complete", "Here after the wait.")
    assert [w.why for w in heard] == ["overloaded"]
    assert len(fake.message_requests) == 2
    assert [m.status for m in cairn.chats.messages(chat.id)] == ["complete", "complete"]


async def test_an_overloaded_stream_that_stays_so_says_it_was_retried(
        cairn, fake, workspace, monkeypatch):
    from app.llm import client

    monkeypatch.setattr(client, "OVERLOADED_STREAM_WAITS", (0.01, 0.01))
    for _ in range(3):
        fake.reply_stream_error("", "overloaded_error", "Overloaded")
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "Hello?")
    assert result.status == "failed"
    assert result.error == (f"The server at 127.0.0.1:{fake.port} is overloaded right now, "
                            "even after retrying. Try again "
                            "in a moment; your message is kept.")
    assert len(fake.message_requests) == 3 and fake.pending == 0
    assert cairn.chats.messages(chat.id)[0].text == "Hello?"


async def test_network_down_is_one_sentence(cairn, workspace):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    cairn.settings.set("api.base_url", f"http://127.0.0.1:{port}")
    cairn.settings.set_api_key("sk-ant-test-for-that-server")  # (one key per server)
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "anyone there?")
    assert result.status == "failed" and result.error.startswith(
        f"Cannot reach the server at 127.0.0.1:{port}. Check that it is running")
    assert cairn.chats.messages(chat.id)[0].text == "anyone there?"


async def test_a_failed_turn_is_left_out_of_the_next_request(cairn, fake, workspace):
    fake.reply_error_status(401, "authentication_error", "bad key")
    fake.reply_text("Now it works.")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await cairn.engine.send(chat.id, "first try")
    await cairn.engine.send(chat.id, "second try")
    messages = fake.message_requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert [b["text"] for b in messages[0]["content"]] == ["first try", "second try"]


async def stopped_partway(cairn, fake, chat_id: str, half: str, meanwhile=None):
    """A reply that streams *half* and then nothing, stopped as the Stop button does (after
    *meanwhile*, while it streams): the turn's result."""
    fake.hang(text_before=half)
    arrived = asyncio.Event()
    task = asyncio.create_task(cairn.engine.send(chat_id, "Write a long essay.",
                                                 on_text=lambda _t: arrived.set()))
    await asyncio.wait_for(arrived.wait(), timeout=10)
    if meanwhile is not None:
        meanwhile()
    cairn.registry.live.stop(chat_id)  # what the Stop button (and stop-and-archive) does
    return await asyncio.wait_for(task, timeout=10)


async def test_cancel_keeps_the_partial_reply_and_ends_the_turn(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)

    def while_streaming() -> None:
        assert cairn.registry.live.kinds(chat.id) == [TURN]
        with pytest.raises(Refused, match=r"the session is active \(turn\)"):
            cairn.registry.archive_chat(chat.id)

    result = await stopped_partway(cairn, fake, chat.id, "The first half of a long ",
                                   while_streaming)
    assert result.status == "stopped" and result.text == "The first half of a long "
    stored = cairn.chats.messages(chat.id)[-1]
    assert (stored.status, stored.text) == ("stopped", "The first half of a long ")
    assert cairn.registry.archive_chat(chat.id).archived  # no longer active


async def test_a_stopped_reply_counts_what_streamed_as_an_estimate_not_1_out(
        cairn, fake, workspace):
    """The stream opens with a placeholder of 1 output token; a reply
    stopped before the server counted its output keeps an estimate of what streamed, marked
    as one, in the result, the stored message and the cost line."""
    from app.llm.prices import cost, usage_line

    chat = cairn.registry.new_chat(folder=workspace.path)
    half = "The first half of a long essay about launch dates and colours. " * 8  # 504 characters
    result = await stopped_partway(cairn, fake, chat.id, half)
    assert result.status == "stopped"
    assert result.usage.estimated and result.usage.output == 126 and result.usage.input > 0
    stored = cairn.chats.messages(chat.id)[-1]
    assert stored.usage == result.usage  # kept with the message, mark and all
    assert stored.cost_usd == cost("claude-sonnet-5-5", stored.usage) and stored.cost_usd
    line = usage_line(stored.usage, stored.cost_usd)
    assert " · ~126 out (estimated) · ~$" in line and " 1 out" not in line


async def test_a_reply_cut_off_after_the_server_counted_keeps_the_servers_count(
        cairn, fake, workspace):
    """A message_delta arrived before the stream broke off: its count is kept, no estimate."""
    from tests.fake_anthropic import message_start

    text = "Counted words that the server did count before the stream broke off. " * 3
    fake.reply_events([
        ("message_start", message_start("msg_1", "claude-sonnet-5-5", {"input_tokens": 40})),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta",
                           "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 57}}),
    ])
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "Go on.")
    assert result.status == "failed" and "cut off" in (result.error or "")
    assert result.usage.output == 57 and not result.usage.estimated
    stored = cairn.chats.messages(chat.id)[-1]
    assert stored.text == text and stored.usage == result.usage


async def test_attachments_send_the_document_itself(cairn, fake, workspace, tmp_path):
    text = tmp_path / "brief.md"
    text.write_text("# Brief\nShip in April.")
    pdf = tmp_path / "terms.pdf"
    pdf.write_bytes(b"%PDF-1.4 tiny")
    png = tmp_path / "logo.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Got all three.")
    await cairn.engine.send(chat.id, "See attached.", attachments=[text, pdf, png])
    content = fake.message_requests[0].body["messages"][0]["content"]
    # The files first, in the order attached, the question last.
    assert [b["type"] for b in content] == ["text", "document", "image", "text"]
    assert content[0]["text"] == '<file name="brief.md">\n# Brief\nShip in April.\n</file>'
    assert content[1]["source"]["media_type"] == "application/pdf"
    assert content[2]["source"]["media_type"] == "image/png"
    assert content[3]["text"] == "See attached."
    stored = cairn.chats.messages(chat.id)[0].content
    assert stored[1] == {"type": "attachment", "name": "brief.md", "media_type": "text/markdown",
                         "size": 22, "sha256": stored[1]["sha256"]}


async def test_an_unsupported_attachment_is_refused_before_anything_is_stored(cairn, workspace, tmp_path):
    blob = tmp_path / "archive.bin"
    blob.write_bytes(b"\0\1\2binary")
    chat = cairn.registry.new_chat(folder=workspace.path)
    with pytest.raises(Refused, match="^cannot attach 'archive.bin': Cairn can send text files"):
        await cairn.engine.send(chat.id, "here", attachments=[blob])
    assert cairn.chats.messages(chat.id) == []


async def test_the_key_appears_nowhere_but_the_keychain(cairn, fake, workspace, isolated, tmp_path):
    import logging

    notes = tmp_path / "n.txt"
    notes.write_text("notes")
    cairn.files.add(workspace.id, notes)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("A reply of some length for the record.")
    fake.reply_error_status(401, "authentication_error", "invalid x-api-key")
    from app.base.logs import setup_logging

    setup_logging(level=logging.DEBUG)
    logging.getLogger().setLevel(logging.DEBUG)  # httpx and the SDK log at debug level too
    try:
        await cairn.engine.send(chat.id, "first")
        await cairn.engine.send(chat.id, "second")
    finally:
        logging.getLogger().setLevel(logging.WARNING)
    cairn.registry.db.query("PRAGMA wal_checkpoint(FULL)")
    scanned = [p for p in isolated.rglob("*") if p.is_file()]
    assert any(p.name == "cairn.log" for p in scanned) and any(p.name == "cairn.db" for p in scanned)
    for path in scanned:
        assert TEST_KEY.encode() not in path.read_bytes(), path


def test_cli_ask_streams_and_reports(cairn, fake, workspace, capsys):
    from app import cli

    cairn.close()
    fake.reply_text("Hello from the fake Claude, streamed in pieces.")
    assert cli.main(["ask", "--folder", workspace.path, "Say hello"]) == 0
    out, err = capsys.readouterr()
    assert out == "Hello from the fake Claude, streamed in pieces.\n"
    assert " in · " in err and " out · $" in err
    fake.reply_text("Second reply.")
    assert cli.main(["ask", "--folder", workspace.path, "--json", "Again"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "complete" and summary["usage"]["output"] > 0
    assert summary["chat"].startswith("ch_")
    fake.reply_error_status(401, "authentication_error", "bad")
    assert cli.main(["ask", "--chat", summary["chat"], "Third"]) == 1
    assert f"The server at 127.0.0.1:{fake.port} rejected the API key." in capsys.readouterr().err


def test_cli_files_memory_and_knowledge(cairn, workspace, tmp_path, capsys):
    from app import cli

    cairn.close()
    doc = tmp_path / "guide.md"
    doc.write_text("guide")
    assert cli.main(["files", "add", workspace.id, str(doc), "--description", "The guide",
                     "--json"]) == 0
    added = json.loads(capsys.readouterr().out)
    assert added["id"].startswith("wf_") and len(added["id"]) == 15
    assert {k: added[k] for k in ("name", "size", "scope", "description")} == {
        "name": "guide.md", "size": 5, "scope": "project", "description": "The guide"}
    assert cli.main(["files", "list", workspace.id, "--json"]) == 0
    assert [f["id"] for f in json.loads(capsys.readouterr().out)] == [added["id"]]
    capsys.readouterr()
    assert cli.main(["memory", "show"]) == 0  # empty: said to the person, nothing to a script
    assert capsys.readouterr() == ("", "Personal memory is empty.\n")
    assert cli.main(["knowledge", "status", "personal"]) == 0
    assert capsys.readouterr().out.startswith("Personal memory: no rebuild yet.\n")
    memory = tmp_path / "memory.md"
    memory.write_text("- Likes short answers\n")
    assert cli.main(["memory", "set", str(memory)]) == 0
    assert cli.main(["memory", "off", "--json"]) == 0
    capsys.readouterr()
    assert cli.main(["memory", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == "- Likes short answers\n" and shown["enabled"] is False
    knowledge = tmp_path / "k.md"
    knowledge.write_text("## Facts\n- Launch 2027-04-15\n")
    assert cli.main(["knowledge", "set", workspace.id, str(knowledge)]) == 0
    capsys.readouterr()
    assert cli.main(["knowledge", "show", workspace.id]) == 0
    assert capsys.readouterr().out == "## Facts\n- Launch 2027-04-15\n\n"
    assert cli.main(["knowledge", "show", "ws_nope"]) == 1
    assert "no such workspace" in capsys.readouterr().err


async def test_a_stream_cut_off_mid_reply_is_one_sentence_and_keeps_what_arrived(
        cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Half of it")
    arrived = asyncio.Event()
    task = asyncio.create_task(cairn.engine.send(chat.id, "Go", on_text=lambda _t: arrived.set()))
    await asyncio.wait_for(arrived.wait(), timeout=10)
    port = fake.port
    await asyncio.to_thread(fake.stop)  # the server goes away mid-stream
    result = await asyncio.wait_for(task, timeout=10)
    assert result.status == "failed" and result.error.startswith(
        f"The connection to the server at 127.0.0.1:{port} broke off")
    stored = cairn.chats.messages(chat.id)[-1]
    assert (stored.status, stored.text) == ("failed", "Half of it")


def test_the_unsent_draft_survives_a_restart(cairn, isolated):
    chat = cairn.registry.new_chat()
    cairn.chats.save_draft(chat.id, "half a thought")
    cairn.close()
    again = Cairn.open(isolated)
    assert again.chats.draft(chat.id) == "half a thought"
    again.close()


def test_conversation_commands_load_no_qt(isolated):
    import subprocess
    import sys

    probe = ("import sys; from app import cli; cli.main(['context', '--chat', 'ch_none']);"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('PySide6', 'qasync')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[3])
    assert done.stdout.strip().endswith("[]"), done.stderr


async def test_a_cancel_from_outside_keeps_the_partial_reply_and_propagates(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Some of it")
    arrived = asyncio.Event()
    task = asyncio.create_task(cairn.engine.send(chat.id, "Go", on_text=lambda _t: arrived.set()))
    await asyncio.wait_for(arrived.wait(), timeout=10)
    task.cancel()  # a shutdown, a timeout: not the person's Stop
    with pytest.raises(asyncio.CancelledError):
        await task
    stored = cairn.chats.messages(chat.id)[-1]
    assert (stored.status, stored.text) == ("stopped", "Some of it")
    assert cairn.registry.live.kinds(chat.id) == []


async def test_the_last_tool_round_must_answer_in_words(cairn, fake, workspace, tmp_path):
    from app.chat.engine import MAX_TOOL_ROUNDS

    notes = tmp_path / "notes.md"
    notes.write_text("short notes")
    record = cairn.files.add(workspace.id, notes)
    chat = cairn.registry.new_chat(folder=workspace.path)
    for _ in range(MAX_TOOL_ROUNDS):
        fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id})
    fake.reply_text("Here is what the notes say.")
    result = await cairn.engine.send(chat.id, "Read it again and again")
    assert result.status == "complete" and result.text == "Here is what the notes say."
    bodies = [r.body for r in fake.message_requests]
    assert len(bodies) == MAX_TOOL_ROUNDS + 1
    assert all("tool_choice" not in b for b in bodies[:-1])
    assert bodies[-1]["tool_choice"] == {"type": "none"}


async def test_a_pdf_the_model_reads_is_stored_by_reference(cairn, fake, workspace, tmp_path, isolated):
    pdf = tmp_path / "brief.pdf"
    pdf.write_bytes(b"%PDF-1.4 " + b"unique-pdf-payload " * 50)
    record = cairn.files.add(workspace.id, pdf)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id})
    fake.reply_text("Read the brief.")
    fake.reply_text("Still know the brief.")
    await cairn.engine.send(chat.id, "Read the brief")
    await cairn.engine.send(chat.id, "And now?")
    sent = fake.message_requests[-1].body["messages"]
    results = [b for m in sent for b in m["content"] if b.get("type") == "tool_result"]
    assert results[0]["content"][0]["type"] == "document"  # expanded when sent
    stored = [b for m in cairn.chats.messages(chat.id) for b in m.content if b.get("type") == "tool_result"]
    assert stored[0]["content"][0]["type"] == "attachment"  # one copy, in files/, not in the row


async def test_an_attachment_missing_from_storage_becomes_a_note(cairn, fake, workspace, tmp_path):
    text = tmp_path / "brief.md"
    text.write_text("# Brief")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Got it.")
    await cairn.engine.send(chat.id, "See attached.", attachments=[text])
    sha = cairn.chats.messages(chat.id)[0].content[1]["sha256"]
    cairn.files.blobs.path(sha).unlink()
    fake.reply_text("Still fine.")
    result = await cairn.engine.send(chat.id, "And?")
    assert result.status == "complete"
    first = fake.message_requests[-1].body["messages"][0]["content"]
    assert first[0] == {"type": "text", "text": "[The file 'brief.md' is no longer available.]"}


def test_cli_settings_and_key(isolated, capsys, monkeypatch):
    import io

    import keyring

    from app import cli

    assert cli.main(["settings", "set", "model.chat", "claude-sonnet-4-6"]) == 0
    assert cli.main(["settings", "set", "knowledge.idle_seconds", "30"]) == 0
    assert cli.main(["settings", "set", "memory.enabled", "off"]) == 0
    capsys.readouterr()
    assert cli.main(["settings", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["model.chat"], shown["knowledge.idle_seconds"], shown["memory.enabled"]) == (
        "claude-sonnet-4-6", 30, False)
    assert cli.main(["settings", "set", "knowledge.idle_seconds", "soon"]) == 1
    assert "'soon' is not a whole number" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("sk-ant-from-stdin\n"))
    assert cli.main(["key", "set"]) == 0
    assert keyring.get_password("Cairn", "anthropic-api-key") == "sk-ant-from-stdin"
    assert cli.main(["key", "status"]) == 0
    assert "stored in the system keychain" in capsys.readouterr().out
    assert cli.main(["key", "forget"]) == 0
    assert keyring.get_password("Cairn", "anthropic-api-key") is None


async def test_stop_pressed_twice_still_returns_a_result_and_a_clean_task(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.hang(text_before="Partial")
    arrived = asyncio.Event()

    async def caller():
        result = await cairn.engine.send(chat.id, "Go", on_text=lambda _t: arrived.set())
        return result, asyncio.current_task().cancelling()

    task = asyncio.create_task(caller())
    await asyncio.wait_for(arrived.wait(), timeout=10)
    cairn.registry.live.stop(chat.id)
    cairn.registry.live.stop(chat.id)  # a double click, or Stop then stop-and-archive
    result, cancelling = await asyncio.wait_for(task, timeout=10)
    assert result.status == "stopped" and cancelling == 0


def test_the_keychain_is_asked_again_until_a_key_is_found(cairn):
    import keyring

    cairn.settings.forget_api_key()
    assert cairn.settings.api_key() is None
    from app.store.settings import key_user

    # (the entry of the test's server: one key per server)
    keyring.set_password("Cairn", key_user(cairn.settings.base_url()), "sk-set-from-a-terminal")
    assert cairn.settings.api_key() == "sk-set-from-a-terminal"


def test_key_commands_without_a_keychain_are_one_sentence(isolated, capsys):
    import keyring
    from keyring.backends import fail

    from app import cli

    keyring.set_keyring(fail.Keyring())
    assert cli.main(["key", "forget"]) == 1
    assert capsys.readouterr().err.startswith("cannot forget the API key: the system keychain is not available")


def test_settings_refuse_values_that_make_no_sense(isolated, capsys):
    from app import cli

    assert cli.main(["settings", "set", "memory.enabled", "maybe"]) == 1
    assert cli.main(["settings", "set", "knowledge.idle_seconds", "-5"]) == 1
    err = capsys.readouterr().err
    assert "say on or off, not 'maybe'" in err
    assert "the delay is from 0 to 86,400 seconds (a day)" in err  # (-5: below the range)


async def test_chat_show_prints_the_conversation(cairn, fake, workspace, capsys):
    from app import cli

    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Orange and black.")
    await cairn.engine.send(chat.id, "Our colours?")
    fake.reply_error_status(401, "authentication_error", "bad key")
    await cairn.engine.send(chat.id, "And the font?")
    assert cli.main(["chat", "show", chat.id]) == 0
    out = capsys.readouterr().out
    q, a, q2, _ = cairn.chats.messages(chat.id)
    # Each message with its id, its parent and its version.
    assert (f"#{q.id} · version 1 of 1\nYou: Our colours?\n\n"
            f"#{a.id} after #{q.id} · version 1 of 1\nClaude: Orange and black.\n\n"
            f"#{q2.id} after #{a.id} · version 1 of 1\nYou: And the font?") in out
    assert f"[failed: The server at 127.0.0.1:{fake.port} rejected the API key." in out
    assert cli.main(["chat", "show", chat.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user", "assistant"]


async def test_a_timeout_is_one_sentence_and_keeps_the_message(cairn, fake, workspace,
                                                               monkeypatch):
    from app.llm import client

    monkeypatch.setattr(client, "READ_TIMEOUT", 0.3)  # between two pieces of an answer
    fake.reply_text("Never answered", delay=5)  # the head arrives, then nothing for a while
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "Anyone?")
    assert result.status == "failed"
    assert "stopped sending in the middle of the reply (nothing came for 0.3 seconds)" \
        in result.error
    assert "\n" not in result.error
    assert cairn.chats.messages(chat.id)[0].text == "Anyone?"


def test_cli_ask_prints_a_replys_control_characters_escaped(cairn, fake, workspace, capsys):
    from app import cli

    cairn.close()
    hostile = "Done.\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\u202eevil\n\tindented"
    fake.reply_text(hostile, chunk=7)
    assert cli.main(["ask", "--folder", workspace.path, "Say hello"]) == 0
    out, _ = capsys.readouterr()
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert out == "Done.\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b[2J\\u202eevil\n\tindented\n"


async def test_a_stopped_reply_goes_back_marked_as_cut_off(cairn, fake, workspace):
    """The model is told a reply in its history did not finish."""
    from app.chat.engine import CUT_OFF

    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await stopped_partway(cairn, fake, chat.id, "The first half of an")
    assert result.status == "stopped"
    fake.reply_text("And here is the rest.")
    result = await cairn.engine.send(chat.id, "Go on")
    assert (result.status, result.error) == ("complete", None)
    sent = fake.message_requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    reply = sent[1]["content"]
    assert reply[-1] == {"type": "text", "text": CUT_OFF}
    assert reply[0]["text"].startswith("The first half")


def test_cairn_ask_prints_each_round_s_text_as_its_own_paragraph(cairn, fake, workspace,
                                                                   tmp_path, capsys):
    """On the command line: each round's text a paragraph of its own, as the stored reply reads."""
    from app import cli

    notes = tmp_path / "notes.md"
    notes.write_text("The launch is on 2027-04-15.")
    record = cairn.files.add(workspace.id, notes)
    cairn.close()
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id},
                        text_before="Let me read your notes.")
    fake.reply_text("Your notes say 2027-04-15.")
    fake.reply_json("update_knowledge", {"ops": []})
    assert cli.main(["ask", "--folder", workspace.path, "When?"]) == 0
    out = capsys.readouterr().out
    assert out == "Let me read your notes.\n\nYour notes say 2027-04-15.\n"
