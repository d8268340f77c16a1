"""Import is all-or-nothing: ``cairn import`` killed at random points.

A child process runs the command line's ``import`` (``app.cli.main``) on a fresh data folder;
it prints ``READY`` once its modules are loaded, and the parent kills it (SIGKILL,
TerminateProcess on Windows) at a random moment of the import that follows.  Then the parent
opens the data folder as Cairn does — the start-up check, and the rollback of an import that
never committed — and finds either the whole workspace (every folder, document, file and
chat) or nothing: no workspace, no record, no blob, no half-written file, no folder it made.

``CAIRN_IMPORT_CRASH_CYCLES`` sets the number of kills (default 24, to keep the default run
quick; the registry's own crash test kills writers 200 times).
"""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from app.sharing.export import export_workspace
from app.store.blobs import BlobStore
from app.store.documents import KnowledgeStore
from app.store.files import FileStore
from app.store.messages import ChatStore
from app.store.registry.registry import Registry

ROOT = Path(__file__).resolve().parents[2]
CYCLES = int(os.environ.get("CAIRN_IMPORT_CRASH_CYCLES", "24"))
FILES = 30
CHATS = 6
MESSAGES = 60  # per chat

CHILD = (
    "import sys\n"
    "from app import cli  # with what an import runs, loaded before READY\n"
    "from app.sharing import bundle, export, importing\n"
    "from app.store.registry import registry\n"
    "print('READY', flush=True)\n"
    "sys.exit(cli.main(sys.argv[1:]))\n"
)


