"""The history keeps every version of a knowledge document, byte for byte, compactly:
past 200 versions nothing is dropped, so a silent loss can always be
undone from the history."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given, settings
from hypothesis import strategies as st

from app.base import db as dbmod
from app.base.db import DB_NAME, Database
from app.base.lines import split_lines
from app.sharing.export import export_workspace
from app.sharing.importing import import_bundle
from app.store import history
from app.store.documents import KnowledgeStore
from app.store.registry.registry import Registry

OWNER = "ws_acme"
ODD = ["\r\n", "\u2028", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2029"]


def _versions(count: int, size: int, seed: int = 25) -> list[str]:
    """*count* versions of a document of about *size* characters, each a small edit of the
    one before: CRLF and LF lines, U+2028 and other characters str.splitlines breaks on,
    repeated lines, and now and then no newline at the end."""
    rng = random.Random(seed)
    lines = [f"- fact {i}: the value is {rng.randrange(10**6)}{ODD[i % len(ODD)]}tail\n"
             if i % 3 else "- the same line\r\n" for i in range(size // 30)]
    out: list[str] = []
    for n in range(count):
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(lines))
            choice = rng.randrange(4)
            if choice == 0:
                lines[at] = f"- changed in {n}: {rng.randrange(10**9)}\u2028more\r\n"
            elif choice == 1:
                lines.insert(at, lines[at])  # a repeated line
            elif choice == 2 and len(lines) > 10:
                del lines[at]
            else:
                lines.insert(at, f"## Heading {n}\n")
        text = "".join(lines)
        out.append(text.rstrip("\r\n") if n % 7 == 3 else text)
    return out


def _stored_bytes(db: Database) -> int:
    page_size, pages = db.query("PRAGMA page_size")[0][0], db.query("PRAGMA page_count")[0][0]
    return int(page_size * pages)


def test_a_thousand_versions_of_a_30_kb_document_all_read_back_byte_for_byte(registry):
    store = KnowledgeStore(registry.db)
    texts = _versions(1000, 30_000)
    assert min(len(t) for t in texts) > 25_000
    before = _stored_bytes(registry.db)
    for text in texts:
        store.save(OWNER, text, source="user")
    assert store.get(OWNER).version == 1000
    for number, text in enumerate(texts, start=1):
        assert store.version_text(OWNER, number) == text, number
    listed = store.history(OWNER)
    assert [v.version for v in listed] == list(range(1000, 0, -1))
    assert [v.size for v in reversed(listed)] == [len(t) for t in texts]
    # Kept compactly: far less than the 1,000 whole texts.
    raw = sum(len(t.encode()) for t in texts)
    assert _stored_bytes(registry.db) - before < raw // 10
    # The first version, 999 versions ago, comes back as the newest.
    restored = store.restore(OWNER, 1)
    assert (restored.version, restored.text, restored.source) == (1001, texts[0], "restore")
    assert store.version_text(OWNER, 1001) == texts[0]


def test_the_diff_between_two_old_versions_keeps_their_lines_as_written(registry):
    store = KnowledgeStore(registry.db)
    store.save(OWNER, "- one\u2028## not a heading\r\n- two\r\n", source="user")
    store.save(OWNER, "- one\u2028## not a heading\r\n- three\r\n", source="user")
    patch = store.diff(OWNER, 1, 2)
    assert "-- two\r\n+- three\r\n" in patch
    assert " - one\u2028## not a heading\r\n" in patch  # one line, unchanged


def test_a_missing_version_is_refused_in_a_sentence(registry):
    import pytest

    from app.errors import Refused

    store = KnowledgeStore(registry.db)
    store.save(OWNER, "- one\n", source="user")
    store.save(OWNER, "- two\n", source="user")
    with pytest.raises(Refused, match="cannot find version 9 of this knowledge document: its "
                                      "versions run from 1 to 2"):
        store.version_text(OWNER, 9)


@contextmanager
def carried(registry, folders, tmp_path, texts: list[str]) -> Iterator[tuple[Registry, str]]:
    """*texts* saved as a workspace's versions, exported with their history and imported into
    another data folder: that registry (closed after) and the imported document's owner."""
    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    store = KnowledgeStore(registry.db)
    for text in texts:
        store.save(ws.id, text, source="user")
    target = tmp_path / "acme.cairn"
    export_workspace(registry, ws.id, target, with_history=True)
    fresh = Registry.open(tmp_path / "elsewhere" / "cairn-data")
    try:
        (tmp_path / "receiver").mkdir()
        imported = import_bundle(fresh, target, str(tmp_path / "receiver" / "Acme"))
        yield fresh, imported.workspace.id
    finally:
        fresh.close()


def test_export_and_import_carry_the_whole_history(registry, folders, tmp_path):
    texts = _versions(260, 3_000, seed=7)
    with carried(registry, folders, tmp_path, texts) as (fresh, owner):
        other = KnowledgeStore(fresh.db)
        assert [v.version for v in other.history(owner)] == list(range(260, 0, -1))
        assert [other.version_text(owner, n) for n in range(1, 261)] == texts
        assert [v.size for v in reversed(other.history(owner))] == [len(t) for t in texts]
        # The imported history is stored compactly too, and goes on from there.
        assert fresh.db.query("SELECT count(*) FROM knowledge_version WHERE owner = ?"
                              " AND delta IS NULL", (owner,))[0][0] < 20
        other.save(owner, "- after the import\r\n", source="user")
        assert other.version_text(owner, 261) == "- after the import\r\n"
        assert other.version_text(owner, 260) == texts[-1]


