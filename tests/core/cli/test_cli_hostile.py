"""Every command of the command line against hostile arguments: exit 1 or 2, one line on
stderr, never a traceback nor Python's own error text, and nothing stored changes."""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import cli

ROOT = Path(__file__).resolve().parents[3]

# Text that only Python (not a person) writes: it must never reach stderr.
RAW = ("Traceback", "[Errno", "codec can't", "Error:", "object has no attribute",
       "invalid literal", "unexpected problem")

IDS = [
    "", " ", "-", "--", "-x", "\0", "\x1b[31mred\x1b[0m", "a\nb", "\r", "\u202eevil",
    "\udcff", "²", "ws_" + "x" * 5000, "x" * 100_000, "'; DROP TABLE workspace; --",
    "%s%n{0}", "../../etc/passwd", "/", "ws_000000000000", "ch_000000000000",
]
NUMBERS = ["", " 1", "0x10", "1.5", "1e3", "-1", "²", "٣", "99999999999999999999", "9" * 5000,
           "NaN", "\0"]
TITLES = ["\u200b", "\u2060\u200b", "\x1b", "\u3164", "\ufeff\u00ad", "\u0301"]
PATHS = ["", ".", "relative/dir", "\0", "/dev/null", "/nonexistent/cairn-hostile", "C:\\x",
         "\\\\server\\share", "x" * 100_000, "/" + "d" * 300, "\udcff", "a\nb"]
SETTINGS = {
    "model.chat": ["", " ", "claude x", "\x1b[31m", "x" * 500, "a\nb", "\0"],
    "model.knowledge": ["", "\t", "claude\u2028x"],
    "model.chat_effort": ["extreme", " x", "\0"],
    "model.knowledge_effort": ["LOWEST", "²"],
    "api.base_url": ["notaurl", "ftp://host", "http://", "http://a b", "http://localhost:99999",
                     "javascript:alert(1)", "\x1b", "https://\u202eevil"],
    "memory.enabled": ["maybe", "", "²", "\0"],
    "knowledge.idle_seconds": ["²", "٣", "-5", "1e3", "86401", "10" * 20, "9" * 5000, "",
                               " ", "0x10", "1.5"],
}


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield prefix
        return
    for name, sub in actions[0].choices.items():
        yield from _leaves(sub, (*prefix, name))


@pytest.fixture
def hostile(isolated, tmp_path, monkeypatch, folders, fake):
    """A data folder with a workspace, a chat and a saved document; hostile files around it.

    The fake server answers the models list; a message that got through would find no
    scripted reply, fail, and be caught by the check that nothing stored changed.
    """
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)  # nothing leaves the machine
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-hostile")
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    (root,) = folders("Acme")
    assert cli.main(["workspace", "add", root, "--json"]) == 0
    chat_out = io.StringIO()
    assert cli.main(["chat", "new", "--folder", root, "--title", "Plans", "--json"],
                    stdout=chat_out) == 0
    chat = json.loads(chat_out.getvalue())
    files = tmp_path / "files"
    files.mkdir()
    doc = files / "doc.md"
    doc.write_text("## Facts\n- kept\n")
    assert cli.main(["knowledge", "set", chat["workspace"], str(doc)]) == 0
    (files / "latin1.md").write_bytes(b"caf\xe9 \x82\x83")
    (files / "big.md").write_text("a" * 2_000_000)
    with open(files / "huge.bin", "wb") as sparse:
        sparse.truncate(40_000_000)  # sparse: costs no disk
    (files / "binary.bin").write_bytes(bytes(range(256)) * 4)
    # Endless or blocking files (/dev/zero, a FIFO) run in a child process with limits:
    # see test_endless_and_blocking_files_are_refused_at_once.
    doc_files = [str(files / "latin1.md"), str(files / "big.md"), str(files), "",
                 str(files / "missing.md"), "\0", "x" * 5000, "/" + "d" * 300]
    doc_files += ["/dev/null"] if os.path.exists("/dev/null") else []
    return {"ws": chat["workspace"], "chat": chat["id"], "root": root, "doc_files": doc_files,
            "file_files": [f for f in doc_files if not f.endswith(("latin1.md", "big.md"))]
            + [str(files / "huge.bin")],
            "attach_files": [f for f in doc_files if not f.endswith("big.md")]
            + [str(files / "huge.bin"), str(files / "binary.bin")],
            "db": isolated / "cairn.db"}


