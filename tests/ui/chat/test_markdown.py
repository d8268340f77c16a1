"""Markdown for the conversation (ui/chat/markdown.py) and the entries built from stored
messages (ui/chat/entries.py): plain Python, no window."""

from __future__ import annotations

import random
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.store.messages import COMPLETE, FAILED, Message, Usage
from ui.chat.entries import PERSON, REPLY, build
from ui.chat.markdown import block_spans, pieces, render, stable_pieces


def test_code_blocks_tables_task_lists_and_raw_html():
    text = ("# Title\n\nSee `x` and **bold**.\n\n```python\nprint(1)\n\nprint(2)\n```\n\n"
            "| a | b |\n|:-|-:|\n| 1 | 2 |\n\n- [ ] todo\n- [x] done\n\n<b>raw</b> "
            "![logo](https://acme.example/l.png)")
    rendered = render(text)
    assert rendered.code == ["print(1)\n\nprint(2)"]  # the blank line inside stays in
    assert 'href="cairn:copy/0"' in rendered.html and ">python<" in rendered.html
    assert "<table border=\"1\"" in rendered.html and 'align="right"' in rendered.html
    assert "☐ todo" in rendered.html and "☑ done" in rendered.html
    assert '<ul style="list-style-type: none">' in rendered.html  # the box is the item's mark
    assert "<ul>\n<li>a</li>" in render("- a\n- b\n").html  # a plain list keeps its bullets
    assert "&lt;b&gt;raw&lt;/b&gt;" in rendered.html  # shown, never obeyed
    assert "<img" not in rendered.html  # nothing fetched: a link to it
    assert 'href="https://acme.example/l.png"' in rendered.html


def test_a_reply_links_only_to_the_web_and_quotes_nest_cheaply():
    rendered = render("[a](cairn:retry) [b](javascript:alert(1)) [c](https://x.example) "
                      "[d](mailto:dana@acme.example)\n\n" + "".join(">" * n + " q\n" for n in
                                                                     range(1, 21)))
    assert 'href="cairn:' not in rendered.html and 'href="javascript:' not in rendered.html
    assert 'href="https://x.example"' in rendered.html and 'href="mailto:' in rendered.html
    assert "<table" not in rendered.html  # quotes are Qt's own, never nested tables


def test_a_code_fence_inside_a_list_item_stays_whole():
    text = "- step one:\n\n    ```sh\n    make\n\n    make install\n    ```\n\n- step two"
    assert [text[a:b] for a, b in block_spans(text)] == [
        "- step one:\n\n    ```sh\n    make\n\n    make install\n    ```", "- step two"]
    assert render(text).code == ["make\n\nmake install"]


def test_blocks_are_cut_at_blank_lines_outside_code_fences_only():
    text = "one\n\n```\na\n\nb\n```\n\n\n\ntwo\nlines"
    assert [text[a:b] for a, b in block_spans(text)] == ["one", "```\na\n\nb\n```", "two\nlines"]


def _document(rng: random.Random) -> str:
    blocks = []
    for _ in range(rng.randint(1, 60)):
        kind = rng.random()
        if kind < 0.15:
            blocks.append("```py\n" + "x = 1\n\n" * rng.randint(0, 20) + "```")
        elif kind < 0.25:
            blocks.append("| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * rng.randint(1, 5))
        else:
            blocks.append("word " * rng.randint(1, 120))
    return ("\n\n" + "\n" * rng.randint(0, 2)).join(blocks)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9), st.integers(50, 800), st.integers(1, 120))
def test_a_growing_text_settles_into_the_pieces_of_the_finished_one(seed, size, step):
    """While a reply streams its finished pieces are found a step at a time; they are the
    same pieces the finished reply is laid out from (so their documents are re-used)."""
    text = _document(random.Random(seed))
    prefix, done, tail = "", [], ""
    for cut in [*range(0, len(text), step), len(text)]:
        growing = text[:cut]
        more, tail, rest = stable_pieces(growing[len(prefix):], size)
        if more:
            done += more
            prefix = growing[:len(prefix) + rest]
    final = pieces(text, size)
    assert done == final[:len(done)]
    assert done + ([tail] if tail else []) == final or (not tail and done == final)


