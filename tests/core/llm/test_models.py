"""Today's Claude API, against a fake server that behaves like it: the models list decides
what each request sends; thinking travels back in tool rounds; the rebuild asks by structured
outputs or by the forced tool; retired and deprecated models; prices; caching; stop reasons."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import anthropic
import pytest

from app.errors import Refused
from app.llm.catalog import Catalog, estimate_tokens
from app.llm.prices import PRICES, cost
from app.store.messages import Usage
from tests.fake_anthropic import THINKING_TEXT
from tests.helpers import exchange_in

LONG = "Our launch date is 2027-04-15 and the accent colour is orange #FF5500, as agreed today."


def add_op(text: str, evidence: str) -> dict:
    return {"op": "add", "target": "project", "section": "Facts", "text": text,
            "evidence": evidence}


@pytest.fixture
def cairn(online):
    return online


# ----------------------------------------------------------------------- out of the box


async def test_the_default_models_work_out_of_the_box(cairn, fake, workspace):
    assert (cairn.settings.get("model.chat"), cairn.settings.get("model.knowledge")) == (
        "claude-sonnet-5-5", "claude-haiku-5-5")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text(LONG)
    result = await cairn.engine.send(chat.id, "When do we launch?")
    assert result.status == "complete" and result.text == LONG and result.notice is None
    assert result.thinking == THINKING_TEXT  # kept, but never part of the reply
    reply = cairn.chats.messages(chat.id)[-1]
    assert reply.text == LONG and reply.content[0]["type"] == "thinking"
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch is 2027-04-15",
                                                        "launch date is 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "applied", report.error
    assert "Launch is 2027-04-15" in cairn.knowledge.get(workspace.id).text
    # The models list was asked for once and kept in the data folder with its fetch time.
    assert [r.path for r in fake.requests if r.method == "GET"] == ["/v1/models"]
    cached = json.loads((cairn.registry.db.path.parent / "models.json").read_text())
    assert cached["fetched_at"] and {m["id"] for m in cached["models"]} >= {"claude-sonnet-5-5"}


async def test_the_models_list_is_fetched_again_after_a_day(isolated, fake):
    now = [datetime(2026, 11, 30, 9, tzinfo=timezone.utc)]
    catalog = Catalog(isolated, now=lambda: now[0])
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test")
    await catalog.ensure_fresh(client, fake.base_url)
    await catalog.ensure_fresh(client, fake.base_url)
    assert len(fake.requests) == 1
    again = Catalog(isolated, now=lambda: now[0])  # read back from the data folder
    assert again.info("claude-haiku-5-5").structured_outputs
    now[0] += timedelta(days=1, minutes=1)
    await again.ensure_fresh(client, fake.base_url)
    assert len(fake.requests) == 2


# ----------------------------------------------------------------------- thinking


async def test_a_tool_round_sends_the_thinking_block_back_byte_for_byte(cairn, fake, workspace,
                                                                        tmp_path):
    brief = tmp_path / "brief.txt"
    brief.write_text("The launch is on 2027-04-15.")
    record = cairn.files.add(workspace.id, brief)
    thought = "The person asks about the brief: I should read it — «exactly» as stored. ✓"
    fake.reply_message([{"type": "thinking", "thinking": thought},
                        {"type": "tool_use", "name": "readWorkspaceFile",
                         "input": {"file_id": record.id}}], stop_reason="tool_use")
    fake.reply_text("The brief says the launch is on 2027-04-15.")
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "What does the brief say?")
    assert result.status == "complete", result.error
    first, second = fake.message_requests
    assert first.body["thinking"] == {"type": "adaptive"}
    sent_back = second.body["messages"][1]["content"]
    assert sent_back[0]["type"] == "thinking" and sent_back[0]["thinking"] == thought
    stored = cairn.chats.messages(chat.id)[1].content[0]
    assert sent_back[0] == {"type": "thinking", "thinking": thought,
                            "signature": stored["signature"]}
    assert stored["signature"].startswith("sig-")
    # The next exchange starts a new loop: earlier thinking is not sent again.
    fake.reply_text("You're welcome.")
    await cairn.engine.send(chat.id, "Thanks!")
    later = fake.message_requests[-1].body["messages"]
    assert all(b["type"] != "thinking" for m in later for b in m["content"])


async def test_the_fake_refuses_a_tool_round_without_its_thinking(fake):
    client = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    messages = [{"role": "user", "content": "Read it"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                                                   "name": "readWorkspaceFile", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": "text"}]}]
    with pytest.raises(anthropic.BadRequestError, match="Expected `thinking` or "
                                                        "`redacted_thinking`, but found `tool_use`"):
        await client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=messages)
    tampered = [messages[0], {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "changed", "signature": "sig-made-up"},
        *messages[1]["content"]]}, messages[2]]
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        await client.messages.create(model="claude-sonnet-5-5", max_tokens=10, messages=tampered)
    # (SDK 2.14 no longer takes sampling parameters; an older client could still send them.)
    for extra in ({"extra_body": {"temperature": 0.2}}, {"extra_body": {"top_k": 5}},
                  {"tool_choice": {"type": "any"}, "tools": [{"name": "t", "input_schema": {
                      "type": "object", "properties": {}}}]}):
        with pytest.raises(anthropic.BadRequestError, match="not supported for this model"):
            await client.messages.create(model="claude-haiku-5-5", max_tokens=10,
                                         messages=[messages[0]], **extra)
    fake.reply_text("Sure.")  # last year's model takes last year's request
    await client.messages.create(model="claude-haiku-4-5", max_tokens=10,
                                 extra_body={"temperature": 0.2}, messages=[messages[0]])


async def test_effort_is_sent_only_where_the_model_takes_it(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    cairn.settings.set("model.chat_effort", "high")
    fake.reply_text("One.")
    await cairn.engine.send(chat.id, "Hi")
    assert fake.message_requests[-1].body["output_config"] == {"effort": "high"}
    cairn.settings.set("model.chat", "claude-haiku-4-5")
    fake.reply_text("Two.")
    result = await cairn.engine.send(chat.id, "Hi again")
    body = fake.message_requests[-1].body
    assert result.status == "complete" and "output_config" not in body and "thinking" not in body
    with pytest.raises(Refused, match="is not one of"):
        cairn.settings.set("model.chat_effort", "extreme")


# ----------------------------------------------------------------------- the rebuild's shape


async def test_a_model_without_capability_data_gets_the_forced_tool(cairn, fake, workspace):
    """Asked for the structured shape first; refused, the forced tool, which it
    takes: remembered for this model on this server."""
    fake.add_legacy_model("local-model")
    cairn.settings.set("model.knowledge", "local-model")
    chat_id = await exchange_in(cairn, fake, workspace)
    before = len(fake.message_requests)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    structured, body = (r.body for r in fake.message_requests[before:])
    assert structured["output_config"]["format"]["type"] == "json_schema"
    assert body["tool_choice"] == {"type": "tool", "name": "update_knowledge"}
    assert not {"output_config", "thinking", "temperature"} & set(body)
    assert cairn.catalog.knowledge_shape("local-model", cairn.engine.server()) == "tool"
    assert cairn.catalog.knowledge_shape("local-model", "http://elsewhere:4000") == "structured"


async def test_a_server_without_a_models_endpoint_gets_the_conservative_shape(cairn, fake,
                                                                             workspace):
    fake.models_status = 404  # Ollama, LM Studio, an older proxy
    cairn.settings.set("model.chat", "llama3.3")
    cairn.settings.set("model.knowledge", "llama3.3")
    chat_id = await exchange_in(cairn, fake, workspace)
    chat_body = fake.message_requests[-1].body
    assert not {"thinking", "output_config"} & set(chat_body)
    # Asked for the structured shape first; a server that ignores it and answers in words
    # gets the forced tool next, and that is remembered.
    fake.reply_text("I noted the launch date, which is worth remembering for later on.")
    fake.reply_json("update_knowledge", {"ops": []})
    assert (await cairn.rebuilder.rebuild(chat_id)).status == "nothing"
    first, second = (r.body for r in fake.message_requests[-2:])
    assert "format" in first["output_config"] and "thinking" not in first
    assert second["tool_choice"]["type"] == "tool" and "output_config" not in second
    assert cairn.catalog.knowledge_shape("llama3.3", cairn.engine.server()) == "tool"


async def test_a_refused_shape_is_tried_the_other_way_once_and_remembered(cairn, fake, workspace):
    cairn.settings.set("model.knowledge", "claude-haiku-4-5")
    fake.refuse_structured.add("claude-haiku-4-5")  # says it can, then refuses
    chat_id = await exchange_in(cairn, fake, workspace)
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15", "launch date is 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    structured, forced = fake.message_requests[-2:]
    assert "output_config" in structured.body and "tool_choice" in forced.body
    server = cairn.engine.server()
    assert cairn.catalog.knowledge_shape("claude-haiku-4-5", server) == "tool"
    assert Catalog(cairn.registry.db.path.parent).knowledge_shape("claude-haiku-4-5",
                                                                  server) == "tool"


async def test_the_ops_schema_is_one_structured_outputs_take(cairn, fake, workspace):
    from app.knowledge.rebuild import OPS_SCHEMA
    from tests.fake_anthropic import _schema_problem

    assert _schema_problem(OPS_SCHEMA) is None
    assert "maxLength" in _schema_problem({"type": "object", "additionalProperties": False,
                                           "properties": {"t": {"type": "string",
                                                                "maxLength": 5}}})


# ----------------------------------------------------------------------- lifecycle


async def test_a_retired_model_is_refused_naming_its_successor(cairn, fake, workspace):
    cairn.settings.set("model.chat", "claude-sonnet-4-5")
    chat = cairn.registry.new_chat(folder=workspace.path)
    with pytest.raises(Refused) as refused:
        await cairn.engine.send(chat.id, "Hello?")
    sentence = str(refused.value)
    assert "retired on 2026-11-30" in sentence and "Claude Sonnet 5.5 ('claude-sonnet-5-5')" in sentence
    assert "cairn settings set model.chat claude-sonnet-5-5" in sentence
    assert "\n" not in sentence
    assert cairn.chats.messages(chat.id) == [] and fake.message_requests == []
    assert cairn.settings.get("model.chat") == "claude-sonnet-4-5"  # never switched silently


async def test_a_model_that_retired_since_the_list_was_fetched_names_its_successor(
        cairn, fake, workspace):
    entry = fake.model("claude-sonnet-4-5")
    entry["lifecycle"] = "deprecated"
    cairn.settings.set("model.chat", "claude-sonnet-4-5")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("Still here.")
    assert (await cairn.engine.send(chat.id, "One")).notice is not None
    entry["lifecycle"] = "retired"  # retires overnight; the cached list still says deprecated
    result = await cairn.engine.send(chat.id, "Two")
    assert result.status == "failed"
    assert "was retired on 2026-11-30" in result.error and "'claude-sonnet-5-5'" in result.error
    assert cairn.chats.messages(chat.id)[-2].text == "Two"  # the message is kept


async def test_a_deprecated_model_is_announced_once(cairn, fake, workspace):
    entry = fake.model("claude-haiku-4-5")
    entry.update(lifecycle="deprecated", deprecated_at="2026-11-01T00:00:00Z",
                 retires_at="2027-02-01T00:00:00Z")
    cairn.settings.set("model.chat", "claude-haiku-4-5")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("First.")
    fake.reply_text("Second.")
    first = await cairn.engine.send(chat.id, "One")
    second = await cairn.engine.send(chat.id, "Two")
    assert first.status == second.status == "complete"
    assert "deprecated and retires on 2027-02-01" in first.notice
    assert "Claude Haiku 5.5 ('claude-haiku-5-5')" in first.notice
    assert second.notice is None


async def test_a_retired_knowledge_model_fails_the_rebuild_with_the_sentence(cairn, fake,
                                                                            workspace):
    chat_id = await exchange_in(cairn, fake, workspace)
    cairn.settings.set("model.knowledge", "claude-sonnet-4-5")
    before = cairn.knowledge.get(workspace.id)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed"
    assert "knowledge model" in report.error and "model.knowledge claude-sonnet-5-5" in report.error
    assert cairn.knowledge.get(workspace.id) == before


# ----------------------------------------------------------------------- prices


@pytest.mark.parametrize("model", sorted(PRICES))
def test_every_priced_model_has_a_cost(model):
    usage = Usage(input=10_000, cache_write=2_000, cache_read=3_000, output=500)
    base = PRICES[model].base
    expected = (10_000 * base.input + 2_000 * base.cache_write + 3_000 * base.cache_read
                + 500 * base.output) / 1e6
    assert cost(model, usage) == pytest.approx(expected) and expected > 0
    assert cost(f"{model}-20260101", usage) == pytest.approx(expected)  # a dated id


def test_prices_of_the_current_models_and_the_long_prompt_band():
    one = 1_000_000
    assert cost("claude-sonnet-5-5", Usage(one, one, one, one)) == pytest.approx(2 + 2.5 + 0.10 + 10)
    assert cost("claude-opus-5-5", Usage(one, one, one, one)) == pytest.approx(4 + 5 + 0.20 + 20)
    short = Usage(input=60_000, cache_write=20_000, cache_read=20_000, output=1_000)  # 100,000
    assert cost("claude-haiku-5-5", short) == pytest.approx(
        (60_000 * 0.10 + 20_000 * 0.125 + 20_000 * 0.01 + 1_000 * 0.50) / one)
    long = Usage(input=60_001, cache_write=20_000, cache_read=20_000, output=1_000)
    assert cost("claude-haiku-5-5", long) == pytest.approx(
        (60_001 * 0.50 + 20_000 * 0.625 + 20_000 * 0.05 + 1_000 * 2.50) / one)
    assert cost("llama3.3", short) is None and cost("claude-fable-5-2", short) is None


async def test_a_turn_of_several_rounds_is_priced_round_by_round(cairn, fake, workspace,
                                                                  tmp_path):
    cairn.settings.set("model.chat", "claude-haiku-5-5")
    note = tmp_path / "note.txt"
    note.write_text("hello")
    record = cairn.files.add(workspace.id, note)
    fake.reply_tool_use("readWorkspaceFile", {"file_id": record.id},
                        usage={"input_tokens": 90_000, "output_tokens": 10,
                               "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
    fake.reply_text("Done.", usage={"input_tokens": 110_000, "output_tokens": 10,
                                    "cache_creation_input_tokens": 0,
                                    "cache_read_input_tokens": 0})
    chat = cairn.registry.new_chat(folder=workspace.path)
    result = await cairn.engine.send(chat.id, "Read the note")
    expected = (90_000 * 0.10 + 10 * 0.50) / 1e6 + (110_000 * 0.50 + 10 * 2.50) / 1e6
    assert result.cost_usd == pytest.approx(expected)


def test_an_unpriced_model_shows_cost_unknown_never_zero(cairn, fake, workspace, capsys):
    from app import cli

    fake.add_legacy_model("local-model")
    cairn.settings.set("model.chat", "local-model")
    cairn.settings.set("model.knowledge", "local-model")
    cairn.close()
    fake.reply_text("Hi there.")
    assert cli.main(["ask", "--folder", workspace.path, "Hello"]) == 0
    err = capsys.readouterr().err
    assert "cost unknown" in err and "$0" not in err


def test_cairn_ask_prints_the_cost_of_a_current_model(cairn, fake, workspace, capsys):
    from app import cli

    cairn.close()
    fake.reply_text("Hi there.", usage={"input_tokens": 1000, "output_tokens": 100})
    status = cli.main(["ask", "--folder", workspace.path, "Hello"])
    assert status == 0
    err = capsys.readouterr().err
    assert "1,000 in" in err and "100 out · $0.0030" in err  # 1,000 × $2 + 100 × $10 per Mtok


def test_cairn_ask_refuses_a_retired_model_and_stores_nothing(cairn, fake, workspace, capsys):
    from app import cli

    cairn.settings.set("model.chat", "claude-sonnet-4-5")
    cairn.close()
    assert cli.main(["ask", "--folder", workspace.path, "Hello"]) == 1
    err = capsys.readouterr().err
    assert "retired" in err and "cairn settings set model.chat claude-sonnet-5-5" in err
    assert fake.message_requests == []
    assert cli.main(["chat", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert all(not w["chats"] for w in listing["workspaces"]) and not listing["ungrouped"]


# ----------------------------------------------------------------------- cairn models


def test_cairn_models_lists_lifecycle_and_marks_the_ones_in_use(cairn, fake, capsys):
    from app import cli

    cairn.close()
    assert cli.main(["models"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "active" in lines["claude-sonnet-5-5"] and "← chat" in lines["claude-sonnet-5-5"]
    assert "← knowledge" in lines["claude-haiku-5-5"]
    assert "retired on 2026-11-30, use claude-sonnet-5-5" in lines["claude-sonnet-4-5"]
    assert cli.main(["models", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["claude-sonnet-5-5"]["used_for"] == ["chat"]
    assert rows["claude-sonnet-4-5"]["lifecycle"] == "retired"
    assert rows["claude-sonnet-4-5"]["successor"] == "claude-sonnet-5-5"
    assert rows["claude-haiku-5-5"]["price_per_mtok"]["input"] == 0.10
    assert rows["claude-opus-5-5"]["capabilities"]["structured_outputs"] is True


# ----------------------------------------------------------------------- caching


def _pad_to(cairn, workspace, tokens: int) -> None:
    """Make the chat's system prompt estimate to *tokens* by padding the knowledge."""
    base = "## Facts\n- Padding "
    probe = cairn.registry.new_chat(folder=workspace.path)
    low, high = 0, 20_000  # under the 20,000-character cap: the whole document goes in
    while low < high:  # the smallest padding that reaches the target
        mid = (low + high) // 2
        cairn.knowledge.save(workspace.id, base + "x" * mid + "\n", source="user")
        if estimate_tokens(cairn.engine.system(probe, "")) >= tokens:
            high = mid
        else:
            low = mid + 1
    cairn.knowledge.save(workspace.id, base + "x" * low + "\n", source="user")


