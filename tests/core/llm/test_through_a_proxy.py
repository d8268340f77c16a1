"""Cairn through LiteLLM's proxy and other servers that are not Anthropic's:
a models list that describes no capabilities, refusals wrapped in the proxy's
words, the proxy's answer to a wrong key, and every sentence naming the server it is about.

The fake answers as the proxy does (``fake.as_litellm()``: tests/fake_anthropic.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.llm.catalog import Catalog
from tests.conftest import TEST_KEY
from tests.helpers import LONG, add_op, run, talk

LAUNCH = add_op("Launch is 2027-04-15", "launch date is 2027-04-15")


@pytest.fixture
def cairn(online, fake):
    fake.as_litellm(master_key=TEST_KEY)
    return online


async def _first_turn(cairn, fake, workspace) -> str:
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "When do we launch?")
    return chat.id


# ----------------------------------------------------------------- item 1: knowledge


async def test_knowledge_updates_on_the_first_turn_through_the_proxy(cairn, fake, workspace):
    """Today's knowledge model behind the proxy: the list says nothing of it, so the
    structured shape is asked first, and it is what today's models take."""
    chat_id = await _first_turn(cairn, fake, workspace)
    assert cairn.catalog.info("claude-haiku-5-5").described is False  # the proxy's list
    before = len(fake.message_requests)
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    assert "Launch is 2027-04-15" in cairn.knowledge.get(workspace.id).text
    (sent,) = fake.message_requests[before:]
    assert sent.body["output_config"]["format"]["type"] == "json_schema"
    assert "tool_choice" not in sent.body
    # Remembered for this model on this server, in the data folder: the next start asks so.
    server = cairn.engine.server()
    again = Catalog(cairn.registry.db.path.parent)
    assert again.knows_shape("claude-haiku-5-5", server)
    assert not again.knows_shape("claude-haiku-5-5", "https://api.anthropic.com")


async def test_a_wrapped_refusal_of_the_structured_shape_falls_back_and_is_remembered(
        cairn, fake, workspace):
    """A model behind the proxy that refuses structured output: the proxy's wrapped 400 is
    recognised, the forced tool is tried, and the next start asks with it at once."""
    fake.add_legacy_model("local-llama")  # takes a forced tool, not structured output
    cairn.settings.set("model.knowledge", "local-llama")
    chat_id = await _first_turn(cairn, fake, workspace)
    before = len(fake.message_requests)
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    structured, forced = fake.message_requests[before:]
    assert "output_config" in structured.body and forced.body["tool_choice"]["type"] == "tool"
    server = cairn.engine.server()
    assert Catalog(cairn.registry.db.path.parent).knowledge_shape("local-llama", server) == "tool"

    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "And the colour?")
    before = len(fake.message_requests)
    fake.reply_json("update_knowledge", {"ops": []})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "nothing"
    (only,) = fake.message_requests[before:]  # no second probe
    assert only.body["tool_choice"]["type"] == "tool"


async def test_a_wrapped_refusal_of_the_forced_tool_falls_back(cairn, fake, workspace):
    """What the issue saw: the forced tool (remembered from an older proxy, say) refused by
    today's model and wrapped by the proxy; the structured shape is tried and kept."""
    server = cairn.engine.server()
    cairn.catalog.remember_shape("claude-haiku-5-5", "tool", server)
    chat_id = await _first_turn(cairn, fake, workspace)
    before = len(fake.message_requests)
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    forced, structured = fake.message_requests[before:]
    assert forced.body["tool_choice"]["type"] == "tool" and "output_config" in structured.body
    assert cairn.catalog.knowledge_shape("claude-haiku-5-5", server) == "structured"


async def test_neither_shape_says_what_to_change_not_that_the_next_turn_tries(
        cairn, fake, workspace, capsys):
    fake.refuse_structured.add("claude-haiku-5-5")  # and, today's model, no forced tool
    chat_id = await _first_turn(cairn, fake, workspace)
    before = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed"
    assert len(fake.message_requests) - before == 2
    assert report.error == (
        f"The knowledge model 'claude-haiku-5-5' on the server at 127.0.0.1:{fake.port} takes "
        "neither a structured answer (output_config.format) nor a forced tool call "
        "(tool_choice), so it cannot update knowledge; the documents are unchanged. Choose "
        "another knowledge model in Settings or with `cairn settings set model.knowledge "
        "MODEL`.")
    assert "tries again" not in report.error
    assert cairn.knowledge.get(workspace.id).version == 0


