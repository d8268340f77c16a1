"""What the command line prints: stored text cannot recolour or
break the terminal, invisible titles are refused, a damaged message is one sentence, and the
sentences read as English."""

from __future__ import annotations

import os
import sqlite3
import sys

import pytest

from tests.helpers import run, run_json


@pytest.fixture
def ws(isolated, folders, capsys) -> dict:  # type: ignore[type-arg]
    (root,) = folders("Acme")
    return run_json(capsys, "workspace", "add", root)


# ----------------------------------------------------------------- 16: control characters


def test_a_title_with_an_escape_sequence_is_shown_escaped(isolated, ws, capsys):
    # Titles are normalised as they enter: no control or bidi character.
    renamed = run_json(capsys, "workspace", "rename", ws["id"], "\x1b[31mRed\x1b[0m \u202eevil")
    assert renamed["title"] == "[31mRed[0m evil"
    # One stored before that (or written by hand) is still shown escaped.
    with sqlite3.connect(isolated / "cairn.db") as conn:
        conn.execute("UPDATE workspace SET title = ? WHERE id = ?",
                     ("\x1b[31mRed\x1b[0m \u202eevil", ws["id"]))
    for argv in (["workspace", "list"], ["workspace", "show", ws["id"]], ["chat", "list"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0
        assert "\x1b" not in out and "\u202e" not in out
        assert "\\x1b[31mRed\\x1b[0m \\u202eevil" in out


def test_a_folder_named_with_a_line_break_keeps_the_list_one_line_per_workspace(
        isolated, capsys, tmp_path):
    if sys.platform == "win32":
        pytest.skip("Windows folders cannot hold a line break")
    odd = tmp_path / "two\nlines"
    odd.mkdir()
    added = run_json(capsys, "workspace", "add", str(odd))
    code, out, _ = run(capsys, "workspace", "list")
    assert code == 0 and len(out.splitlines()) == 2  # the first-use workspace and this one
    # The title is the folder's name on one line; the path, escaped.
    assert f"{added['id']}  two lines  (idea)  {tmp_path}/two\\nlines" in out
    chat = run_json(capsys, "chat", "new", "--folder", str(odd), "--title", "bell\x07")
    code, out, _ = run(capsys, "chat", "show", chat["id"])
    assert "two\\nlines" in out and "bell" in out and "\x07" not in out


@pytest.mark.parametrize("title", ["\u200b", "\u2060\u200b\ufeff", "\x1b", "\u3164", "\u00ad",
                                   "\u0301", " \u200b "])
def test_a_title_of_only_invisible_characters_is_refused(ws, capsys, title):
    code, out, err = run(capsys, "workspace", "rename", ws["id"], title)
    assert (code, out, err) == (1, "", "cannot rename workspace 'Acme': the title has "
                                       "only invisible characters\n")
    assert run_json(capsys, "workspace", "show", ws["id"])["title"] == "Acme"
    before = run_json(capsys, "chat", "list")
    code, out, err = run(capsys, "chat", "new", "--title", title)
    assert (code, err) == (1, "cannot create a chat: the title has only invisible characters\n")
    assert run_json(capsys, "chat", "list") == before


def test_titles_that_show_something_are_kept(ws, capsys):
    for title in ("Ω", "日本語", "\U000f0001", "a\u200bb", "🙂"):
        assert run_json(capsys, "workspace", "rename", ws["id"], title)["title"] == title


def test_refusals_print_ids_escaped_on_one_line(isolated, capsys):
    code, out, err = run(capsys, "chat", "pin", "ch_\x1b[2J\nx")
    assert (code, err) == (1, "cannot pin session 'ch_\\x1b[2J\\nx': no such session\n")


# ----------------------------------------------------------------- 9: a damaged message row


@pytest.mark.parametrize("content", ["{bad", "5", "[5]", '{"type": "text"}', '"text"'])
def test_a_damaged_message_row_is_one_sentence(isolated, ws, capsys, content):
    chat = run_json(capsys, "chat", "new", "--folder", ws["path"])
    with sqlite3.connect(isolated / "cairn.db") as conn:
        conn.execute("INSERT INTO message (chat_id, role, content, status, created_at)"
                     " VALUES (?, 'user', ?, 'complete', '2026-11-30T00:00:00Z')",
                     (chat["id"], content))
        conn.execute("UPDATE chat SET leaf_id = last_insert_rowid() WHERE id = ?",
                     (chat["id"],))  # on the shown path
    conn.close()
    for argv in (["chat", "show", chat["id"]], ["chat", "show", chat["id"], "--json"]):
        code, out, err = run(capsys, *argv)
        assert (code, out) == (1, "")
        assert err == (f"cannot show session '{chat['id']}': one of its stored messages is "
                       "damaged and cannot be read\n")


# ----------------------------------------------------------------- 15: sentences in English


@pytest.mark.parametrize("action, extra, says", [
    ("show", [], "cannot show the knowledge of workspace 'ws_nope': no such workspace"),
    ("history", [], "cannot show the knowledge history of workspace 'ws_nope': no such workspace"),
    ("diff", ["1", "2"], "cannot compare knowledge versions of workspace 'ws_nope': no such workspace"),
    ("restore", ["1"], "cannot restore the knowledge of workspace 'ws_nope': no such workspace"),
])
def test_knowledge_refusals_read_as_english(isolated, capsys, action, extra, says):
    assert run(capsys, "knowledge", action, "ws_nope", *extra) == (1, "", says + "\n")


def test_the_context_of_an_unknown_chat_reads_as_english(isolated, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    assert run(capsys, "context", "--chat", "ch_nope") == (
        1, "", "cannot show the context of session 'ch_nope': no such session\n")
    assert run(capsys, "context", "--chat", "") == (
        1, "", "cannot show the context of session '': no such session\n")


def test_bad_usage_is_one_line(isolated, capsys):
    code, out, err = run(capsys, "chat", "move", "ch_x", "--to", "²")
    assert (code, out) == (2, "")
    assert err == ("cairn chat move: argument --to: '²' is not a whole number (0, 1, 2, …) "
                   "(usage: cairn chat move [-h] [--json] (--to N | --workspace WS) ID)\n")
    code, _, err = run(capsys, "knowledge", "restore", "ws_x", "99999999999999999999")
    assert code == 2 and "'99999999999999999999' is too large" in err


# ----------------------------------------------------------------- 17: a very long path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's 4,096-byte PATH_MAX")
def test_an_existing_folder_past_the_path_limit_is_not_called_missing(isolated, capsys,
                                                                      tmp_path):
    name = "d" * 200
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(25):  # 25 × 201 characters: past 4,096, built one directory at a time
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    deep = str(tmp_path) + ("/" + name) * 25
    code, _, err = run(capsys, "workspace", "add", deep)
    assert (code, err) == (1, f"cannot create a workspace at '{deep}': path is longer than this "
                              "system allows\n")
    code, _, err = run(capsys, "workspace", "add", str(tmp_path / ("e" * 300)))
    assert err.endswith("': a folder name in the path is longer than this system allows\n")