@pytest.mark.parametrize("model, minimum", [("claude-sonnet-5-5", 1024),
                                            ("claude-haiku-5-5", 512),
                                            ("claude-haiku-4-5", 4096)])
@pytest.mark.parametrize("above", [True, False])
async def test_the_context_is_cached_just_above_the_model_minimum(cairn, fake, workspace,
                                                                   model, minimum, above):
    cairn.settings.set("model.chat", model)
    cairn.settings.set("memory.enabled", False)
    _pad_to(cairn, workspace, minimum if above else minimum - 8)
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("First.")
    fake.reply_text("Second.")
    first = await cairn.engine.send(chat.id, "One")
    second_chat = cairn.registry.new_chat(folder=workspace.path)
    second = await cairn.engine.send(second_chat.id, "Two")  # same context, new chat
    assert first.status == second.status == "complete"
    system = fake.message_requests[0].body["system"]
    if above:
        assert system[-1]["cache_control"] == {"type": "ephemeral"}
        assert first.usage.cache_write >= minimum
        assert second.usage.cache_read >= minimum  # the context alone was read from cache
    else:
        assert all("cache_control" not in block for block in system)
        assert first.usage.cache_write == 0 and second.usage.cache_read == 0


# ----------------------------------------------------------------------- stop reasons


