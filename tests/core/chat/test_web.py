"""Claude searching the web (server tools): off by default, on per workspace or for one
message, the newest tool versions, blocks stored and replayed verbatim, sources, the searches'
cost, pause_turn, a failed search, and what the rebuild hears."""

from __future__ import annotations

from typing import Any

import pytest

from app.chat.web import set_web_settings, sources, web_line, web_settings
from app.errors import Refused
from app.knowledge.rebuild import exchanges_of
from app.llm.prices import WEB_SEARCH_PER_THOUSAND, cost
from app.records import WebSettings
from app.store.messages import Usage
from tests.fake_anthropic import cited_text, web_search_result

QT = web_search_result("https://www.qt.io/blog/qt-for-python-6.12",
                       "Qt for Python 6.12 released", page_age="November 20, 2026",
                       encrypted_content="EqgfCioIARgBexample1")
PYPI = web_search_result("https://pypi.org/project/PySide6/", "PySide6 · PyPI",
                         encrypted_content="EqgfCioIARgBexample2")
ANSWER = ["Here is what the release notes say. ",
          cited_text("PySide6 6.12 is built on Qt 6.12 and supports Python 3.10 to 3.14.", QT,
                     cited="Qt for Python 6.12 is based on Qt 6.12.")]


def reply_search(fake: Any, **kwargs: Any) -> None:
    """A reply that searches once, as shared/fixtures/anthropic-stream-web-search.sse."""
    fake.reply_web_search("PySide6 6.12 release notes", [QT, PYPI], answer=ANSWER,
                          usage={"input_tokens": 2095, "output_tokens": 96}, **kwargs)


def tools_of(request: Any) -> list[dict[str, Any]]:
    return list(request.body.get("tools", []))


async def test_web_search_is_off_until_turned_on(online, workspace, fake):
    chat = online.registry.new_chat(folder=workspace.path)
    assert web_settings(online.registry, online.web, workspace.id) == WebSettings()
    fake.reply_text("No web here.")
    await online.engine.send(chat.id, "What is new?")
    assert not any(t.get("name") == "web_search" for t in tools_of(fake.requests[-1]))
    fake.reply_text("This once.")
    await online.engine.send(chat.id, "Look it up.", web=True)
    names = {t["name"]: t for t in tools_of(fake.requests[-1])}
    assert names["web_search"]["type"] == "web_search_20260318"  # the newest the model takes
    assert names["web_fetch"]["type"] == "web_fetch_20260318"
    assert names["web_search"]["max_uses"] == 5


async def test_the_workspace_switch_and_its_sites(online, workspace, fake, folders):
    (inner_path,) = folders("Acme Inc/Brand")
    inner, _ = online.registry.add_workspace(inner_path)
    set_web_settings(online.registry, online.web, workspace.id,
                     WebSettings(True, 3, ("Docs.Python.org/", "https://qt.io"), ()))
    assert web_settings(online.registry, online.web, inner.id).allowed_domains == (
        "docs.python.org", "qt.io")  # a folder without its own takes its project's
    chat = online.registry.new_chat(folder=inner_path)
    fake.reply_text("Searched.")
    await online.engine.send(chat.id, "Search.")
    search = next(t for t in tools_of(fake.requests[-1]) if t["name"] == "web_search")
    assert search["max_uses"] == 3 and search["allowed_domains"] == ["docs.python.org", "qt.io"]
    assert "blocked_domains" not in search
    fake.reply_text("Not this time.")
    await online.engine.send(chat.id, "No search.", web=False)
    assert not any(t.get("name") == "web_search" for t in tools_of(fake.requests[-1]))


@pytest.mark.parametrize("settings, sentence", [
    (WebSettings(True, 0), "should be a whole number from 1 to 50"),
    (WebSettings(True, 5, ("a.org",), ("b.org",)), "not both"),
    (WebSettings(True, 5, ("not a site",)), "name a site like example.com"),
])
def test_refused_settings_change_nothing(online, workspace, settings, sentence):
    with pytest.raises(Refused, match=sentence):
        set_web_settings(online.registry, online.web, workspace.id, settings)
    assert online.web.get(workspace.id) is None
    with pytest.raises(Refused):
        set_web_settings(online.registry, online.web, "ws_nowhere0000", WebSettings(True))