def cases(h: dict[str, object]) -> dict[tuple[str, ...], list[list[str]]]:
    """For each command, argument lists that must be refused."""
    ws, chat = str(h["ws"]), str(h["chat"])
    docs, files = list(h["doc_files"]), list(h["file_files"])  # type: ignore[call-overload]
    attach = list(h["attach_files"])  # type: ignore[call-overload]
    extra = [[x] for x in ("--bogus", "surplus", "\x1b[2J", "-h=x")]
    settings = [["set", name, value] for name, values in SETTINGS.items() for value in values]
    settings += [["set", name, "x"] for name in IDS if name not in SETTINGS]
    return {
        ("workspace", "add"): [[p] for p in PATHS],
        ("workspace", "list"): extra,
        ("workspace", "show"): [[i] for i in IDS],
        ("workspace", "rename"): [[i, "New title"] for i in IDS] + [[ws, t] for t in TITLES]
        + [[ws, ""], [ws, " \t\n"]],
        ("workspace", "set"): [[i, "--description", "x"] for i in IDS]
        + [[ws, "--status", s] for s in ("done", "", "IDEA", "\0")],
        ("workspace", "advance"): [[i] for i in IDS],
        ("workspace", "move"): [[i, str(h["root"])] for i in IDS] + [[ws, p] for p in PATHS],
        # Removing an unknown id is "nothing to remove" (exit 0): only bad usage here.
        ("workspace", "remove"): [["--bogus"], [], [ws, "extra"]],
        ("workspace", "removed"): extra,
        # Unknown ids, a bad switch or --keep, and paths that leave the folder.
        ("workspace", "knowledge-file"): [[i, "on"] for i in IDS]
        + [[ws, s] for s in ("", "yes", "\0")] + [[ws, "on", "--keep", "both"]],
        ("workspace", "folder-access"): [[i, "on"] for i in IDS]
        + [[ws, s] for s in ("", "yes", "\0")]
        + [[ws, "on", "--allow", p] for p in ("../x", "/etc", "C:\\x", "\0", "", ".")],
        # Unknown ids, a bad switch, counts and sites that are not ones, both lists.
        ("workspace", "web"): [[i, "on"] for i in IDS] + [[ws, s] for s in ("", "yes", "\0")]
        + [[ws, "on", "--max-uses", n] for n in NUMBERS if n != " 1"]
        + [[ws, "on", "--allow", d] for d in ("", "not a site", "\x1b[2J", "a" * 300, "\0")]
        + [[ws, "on", "--allow", "a.org", "--block", "b.org"]],
        ("workspace", "restore"): [[i] for i in IDS] + [[ws], [ws, "extra"]],
        # Learning from imported chats: unknown workspaces, with and without --yes.
        ("workspace", "learn-imported"): [[i] for i in IDS] + [[i, "--yes"] for i in IDS],
        ("export",): [[i, str(Path(h["root"]).parent / "out.cairn")] for i in IDS]
        + [[ws, p] for p in ("", "/nonexistent/dir/out.cairn", str(h["root"]), "\0",
                             "x" * 100_000, docs[0])],
        ("import",): [[f, str(Path(h["root"]).parent / "new")] for f in attach]
        + [[docs[0], p] for p in PATHS] + [["/nonexistent.cairn", str(h["root"])]],
        # A history export: paths that are none (folders, files of other kinds, missing), and
        # --folder-for values that name no project or no folder.
        ("import-history",): [[p] for p in PATHS] + [[f] for f in attach]
        + [["/nonexistent/export.zip"], [docs[0], "--dry-run"],
           [docs[0], "--folder-for", "x"], [docs[0], "--folder-for", "=/tmp"]],
        ("chat", "new"): [["--title", t] for t in TITLES] + [["--folder"], ["--bogus"]],
        ("chat", "list"): extra,
        **{("chat", action): [[i] for i in IDS]
           for action in ("show", "archive", "unarchive", "pin", "unpin", "delete",
                          "restore")},
        ("chat", "removed"): extra,
        # A chat as Markdown: unknown ids, and files that are folders, already there, in a
        # folder that does not exist, or no name at all.
        ("chat", "export"): [[i, str(Path(h["root"]).parent / "chat.md")] for i in IDS]
        + [[chat, p] for p in ("", "/nonexistent/dir/chat.md", str(h["root"]), "\0",
                               "x" * 100_000, docs[0])],
        # Unknown chats, message ids that are not numbers or not of the chat.
        **{("chat", action): [[i, "1"] for i in IDS] + [[chat, n] for n in NUMBERS]
           + [[chat, "1"], [chat]] for action in ("versions", "switch", "fork")},
        ("chat", "retry"): [[i] for i in IDS] + [[chat, n] for n in NUMBERS if n]
        + [[chat], [chat, "1"]],
        ("chat", "edit"): [[i, "1", "x"] for i in IDS] + [[chat, n, "x"] for n in NUMBERS]
        + [[chat, "1", "x"], [chat, "1", ""], [chat, "1"]],
        ("chat", "move"): [[i, "--to", "1"] for i in IDS] + [[chat, "--to", n] for n in NUMBERS]
        + [[chat, "--to", "0"], [chat, "--to", "2"]],
        ("ask",): [["--chat", i, "Hello"] for i in IDS]
        + [["--chat", chat, "--attach", f, "Hello"] for f in attach]
        + [["--chat", chat, ""], ["--chat", chat, " \n\t"], ["Hello"], ["--folder", "x", "--chat", chat, "Hi"]],
        ("context",): [["--chat", i] for i in IDS] + [[]],
        ("files", "add"): [[i, docs[0]] for i in IDS] + [[ws, f] for f in files],
        ("files", "list"): [[i] for i in IDS],
        ("memory", "show"): extra,
        ("memory", "set"): [[f] for f in docs],
        ("memory", "on"): extra,
        ("memory", "off"): extra,
        ("knowledge", "show"): [[i] for i in IDS],
        ("knowledge", "set"): [[i, docs[0]] for i in IDS] + [[ws, f] for f in docs],
        ("knowledge", "history"): [[i] for i in IDS],
        ("knowledge", "status"): [[i] for i in IDS],
        ("knowledge", "diff"): [[i, "1", "1"] for i in IDS] + [[ws, n, "1"] for n in NUMBERS]
        + [[ws, "1", "99"], [ws, "0", "1"]],
        ("knowledge", "restore"): [[i, "1"] for i in IDS] + [[ws, n] for n in NUMBERS]
        + [[ws, "0"], [ws, "99"]],
        ("knowledge", "rebuild"): [[i] for i in IDS],
        ("knowledge", "suggestions"): [[i] for i in IDS],
        **{("knowledge", action): [[i, "1"] for i in IDS] + [[ws, n] for n in NUMBERS]
           + [[ws, "0"], [ws, "99"], [ws, "1", "--text", "\x1b[2J# heading"]]
           for action in ("accept", "dismiss")},
        ("settings", "show"): extra,
        ("settings", "list"): extra,
        ("settings", "get"): [[name] for name in IDS if name not in SETTINGS] + [[]]
        + [["model.chat", "surplus"]],
        ("settings", "set"): [s[1:] for s in settings] + [["model.chat"], []],
        ("models",): extra,
        ("search",): [["x", "--workspace", i] for i in IDS] + [["x", "--limit", n] for n in NUMBERS]
        + [["x", "--in", "bogus"], ["x", "--limit", "0"], ["x" * 10_000],
           ["before:notadate"], ["after:2026-13-45"], ["x", "--bogus"]],
        ("key", "set"): extra,
        ("key", "forget"): extra,
        ("key", "status"): extra,
        ("completion",): [[], ["bogus"], ["bash", "zsh"], ["Bash"]],
        ("install-desktop",): extra,
        # MCP servers — names, programs, URLs, env and headers that are not ones,
        # unknown servers and workspaces, Claude Desktop files that are not its.
        ("mcp", "list"): extra,
        ("mcp", "add"): [[n, "--", "prog"] for n in ("", "a/b", "x" * 49, "\x1b[2J", "\0",
                                                      "-", " lead", *TITLES)]
        + [["x", "--url", u] for u in ("", "ftp://x", "http://", "https://u:p@h.io",
                                       "http://a b", "\x1b[2J", "x" * 100_000)]
        + [["x", "--env", e, "--", "prog"] for e in ("BAD KEY=v", "=v", "K", "K=\0")]
        + [["x", "--url", "https://a.io", "--header", h] for h in ("K=a\r\nX: 1", "B D=v")]
        + [["x"], ["x", "--url", "https://a.io", "--", "prog"], ["x", "--", "a\0b"],
           ["x", "--", "x" * 100_000]],
        ("mcp", "remove"): [[i] for i in IDS],
        ("mcp", "import-claude-desktop"): [["--file", p] for p in PATHS if p]
        + [["--file", f] for f in [*attach, *docs]],
        **{("mcp", action): [[i, "--workspace", ws] for i in IDS]
           + [["nosuch", "--workspace", i] for i in IDS] for action in ("on", "off")},
        ("mcp", "tools"): [[i] for i in IDS],
        **{("mcp", action): [[i, "tool", "--workspace", ws] for i in IDS]
           + [["nosuch", "tool", "--workspace", i] for i in IDS]
           for action in ("allow", "ask", "deny")},
    }


