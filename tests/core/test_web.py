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
