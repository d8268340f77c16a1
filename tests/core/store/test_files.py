"""Files a person hands to Cairn: a full or unwritable file
store, endless or oversized files, files that are not text; each refusal one sentence in
words, and nothing stored changes."""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import tracemalloc
from pathlib import Path

import pytest

from app.errors import Refused
from app.store.blobs import BlobStore
from app.store.documents import PERSONAL
from tests.helpers import run

# The caps as docs/user-guide.md states them.
MAX_FILE_BYTES = 32_000_000
MAX_DOCUMENT_BYTES = 1_000_000



@pytest.fixture
def ws(isolated, folders, capsys) -> str:
    (root,) = folders("Acme")
    code, out, _ = run(capsys, "workspace", "add", root, "--json")
    assert code == 0
    return str(json.loads(out)["id"])


def stored_files(data: Path) -> list[str]:
    folder = data / "files"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


# ----------------------------------------------------------------- 5: the file store fails


def _disk_full(*args: object, **kwargs: object) -> object:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("failure", ["disk-full", "not-a-folder"])
def test_files_add_when_the_file_store_cannot_write_is_one_sentence(ws, isolated, tmp_path,
                                                                    capsys, monkeypatch, failure):
    source = tmp_path / "notes.md"
    source.write_text("notes")
    if failure == "disk-full":
        monkeypatch.setattr("app.store.blobs.tempfile.mkstemp", _disk_full)
        reason = "the disk is full"
    else:  # something else took the file store's name: it cannot be a folder
        (isolated / "files").write_text("in the way")
        reason = "a file is in the way of a folder it needs"
    code, out, err = run(capsys, "files", "add", ws, str(source))
    assert (code, out) == (1, "")
    assert err.startswith(f"cannot add '{source}': Cairn could not keep a copy in its data folder,"
                          " because "), err
    assert err.endswith(f", because {reason}\n") and len(err.splitlines()) == 1
    assert run(capsys, "files", "list", ws, "--json")[1] == "[]\n"


def test_attach_when_the_file_store_is_full_is_one_sentence(online, workspace, tmp_path,
                                                            monkeypatch):
    source = tmp_path / "brief.md"
    source.write_text("brief")
    monkeypatch.setattr("app.store.blobs.tempfile.mkstemp", _disk_full)
    with pytest.raises(Refused) as refused:
        online.files.attach(source)
    assert str(refused.value) == ("cannot attach 'brief.md': Cairn could not keep a copy in its "
                                  "data folder, because the disk is full")


def test_a_failed_copy_leaves_no_partial_blob(isolated, tmp_path, monkeypatch):
    store = BlobStore(isolated / "files")

    class Failing(io.BytesIO):
        def read(self, size: int = -1) -> bytes:
            if self.tell() >= 2 * 1024 * 1024:
                raise OSError(errno.EIO, "Input/output error")
            return super().read(size)

    with pytest.raises(OSError):
        store.put_stream(Failing(b"x" * 5 * 1024 * 1024), limit=MAX_FILE_BYTES)
    assert stored_files(isolated) == []


# ----------------------------------------------------------------- 7: only regular files


@pytest.mark.parametrize("command", [("memory", "set"), ("knowledge", "set"), ("files", "add")])
def test_a_folder_or_a_missing_file_is_said_in_words(ws, tmp_path, capsys, command):
    argv = [*command] if command[0] == "memory" else [*command, ws]
    verb = {"memory": "read", "knowledge": "read", "files": "add"}[command[0]]
    code, _, err = run(capsys, *argv, str(tmp_path / "missing.md"))
    assert (code, err) == (1, f"cannot {verb} '{tmp_path / 'missing.md'}': it does not exist\n")
    code, _, err = run(capsys, *argv, str(tmp_path))
    assert (code, err) == (1, f"cannot {verb} '{tmp_path}': it is a folder, not a file\n")


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_a_device_is_not_a_regular_file(ws, capsys):
    code, _, err = run(capsys, "memory", "set", "/dev/null")
    assert (code, err) == (1, "cannot read '/dev/null': it is not a regular file (it is a "
                              "device, a pipe or a socket)\n")


# ----------------------------------------------------------------- 15: Python's own words


