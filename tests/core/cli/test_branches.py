"""The command line's branches: cairn chat show | versions | switch | edit | retry |
fork, against the fake Anthropic server; what is sent is the shown path only."""

from __future__ import annotations

import json

import pytest

from app import cli


@pytest.fixture
def cairn(online):
    return online


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str):  # type: ignore[no-untyped-def]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def said(message: dict) -> str:  # type: ignore[type-arg]
    return "".join(b["text"] for b in message["content"] if b.get("type") == "text")


def sent_texts(request) -> list[str]:  # type: ignore[no-untyped-def]
    """Every text block of a request's messages, in order."""
    return [b["text"] for m in request.body["messages"] for b in m["content"]
            if b.get("type") == "text"]


def test_edit_retry_switch_versions_and_fork_on_the_command_line(cairn, fake, workspace, capsys):
    cairn.close()  # the command line opens its own
    fake.reply_text("Berlin, in May.")
    assert cli.main(["ask", "--folder", workspace.path, "--json", "Where do we launch?"]) == 0
    chat = json.loads(capsys.readouterr().out)["chat"]
    fake.reply_text("Blue.")
    assert cli.main(["ask", "--chat", chat, "Which colour?"]) == 0
    capsys.readouterr()

    shown = run_json(capsys, "chat", "show", chat)
    path = shown["messages"]
    assert [(m["role"], m["version"], m["versions"]) for m in path] == [
        ("user", 1, 1), ("assistant", 1, 1), ("user", 1, 1), ("assistant", 1, 1)]
    assert [m["parent"] for m in path] == [None, path[0]["id"], path[1]["id"], path[2]["id"]]
    assert shown["leaf"] == path[-1]["id"]
    first, berlin, colour, blue = (m["id"] for m in path)

    # Edit the first question: a second version, its reply streamed; only its path is sent.
    fake.reply_text("Paris, in June.")
    code, out, err = run(capsys, "chat", "edit", chat, str(first), "Where do we launch now?")
    assert code == 0, err
    assert out == "Paris, in June.\n" and "version 2 of 2 of the message" in err
    assert sent_texts(fake.message_requests[-1]) == ["Where do we launch now?"]
    path = run_json(capsys, "chat", "show", chat)["messages"]
    assert [said(m) for m in path] == ["Where do we launch now?",
                                                      "Paris, in June."]
    assert [(m["version"], m["versions"]) for m in path] == [(2, 2), (1, 1)]
    edited, paris = (m["id"] for m in path)

    # Retry the last reply: a second version of it, beside the first.
    fake.reply_text("Lyon, in June.")
    code, out, err = run(capsys, "chat", "retry", chat, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["status"], summary["text"], summary["version"], summary["versions"]) == (
        "complete", "Lyon, in June.", 2, 2)
    assert sent_texts(fake.message_requests[-1]) == ["Where do we launch now?"]
    lyon = summary["reply"]

    versions = run_json(capsys, "chat", "versions", chat, str(paris))
    assert [(v["id"], v["version"], v["versions"], v["shown"]) for v in versions] == [
        (paris, 1, 2, False), (lyon, 2, 2, True)]
    assert versions[0]["text"] == "Paris, in June." and versions[0]["parent"] == edited

    # Back to the first version: its whole branch, down to its newest message, is shown.
    switched = run_json(capsys, "chat", "switch", chat, str(first))
    assert (switched["leaf"], switched["version"], switched["versions"]) == (blue, 1, 2)
    assert [m["id"] for m in run_json(capsys, "chat", "show", chat)["messages"]] == [
        first, berlin, colour, blue]
    code, out, _ = run(capsys, "chat", "show", chat)
    assert f"#{first} · version 1 of 2" in out and f"#{blue} after #{colour}" in out

    # The composer continues the shown branch: a new message goes under Blue, and the
    # model is sent this branch only.
    fake.reply_text("Navy.")
    assert cli.main(["ask", "--chat", chat, "Darker?"]) == 0
    capsys.readouterr()
    assert sent_texts(fake.message_requests[-1]) == [
        "Where do we launch?", "Berlin, in May.", "Which colour?", "Blue.", "Darker?"]

    # Fork from the first reply: a new chat with that path, same workspace.
    fork = run_json(capsys, "chat", "fork", chat, str(berlin))
    assert fork["title"] == "Where do we launch? (fork)" and fork["messages"] == 2
    assert fork["workspace"] == workspace.id and fork["id"] != chat
    copied = run_json(capsys, "chat", "show", fork["id"])["messages"]
    assert [said(m) for m in copied] == ["Where do we launch?",
                                                        "Berlin, in May."]
    assert all(m["usage"] is None and m["cost_usd"] is None for m in copied)
    original = run_json(capsys, "chat", "show", chat)["messages"]
    assert original[1]["usage"] is not None  # the source keeps its cost: counted once


def test_branch_commands_refuse_in_one_sentence_and_change_nothing(
        cairn, fake, workspace, capsys):
    chat = cairn.registry.new_chat(folder=workspace.path)
    other = cairn.registry.new_chat(folder=workspace.path)
    person = cairn.chats.append(chat.id, "user", [{"type": "text", "text": "Hello"}])
    reply = cairn.chats.append(chat.id, "assistant", [{"type": "text", "text": "Hi"}])
    theirs = cairn.chats.append(other.id, "user", [{"type": "text", "text": "Elsewhere"}])
    cairn.close()
    db = cairn.registry.db.path

    def stored() -> list[object]:
        import sqlite3

        with sqlite3.connect(db) as conn:
            return [*conn.execute("SELECT id, parent_id FROM message ORDER BY id"),
                    *conn.execute("SELECT id, leaf_id, title FROM chat ORDER BY id")]

    before = stored()
    cases = [
        (["chat", "versions", "ch_nope", "1"], "no such"),
        (["chat", "versions", chat.id, str(theirs.id)],
         f"cannot list the versions of message {theirs.id}: session '{chat.id}' holds no "
         "such message"),
        (["chat", "switch", chat.id, "999999"],
         f"cannot show the branch of message 999999: session '{chat.id}' holds no such message"),
        (["chat", "fork", chat.id, str(theirs.id)],
         f"cannot fork session '{chat.id}' from message {theirs.id}: the session holds no "
         "such message"),
        (["chat", "edit", chat.id, str(reply.id), "New text"],
         f"cannot edit message {reply.id} in session '{chat.id}': it is a reply, and only "
         "your own messages can be edited"),
        (["chat", "edit", chat.id, str(theirs.id), "New text"],
         f"cannot edit message {theirs.id} in session '{chat.id}': the session holds no such "
         "message"),
        (["chat", "edit", chat.id, str(person.id), "  "], "cannot send an empty message"),
        (["chat", "retry", chat.id, "999999"],
         f"cannot retry message 999999: session '{chat.id}' holds no such message"),
        (["chat", "retry", "ch_nope"], "no such"),
    ]
    for argv, sentence in cases:
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "", argv
        assert len(err.splitlines()) == 1 and sentence in err, (argv, err)
    for argv in (["chat", "switch", chat.id, "x"], ["chat", "fork", chat.id, "-1"]):
        assert run(capsys, *argv)[0] == 2  # bad usage
    assert stored() == before
    assert fake.message_requests == []  # nothing was ever sent
