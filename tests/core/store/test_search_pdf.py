"""Find anything: a PDF's text in the search index, read with pypdf — and a PDF
as hostile input (damaged, encrypted, a bomb, nested deep) added without error and found by
its name.  Every PDF here is written by the test itself."""

from __future__ import annotations

import logging
import os
import threading
import zlib
from pathlib import Path

import pytest

from app.cairn import Cairn
from app.ops import Operations
from app.records import Workspace
from app.sharing.export import export_workspace, import_bundle
from app.store import pdf_text as pdf_module
from app.store import search_index
from app.store.files import KnowledgeFile
from app.store.pdf_text import pdf_text
from tests.helpers import fresh_python, run, run_json
from tests.pdfs import encrypted, make_pdf

REPORT = make_pdf("Annual report\nThe quagga migrates in spring.",
                  "Tariff schedule for the (zebra) crossing")


# ===================================================================== the index

@pytest.fixture
def cairn(quiet_cairn):  # type: ignore[no-untyped-def]
    return quiet_cairn


@pytest.fixture
def acme(cairn, folders):  # type: ignore[no-untyped-def]
    (path,) = folders("Acme")
    ws, _ = cairn.registry.add_workspace(path)
    return ws


def add(cairn: Cairn, ws: Workspace, tmp_path: Path, name: str, data: bytes,
        description: str = "") -> KnowledgeFile:
    source = tmp_path / name
    source.write_bytes(data)
    return cairn.files.add(ws.id, source, description=description)


def found(cairn: Cairn, words: str) -> list[tuple[str, str | None]]:
    return [(h.kind, h.file) for h in cairn.search.find(words)]


def content(cairn: Cairn, file_id: str) -> str:
    rows = cairn.registry.db.query(
        "SELECT d.content FROM search_key AS k JOIN search_doc AS d ON d.rowid = k.n"
        " WHERE k.kind = 'file' AND k.ref = ?", (file_id,))
    assert len(rows) == 1
    return str(rows[0][0])


def test_a_pdfs_words_are_found_as_a_file(cairn, acme, tmp_path, capsys):
    f = add(cairn, acme, tmp_path, "report.pdf", REPORT)
    assert f.media_type == "application/pdf"
    assert found(cairn, "quagga") == [("file", f.id)]
    assert found(cairn, "tariff zebra") == [("file", f.id)]  # the second page too
    assert found(cairn, "\"quagga migrates\"") == [("file", f.id)]
    (hit,) = run_json(capsys, "search", "migrat", "--in", "files")
    assert (hit["kind"], hit["file"], hit["workspace"]) == ("file", f.id, acme.id)
    assert "migrates" in hit["snippet"]


def test_a_pdfs_text_is_cleaned_of_marks_control_characters_and_lone_surrogates(
        cairn, acme, tmp_path):
    # A font whose ToUnicode map turns codes into the snippet marks, a bell, a lone
    # surrogate (which SQLite cannot store) and a form feed; pypdf passes them all on.
    cmap = (b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def"
            b" 1 begincodespacerange <00> <FF> endcodespacerange 5 beginbfchar <01> <E000>"
            b" <02> <E001> <03> <0007> <04> <D800> <05> <000C> endbfchar endcmap CMapName"
            b" currentdict /CMap defineresource pop end end")
    data = make_pdf(b"BT /F1 12 Tf 72 720 Td (\\001okapi\\002 \\003bell\\004 \\005feed\tTab) Tj ET",
                    to_unicode=cmap)
    f = add(cairn, acme, tmp_path, "odd.pdf", data)
    indexed = content(cairn, f.id)
    assert "okapi" in indexed and "\tTab" in indexed
    assert not any(c in indexed for c in "\ue000\ue001\x07\x0c\ud800")
    assert found(cairn, "okapi") == [("file", f.id)]
    assert found(cairn, "bell") == [("file", f.id)]