def _source_bundle(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """A workspace with two nested folders, files, knowledge and chats, exported once."""
    data = tmp_path / "source-data"
    reg = Registry.open(data)
    try:
        root = tmp_path / "disk" / "Acme"
        (root / "Brand" / "Logos").mkdir(parents=True)
        ws, _ = reg.add_workspace(str(root))
        brand, _ = reg.add_workspace(str(root / "Brand"))
        logos, _ = reg.add_workspace(str(root / "Brand" / "Logos"))
        files = FileStore(reg.db, BlobStore(data / "files"))
        knowledge = KnowledgeStore(reg.db)
        chats = ChatStore(reg.db)
        rng = random.Random(15)
        src = tmp_path / "src"
        src.mkdir()
        for i in range(FILES):
            path = src / f"file-{i:02d}.bin"
            path.write_bytes(rng.randbytes(rng.randrange(20_000, 120_000)))
            files.add((ws, brand, logos)[i % 3].id, path, description=f"file {i}")
        for owner in (ws, brand, logos):
            for version in range(3):
                knowledge.save(owner.id, f"## Facts\n- {owner.title} fact {version}\n",
                               source="user")
        for c in range(CHATS):
            chat = reg.new_chat(folder=(ws, brand, logos)[c % 3].path, title=f"chat {c}")
            for m in range(MESSAGES):
                chats.append(chat.id, ("user", "assistant")[m % 2],
                             [{"type": "text", "text": f"message {m} " + "words " * 40}])
        bundle = tmp_path / "acme.cairn"
        export_workspace(reg, ws.id, bundle, with_chats=True, with_history=True)
    finally:
        reg.close()
    return bundle, {"workspaces": 3, "files": FILES, "chats": CHATS,
                    "messages": CHATS * MESSAGES}


def _check(data: Path, target: Path, expected: dict[str, object]) -> str:
    """Open as Cairn does and judge: "whole" or "nothing" (anything else fails the test)."""
    registry = Registry.open(data)  # the start-up check; rolls back an unfinished import
    try:
        db = registry.db
        assert db.query("PRAGMA integrity_check") == [("ok",)]
        assert db.query("PRAGMA foreign_key_check") == []
        assert db.query("SELECT op FROM pending_change") == []
        mine = [ws for ws in registry.workspaces()
                if ws.path == str(target) or ws.path.startswith(str(target) + os.sep)]
        blobs_dir = data / "files"
        on_disk = sorted(p for p in blobs_dir.rglob("*") if p.is_file()) if blobs_dir.exists() \
            else []
        assert not [p for p in on_disk if p.name.startswith(".")], on_disk  # no partial blob
        records = {row[0] for row in db.query("SELECT sha256 FROM knowledge_file")}
        counts = {
            "files": db.query("SELECT count(*) FROM knowledge_file")[0][0],
            "chats": db.query("SELECT count(*) FROM chat")[0][0],
            "messages": db.query("SELECT count(*) FROM message")[0][0],
            "knowledge": db.query("SELECT count(*) FROM knowledge")[0][0],
        }
        if not mine:
            assert counts == {"files": 0, "chats": 0, "messages": 0, "knowledge": 0}, counts
            assert on_disk == [], f"orphan blobs: {on_disk}"
            assert not target.exists(), "the folder the import made was left behind"
            return "nothing"
        assert len(mine) == expected["workspaces"]
        assert counts == {"files": expected["files"], "chats": expected["chats"],
                          "messages": expected["messages"], "knowledge": 3}, counts
        assert {p.name for p in on_disk} == records
        for path in on_disk:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == path.name
        assert sum(len(registry.chat_order(ws.id)) for ws in mine) == expected["chats"]
        return "whole"
    finally:
        registry.close()


def _spawn(data: Path, bundle: Path, target: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, CAIRN_DATA_DIR=str(data), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", CHILD, "import", str(bundle), str(target)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _fresh(tmp_path: Path, n: int) -> tuple[Path, Path]:
    data = tmp_path / f"data-{n:03d}"
    Registry.open(data).close()  # made before the child starts: kills land on the import
    return data, tmp_path / "into" / f"Acme-{n:03d}"


def test_a_killed_import_leaves_the_whole_workspace_or_nothing(tmp_path: Path) -> None:
    bundle, expected = _source_bundle(tmp_path)
    (tmp_path / "into").mkdir()

    # One import left to finish: it works, and it says how long an import takes.
    data, target = _fresh(tmp_path, 0)
    child = _spawn(data, bundle, target)
    assert child.stdout.readline() == "READY\n"  # type: ignore[union-attr]
    started = time.perf_counter()
    out, err = child.communicate(timeout=120)
    duration = time.perf_counter() - started
    assert child.returncode == 0, err
    assert _check(data, target, expected) == "whole"

    timing = random.Random()  # kill moments are random on purpose
    stats = {"whole": 0, "nothing": 0, "mid-import": 0}
    killed = 1 if os.name == "nt" else -9
    wanted = max(1, CYCLES // 6)  # kills that land while the marker is set, at least
    n = 0
    # At least CYCLES kills; on a loaded machine the moments drift, so more are made (up to
    # three times as many) until enough landed mid-import: the bar itself is never lowered.
    while n < CYCLES or (stats["mid-import"] < wanted and n < 3 * CYCLES):
        n += 1
        data, target = _fresh(tmp_path, n)
        child = _spawn(data, bundle, target)
        ready = child.stdout.readline()  # type: ignore[union-attr]
        assert ready == "READY\n", child.communicate()[1]
        time.sleep(timing.uniform(0, duration * 1.1))
        child.kill()
        out, err = child.communicate()
        assert child.returncode in (0, killed), err
        assert "Traceback" not in err, err
        conn = sqlite3.connect(f"file:{data / 'cairn.db'}?mode=ro", uri=True)
        try:
            if conn.execute("SELECT count(*) FROM pending_change").fetchone()[0]:
                stats["mid-import"] += 1
        finally:
            conn.close()
        stats[_check(data, target, expected)] += 1

    print(f"\nimport crash test: {n} kills, import {duration * 1000:.0f} ms, {stats}")
    assert stats["mid-import"] >= wanted, f"too few kills landed mid-import: {stats}"
