"""The contract of every content-block kind (DESIGN §11, app/store/blocks.py): each kind is
stored, replayed into a request the SDK's own types (and the fake server) take, carried by a
bundle out and back in, shown by the chat view and found by search, all from its one
declaration.  A kind added halfway (a declaration without its schema, a schema without its
declaration, a kind without a sample here) fails ``declaration_problems``."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from typing import Any

import pytest

from app.chat.engine import history
from app.sharing.export import export_workspace
from app.sharing.importing import import_bundle
from app.store import block_schemas, blocks
from app.store.blocks import KINDS, VERBATIM, Kind
from app.store.messages import checked_content

SHA = "a" * 64  # replaced by a real blob's hash in the test

# One sample per kind: (role, blocks of that message, a word search must find, or None when
# the kind declares no search text).  Server tools' calls and results come in pairs.
_SEARCH = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
           "input": {"query": "harbour cranes"}}
_FETCH = {"type": "server_tool_use", "id": "srvtoolu_2", "name": "web_fetch",
          "input": {"url": "https://example.org/cranes"}}
SAMPLES: dict[str, tuple[str, list[dict[str, Any]], str | None]] = {
    "text": ("assistant", [{"type": "text", "text": "The zeppelin landed.", "citations": [
        {"type": "web_search_result_location", "cited_text": "It landed.", "url":
         "https://example.org/z", "title": "Zeppelin news", "encrypted_index": "EoABexample"}]}],
             "zeppelin"),
    "thinking": ("assistant", [{"type": "thinking", "thinking": "Pondering gantries.",
                                "signature": "c2lnbmF0dXJl"}], None),
    "redacted_thinking": ("assistant", [{"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="}],
                          None),
    "tool_use": ("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "readWorkspaceFile",
                                "input": {"file_id": "wf_000000000001"}}], None),
    "tool_result": ("user", [{"type": "tool_result", "tool_use_id": "toolu_1",
                              "content": [{"type": "text", "text": "[notes.md — page 1 of 1]"}]}],
                    None),
    "server_tool_use": ("assistant", [_SEARCH, {
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
        "content": {"type": "web_search_tool_result_error", "error_code": "unavailable"}}], None),
    "web_search_tool_result": ("assistant", [_SEARCH, {
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://example.org/cranes",
             "title": "Lighthouse gantries of Rotterdam", "encrypted_content": "EqgfCioexample",
             "page_age": "November 20, 2026"}]}], "gantries"),
    "web_fetch_tool_result": ("assistant", [_FETCH, {
        "type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_2", "content": {
            "type": "web_fetch_result", "url": "https://example.org/cranes",
            "retrieved_at": "2026-12-01T10:00:00Z",
            "content": {"type": "document", "title": "Quayside almanac",
                        "source": {"type": "text", "media_type": "text/plain",
                                   "data": "Cranes lift."}}}}], "almanac"),
    # A PDF attachment becomes a `document` block when sent, an image an `image` block.
    "attachment": ("user", [{"type": "attachment", "name": "brief.pdf",
                             "media_type": "application/pdf", "size": 0, "sha256": SHA}], None),
}


def declaration_problems(kinds: dict[str, Kind], samples: dict[str, Any]) -> list[str]:
    """What is missing for a kind to be whole: its schema, its sample, every field set."""
    problems = []
    for name, kind in kinds.items():
        model = getattr(block_schemas, kind.schema, None)
        if model is None:
            problems.append(f"{name}: no schema named {kind.schema}")
        elif model.model_fields["type"].annotation.__args__ != (name,):
            problems.append(f"{name}: its schema is for another type")
        if name not in samples:
            problems.append(f"{name}: no sample in the contract test")
        if not kind.roles or kind.stored not in (blocks.VERBATIM, blocks.WRITTEN, blocks.REFERENCE):
            problems.append(f"{name}: roles or storage not declared")
        if kind.shown not in (blocks.SHOWN_TEXT, blocks.SHOWN_THINKING, blocks.SHOWN_TOOL,
                              blocks.SHOWN_WEB, blocks.SHOWN_FILE, blocks.SHOWN_NOTHING):
            problems.append(f"{name}: no way of showing it")
    for model_name in dir(block_schemas):
        model = getattr(block_schemas, model_name)
        if isinstance(model, type) and model_name.endswith("Block") \
                and issubclass(model, block_schemas.Strict):
            (kind_name,) = model.model_fields["type"].annotation.__args__
            if kind_name not in kinds:
                problems.append(f"{kind_name}: a schema ({model_name}) without a declaration")
    problems += [f"{name}: a sample of no declared kind" for name in samples if name not in kinds]
    return problems


def test_every_kind_is_declared_whole() -> None:
    assert declaration_problems(KINDS, SAMPLES) == []


def test_every_block_the_sdk_can_send_for_cairns_tools_is_declared() -> None:
    """What a reply holds with the tools Cairn offers (client tools, web search and fetch)."""
    sent = {"text", "thinking", "redacted_thinking", "tool_use", "server_tool_use",
            "web_search_tool_result", "web_fetch_tool_result"}
    assert sent <= set(KINDS)


def test_a_kind_added_halfway_fails() -> None:
    """A new kind declared without its schema, or with a schema and no declaration, or
    without a sample, is caught."""
    halfway = dict(KINDS)
    halfway["code_execution_tool_result"] = dataclasses.replace(
        KINDS["web_fetch_tool_result"], name="code_execution_tool_result",
        schema="CodeExecutionToolResultBlock")
    problems = declaration_problems(halfway, SAMPLES)
    assert "code_execution_tool_result: no schema named CodeExecutionToolResultBlock" in problems
    assert "code_execution_tool_result: no sample in the contract test" in problems
    without = {k: v for k, v in KINDS.items() if k != "web_fetch_tool_result"}
    assert "web_fetch_tool_result: a schema (WebFetchToolResultBlock) without a declaration" \
        in declaration_problems(without, {k: v for k, v in SAMPLES.items() if k in without})
    with pytest.raises(TypeError):  # a declaration must say every part
        Kind("x", "XBlock", frozenset({"user"}), False, VERBATIM)  # type: ignore[call-arg]


def _sample(kind: str, sha: str) -> tuple[str, list[dict[str, Any]], str | None]:
    role, content, word = copy.deepcopy(SAMPLES[kind])
    for block in content:
        if block.get("sha256") == SHA:
            block["sha256"] = sha
    return role, content, word


def _conversation(kind: str, sha: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """The sample inside a tool loop still running: a question, a reply that calls a tool
    (the sample among its blocks), the tool's result."""
    role, content, _ = _sample(kind, sha)
    ask: list[dict[str, Any]] = [{"type": "text", "text": "What about the harbour?"}]
    reply: list[dict[str, Any]] = [{"type": "thinking", "thinking": "Look it up.",
                                    "signature": "c2ln"}]
    call = {"type": "tool_use", "id": "toolu_1", "name": "readWorkspaceFile",
            "input": {"file_id": "wf_000000000001"}}
    result: list[dict[str, Any]] = [{"type": "tool_result", "tool_use_id": "toolu_1",
                                     "content": [{"type": "text", "text": "nothing"}]}]
    if role == "user" and kind == "tool_result":
        return [("user", ask), ("assistant", [*reply, call]), ("user", content)]
    if role == "user":
        return [("user", ask + content), ("assistant", [*reply, call]), ("user", result)]
    if kind == "thinking":  # the reply opens with it, as the API requires
        reply = content
    elif kind == "tool_use":  # the sample is the call
        call = content[0]
    else:
        reply = [*reply, *content]
    return [("user", ask), ("assistant", [*reply, call]), ("user", result)]