@pytest.mark.parametrize("stop_reason", ["refusal", "max_tokens"])
async def test_a_declined_or_cut_answer_says_what_to_change_not_that_the_next_turn_tries(
        cairn, fake, workspace, stop_reason):
    """Both would happen again on the next turn (the same exchange, or a longer one): the
    sentence says what to change instead of promising a retry that fails alike."""
    chat_id = await _first_turn(cairn, fake, workspace)
    fake.reply_text('{"ops": []', stop_reason=stop_reason)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed"
    assert "tries again" not in report.error
    assert report.error.endswith("knowledge model" + (" " if stop_reason == "refusal" else
                                 " that writes longer answers ") + "in Settings or with "
                                 "`cairn settings set model.knowledge MODEL`.")
    assert cairn.knowledge.get(workspace.id).version == 0


async def test_another_refusal_is_said_unwrapped_and_names_the_server(cairn, fake, workspace):
    chat_id = await _first_turn(cairn, fake, workspace)
    fake.reply_error_status(400, "invalid_request_error", "messages: the request is too large.")
    before = len(fake.message_requests)
    report = await cairn.rebuilder.rebuild(chat_id)
    assert report.status == "failed" and len(fake.message_requests) - before == 1
    assert report.error == (f"The server at 127.0.0.1:{fake.port} refused the request: "
                            "messages: the request is too large.")


def test_cairn_ask_through_the_proxy_updates_knowledge_on_the_first_turn(
        cairn, fake, workspace, capsys):
    cairn.close()
    fake.reply_text(LONG)
    fake.reply_json("update_knowledge", {"ops": [LAUNCH]})
    code, out, err = run(capsys, "ask", "--folder", workspace.path, "When do we launch?")
    assert code == 0, err
    assert LONG in out
    assert "Knowledge: 1 change applied" in err and "not updated" not in err


# ----------------------------------------------------------------- item 2: the server named


async def test_the_proxy_s_wrong_key_reads_as_a_key_problem(online, fake, workspace):
    fake.as_litellm(master_key="sk-the-proxy-s-master-key")
    chat = online.registry.new_chat(folder=workspace.path)
    result = await online.engine.send(chat.id, "Hello?")
    assert result.status == "failed"
    assert result.error == (
        f"The server at 127.0.0.1:{fake.port} did not accept the API key (it says “No "
        "connected db.”). Check or replace the key for this server in Settings or with "
        "`cairn key set`; your message is kept.")
    assert "Anthropic" not in result.error


def _error(status: int, body: dict, url: str) -> BaseException:
    """The SDK's own error for *status*, as a call to *url* raises it."""
    import anthropic
    import httpx2 as httpx

    request = httpx.Request("POST", url)
    response = httpx.Response(status, request=request, json=body)
    client = anthropic.Anthropic(api_key="k", base_url=url)
    return client._make_status_error_from_response(response)


_ERRORS = [
    (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "No."}}),
    (401, {"type": "error", "error": {"type": "authentication_error", "message": "bad"}}),
    (429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
    (500, {"type": "error", "error": {"type": "api_error", "message": "oops"}}),
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
]

_HOSTS = st.one_of(
    st.from_regex(r"\A[a-z][a-z0-9-]{0,20}(\.[a-z][a-z0-9-]{0,10}){0,2}\Z"),
    st.ip_addresses(v=4).map(str))


@hsettings(max_examples=60, deadline=None)
@given(host=_HOSTS, port=st.one_of(st.none(), st.integers(1, 65535)),
       scheme=st.sampled_from(["http", "https"]), case=st.sampled_from(_ERRORS))
def test_every_failure_names_the_server_it_came_from(host, port, scheme, case):
    """Over base URLs: "Anthropic" only for Anthropic's own, else the host (and port)."""
    from app.llm.client import explain

    netloc = host + (f":{port}" if port else "")
    status, body = case
    sentence = str(explain(_error(status, body, f"{scheme}://{netloc}/v1/messages"),
                           model="m"))
    if host == "api.anthropic.com" and scheme == "https" and port in (None, 443):
        assert "Anthropic" in sentence
    else:
        assert "Anthropic" not in sentence
        shown_port = f":{port}" if port and not (port == {"http": 80, "https": 443}[scheme]) \
            else ""
        assert f"the server at {host}{shown_port}" in sentence.replace("The server", "the server")


@pytest.mark.parametrize("status, body", _ERRORS)
def test_anthropic_s_own_server_is_called_anthropic(status, body):
    from app.llm.client import explain

    sentence = str(explain(_error(status, body, "https://api.anthropic.com/v1/messages"),
                           model="m"))
    assert sentence.startswith("Anthropic") or "Anthropic" in sentence, sentence