def test_every_command_has_hostile_cases(hostile):
    assert set(_leaves(cli.build_parser())) == set(cases(hostile))


def _stored(db: Path) -> list[tuple[object, ...]]:
    """Everything a refusal must leave alone (the message and setting tables included)."""
    with sqlite3.connect(db) as conn:
        rows: list[tuple[object, ...]] = []
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"
                                     " ORDER BY name"):
            rows += [(table, *row) for row in conn.execute(f"SELECT * FROM \"{table}\" ORDER BY 1")]
        return rows


@pytest.mark.parametrize("command", sorted(_leaves(cli.build_parser())), ids=" ".join)
def test_hostile_arguments_are_refused_in_one_line(hostile, capsys, command):
    before = _stored(hostile["db"])
    blobs = sorted(p.name for p in (hostile["db"].parent / "files").rglob("*"))
    failures = []
    for rest in cases(hostile).get(command, [["--bogus"]]):
        argv = [*command, *rest]
        try:
            code = cli.main(argv)
        except BaseException as error:  # noqa: BLE001 - reported with the case that raised it
            failures.append(f"{argv!r:.200}: raised {type(error).__name__}: {error!s:.200}")
            capsys.readouterr()
            continue
        out, err = capsys.readouterr()
        lines = err.splitlines()
        if code not in (1, 2):
            failures.append(f"{argv!r:.200}: exit {code}, out {out!r:.200}")
        elif len(lines) != 1 or not err.endswith("\n") or not lines[0].strip():
            failures.append(f"{argv!r:.200}: stderr is not one line: {err!r:.300}")
        elif any(raw in err for raw in RAW) or any(c in err for c in "\x1b\r\0\u202e"):
            failures.append(f"{argv!r:.200}: raw text on stderr: {err!r:.300}")
    assert not failures, "\n".join(failures)
    assert _stored(hostile["db"]) == before
    assert sorted(p.name for p in (hostile["db"].parent / "files").rglob("*")) == blobs


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and /dev/zero")
def test_endless_and_blocking_files_are_refused_at_once(hostile, tmp_path):
    """/dev/zero never ends and a FIFO without a writer blocks its reader: each is refused
    at once.  In a child process with a memory cap and a time limit, so that a regression
    fails this test instead of exhausting the machine."""
    import resource
    import subprocess

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    ws, chat = hostile["ws"], hostile["chat"]

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))

    for path in ("/dev/zero", str(fifo)):
        for argv in (["memory", "set", path], ["knowledge", "set", ws, path],
                     ["files", "add", ws, path], ["ask", "--chat", chat, "--attach", path, "Hi"]):
            try:
                done = subprocess.run([sys.executable, "-m", "ui.main", *argv], cwd=ROOT,
                                      capture_output=True, text=True, timeout=60,
                                      preexec_fn=cap, env=os.environ.copy())
            except subprocess.TimeoutExpired:
                pytest.fail(f"{argv} did not finish within a minute")
            assert done.returncode == 1, (argv, done.stderr[-500:])
            assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
            assert "not a regular file" in done.stderr, done.stderr


