"""One chat as a Markdown file, the same from the command
line (``cairn chat export ID FILE``) and from the window's operation."""

from __future__ import annotations

import asyncio
import json

import pytest

from app.errors import Refused
from app.ops import Operations
from app.sharing.chat_markdown import chat_markdown, export_chat
from ui.main import main


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


@pytest.fixture
def talked(quiet_cairn, folders):
    (acme,) = folders("Acme")
    quiet_cairn.registry.add_workspace(acme)
    chat = quiet_cairn.registry.new_chat(folder=acme, title="Launch\nplan")
    chats = quiet_cairn.chats
    chats.append(chat.id, "user", text("What is the launch date?\n\nAnd the colour?") + [
        {"type": "attachment", "name": "brief.pdf", "sha256": "0" * 64, "size": 10}])
    chats.append(chat.id, "assistant", [{"type": "tool_use", "id": "t1", "name": "readFolder",
                                         "input": {}}])
    chats.append(chat.id, "user", [{"type": "tool_result", "tool_use_id": "t1",
                                    "content": "…"}])
    chats.append(chat.id, "assistant", text("The launch is **2027-04-15**.\n\n```css\n"
                                            "a { color: #FF5500; }\n```"))
    return quiet_cairn, chat


def test_the_markdown_says_who_said_what(talked):
    cairn, chat = talked
    markdown, count = chat_markdown(cairn.registry, cairn.chats, chat.id)
    assert count == 2  # the tool's round trip stays out
    assert markdown == (
        "# Launch plan\n\n*Acme · started " + chat.created_at[:10] + "*\n\n"
        "**You:**\n\n> What is the launch date?\n>\n> And the colour?\n\n"
        "*Attached: brief.pdf*\n\n"
        "**Claude:**\n\nThe launch is **2027-04-15**.\n\n```css\na { color: #FF5500; }\n```\n")
    assert markdown.endswith("\n")  # a final newline: appending to it never glues lines


def test_the_window_and_the_command_line_write_the_same_file(talked, tmp_path):
    """One use case: the window's operation and the command line's call write alike."""
    cairn, chat = talked
    by_window = tmp_path / "window.md"
    done = asyncio.run(Operations(cairn).export_chat(chat.id, by_window))
    assert done.messages == 2
    by_cli = tmp_path / "cli.md"
    export_chat(cairn.registry, cairn.chats, chat.id, by_cli)  # what `cairn chat export` calls
    assert by_cli.read_bytes() == by_window.read_bytes()


def test_an_existing_file_is_kept_unless_replace(talked, tmp_path):
    cairn, chat = talked
    target = tmp_path / "notes.md"
    target.write_text("mine")
    with pytest.raises(Refused, match="a file is already there"):
        export_chat(cairn.registry, cairn.chats, chat.id, target)
    assert target.read_text() == "mine"
    export_chat(cairn.registry, cairn.chats, chat.id, target, replace=True)
    assert target.read_text().startswith("# Launch plan")
    with pytest.raises(Refused, match="its folder does not exist"):
        export_chat(cairn.registry, cairn.chats, chat.id, tmp_path / "nowhere" / "x.md")
    with pytest.raises(Refused, match="no such session"):
        export_chat(cairn.registry, cairn.chats, "ch_nothere", tmp_path / "y.md")


def test_cairn_chat_export(isolated, capsys, folders, tmp_path, monkeypatch):
    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    (acme,) = folders("Acme")
    code, out, _ = run("chat", "new", "--folder", acme, "--title", "Plans", "--json")
    assert code == 0
    chat_id = json.loads(out)["id"]
    monkeypatch.chdir(tmp_path)
    code, out, err = run("chat", "export", chat_id, "plans.md")
    assert code == 0, err
    assert out.strip() == f"Exported 0 messages to {tmp_path / 'plans.md'}"
    assert (tmp_path / "plans.md").read_text().startswith("# Plans\n")
    code, _, err = run("chat", "export", chat_id, "plans.md")
    assert code == 1 and "a file is already there" in err
    code, out, _ = run("chat", "export", chat_id, "plans.md", "--replace", "--json")
    assert code == 0 and json.loads(out)["file"] == str(tmp_path / "plans.md")