async def test_a_refusal_is_one_sentence_and_the_message_is_kept(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_message([{"type": "text", "text": "I can"}], stop_reason="refusal")
    result = await cairn.engine.send(chat.id, "Something it will not do")
    assert result.status == "failed" and result.error.startswith("Claude declined to answer")
    user, reply = cairn.chats.messages(chat.id)
    assert user.text == "Something it will not do"
    assert reply.status == "failed" and reply.error == result.error
    assert cairn.rebuilder.pending(chat.id) == []  # a declined reply teaches nothing


async def test_a_full_context_window_keeps_what_arrived(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_message([{"type": "text", "text": "The first half"}],
                       stop_reason="model_context_window_exceeded")
    result = await cairn.engine.send(chat.id, "Go on")
    assert result.status == "failed" and "context window" in result.error
    assert cairn.chats.messages(chat.id)[-1].text == "The first half"


async def test_a_paused_turn_goes_on(cairn, fake, workspace):
    cairn.settings.set("model.chat", "claude-haiku-4-5")
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_message([{"type": "text", "text": "Part one. "}], stop_reason="pause_turn")
    fake.reply_text("Part two.")
    result = await cairn.engine.send(chat.id, "A long job")
    assert result.status == "complete" and result.text == "Part one. Part two."
    assert fake.message_requests[-1].body["messages"][-1]["role"] == "assistant"


async def test_a_day_old_list_never_holds_a_turn_up(cairn, fake, workspace):
    chat = cairn.registry.new_chat(folder=workspace.path)
    fake.reply_text("One.")
    await cairn.engine.send(chat.id, "First")  # fetches the list: there was none
    assert len([r for r in fake.requests if r.method == "GET"]) == 1
    later = datetime.now(timezone.utc) + timedelta(days=2)
    cairn.catalog._now = lambda: later
    fake.reply_text("Two.")
    result = await cairn.engine.send(chat.id, "Second")
    assert result.status == "complete"
    if cairn.engine._refreshing is not None:  # fetched in the background, not before the turn
        await cairn.engine._refreshing
    assert len([r for r in fake.requests if r.method == "GET"]) == 2
    assert not cairn.catalog.stale(cairn.engine.server())


def test_a_model_is_named_before_the_list_is_fetched(quiet_cairn):
    """The raw id showed until the models list came."""
    from app.llm.catalog import readable_name

    assert quiet_cairn.catalog.info("claude-sonnet-4-5") is None  # nothing fetched yet
    assert quiet_cairn.catalog.name("claude-sonnet-4-5") == "Claude Sonnet 4.5"
    assert readable_name("claude-3-5-haiku-20241022") == "Claude 3.5 Haiku"
    assert readable_name("claude-opus-4-1-20250805") == "Claude Opus 4.1"
    assert readable_name("llama3.1:8b") == "llama3.1:8b"  # another server's: as it is
    assert readable_name("claude-") == "claude-"
