"""Tools behind one protocol, run on the toolbox's workers (never the writer), and the bounds
of every turn: calls per round and per turn, bytes of results per turn."""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
from typing import Any

from app.chat.turn import BOUND_REACHED, MAX_CALLS_PER_ROUND, MAX_CALLS_PER_TURN
from app.ops import Operations
from app.tools import WORKER, Toolbox, ToolChat, ToolOutput, summary_line


class SlowTool:
    """Takes five seconds unless released: long enough to stall any save it held up."""

    name = "slowTool"
    runs_on = WORKER
    max_result_bytes = 1_000

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()
        self.thread: str | None = None

    def definition(self, chat: ToolChat) -> dict[str, Any] | None:
        return {"name": self.name, "description": "Waits.",
                "input_schema": {"type": "object", "properties": {}}}

    def run(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int) -> ToolOutput:
        self.thread = threading.current_thread().name
        self.started.set()
        self.release.wait(5)
        self.finished.set()
        return ToolOutput([{"type": "text", "text": "[waited]"}])

    def summary(self, tool_input: dict[str, Any], output: ToolOutput) -> str:
        return summary_line(output)


async def test_a_slow_tool_never_holds_up_a_knowledge_save(online, workspace, fake):
    tool = SlowTool()
    online.engine.toolbox = Toolbox([tool])  # (the composition root gives the real ones)
    ops = Operations(online)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_tool_use("slowTool", {})
    fake.reply_text("Done waiting.")
    turn = await online.engine.start_turn(chat.id, "Wait for it.")
    await asyncio.to_thread(tool.started.wait, 30)
    assert tool.started.is_set()
    saved, _changes = await ops.save_knowledge(workspace.id, "## Facts\n\n- Saved meanwhile\n",
                                               based_on=None)
    assert not tool.finished.is_set(), "the save waited for the tool"
    assert online.knowledge.get(workspace.id).text.endswith("- Saved meanwhile\n")
    assert tool.thread is not None and tool.thread.startswith("cairn-tool")
    tool.release.set()
    result = await turn.result()
    assert result.status == "complete" and result.text == "Done waiting."


def _calls(count: int, file_id: str) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": f"toolu_{n:03d}", "name": "readWorkspaceFile",
             "input": {"file_id": file_id, "page": 1 + n % 3}} for n in range(count)]


async def test_sixty_reads_of_a_20_mb_file_end_within_the_bounds(online, workspace, fake,
                                                                 tmp_path):
    big = tmp_path / "ledger.txt"
    line = "2026-11-30 harbour crane 0042 lifted 18 containers onto the Ostara\n"
    with big.open("w") as out:
        for _ in range(20_000_000 // len(line)):
            out.write(line)
    record = online.files.add(workspace.id, big)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_message(_calls(60, record.id), stop_reason="tool_use")

    tracemalloc.start()
    try:
        result = await online.engine.send(chat.id, "Read the ledger sixty times.")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    print(f"peak traced memory of the turn: {peak / 1e6:.0f} MB")
    assert peak < 400_000_000, f"peak {peak / 1e6:.0f} MB"
    assert result.status == "stopped" and result.error == BOUND_REACHED["round"]
    stored = online.chats.messages(chat.id)
    results = [b for m in stored for b in m.content if b.get("type") == "tool_result"]
    assert len(results) == MAX_CALLS_PER_ROUND
    assert all(len(b["content"][0]["text"]) < 25_000 for b in results)  # a page each

    fake.reply_text("The ledger lists container lifts.")
    after = await online.engine.send(chat.id, "So what is in it?")
    assert after.status == "complete" and after.text == "The ledger lists container lifts."
    sent = fake.requests[-1].body["messages"]
    # The calls that never ran are not sent; each one that ran has its result.
    uses = [b["id"] for m in sent for b in m["content"] if b["type"] == "tool_use"]
    answered = [b["tool_use_id"] for m in sent for b in m["content"] if b["type"] == "tool_result"]
    assert uses == answered and len(uses) == MAX_CALLS_PER_ROUND


async def test_calls_past_the_turns_bound_end_the_turn(online, workspace, fake, tmp_path):
    note = tmp_path / "note.md"
    note.write_text("A short note.\n")
    record = online.files.add(workspace.id, note)
    chat = online.registry.new_chat(folder=workspace.path)
    for _ in range(3):  # 10 + 10 + 10 asked: 25 run
        fake.reply_message(_calls(10, record.id), stop_reason="tool_use")
    result = await online.engine.send(chat.id, "Read it often.")
    assert result.status == "stopped" and result.error == BOUND_REACHED["turn"]
    results = [b for m in online.chats.messages(chat.id) for b in m.content
               if b.get("type") == "tool_result"]
    assert len(results) == MAX_CALLS_PER_TURN
    fake.reply_text("Still here.")
    assert (await online.engine.send(chat.id, "Hello?")).status == "complete"


async def test_results_past_the_turns_bytes_end_the_turn(online, workspace, fake, tmp_path):
    """A PDF larger than what the turn may still hold is a note, never read whole; results
    that reach 4 MB end the turn."""
    small = tmp_path / "small.pdf"
    small.write_bytes(b"%PDF-1.4\n" + b"1" * 2_500_000)
    big = tmp_path / "big.pdf"
    big.write_bytes(b"%PDF-1.4\n" + b"2" * 20_000_000)
    first, second = online.files.add(workspace.id, small), online.files.add(workspace.id, big)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_message([{"type": "tool_use", "id": f"toolu_{n}", "name": "readWorkspaceFile",
                         "input": {"file_id": f}} for n, f in
                        enumerate((second.id, first.id, first.id, first.id))],
                       stop_reason="tool_use")
    result = await online.engine.send(chat.id, "Read both.")
    assert result.status == "stopped" and result.error == BOUND_REACHED["bytes"]
    results = [b for m in online.chats.messages(chat.id) for b in m.content
               if b.get("type") == "tool_result"]
    assert results[0]["is_error"] and "more than this reply may still read" in \
        results[0]["content"][0]["text"]
    assert [r["content"][0]["type"] for r in results[1:]] == ["attachment", "text"]
    assert "is_error" in results[2]
    assert len(results) == 3


async def test_a_server_that_ignores_the_last_rounds_tool_choice_ends_the_turn(
        online, workspace, fake, tmp_path):
    from app.chat.turn import MAX_TOOL_ROUNDS

    note = tmp_path / "note.md"
    note.write_text("A short note.\n")
    record = online.files.add(workspace.id, note)
    chat = online.registry.new_chat(folder=workspace.path)
    for _ in range(MAX_TOOL_ROUNDS + 1):  # the last one too, despite tool_choice none
        fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id})
    result = await online.engine.send(chat.id, "Read it forever.")
    assert result.status == "stopped" and result.error == BOUND_REACHED["rounds"]
    fake.reply_text("Back.")
    assert (await online.engine.send(chat.id, "Hello?")).status == "complete"