async def test_the_window_adds_a_pdf_off_its_thread(online, workspace, tmp_path, monkeypatch):
    source = tmp_path / "report.pdf"
    source.write_bytes(REPORT)
    threads: list[int] = []
    real = search_index.pdf_text

    def watched(data: bytes, *, name: str, limit: int) -> str:
        threads.append(threading.get_ident())
        return real(data, name=name, limit=limit)

    monkeypatch.setattr(search_index, "pdf_text", watched)
    record, _ = await Operations(online).add_file(workspace.id, source)
    assert threads and threading.get_ident() not in threads  # read on the writer's thread
    assert [h.file for h in online.search.find("quagga")] == [record.id]


# ===================================================================== hostile PDFs

def _bomb() -> bytes:
    """A page whose content stream inflates to about a gigabyte (1.5 MB compressed)."""
    packer = zlib.compressobj(9)
    chunk = b"0 0 m " * 100_000
    packed = b"".join(packer.compress(chunk) for _ in range(1_700)) + packer.flush()
    good = make_pdf("Hello")
    start, end = good.index(b"<< /Length"), good.index(b"endstream")
    # The cross-reference table's offsets are now wrong: pypdf rebuilds it by scanning.
    return (good[:start] + b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed)
            + packed + b"\n" + good[end:])