def test_key_set_refuses_an_empty_key(hostile, capsys, monkeypatch):
    for text in ("", "\n", "  \t \n"):
        monkeypatch.setattr("sys.stdin", io.StringIO(text))
        assert cli.main(["key", "set"]) == 1
        assert capsys.readouterr().err == "cannot save the API key: it is empty\n"


@pytest.mark.parametrize("folder", ["", " ", "/dev/null"])
def test_a_hostile_data_folder_is_one_line(isolated, capsys, folder):
    code = cli.main(["--data-dir", folder, "workspace", "list"])
    err = capsys.readouterr().err
    assert code in (1, 2) and len(err.splitlines()) == 1, err
    assert not any(raw in err for raw in RAW)


def test_an_unexpected_failure_is_one_line_and_logged(isolated, capsys, monkeypatch):
    """The last line of defence: a bug still never shows a traceback, and the log has it."""
    from app.store.registry.registry import Registry

    def broken(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug")

    monkeypatch.setattr(Registry, "workspaces", broken)
    assert cli.main(["workspace", "list"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "RuntimeError" in err and "cairn.log" in err
    assert "Traceback" not in err
    assert "RuntimeError: a bug" in (isolated / "logs" / "cairn.log").read_text()


if sys.platform == "win32":  # pragma: no cover - the corpus uses POSIX devices and paths
    pytestmark = pytest.mark.skip(reason="the hostile corpus is written for POSIX paths")