async def test_a_search_is_stored_replayed_verbatim_priced_and_found(online, workspace, fake):
    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    reply_search(fake)
    result = await online.engine.send(chat.id, "What is in this week's PySide6 release?")
    assert result.status == "complete", result.error
    assert result.text.endswith("supports Python 3.10 to 3.14.")
    assert result.usage.web_searches == 1
    usage = Usage(2095, 0, 0, 96, web_searches=1)
    assert result.cost_usd == pytest.approx(cost("claude-sonnet-5-5", usage))
    assert cost("claude-sonnet-5-5", usage) - cost("claude-sonnet-5-5", Usage(2095, 0, 0, 96)) \
        == pytest.approx(WEB_SEARCH_PER_THOUSAND / 1000)

    stored = online.chats.messages(chat.id)
    reply = stored[-1].content
    found = next(b for b in reply if b["type"] == "web_search_tool_result")
    assert found["content"][0]["encrypted_content"].endswith("example1")
    assert [s.title for s in sources(stored)] == ["Qt for Python 6.12 released", "PySide6 · PyPI"]
    assert stored[-1].usage is not None and stored[-1].usage.web_searches == 1
    assert web_line(next(b for b in reply if b["type"] == "server_tool_use")) == \
        "Searched the web: PySide6 6.12 release notes"

    fake.reply_text("Anything else?")
    await online.engine.send(chat.id, "Thanks.")
    sent = [b for m in fake.requests[-1].body["messages"] for b in m["content"]]
    plain = [{k: v for k, v in b.items() if k != "cache_control"} for b in sent]
    for block in reply:
        if block["type"] in ("server_tool_use", "web_search_tool_result"):
            assert block in plain  # verbatim, encrypted content included
    stored_cited = next(b for b in reply if b.get("citations"))
    assert stored_cited in plain  # the citation goes back with its encrypted index

    hits = online.search.find("PyPI")  # the sources' titles are found
    assert any(h.kind == "message" and h.chat == chat.id for h in hits)


async def test_pause_turn_continues_the_turn(online, workspace, fake):
    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    reply_search(fake, stop_reason="pause_turn")
    fake.reply_text(" And that is all.")
    result = await online.engine.send(chat.id, "Search on.")
    assert result.status == "complete" and result.text.endswith("And that is all.")
    second = fake.requests[-1].body["messages"]
    assert second[-1]["role"] == "assistant"  # the paused turn, sent back as it was
    assert any(b["type"] == "web_search_tool_result" for b in second[-1]["content"])


async def test_a_failed_search_is_one_sentence_and_the_turn_goes_on(online, workspace, fake):
    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_web_search("PySide6 deprecations", error_code="max_uses_exceeded",
                          answer=["I could not search again; from what I know, nothing."])
    result = await online.engine.send(chat.id, "Search.")
    assert result.status == "complete"
    block = next(b for b in online.chats.messages(chat.id)[-1].content
                 if b["type"] == "web_search_tool_result")
    assert web_line(block) == ("The web search did not work: the searches allowed for one "
                               "reply were used up.")


async def test_words_from_the_web_are_never_the_persons(online, workspace, fake):
    """The rebuild hears the person's own text (and Claude's reply): never a search result,
    a fetched page or a tool's answer as the person's words."""
    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    reply_search(fake)
    await online.engine.send(chat.id, "What is new in PySide6?")
    online.chats.append(chat.id, "user", [{"type": "tool_result", "tool_use_id": "toolu_x",
                                           "content": [{"type": "text",
                                                        "text": "Our launch is 2027-01-01"}]}])
    (exchange,) = exchanges_of(online.chats.messages(chat.id))
    assert exchange.user == "What is new in PySide6?"
    assert "Qt for Python" not in exchange.user and "PyPI" not in exchange.reply
    assert "2027-01-01" not in exchange.user