def test_a_document_that_is_not_utf8_is_said_in_words(ws, tmp_path, capsys):
    latin = tmp_path / "m.md"
    latin.write_bytes("Café notes".encode("latin-1"))
    code, _, err = run(capsys, "memory", "set", str(latin))
    assert (code, err) == (1, f"cannot read '{latin}': it is not UTF-8 text (byte 4 is not part "
                              "of any character); save it as UTF-8 and try again\n")
    assert "codec" not in err


def test_attaching_a_missing_file_says_it_does_not_exist(online, tmp_path):
    with pytest.raises(Refused) as refused:
        online.files.attach(tmp_path / "gone.pdf")
    assert str(refused.value) == f"cannot attach '{tmp_path / 'gone.pdf'}': it does not exist"


# ----------------------------------------------------------------- 20: documents up to 1 MB


def test_a_document_over_1_mb_is_refused_and_nothing_changes(online, workspace):
    online.knowledge.save(workspace.id, "## Facts\n- kept\n", source="user")
    big = "- entry\n" * (MAX_DOCUMENT_BYTES // 8 + 1)
    for owner in (workspace.id, PERSONAL):
        with pytest.raises(Refused) as refused:
            online.knowledge.save(owner, big, source="user")
        assert "can be at most 1 MB (1,000,000 bytes), because it is sent to the model" in str(
            refused.value)
    assert online.knowledge.get(workspace.id).text == "## Facts\n- kept\n"
    assert online.knowledge.get(PERSONAL).version == 0
    exactly = "a" * MAX_DOCUMENT_BYTES
    assert online.knowledge.save(PERSONAL, exactly, source="user").document.version == 1


def test_knowledge_set_with_a_50_mb_file_is_refused_before_reading_it(ws, tmp_path, capsys):
    big = tmp_path / "big.md"
    with open(big, "wb") as sparse:
        sparse.truncate(50_000_000)
    code, _, err = run(capsys, "knowledge", "set", ws, str(big))
    assert (code, err) == (1, "cannot save this knowledge document: it is 50.0 MB, and a "
                              "knowledge document can be at most 1 MB (1,000,000 bytes), because "
                              "it is sent to the model with every message in its workspace\n")
    code, _, err = run(capsys, "memory", "set", str(big))
    assert code == 1 and err.startswith("cannot save personal memory: it is 50.0 MB")


# ----------------------------------------------------------------- 21: files streamed and capped


def test_a_knowledge_file_over_the_cap_is_refused_and_nothing_is_kept(ws, isolated, tmp_path,
                                                                      capsys):
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as sparse:
        sparse.truncate(2_000_000_000)  # 2 GB, sparse: costs no disk
    code, _, err = run(capsys, "files", "add", ws, str(huge))
    assert (code, err) == (1, f"cannot add '{huge}': it is 2.0 GB, and a knowledge file can be "
                              "at most 32 MB\n")
    assert stored_files(isolated) == []


def added_within(capsys, ws: str, source, limit: int) -> str:
    """`cairn files add` of *source*, which must succeed holding under *limit* bytes at
    once (traced); its output."""
    tracemalloc.start()
    try:
        code, out, err = run(capsys, "files", "add", ws, str(source), "--json")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, err
    assert peak < limit, f"held {peak:,} bytes at once for a {source.stat().st_size:,}-byte file"
    return out


def test_a_knowledge_file_is_streamed_into_storage_never_held_whole(ws, isolated, tmp_path,
                                                                    capsys):
    data = os.urandom(1024) * 20_000  # 20 MB
    source = tmp_path / "scan.bin"
    source.write_bytes(data)
    out = added_within(capsys, ws, source, 8_000_000)
    record = json.loads(out)
    assert record["size"] == len(data)
    sha = hashlib.sha256(data).hexdigest()
    assert (isolated / "files" / sha[:2] / sha).read_bytes() == data
    assert [p for p in stored_files(isolated) if ".partial" in p] == []


def test_a_file_whose_size_is_not_known_stops_at_the_cap(isolated, tmp_path, monkeypatch):
    """A size the system does not tell (/proc, a file still growing): the copy stops at the
    cap instead of trusting the size it was told."""
    from app.store.files import FileStore

    source = tmp_path / "growing.log"
    with open(source, "wb") as sparse:
        sparse.truncate(MAX_FILE_BYTES + 1)
    files = FileStore(object(), BlobStore(isolated / "files"))  # type: ignore[arg-type]
    told_nothing = os.stat_result((0o100644, 0, 0, 1, 0, 0, 0, 0, 0, 0))  # size 0, like /proc
    monkeypatch.setattr("app.store.files.os.fstat", lambda fd: told_nothing)
    with pytest.raises(Refused) as refused:
        files.add("ws_x", source)
    assert str(refused.value) == (f"cannot add '{source}': it grew past 32 MB while it was read, "
                                  "and a knowledge file can be at most 32 MB")
    assert stored_files(isolated) == []


def test_files_add_says_when_the_model_cannot_read_a_file(ws, tmp_path, capsys):
    binary = tmp_path / "archive.zip"
    binary.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 8)
    code, out, err = run(capsys, "files", "add", ws, str(binary))
    assert code == 0 and out.startswith("Added wf_")
    assert err == ("The model sees 'archive.zip' listed by name, size and description but cannot "
                   "read it: it reads text, PDFs (up to 32 MB) and images (PNG, JPEG, GIF, WebP, "
                   "up to 5 MB).\n")
    text = tmp_path / "notes.txt"
    text.write_text("plain notes")
    code, _, err = run(capsys, "files", "add", ws, str(text))
    assert (code, err) == (0, "")


