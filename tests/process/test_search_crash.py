"""The search index under kill -9 ("Done when"): a child writes everything the index
follows and is killed at random moments, mostly mid-write; after each kill the index holds
exactly what the database holds — no committed write without its index rows, no index row
without its write — and FTS5's own integrity check passes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.base.db import Database
from app.store.blobs import BlobStore
from app.store.search_index import file_text, split_entries

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("search_writer.py")
CYCLES = 12


def index_matches_data(db: Database, blobs: BlobStore) -> None:
    """The index is what a rebuild from the data would be (asserted)."""
    import json

    current = {r[0]: r for r in db.query(
        "SELECT id, content, chat_id, created_at FROM message WHERE superseded_by IS NULL")}
    indexed = {r[0]: r for r in db.query("SELECT rowid, text, chat_id, at FROM search_message")}
    assert set(indexed) == set(current), "messages and their index rows differ"
    for message_id, (_, content, chat_id, at) in current.items():
        words = "\n".join(b["text"] for b in json.loads(content) if b.get("type") == "text")
        assert indexed[message_id][1:] == (words, chat_id, at)
    titles = dict(db.query("SELECT id, title FROM chat"))
    keyed = dict(db.query("SELECT k.ref, d.title FROM search_key AS k JOIN search_doc AS d"
                          " ON d.rowid = k.n WHERE k.kind = 'chat'"))
    assert keyed == titles
    for owner, text in db.query("SELECT owner, text FROM knowledge"):
        rows = db.query("SELECT k.part, d.title, d.body FROM search_key AS k JOIN search_doc"
                        " AS d ON d.rowid = k.n WHERE k.kind = 'knowledge' AND k.ref = ?"
                        " ORDER BY k.part", (owner,))
        assert rows == [(e.line, e.section, e.text) for e in split_entries(text)]
    stored = {r[0]: r[1:] for r in db.query(
        "SELECT id, name, description, sha256, media_type FROM knowledge_file")}
    in_index = {r[0]: r[1:] for r in db.query(
        "SELECT k.ref, d.title, d.body, d.content FROM search_key AS k JOIN search_doc AS d"
        " ON d.rowid = k.n WHERE k.kind = 'file'")}
    assert set(in_index) == set(stored)
    for file_id, (name, description, sha, media_type) in stored.items():
        assert in_index[file_id][:2] == (name, description)
        # (A removal killed after it deleted the blob and before its commit leaves the file
        # without bytes — the file store's own matter; its text was indexed when it was.)
        if blobs.path(sha).is_file():
            assert in_index[file_id][2] == file_text(blobs.read(sha), media_type, name)
    keys = db.query("SELECT count(*) FROM search_key")[0][0]
    docs = db.query("SELECT count(*) FROM search_doc")[0][0]
    assert keys == docs
    with db.write() as conn:  # FTS5's own check of its index against its content
        conn.execute("INSERT INTO search_message (search_message) VALUES ('integrity-check')")
        conn.execute("INSERT INTO search_doc (search_doc) VALUES ('integrity-check')")


def test_every_indexed_write_keeps_its_index_rows_through_kill_9(isolated, tmp_path):
    folder = tmp_path / "Work"
    folder.mkdir()
    env = {**os.environ, "CAIRN_DATA_DIR": str(isolated), "PYTHONPATH": str(ROOT)}
    rng = random.Random(22)
    reported = 0
    for cycle in range(CYCLES):
        child = subprocess.Popen([sys.executable, str(WRITER), str(cycle), str(folder)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                 cwd=ROOT, text=True)
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY", child.stderr.read() if child.stderr else ""
        wanted = rng.randrange(3, 25)
        oks = 0
        deadline = time.monotonic() + 60
        while oks < wanted and time.monotonic() < deadline:
            line = child.stdout.readline()
            assert line, child.stderr.read() if child.stderr else ""
            oks += line.startswith("OK ")
        time.sleep(rng.random() * 0.01)  # somewhere inside the next write, most of the time
        child.send_signal(signal.SIGKILL if hasattr(signal, "SIGKILL") else signal.SIGTERM)
        child.wait()
        child.stdout.close()
        assert child.stderr is not None
        child.stderr.close()
        reported += oks
        db = Database.open(isolated)
        try:
            index_matches_data(db, BlobStore(isolated / "files"))
        finally:
            db.close()
    assert reported >= CYCLES * 3
