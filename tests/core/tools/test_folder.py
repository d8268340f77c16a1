"""Claude reads the project's folder: the tools through the fake server and
the real file system, and the path rule as unit tests (junctions and UNC paths, which this
machine cannot make, included)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.base import inside
from app.base.inside import parts_of, resolve_inside
from app.errors import Refused
from app.tools.folder_reading import switch_access
from ui.main import main

SECRET = "TOP-SECRET-OUTSIDE-THE-FOLDER"


@pytest.fixture
def cairn(online):
    return online


@pytest.fixture
def project(cairn, folders):
    (root,) = folders("Acme")
    ws, _ = cairn.registry.add_workspace(root)
    base = Path(root)
    (base / "notes").mkdir()
    (base / "notes" / "plan.md").write_text("# Plan\nShip the brand kit in April.\n",
                                            encoding="utf-8")
    (base / "README.md").write_text("Acme's folder.\n", encoding="utf-8")
    return ws


def allow(cairn, ws, on: bool = True, **kwargs) -> None:
    switch_access(cairn.registry, cairn.folders, ws.id, on, **kwargs)


async def ask_tool(cairn, fake, ws, name: str, tool_input: dict) -> dict:
    """One turn in which the model calls *name*: the tool_result it was sent back."""
    chat = cairn.registry.new_chat(folder=ws.path)
    fake.reply_tool_use(name, tool_input)
    fake.reply_text("Done.")
    assert (await cairn.engine.send(chat.id, "Look in the folder")).status == "complete"
    body = fake.message_requests[-1].body
    results = [b for m in body["messages"] if m["role"] == "user"
               for b in (m["content"] if isinstance(m["content"], list) else [])
               if b.get("type") == "tool_result"]
    return results[-1]


def text_of(result: dict) -> str:
    return "".join(b.get("text", "") for b in result["content"] if isinstance(b, dict))


# ----------------------------------------------------------------- the switch


async def test_the_tools_are_absent_with_the_switch_off(cairn, fake, project):
    chat = cairn.registry.new_chat(folder=project.path)
    fake.reply_text("Hello.")
    await cairn.engine.send(chat.id, "Hi")
    names = [t["name"] for t in fake.message_requests[-1].body.get("tools", [])]
    assert "listFolder" not in names and "readFolderFile" not in names
    allow(cairn, project)
    fake.reply_text("Hello.")
    await cairn.engine.send(chat.id, "Hi again")
    names = [t["name"] for t in fake.message_requests[-1].body.get("tools", [])]
    assert names[-2:] == ["listFolder", "readFolderFile"]


def test_folder_access_is_set_on_the_project_only(cairn, project, folders):
    (inner,) = folders("Acme/Brand")
    folder, _ = cairn.registry.add_workspace(inner)
    with pytest.raises(Refused, match="it is a folder of the project"):
        allow(cairn, folder)


def test_the_command_line_switch(cairn, project, capsys):
    cairn.close()
    assert main(["workspace", "folder-access", project.id, "on", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["folder_access"] is True
    assert main(["workspace", "folder-access", project.id, "off"]) == 0
    assert "cannot see the files" in capsys.readouterr().out


# ----------------------------------------------------------------- reading


async def test_claude_reads_a_nested_file_and_the_chat_shows_a_quiet_line(cairn, fake, project):
    allow(cairn, project)
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/plan.md"})
    assert "is_error" not in result
    assert text_of(result) == "[notes/plan.md — page 1 of 1]\n# Plan\nShip the brand kit in April.\n"
    from ui.chat.entries import tool_line

    assert tool_line("notes/plan.md — page 1 of 1") == "Read notes/plan.md"


async def test_a_long_file_comes_in_pages(cairn, fake, project):
    from app.store.files import PAGE_CHARS

    allow(cairn, project)
    long = "".join(f"line {i:06d}\n" for i in range(PAGE_CHARS // 5))
    (Path(project.path) / "notes" / "long.txt").write_text(long, encoding="utf-8")
    first = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/long.txt"})
    assert text_of(first).startswith("[notes/long.txt — page 1 of 3; read page 2 next]\n")
    second = await ask_tool(cairn, fake, project, "readFolderFile",
                            {"path": "notes/long.txt", "page": 2})
    assert text_of(second).split("\n", 1)[1] == long[PAGE_CHARS:2 * PAGE_CHARS]


async def test_listing_shows_names_kinds_and_sizes_and_hides_what_it_must(cairn, fake, project):
    base = Path(project.path)
    (base / ".env").write_text("API_KEY=sk-secret", encoding="utf-8")
    (base / ".git").mkdir()
    (base / "server.pem").write_text("-----BEGIN", encoding="utf-8")
    (base / "id_ed25519").write_text("key", encoding="utf-8")
    (base / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    (base / "build").mkdir()
    (base / "build" / "out.js").write_text("x", encoding="utf-8")
    (base / "debug.log").write_text("x", encoding="utf-8")
    allow(cairn, project)
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {}))
    assert listed == ("[Listed the project's folder — 2 entries]\n"
                      "notes/  (folder)\nREADME.md  (file, 15 B)")
    for path in (".env", "server.pem", "id_ed25519", ".git/config", "build/out.js",
                 "debug.log"):
        result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": path})
        assert result["is_error"] is True
    body = json.dumps([r.body for r in fake.message_requests])
    assert "sk-secret" not in body and "BEGIN" not in body
    # The person allows one: then it is listed and read.
    allow(cairn, project, allow=[".env"])
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": ".env"})
    assert "API_KEY=sk-secret" in text_of(result)


async def test_an_image_and_a_pdf_are_sent_as_the_model_reads_them(cairn, fake, project):
    import base64
    import struct
    import zlib

    def png() -> bytes:
        def chunk(kind: bytes, data: bytes) -> bytes:
            return (struct.pack(">I", len(data)) + kind + data
                    + struct.pack(">I", zlib.crc32(kind + data)))
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(b"\0\0")) + chunk(b"IEND", b""))

    image = png()
    (Path(project.path) / "notes" / "logo.png").write_bytes(image)
    (Path(project.path) / "notes" / "brief.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    allow(cairn, project)
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/logo.png"})
    (block,) = result["content"]
    assert block["type"] == "image" and block["source"]["media_type"] == "image/png"
    assert base64.b64decode(block["source"]["data"]) == image
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/brief.pdf"})
    assert result["content"][0]["type"] == "document"


@pytest.mark.parametrize("path, sentence", [
    ("../outside.txt", "Cannot read '../outside.txt': it leaves the folder with '..'."),
    ("/etc/passwd", "Cannot read '/etc/passwd': it is an absolute path; give a path relative "
                    "to the folder."),
    ("C:\\Windows\\win.ini", "Cannot read 'C:\\Windows\\win.ini': it names a drive; give a path "
                             "relative to the folder."),
    ("\\\\server\\share\\x.txt", "Cannot read '\\\\server\\share\\x.txt': it is a UNC or device "
                                 "path; give a path relative to the folder."),
    ("link/secret.txt", "Cannot read 'link/secret.txt': it is a link (or junction) that leads "
                        "outside the folder."),
    ("pipe", "Cannot read 'pipe': it is not a regular file or folder (a device, a pipe or a "
             "socket)."),
])
async def test_each_refusal_is_an_error_result_and_nothing_outside_is_sent(
        cairn, fake, project, tmp_path, path, sentence):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (tmp_path / "disk" / "outside.txt").write_text(SECRET, encoding="utf-8")
    os.symlink(outside, Path(project.path) / "link")
    os.mkfifo(Path(project.path) / "pipe")
    allow(cairn, project)
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": path})
    assert result["is_error"] is True and text_of(result) == sentence
    assert SECRET not in json.dumps([r.body for r in fake.message_requests])
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {}))
    assert "link" not in listed and "pipe" not in listed


async def test_a_file_swapped_between_the_check_and_the_read_is_refused(
        cairn, project, monkeypatch, tmp_path):
    allow(cairn, project)
    checked = resolve_inside(project.path, "notes/plan.md")
    assert not isinstance(checked, str)
    other = tmp_path / "other.md"
    other.write_text(SECRET, encoding="utf-8")
    os.replace(other, Path(project.path) / "notes" / "plan.md")  # a new file, a new inode
    monkeypatch.setattr("app.tools.folder_reading.resolve_inside", lambda root, path: checked)
    content, is_error = cairn.folder_reader.answer(project.id, "readFolderFile",
                                                   {"path": "notes/plan.md"})
    assert is_error and "it changed while it was being read" in content[0]["text"]


# ----------------------------------------------------------------- the path rule


@pytest.mark.parametrize("path, refused", [
    ("..", "it leaves the folder with '..'"),
    ("notes/../../x", "it leaves the folder with '..'"),
    ("notes\\..\\..\\x", "it leaves the folder with '..'"),
    ("/etc/passwd", "it is an absolute path; give a path relative to the folder"),
    ("\\Windows", "it is an absolute path; give a path relative to the folder"),
    ("~/x", "it is an absolute path; give a path relative to the folder"),
    ("C:\\x", "it names a drive; give a path relative to the folder"),
    ("c:x", "it names a drive; give a path relative to the folder"),
    ("\\\\server\\share\\x", "it is a UNC or device path; give a path relative to the folder"),
    ("//server/share/x", "it is a UNC or device path; give a path relative to the folder"),
    ("\\\\?\\C:\\x", "it is a UNC or device path; give a path relative to the folder"),
    ("\\\\.\\PhysicalDrive0", "it is a UNC or device path; give a path relative to the folder"),
    ("CON", "'CON' is a device name on Windows"),
    ("notes/nul.txt", "'nul.txt' is a device name on Windows"),
    ("file.txt:stream", "it contains ':'"),
    ("a\0b", "it contains a NUL character"),
])
def test_the_path_rule_refuses(path, refused):
    assert parts_of(path) == refused


@pytest.mark.parametrize("path, parts", [
    ("", ()), (".", ()), ("notes/plan.md", ("notes", "plan.md")),
    ("notes\\plan.md", ("notes", "plan.md")), ("./a//b/", ("a", "b")),
    ("..hidden", ("..hidden",)),
])
def test_the_path_rule_accepts(path, parts):
    assert parts_of(path) == parts


def test_a_junction_that_resolves_outside_is_refused(tmp_path, monkeypatch):
    """A Windows junction resolves like a link (realpath follows it): the rule refuses what
    it leads to outside the folder.  Simulated here by what realpath answers."""
    folder = tmp_path / "Acme"
    (folder / "junction").mkdir(parents=True)
    real = os.path.realpath

    def resolved(path):  # the junction leads to another drive
        return "/elsewhere/drive" if str(path).endswith("junction") else real(path)

    monkeypatch.setattr(inside.os.path, "realpath", resolved)
    assert resolve_inside(str(folder), "junction") == (
        "it is a link (or junction) that leads outside the folder")


def test_within_is_a_whole_segment_test():
    assert inside.within("/a/b", "/a") and inside.within("/a", "/a")
    assert not inside.within("/ab", "/a")  # a sibling that shares the prefix


# -------------------------------------------------- links and secrets out of reach


async def test_a_hard_link_to_a_file_outside_is_neither_read_nor_listed(
        cairn, fake, project, tmp_path):
    outside = tmp_path / "outside-secret.txt"
    outside.write_text(SECRET, encoding="utf-8")
    os.link(outside, Path(project.path) / "notes" / "linked.txt")  # same inode, two names
    allow(cairn, project)
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/linked.txt"})
    assert result["is_error"] is True and text_of(result) == (
        f"Cannot read 'notes/linked.txt': {inside.HARD_LINK}.")
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {"path": "notes"}))
    assert "linked" not in listed and "plan.md" in listed
    assert SECRET not in json.dumps([r.body for r in fake.message_requests])


def test_a_hard_link_made_after_the_check_is_refused_at_the_read(cairn, project, tmp_path,
                                                                 monkeypatch):
    allow(cairn, project)
    checked = resolve_inside(project.path, "notes/plan.md")
    assert not isinstance(checked, str)
    os.link(Path(project.path) / "notes" / "plan.md", tmp_path / "elsewhere.md")
    monkeypatch.setattr("app.tools.folder_reading.resolve_inside", lambda root, path: checked)
    content, is_error = cairn.folder_reader.answer(project.id, "readFolderFile",
                                                   {"path": "notes/plan.md"})
    assert is_error and inside.HARD_LINK in content[0]["text"]


SECRET_NAMES = ["cert.p12", "cert.PFX", "putty.ppk", "vault.kdbx", "release.jks",
                "app.keystore", "terraform.tfstate", "terraform.tfstate.backup",
                "credentials.json", "secrets.yaml", "Secrets.toml", "server.pem", "id_rsa"]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_the_likely_secrets(name):
    assert inside.is_secret(name)


async def test_likely_secrets_are_neither_listed_nor_read(cairn, fake, project):
    base = Path(project.path) / "notes"
    for name in SECRET_NAMES:
        (base / name).write_text(SECRET, encoding="utf-8")
    allow(cairn, project)
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {"path": "notes"}))
    assert listed == "[Listed notes/ — 1 entry]\nnotes/plan.md  (file, 36 B)"
    for name in ("cert.p12", "terraform.tfstate", "credentials.json", "Secrets.toml"):
        result = await ask_tool(cairn, fake, project, "readFolderFile",
                                {"path": f"notes/{name}"})
        assert result["is_error"] is True and "may hold secrets" in text_of(result)
    assert SECRET not in json.dumps([r.body for r in fake.message_requests])


def _gitignore_as(kind: str, base: Path, tmp_path: Path) -> str:
    """A .gitignore that is not a plain small file; the reason the folder tools give."""
    target = base / ".gitignore"
    if kind == "link":
        huge = tmp_path / "huge"
        with open(huge, "wb") as handle:  # sparse: 3 GB on paper, nothing on the disk
            handle.truncate(3 * 1024**3)
        os.symlink(huge, target)
        return "is a link"
    if kind == "fifo":
        os.mkfifo(target)  # opened for reading, it would wait for a writer for good
        return "is not a regular file"
    with open(target, "wb") as handle:
        handle.truncate(inside.MAX_GITIGNORE_BYTES + 1)
    return "is larger than 1 MB"


@pytest.mark.parametrize("kind", ["link", "fifo", "large"])
async def test_a_gitignore_that_cannot_be_read_safely_leaves_its_folder_out(
        cairn, fake, project, tmp_path, kind):
    """Never read through a link nor past its bound, never opened as a FIFO; what it would
    leave out cannot be told, so its folder's contents are refused with that reason."""
    why = _gitignore_as(kind, Path(project.path) / "notes", tmp_path)
    allow(cairn, project)
    result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": "notes/plan.md"})
    assert result["is_error"] is True and text_of(result) == (
        f"Cannot read 'notes/plan.md': the .gitignore of its folder {why}, so Cairn cannot "
        "tell what it leaves out.")
    listed = await ask_tool(cairn, fake, project, "listFolder", {"path": "notes"})
    assert listed["is_error"] is True and text_of(listed) == (
        f"Cannot list 'notes': its .gitignore {why}, so Cairn cannot tell what it leaves out.")
    root = text_of(await ask_tool(cairn, fake, project, "listFolder", {}))
    assert "README.md" in root  # the rest of the folder is unaffected