def test_a_page_cut_at_what_is_left_weighs_no_more_than_that_whatever_its_name():
    """The cut counts the heading's bytes, not its characters: a long name in a script of
    three bytes a letter must not carry a result past what the turn had left."""
    import io

    from app.tools import text_page

    body = ("x" * 99 + "\n") * 200  # one page (20,000 characters)
    for name in ("notes.md", "文" * 120 + ".md"):
        for limit in (1_000, 5_000, 19_000, 20_050):
            output = text_page(name, io.BytesIO(body.encode()), 1, limit=limit)
            assert output is not None and output.size <= limit, (name, limit, output.size)


class RaisingTool(SlowTool):
    """A tool with a bug: it raises instead of answering an error result."""

    name = "raisingTool"

    def definition(self, chat: ToolChat) -> dict[str, Any] | None:
        return {**(super().definition(chat) or {}), "name": self.name}

    def run(self, chat: ToolChat, tool_input: dict[str, Any], *, limit: int) -> ToolOutput:
        raise RuntimeError("a bug in the tool")


async def test_stop_during_a_tool_then_a_tool_that_raises_then_the_next_message(
        online, workspace, fake):
    """Stop while the second of three calls runs: the first's result is kept, the calls
    without a result never go back; a tool that raises is an error result and the turn goes
    on; every request is one the API takes (each tool_use answered in the next message)."""
    slow, raising = SlowTool(), RaisingTool()
    online.engine.toolbox = Toolbox([slow, raising])
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_message([{"type": "tool_use", "id": "toolu_r1", "name": "raisingTool",
                         "input": {}},
                        {"type": "tool_use", "id": "toolu_s1", "name": "slowTool", "input": {}},
                        {"type": "tool_use", "id": "toolu_s2", "name": "slowTool", "input": {}}],
                       stop_reason="tool_use")
    turn = await online.engine.start_turn(chat.id, "Wait for it.")
    await asyncio.to_thread(slow.started.wait, 30)
    turn.cancel()
    result = await asyncio.wait_for(turn.result(), timeout=10)  # not the tool's 5 s
    assert result.status == "stopped"
    slow.release.set()
    results = [b for m in online.chats.messages(chat.id) for b in m.content
               if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_r1"]
    assert results[0].get("is_error") is True
    assert "raisingTool failed inside Cairn" in results[0]["content"][0]["text"]

    fake.reply_text("Back.")
    assert (await online.engine.send(chat.id, "Hello?")).status == "complete"
    sent = fake.requests[-1].body["messages"]
    for n, message in enumerate(sent):
        uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
        if uses:
            following = sent[n + 1]["content"]
            assert uses == [b["tool_use_id"] for b in following if b["type"] == "tool_result"]
    assert not any(b.get("id") in ("toolu_s1", "toolu_s2") for m in sent for b in m["content"])