def test_the_command_line_turns_web_search_on_and_lists_the_sources(online, workspace, fake,
                                                                    capsys):
    import json

    from app import cli

    online.close()
    assert cli.main(["workspace", "web", workspace.id, "on", "--max-uses", "3", "--block",
                     "example.com", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "id": workspace.id, "enabled": True, "max_uses": 3, "allowed_domains": [],
        "blocked_domains": ["example.com"]}
    assert cli.main(["workspace", "web", workspace.id, "on", "--allow", "a.org", "--block",
                     "b.org"]) == 1
    assert "not both" in capsys.readouterr().err
    assert cli.main(["workspace", "web", workspace.id, "off"]) == 0
    assert "does not search the web" in capsys.readouterr().out

    reply_search(fake)
    assert cli.main(["ask", "--folder", workspace.path, "--web", "What is new?"]) == 0
    out, err = capsys.readouterr()
    asked = [t for r in fake.requests for t in (r.body or {}).get("tools", ())
             if t.get("name") == "web_search"]  # (the last request is the rebuild's)
    search = asked[-1]
    assert search["max_uses"] == 3 and search["blocked_domains"] == ["example.com"]
    assert out.startswith("Here is what the release notes say. PySide6 6.12")
    assert out.endswith("Sources:\n  1. Qt for Python 6.12 released — "
                        "https://www.qt.io/blog/qt-for-python-6.12\n"
                        "  2. PySide6 · PyPI — https://pypi.org/project/PySide6/\n")
    assert "1 web search · $" in err

    reply_search(fake)
    assert cli.main(["ask", "--folder", workspace.path, "--web", "--json", "Again?"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["web_searches"] == 1 and summary["usage"]["web_searches"] == 1
    assert summary["sources"] == [
        {"url": "https://www.qt.io/blog/qt-for-python-6.12", "title": "Qt for Python 6.12 released"},
        {"url": "https://pypi.org/project/PySide6/", "title": "PySide6 · PyPI"}]
    assert summary["cost_usd"] == pytest.approx(
        cost("claude-sonnet-5-5", Usage(2095, 0, 0, 96, web_searches=1)))


async def test_the_windows_operations(online, workspace, fake):
    from app.ops import Operations

    ops = Operations(online)
    assert await ops.web_settings(workspace.id) == WebSettings()
    saved, _changes = await ops.set_web_settings(workspace.id, WebSettings(True, 2))
    assert saved == WebSettings(True, 2) == await ops.web_settings(workspace.id)
    with pytest.raises(Refused):
        await ops.set_web_settings(workspace.id, WebSettings(True, 51))
    assert await ops.web_settings(workspace.id) == WebSettings(True, 2)
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_text("Quiet.")
    turn = await ops.start_turn(chat.id, "No web now.", web=False)
    assert (await turn.result()).status == "complete"
    assert not any(t.get("name") == "web_search" for t in tools_of(fake.requests[-1]))


async def test_a_search_is_heard_as_it_happens(online, workspace, fake):
    from app.chat.turn import RoundStored, TextDelta, WebActivity

    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    reply_search(fake)
    heard: list[object] = []
    turn = await online.engine.start_turn(chat.id, "Search.")
    turn.subscribe(heard.append)
    await turn.result()
    web = [e for e in heard if isinstance(e, WebActivity)]
    assert [e.line for e in web] == ["Searched the web: PySide6 6.12 release notes"]
    order = [type(e) for e in heard if isinstance(e, (WebActivity, TextDelta, RoundStored))]
    assert order.index(WebActivity) < order.index(TextDelta) < order.index(RoundStored)


def test_a_search_split_by_a_pause_goes_back_whole(online):
    """The server paused between a search and its results: both messages' blocks go back,
    the call and its result together."""
    from app.chat.engine import history
    from app.store.messages import Message

    def message(n: int, role: str, content: list[dict[str, Any]]) -> Message:
        return Message(n, "ch_x", role, content, "complete", None, None, None, None, "")

    use = {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search",
           "input": {"query": "cranes"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_9", "content": [
        {"type": "web_search_result", "url": "https://a.org/", "title": "A",
         "encrypted_content": "Eq"}]}
    lone = {"type": "server_tool_use", "id": "srvtoolu_8", "name": "web_search",
            "input": {"query": "never answered"}}
    sent = history([message(1, "user", [{"type": "text", "text": "Search"}]),
                    message(2, "assistant", [lone, use]),
                    message(3, "assistant", [found, {"type": "text", "text": "Done."}])],
                   online.files.expand)
    blocks = [b for m in sent for b in m["content"]]
    assert use in blocks and {k: v for k, v in found.items()} in blocks
    assert lone not in blocks and len(sent) == 2


async def test_retry_and_edit_take_the_messages_web_choice(online, workspace, fake):
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_error_status(400, "invalid_request_error", "no")
    failed = await online.engine.send(chat.id, "Search it.", web=True)
    assert failed.status == "failed"
    fake.reply_text("Found it.")
    turn = await online.engine.retry(chat.id, web=True)
    assert (await turn.result()).status == "complete"
    assert any(t.get("name") == "web_search" for t in tools_of(fake.requests[-1]))
    person = next(m for m in online.chats.messages(chat.id) if m.from_person)
    fake.reply_text("Without the web.")
    turn = await online.engine.edit_and_resend(chat.id, person.id, "From memory.")
    assert (await turn.result()).status == "complete"
    assert not any(t.get("name") == "web_search" for t in tools_of(fake.requests[-1]))


async def test_a_reply_stopped_after_its_search_keeps_the_search_and_its_sources(
        online, workspace, fake):
    """Stop pressed while the answer streams, after the search and its results arrived: the
    stopped reply keeps both blocks verbatim (its sources stay, and the next turn sends them
    back with their encrypted content), not only the text that had streamed."""
    import asyncio

    from app.chat.turn import TextDelta

    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    fake.reply_web_search("PySide6 6.12 release notes", [QT, PYPI],
                          answer=["Here is what the release notes say, at some length. " * 20],
                          chunk=5, delay=0.02)
    turn = await online.engine.start_turn(chat.id, "What is in this week's PySide6 release?")
    first_text = asyncio.Event()
    turn.subscribe(lambda event: first_text.set() if isinstance(event, TextDelta) else None)
    await asyncio.wait_for(first_text.wait(), timeout=10)
    turn.cancel()
    result = await turn.result()
    assert result.status == "stopped" and result.usage.web_searches == 1  # it ran: billed
    stored = online.chats.messages(chat.id)
    assert stored[-1].status == "stopped"
    assert stored[-1].cost_usd == pytest.approx(cost("claude-sonnet-5-5", result.usage))
    kept = [b for b in stored[-1].content if b["type"] in ("server_tool_use",
                                                            "web_search_tool_result")]
    assert [b["type"] for b in kept] == ["server_tool_use", "web_search_tool_result"]
    assert kept[1]["content"][0]["encrypted_content"] == "EqgfCioIARgBexample1"
    assert [s.title for s in sources(stored)] == ["Qt for Python 6.12 released", "PySide6 · PyPI"]

    fake.reply_text("Anything else?")
    assert (await online.engine.send(chat.id, "Go on.")).status == "complete"
    sent = [{k: v for k, v in b.items() if k != "cache_control"}
            for m in fake.requests[-1].body["messages"] for b in m["content"]]
    assert all(block in sent for block in kept)  # verbatim, encrypted content included


async def test_a_turn_the_server_keeps_pausing_ends_at_the_round_bound_saying_so(
        online, workspace, fake):
    """pause_turn in every round, the last one too: the reply ends stopped with the bound's
    sentence, not complete as if the paused answer were all of it; the next message works."""
    from app.chat.turn import BOUND_REACHED, MAX_TOOL_ROUNDS

    set_web_settings(online.registry, online.web, workspace.id, WebSettings(enabled=True))
    chat = online.registry.new_chat(folder=workspace.path)
    for _ in range(MAX_TOOL_ROUNDS + 1):
        reply_search(fake, stop_reason="pause_turn")
    result = await online.engine.send(chat.id, "Search on and on.")
    assert result.status == "stopped" and result.error == BOUND_REACHED["rounds"]
    fake.reply_text("Back.")
    assert (await online.engine.send(chat.id, "Hello?")).status == "complete"


def test_the_command_lines_json_counts_every_rounds_searches_and_sources(
        online, workspace, fake, capsys):
    """A reply of two rounds (the server paused between two searches): --json says both
    searches, each source once, and the cost of both rounds with both searches."""
    import json

    from app import cli

    online.close()
    docs = web_search_result("https://doc.qt.io/qtforpython-6/", "Qt for Python docs",
                             encrypted_content="EqgfCioIARgBexample3")
    fake.reply_web_search("PySide6 6.12", [QT, PYPI], answer=["First. "],
                          usage={"input_tokens": 1000, "output_tokens": 10},
                          stop_reason="pause_turn")
    fake.reply_web_search("PySide6 6.12 docs", [QT, docs], answer=["Second."],
                          usage={"input_tokens": 3000, "output_tokens": 20})
    assert cli.main(["ask", "--folder", workspace.path, "--web", "--json", "What is new?"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["text"] == "First. Second."
    assert summary["web_searches"] == 2 and summary["usage"]["web_searches"] == 2
    assert [s["url"] for s in summary["sources"]] == [
        "https://www.qt.io/blog/qt-for-python-6.12", "https://pypi.org/project/PySide6/",
        "https://doc.qt.io/qtforpython-6/"]
    assert summary["cost_usd"] == pytest.approx(
        cost("claude-sonnet-5-5", Usage(1000, 0, 0, 10, web_searches=1))
        + cost("claude-sonnet-5-5", Usage(3000, 0, 0, 20, web_searches=1)))