def _validate_request(messages: list[dict[str, Any]]) -> None:
    """Every message as the SDK's own request type takes it."""
    import pydantic
    from anthropic.types import MessageParam

    adapter = pydantic.TypeAdapter(MessageParam)
    for message in messages:
        adapter.validate_python(message)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_stored_replayed_carried_shown_and_found(kind, online, workspace, fake,
                                                             tmp_path) -> None:
    from ui.chat.entries import build

    pdf = tmp_path / "brief.pdf"
    pdf.write_bytes(b"%PDF-1.4\n" + b"0" * 200)
    sha = online.files.attach(pdf)["sha256"]
    role, content, word = _sample(kind, sha)
    declared = KINDS[kind]
    assert role in declared.roles
    chat = online.registry.new_chat(folder=workspace.path, title="Harbour")

    # Stored: the message passes its kind's strict schema and reads back as written.
    conversation = _conversation(kind, sha)
    for r, blocks_ in conversation:
        checked_content(r, blocks_)
        online.chats.append(chat.id, r, blocks_)
    stored = online.chats.messages(chat.id)
    assert [m.content for m in stored] == [c for _, c in conversation]

    # Replayed in the running loop: a request the SDK's types take, verbatim kinds unchanged.
    replayed = history(stored, online.files.expand)
    _validate_request(replayed)
    sent = [b for m in replayed for b in m["content"]]
    sample_blocks = [b for b in content if b.get("type") == kind]
    if declared.stored == VERBATIM:
        for block in sample_blocks:
            assert any({k: v for k, v in b.items() if k != "cache_control"} == block
                       for b in sent), f"{kind} is not sent back verbatim"
    if kind == "attachment":
        assert any(b.get("type") == "document" for b in sent)

    # Replayed on the next turn, through the real SDK to the fake server.
    fake.reply_text("Noted, and the cranes are fine.")
    result = asyncio.run(online.engine.send(chat.id, "And next?"))
    assert result.status == "complete", result.error
    _validate_request(fake.requests[-1].body["messages"])
    if kind in ("server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "text"):
        later = [b for m in fake.requests[-1].body["messages"] for b in m["content"]]
        for block in sample_blocks:  # the next turn keeps them (citations, encrypted content)
            assert any({k: v for k, v in b.items() if k != "cache_control"} == block
                       for b in later)

    # Carried by a bundle, out and back in, unchanged.
    bundle = tmp_path / "out.cairn"
    export_workspace(online.registry, workspace.id, bundle, with_chats=True)
    target = tmp_path / "imported"
    imported = import_bundle(online.registry, bundle, str(target))
    (copy_chat,) = online.registry.chats_of(imported.workspace.id)
    again = online.chats.messages(copy_chat.id)
    assert [m.content for m in again][:3] == [c for _, c in conversation]

    # Shown: the chat view builds its entries from the stored messages.
    entries = build(online.chats.messages(chat.id))
    assert entries and entries[0].kind == "person"
    if declared.shown == blocks.SHOWN_TEXT and role == "assistant":
        assert "zeppelin" in entries[1].text
    if kind == "server_tool_use":
        assert "Searched the web: harbour cranes" in entries[1].text
        assert "The web search did not work" in entries[1].text

    # Found: search indexes what the kind declares, in both chats.
    if word is not None:
        hits = [h for h in online.search.find(word) if h.kind == "message"]
        assert {h.chat for h in hits} == {chat.id, copy_chat.id}
    else:
        assert declared.search(content[-1] if kind != "attachment" else content[0]) is None