def test_a_connection_failure_to_a_local_server_says_so():
    import anthropic
    import httpx2 as httpx

    from app.llm.client import explain

    error = anthropic.APIConnectionError(request=httpx.Request("POST",
                                                               "http://localhost:4000/v1/messages"))
    assert str(explain(error, model="m")) == (
        "Cannot reach the server at localhost:4000. Check that it is running (and the base "
        "URL, in Settings or with `cairn settings show`); your message is kept.")
    error = anthropic.APIConnectionError(request=httpx.Request(
        "POST", "https://api.anthropic.com/v1/messages"))
    assert str(explain(error, model="m")).startswith("Cannot reach Anthropic. Check your "
                                                     "internet connection")


@pytest.mark.parametrize("message, shape", [
    # LiteLLM 1.108.7's /v1/messages, as it answered a forced tool on 2026-12-06
    ('litellm.BadRequestError: AnthropicException - {"type": "error", "error": {"type": '
     '"invalid_request_error", "message": "tool_choice: type \\"tool\\" and \\"any\\" are '
     'not supported for this model"}}\n\nLiteLLM: model group \'claude-haiku-5-5\' failed '
     'with the error above. No fallback was attempted.', "tool"),
    # its other routes' ProxyException shape
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":'
     '"invalid_request_error","message":"tool_choice: type \\"tool\\" and \\"any\\" are not '
     'supported for this model"}}. Received Model Group=claude\nAvailable Model Group '
     'Fallbacks=None', "tool"),
    ('litellm.BadRequestError: AnthropicException - {"type":"error","error":{"type":'
     '"invalid_request_error","message":"output_config.format: structured outputs are not '
     'supported for this model"}}', "structured"),
    ("Model does not support tool_choice", "tool"),
    ("output_config.effort: effort is not supported for this model", None),
    ("output_config.format.schema: maxLength is not supported", None),
    ("tool_choice may only be specified while providing tools.", None),
    ("messages: the request is too large.", None),
])
def test_a_refused_shape_is_found_anywhere_in_the_refusal(message, shape):
    from app.llm.requests import unsupported_shape

    body = {"error": {"message": message, "type": "None", "param": "None", "code": "400"}}
    assert unsupported_shape(_error(400, body, "http://localhost:4000/v1/messages")) == shape


def test_the_fake_answers_as_the_proxy_does(fake):
    """The fake's LiteLLM shapes (so the tests above test what the proxy sends)."""
    import urllib.request

    fake.as_litellm()
    with urllib.request.urlopen(f"{fake.base_url}/v1/models") as answer:
        listed = json.load(answer)
    assert all("capabilities" not in m and "lifecycle" not in m for m in listed["data"])
    assert listed["data"][0]["type"] == "model" and listed["has_more"] is False


def test_settings_test_reads_the_proxy_s_400_as_a_key_problem():
    from ui.settings import failure_sentence

    error = _error(400, {"error": {"message": "No connected db.", "type": "no_db_connection",
                                   "param": "None", "code": "400"}},
                   "http://localhost:4000/v1/models")
    assert failure_sentence(error, "http://localhost:4000") == (
        "The server did not accept this key (it says “No connected db.”): check it, or paste "
        "a new one and Save.")


def test_the_missing_key_sentence_names_whose_key():
    from app.store.settings import no_key_sentence

    assert "Add your Anthropic API key" in no_key_sentence(None)
    assert "Add the API key for the server at localhost:4000 in Settings" in no_key_sentence(
        None, "the server at localhost:4000")


async def test_a_server_that_ignores_both_shapes_says_what_to_change(online, fake, workspace):
    """A local server without a models endpoint that answers in words however it is asked:
    one try each way, then a sentence naming the change, not a promise."""
    fake.models_status = 404
    online.settings.set("model.chat", "llama3.3")
    online.settings.set("model.knowledge", "llama3.3")
    chat_id = await _first_turn(online, fake, workspace)
    fake.reply_text("I would note the launch date, which seems worth remembering later on.")
    fake.reply_text("Noted: the launch date, which seems worth remembering later on, too.")
    report = await online.rebuilder.rebuild(chat_id)
    assert report.status == "failed" and fake.pending == 0
    assert report.error == (
        f"The knowledge model 'llama3.3' on the server at 127.0.0.1:{fake.port} records nothing "
        "either way Cairn asks (a structured answer, a forced tool call), so it cannot update "
        "knowledge; the documents are unchanged. Choose another knowledge model in Settings or "
        "with `cairn settings set model.knowledge MODEL`.")
    assert not online.catalog.knows_shape("llama3.3", online.engine.server())