def test_a_gitignore_is_read_from_the_file_checked_and_no_further(tmp_path, monkeypatch):
    rules = tmp_path / ".gitignore"
    rules.write_text("*.log\n" + "# padding\n" * 50, encoding="utf-8")
    assert inside.read_gitignore(rules)[0] == "*.log"
    small = tmp_path / "small"
    small.write_text("*.md\n", encoding="utf-8")
    linked = tmp_path / "linked" / ".gitignore"
    linked.parent.mkdir()
    os.symlink(small, linked)
    assert inside.read_gitignore(linked) == "is a link"  # even to a small, plain file
    # Swapped for a link between the look and the read: the read itself refuses it.
    looked = inside.gitignore_lines(rules)
    monkeypatch.setattr(inside, "gitignore_lines", lambda path: looked)
    assert inside.read_gitignore(linked) == "is a link, or cannot be read"
    monkeypatch.undo()
    monkeypatch.setattr(inside, "MAX_GITIGNORE_BYTES", 100)
    assert str(inside.read_gitignore(rules)).startswith("is larger than")


async def test_a_huge_folder_is_listed_from_a_bounded_look(cairn, fake, project, monkeypatch):
    base = Path(project.path) / "many"
    base.mkdir()
    for number in range(130):
        (base / f"file-{number:03d}.txt").write_text("x", encoding="utf-8")
    monkeypatch.setattr(inside, "MAX_LISTED", 50)
    allow(cairn, project)
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {"path": "many"}))
    head, *lines = listed.split("\n")
    assert head == ("[Listed many/ — 50 entries; only the first 50 of the folder's entries "
                    "were looked at, and it holds more: name a file or a folder in it to "
                    "reach the others]")
    assert len(lines) == 50
    # A file past the look is still read by name.
    result = await ask_tool(cairn, fake, project, "readFolderFile",
                            {"path": "many/file-129.txt"})
    assert not result.get("is_error")