HOSTILE = {
    "truncated": REPORT[:len(REPORT) // 2],
    "garbage": os.urandom(4096),
    "empty": b"",
    "html named .pdf": b"<html><body>quagga</body></html>",
    "only a header": b"%PDF-1.7\n",
    "nested deep": REPORT.replace(b"/Length", b"/Deep " + b"[" * 100_000 + b"]" * 100_000
                                  + b" /Length", 1),
    "nested dictionaries": REPORT.replace(b"/Length", b"/Deep " + b"<< /A " * 30_000
                                          + b">>" * 30_000 + b" /Length", 1),
    "a page tree that loops": REPORT.replace(b"/Kids [", b"/Kids [2 0 R ", 1),
    "a decompression bomb": _bomb(),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_damaged_pdf_is_added_and_found_by_its_name(cairn, acme, tmp_path, case, caplog):
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        f = add(cairn, acme, tmp_path, "ledger.pdf", HOSTILE[case], description="Old figures")
    assert found(cairn, "ledger") == [("file", f.id)]
    assert found(cairn, "figures") == [("file", f.id)]
    assert "quagga" not in content(cairn, f.id).casefold()
    assert "ledger.pdf" in caplog.text  # one line says why its text is not indexed


@pytest.mark.parametrize("case", ["nested dictionaries", "nested deep"])
def test_a_pdf_nested_past_the_recursion_limit_reads_the_same_from_any_caller(case, caplog):
    """pypdf recovers from a RecursionError from wherever its parser stopped; the read runs on
    a thread of its own, so that the caller's stack depth (the storage thread, an import, a
    test under pytest-xdist) does not change the text nor the log line."""

    def at_depth(depth: int) -> tuple[str, str]:
        if depth:
            return at_depth(depth - 1)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
            text = pdf_text(HOSTILE[case], name="ledger.pdf", limit=10_000)
        return text, caplog.text

    reads = {at_depth(depth) for depth in range(8)}
    assert len(reads) == 1
    ((text, said),) = reads
    assert "quagga" not in text and "ledger.pdf" in said


def test_an_encrypted_pdf_is_found_by_its_name_and_one_without_a_user_password_by_its_text(
        cairn, acme, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        locked = add(cairn, acme, tmp_path, "locked minutes.pdf",
                     encrypted(REPORT, user_password="hunter2"))
    assert found(cairn, "minutes") == [("file", locked.id)]
    assert content(cairn, locked.id) == "" and "is encrypted" in caplog.text
    # Restricted only by an owner password (no copying, say): it opens, and is read.
    restricted = add(cairn, acme, tmp_path, "restricted.pdf", encrypted(REPORT, user_password=""))
    assert found(cairn, "quagga") == [("file", restricted.id)]


def test_a_pdf_read_is_capped_in_pages_characters_and_time(tmp_path, monkeypatch, caplog):
    pages = make_pdf("aardvark one", "badger two", "cheetah three", "dingo four")
    monkeypatch.setattr(pdf_module, "MAX_PAGES", 2)
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        text = pdf_text(pages, name="animals.pdf", limit=1_000)
    assert "aardvark" in text and "badger" in text and "cheetah" not in text
    assert "first 2 of the 4 pages" in caplog.text
    assert pdf_text(pages, name="animals.pdf", limit=10) == "aardvark o"
    monkeypatch.setattr(pdf_module, "SECONDS", -1.0)  # the time is up before it begins
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        assert pdf_text(pages, name="animals.pdf", limit=1_000) == ""
    assert "took more than" in caplog.text


def test_a_page_that_cannot_be_read_leaves_the_others_findable(tmp_path, caplog):
    data = make_pdf("aardvark one", b"BT /F1 12 Tf (" + b"x" * 10 + b") Tj ET "
                    + b"0 0 m " * 600_000, "cheetah three")  # past pypdf's parsing budget
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        text = pdf_text(data, name="animals.pdf", limit=10_000)
    assert "aardvark" in text and "cheetah" in text and "xxxxxxxxxx" not in text
    assert "cannot read page 2 of the PDF 'animals.pdf'" in caplog.text


@pytest.mark.parametrize("error", [RecursionError, MemoryError, ValueError])
def test_any_error_from_pypdf_gives_no_text_and_a_log_line(monkeypatch, caplog, error):
    import pypdf

    def fails(*_: object, **__: object) -> None:
        raise error("deep down")

    monkeypatch.setattr(pypdf, "PdfReader", fails)
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        assert pdf_text(REPORT, name="report.pdf", limit=1_000) == ""
    assert f"'report.pdf' ({error.__name__}: 'deep down')" in caplog.text


# ===================================================================== every path that indexes

def index_rows(db) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    return sorted(db.query(
        "SELECT k.kind, k.ref, k.owner, k.part, k.at, d.title, d.body, d.content"
        " FROM search_key AS k JOIN search_doc AS d ON d.rowid = k.n"))


def test_reindex_equals_the_incremental_index_for_a_pdf(cairn, acme, tmp_path, capsys):
    f = add(cairn, acme, tmp_path, "report.pdf", REPORT, description="Yearly")
    add(cairn, acme, tmp_path, "broken.pdf", REPORT[:100])
    before = index_rows(cairn.registry.db)
    assert "quagga" in content(cairn, f.id)
    code, _, err = run(capsys, "search", "--reindex")
    assert code == 0, err
    assert index_rows(cairn.registry.db) == before


def test_the_pass_after_the_migration_indexes_a_pdfs_text(cairn, acme, tmp_path, monkeypatch):
    f = add(cairn, acme, tmp_path, "report.pdf", REPORT)
    before = index_rows(cairn.registry.db)
    with cairn.registry.db.write() as conn:  # as the migration leaves a stored file
        conn.execute("UPDATE search_doc SET content = '' WHERE rowid ="
                     " (SELECT n FROM search_key WHERE kind = 'file' AND ref = ?)", (f.id,))
        conn.execute("UPDATE search_state SET value = 'pending' WHERE key = 'index'")
    assert content(cairn, f.id) == ""
    writing: list[bool] = []
    real = search_index.pdf_text

    def watched(data: bytes, *, name: str, limit: int, **budget: object) -> str:
        writing.append(cairn.registry.db._lock.locked())
        return real(data, name=name, limit=limit, **budget)  # type: ignore[arg-type]

    monkeypatch.setattr(search_index, "pdf_text", watched)
    cairn.search._checked = False  # a fresh start-up
    assert found(cairn, "quagga") == [("file", f.id)]
    assert index_rows(cairn.registry.db) == before
    assert writing == [False]  # read while no write transaction waits on it


def test_an_imported_pdf_is_found_by_its_text(cairn, acme, tmp_path):
    add(cairn, acme, tmp_path, "report.pdf", REPORT)
    bundle = tmp_path / "acme.cairn"
    export_workspace(cairn.registry, acme.id, bundle, with_chats=False, with_history=False)
    imported = import_bundle(cairn.registry, bundle, str(tmp_path / "copy"))
    hits = cairn.search.find("quagga")
    assert {h.workspace for h in hits} == {acme.id, imported.workspace.id}


def test_removing_a_pdf_removes_its_rows(cairn, acme, tmp_path):
    f = add(cairn, acme, tmp_path, "report.pdf", REPORT)
    cairn.files.remove(f.id)
    assert cairn.registry.db.query("SELECT count(*) FROM search_key WHERE ref = ?",
                                   (f.id,)) == [(0,)]
    assert cairn.registry.db.query(
        "SELECT count(*) FROM search_doc WHERE search_doc MATCH 'quagga'") == [(0,)]
    assert found(cairn, "quagga") == [] and found(cairn, "report") == []


# ===================================================================== start-up

def test_pypdf_is_imported_only_when_a_pdf_is_indexed(isolated):
    probe = (
        "import sys; import app.cairn, app.store.files, app.store.search, app.cli;"
        " from ui.main import main; code = main(['search', 'x', '--json']);"
        " print('PYPDF', 'pypdf' in sys.modules);"
        " from app.store.pdf_text import pdf_text; pdf_text(b'', name='x', limit=1);"
        " print('PYPDF', 'pypdf' in sys.modules)"
    )
    assert fresh_python(probe).split("PYPDF")[1:] == [" False\n", " True\n"]


# ===================================================================== a job of many PDFs


class Ticks:
    """A clock for pdf_text that moves one second each time it is read: a PDF is "slow" by
    the number of operators it makes pypdf read, the same on every machine."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("job", ["reindex", "import"])
def test_the_pdfs_of_one_job_share_one_time_bound(cairn, acme, tmp_path, monkeypatch, caplog,
                                                  job):
    """Twenty PDFs that each take their whole ten seconds (here: ten ticks) cost the job its
    bound (thirty ticks), not twenty times ten: once it is spent, the others are indexed by
    name and description only, and none is opened."""
    slow = make_pdf("\n".join(f"line {n} of a page that takes long to read" for n in range(60)))
    files = [add(cairn, acme, tmp_path, f"slow-{n:02d}.pdf", slow) for n in range(20)]
    assert found(cairn, "takes long") and len(files) == 20
    bundle = tmp_path / "acme.cairn"
    if job == "import":
        export_workspace(cairn.registry, acme.id, bundle, with_chats=False, with_history=False)
    opened: list[str] = []
    real = pdf_module._read

    def counted(data: bytes, *, name: str, limit: int, budget: object) -> str:
        opened.append(name)
        return real(data, name=name, limit=limit, budget=budget)  # type: ignore[arg-type]

    monkeypatch.setattr(pdf_module, "_read", counted)
    monkeypatch.setattr(pdf_module, "_now", Ticks())
    monkeypatch.setattr(pdf_module, "JOB_SECONDS", 30.0)
    with caplog.at_level(logging.WARNING, logger="app.store.pdf_text"):
        if job == "reindex":
            cairn.search.reindex()
        else:
            import_bundle(cairn.registry, bundle, str(tmp_path / "copy"))
    assert 0 < len(opened) <= 3  # each read stops at ten ticks: three fill the thirty
    left = 20 - len(opened)
    assert f"{left} PDFs are indexed by name and description only" in caplog.text
    assert "took more than 30 s in all" in caplog.text