def test_an_attachment_that_is_not_text_is_refused_and_not_kept(online, isolated, tmp_path):
    binary = tmp_path / "data.bin"
    binary.write_bytes(b"\0\1\2" * 10_000)
    with pytest.raises(Refused) as refused:
        online.files.attach(binary)
    assert str(refused.value) == ("cannot attach 'data.bin': Cairn can send text files, PDFs and "
                                  "images (PNG, JPEG, GIF, WebP)")
    assert stored_files(isolated) == []
    text = tmp_path / "notes.txt"
    text.write_text("é" * 3_000_000)  # multi-byte characters across chunk boundaries
    reference = online.files.attach(text)
    assert reference["size"] == 6_000_000 and reference["media_type"] == "text/plain"


def test_a_binary_without_a_nul_byte_is_never_read_whole_for_search(ws, isolated, tmp_path,
                                                                   capsys):
    """Random bytes with no NUL in them (one run in fifty of the test above) are still known
    as no text from their first bytes, so search reads no more of them."""
    chunk = bytes(b for b in os.urandom(4096) if b)[:1024]
    source = tmp_path / "noise.bin"
    source.write_bytes(chunk * 20_000)  # 20 MB, no NUL anywhere
    added_within(capsys, ws, source, 8_000_000)


@pytest.mark.parametrize("name, data, words", [
    ("report.pdf", b"", "it is empty (0 bytes), so there is nothing to send"),
    ("notes.txt", b"", "it is empty (0 bytes), so there is nothing to send"),
    ("empty", b"", "it is empty (0 bytes), so there is nothing to send"),
    ("report.pdf", b"<html>not a pdf</html>",
     "it is named like a PDF but is not one (it has no PDF header)"),
])
async def test_an_attachment_that_could_never_be_read_is_refused_before_anything_is_stored(
        online, isolated, workspace, tmp_path, name, data, words):
    """A 0-byte file went out as a PDF, and the API refused the turn."""
    source = tmp_path / name
    source.write_bytes(data)
    chat = online.registry.new_chat(folder=workspace.path)
    with pytest.raises(Refused) as refused:
        await online.engine.send(chat.id, "here", attachments=[source])
    assert str(refused.value) == f"cannot attach '{name}': {words}"
    assert online.chats.messages(chat.id) == [] and stored_files(isolated) == []


def test_a_pdf_with_bytes_before_its_header_is_still_attached(online, tmp_path):
    source = tmp_path / "scan.pdf"
    source.write_bytes(b"\r\n" * 20 + b"%PDF-1.4\n%%EOF\n")  # as some scanners write them
    assert online.files.attach(source)["media_type"] == "application/pdf"