@pytest.mark.parametrize("case_blind", [True, False])
async def test_gitignore_rules_match_in_any_case_on_a_disk_that_ignores_case(
        cairn, fake, project, monkeypatch, case_blind):
    """On macOS's and Windows' usual disks `Secret.TXT` is the file `secret.txt` names; this
    machine's disk keeps case, so the probe's answer is given (the probe itself: below)."""
    base = Path(project.path)
    (base / ".gitignore").write_text("secret.txt\nBuild/\n", encoding="utf-8")
    (base / "Secret.TXT").write_text(SECRET, encoding="utf-8")
    (base / "build").mkdir()
    (base / "build" / "out.js").write_text(SECRET, encoding="utf-8")
    monkeypatch.setattr(inside, "ignores_case", lambda folder: case_blind)
    allow(cairn, project)
    for path in ("Secret.TXT", "build/out.js"):
        result = await ask_tool(cairn, fake, project, "readFolderFile", {"path": path})
        assert bool(result.get("is_error")) is case_blind, (path, text_of(result))
    listed = text_of(await ask_tool(cairn, fake, project, "listFolder", {}))
    assert ("Secret.TXT" in listed) is not case_blind


def test_the_case_probe_answers_for_this_disk(tmp_path):
    probe = tmp_path / "CaseProbe"
    probe.mkdir()
    assert inside.ignores_case(str(probe)) == (tmp_path / "caseprobe").exists()