def _message(id: int, role: str, content: list, **kw) -> Message:
    return Message(id, "ch_1", role, content, kw.pop("status", COMPLETE), kw.pop("error", None),
                   kw.pop("model", None), kw.pop("usage", None), kw.pop("cost_usd", None),
                   "2026-11-30T10:00:00.000Z")


def test_a_turn_with_a_file_read_is_one_reply_with_a_quiet_line_and_summed_costs():
    messages = [
        _message(1, "user", [{"type": "text", "text": "Colours?"},
                             {"type": "attachment", "name": "brief.md", "size": 1200,
                              "media_type": "text/markdown", "sha256": "x"}]),
        _message(2, "assistant", [{"type": "thinking", "thinking": "Check the file."},
                                  {"type": "tool_use", "id": "t1", "name": "readWorkspaceFile",
                                   "input": {"file_id": "wf_1"}}],
                 model="claude-sonnet-5-5", usage=Usage(100, 0, 0, 10), cost_usd=0.001),
        _message(3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "[guide.txt — page 1 of 2; read page 2 next]\n…"}]}]),
        _message(4, "assistant", [{"type": "tool_use", "id": "t2", "name": "readWorkspaceFile",
                                   "input": {"file_id": "wf_1", "page": 2}}],
                 model="claude-sonnet-5-5", usage=Usage(200, 0, 0, 10), cost_usd=0.002),
        _message(5, "user", [{"type": "tool_result", "tool_use_id": "t2", "content": [
            {"type": "text", "text": "[guide.txt — page 2 of 2]\n…"}]}]),
        _message(6, "assistant", [{"type": "text", "text": "Orange."}],
                 model="claude-sonnet-5-5", usage=Usage(300, 0, 50, 20), cost_usd=0.003),
        _message(7, "user", [{"type": "text", "text": "And?"}]),
        _message(8, "assistant", [], status=FAILED, error="Anthropic is overloaded right now.",
                 model="claude-sonnet-5-5", usage=Usage(), cost_usd=0.0),
    ]
    person, reply, second, failed = build(messages)
    assert person.kind == PERSON and person.attachments == [("brief.md", 1200)]
    assert reply.kind == REPLY and reply.message_ids == [2, 4, 6]
    assert [(p.kind, p.text) for p in reply.parts] == [
        ("tool", "Read guide.txt, pages 1–2"), ("text", "Orange.")]
    assert reply.thinking == "Check the file."
    assert reply.usage == Usage(600, 0, 50, 40) and round(reply.cost_usd, 6) == 0.006
    assert second.text == "And?"
    assert failed.status == FAILED and failed.error == "Anthropic is overloaded right now."


def longest_unbreakable(markup: str) -> int:
    """The longest run of text (between tags, entities counted as one) with no place to wrap."""
    text = re.sub(r"<[^>]*>", " ", markup)
    text = re.sub(r"&#?\w+;", "e", text)
    return max((len(run) for run in re.split(r"[\s\u200b]+", text)), default=0)


def test_a_long_run_without_spaces_gets_places_to_wrap_and_keeps_its_links_and_text():
    from ui.chat.markdown import BREAK_EVERY, breakable, plain, render

    run = "x" * 300_000
    for markup in (render(run).html, render(f"```\n{run}\n```").html, plain(run)):
        assert longest_unbreakable(markup) <= BREAK_EVERY
        shown = re.sub(r"<[^>]*>", "", markup).replace("\u200b", "")
        assert run in shown  # every character kept, in order
    target = "http://example.com/" + "y" * 200
    linked = render(f"[see]({target}) " + "a&b<" * 100).html
    assert f'href="{target}"' in linked  # a link's target is never broken
    assert "&amp;" in linked and "&a\u200bmp;" not in linked
    assert longest_unbreakable(linked) <= BREAK_EVERY
    short = render("A sentence with short words, and a link: https://example.com/a").html
    assert "\u200b" not in short and breakable(short) is short