def _migration() -> int:
    """The index of the step that made the history compact."""
    return next(i for i, script in enumerate(dbmod.MIGRATIONS)
                if "ADD COLUMN delta BLOB" in script)


def test_a_database_from_before_the_compact_history_reads_every_version_unchanged(isolated):
    step = _migration()
    isolated.mkdir(parents=True)
    conn = sqlite3.connect(isolated / DB_NAME)
    for script in dbmod.MIGRATIONS[:step]:
        conn.executescript(script)
    texts = _versions(60, 2_000, seed=3)
    for number, text in enumerate(texts, start=141):  # the older versions were cut
        conn.execute("INSERT INTO knowledge_version (owner, version, text, source, chat_id,"
                     " saved_at) VALUES (?, ?, ?, 'user', NULL, '2026-11-01T00:00:00.000Z')",
                     (OWNER, number, text))
    conn.execute("INSERT INTO knowledge (owner, text, version, updated_at, source)"
                 " VALUES (?, ?, 200, '2026-11-01T00:00:00.000Z', 'user')", (OWNER, texts[-1]))
    conn.execute(f"PRAGMA user_version = {step}")
    conn.commit()
    conn.close()

    db = Database.open(isolated)
    try:
        store = KnowledgeStore(db)
        assert [store.version_text(OWNER, n) for n in range(141, 201)] == texts
        assert [v.size for v in reversed(store.history(OWNER))] == [len(t) for t in texts]
        for n in range(30):  # saving goes on, as deltas on top of the whole old rows
            store.save(OWNER, texts[n % 5] + f"- saved {n}\r\n", source="user")
        assert [store.version_text(OWNER, n) for n in range(141, 201)] == texts
        assert [store.version_text(OWNER, 201 + n) for n in range(30)] == [
            texts[n % 5] + f"- saved {n}\r\n" for n in range(30)]
        assert db.query("SELECT count(*) FROM knowledge_version WHERE delta IS NOT NULL")[0][0] > 20
    finally:
        db.close()


def test_no_chain_of_deltas_is_longer_than_a_keyframe_apart(registry):
    store = KnowledgeStore(registry.db)
    for text in _versions(120, 2_000, seed=11):
        store.save(OWNER, text, source="user")
    rows = registry.db.query("SELECT delta IS NULL FROM knowledge_version WHERE owner = ?"
                             " ORDER BY version", (OWNER,))
    run = longest = 0
    for (keyframe,) in rows:
        run = 0 if keyframe else run + 1
        longest = max(longest, run)
    assert rows[0] == (1,) and 0 < longest <= history.KEYFRAME_EVERY - 1


_pieces = st.sampled_from(["a", "b", "\n", "\r\n", "\r", "\u2028", "\x0b", "\x85", "## h\n",
                           "- same\n", ""])
_texts = st.lists(_pieces, max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_texts, _texts)
def test_a_delta_always_gives_back_the_exact_text(old: str, new: str):
    assert "".join(split_lines(new)) == new
    assert all(line.count("\n") == (1 if line.endswith("\n") else 0)
               for line in split_lines(new))
    assert history.apply(old, history.encode(old, new)) == new


def test_size_is_counted_in_characters(registry):
    store = KnowledgeStore(registry.db)
    store.save(OWNER, "é\u2028€\r\n", source="user")  # 5 characters, 10 bytes of UTF-8
    store.save(OWNER, "é\u2028€\r\n- more", source="user")
    assert [v.size for v in store.history(OWNER)] == [11, 5]


def test_a_document_of_repeated_lines_and_its_history_export_and_import(registry, folders,
                                                                       tmp_path):
    # Deflated, such a manifest packs tighter than the 100-to-1 an import takes for a zip
    # bomb: it is written as it is instead, and comes back.
    texts = ["- the same line\r\n" * (1_500 + n) for n in range(40)]
    with carried(registry, folders, tmp_path, texts) as (fresh, owner):
        other = KnowledgeStore(fresh.db)
        assert [other.version_text(owner, n) for n in range(1, 41)] == texts


def test_a_history_too_long_for_a_bundle_is_refused_at_export(registry, folders, tmp_path,
                                                               monkeypatch):
    import pytest

    from app.errors import Refused
    from app.sharing import bundle

    (acme,) = folders("Acme")
    ws, _ = registry.add_workspace(acme)
    store = KnowledgeStore(registry.db)
    for text in _versions(30, 3_000, seed=5):
        store.save(ws.id, text, source="user")
    monkeypatch.setattr(bundle, "MAX_MEMBER_BYTES", 50_000)
    target = tmp_path / "acme.cairn"
    with pytest.raises(Refused, match=r"cannot export workspace '.*': its manifest would be "
                                      r"[\d,]+ bytes, and an import reads at most 50,000 "
                                      r"\(export it without the history\)"):
        export_workspace(registry, ws.id, target, with_history=True)
    assert not target.exists() and list(tmp_path.glob(".acme.cairn*")) == []
    export_workspace(registry, ws.id, target)  # the current text alone fits