def test_a_text_file_that_grows_while_it_is_read_is_read_no_further_than_it_was(
        cairn, project, monkeypatch):
    """A log another program keeps appending to: the read stops at the size the file had when
    it was checked (8 MB at most), instead of following it for as long as it grows."""
    from app.tools import folder_reading as folder_tools

    allow(cairn, project)
    log_file = Path(project.path) / "notes" / "app.log"
    log_file.write_bytes(b"line\n" * 1000)
    opened = folder_tools._open_checked
    taken: list[int] = []

    class Growing:
        """The handle, with another program writing a megabyte before each read."""

        def __init__(self, handle):
            self._handle = handle

        def read(self, n: int = -1) -> bytes:
            if log_file.stat().st_size < 40_000_000:  # (bounded, so the old read ends too)
                with open(log_file, "ab") as writer:
                    writer.write(b"more\n" * 200_000)
            data = self._handle.read(n)
            taken.append(len(data))
            return data

        def __getattr__(self, name: str):
            return getattr(self._handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc) -> None:
            self._handle.close()

    def growing(found):
        handle = opened(found)
        return handle if isinstance(handle, str) else Growing(handle)

    monkeypatch.setattr(folder_tools, "_open_checked", growing)
    content, is_error = cairn.folder_reader.answer(project.id, "readFolderFile",
                                                   {"path": "notes/app.log"})
    assert sum(taken) <= folder_tools.MAX_TEXT_BYTES + (1 << 20)
    assert is_error and "it changed while it was being read" in content[0]["text"]


async def test_a_folder_read_or_listing_cut_at_what_the_turn_has_left_ends_the_turn(
        cairn, project):
    """What is left of the turn's 4 MB cuts a folder page or listing as it cuts a workspace
    file's: the result weighs no more than what was left, and the turn is told it was cut
    (so it ends saying so, instead of going on with a note the model may ignore)."""
    from app.tools import ToolChat

    allow(cairn, project)
    (Path(project.path) / "notes" / "long.md").write_text("A line of notes.\n" * 2000,
                                                         encoding="utf-8")
    for n in range(300):
        (Path(project.path) / "notes" / f"entry-with-a-long-name-{n:04d}.md").write_text("x")
    chat = ToolChat("chat", project.id, (project.id,))
    toolbox = cairn.engine.toolbox
    offered = toolbox.offered(chat)
    for name, tool_input in (("readFolderFile", {"path": "notes/long.md"}),
                             ("listFolder", {"path": "notes"})):
        call = {"type": "tool_use", "id": "toolu_1", "name": name, "input": tool_input}
        output, _summary, bounded = await toolbox.call(offered, chat, call, limit=2_000)
        assert output.size <= 2_000 and bounded, (name, output.size, bounded)
        output, _summary, bounded = await toolbox.call(offered, chat, call, limit=4_000_000)
        assert not bounded and output.size > 2_000, name
