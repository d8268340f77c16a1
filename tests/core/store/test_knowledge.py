"""Safe saves: an editor's save names the version it was edited from, and a
stale one is refused with the current document instead of overwriting a newer version."""

from __future__ import annotations

import threading

import pytest

from app.base.db import Database
from app.store.documents import PERSONAL, Change, Conflict, KnowledgeStore, Saved

OWNER = "ws_acme"


@pytest.fixture
def store(registry):  # type: ignore[no-untyped-def]
    return KnowledgeStore(registry.db)


def saved(result: Saved | Conflict) -> int:
    assert isinstance(result, Saved), result
    return result.document.version


def test_a_stale_save_is_a_conflict_and_writes_nothing(store):
    saved(store.save(OWNER, "- one\n", source="user"))
    opened = store.get(OWNER)  # the editor opens version 1
    assert saved(store.save(OWNER, "- one\n- two\n", source="rebuild", chat_id="ch_x")) == 2
    before, history = store.get(OWNER), store.history(OWNER)
    result = store.save(OWNER, "- one, edited by hand\n", source="user", based_on=opened.version)
    assert result == Conflict(before)
    assert (result.current.text, result.current.version) == ("- one\n- two\n", 2)
    assert result.current.source == "rebuild" and result.current.chat_id == "ch_x"
    assert store.get(OWNER) == before and store.history(OWNER) == history


def test_a_save_on_the_current_version_lands(store):
    saved(store.save(OWNER, "- one\n", source="user"))
    result = store.save(OWNER, "- one\n- two\n", source="user", based_on=1)
    assert isinstance(result, Saved) and result.document == store.get(OWNER)
    assert (result.document.version, result.document.text) == (2, "- one\n- two\n")
    assert [v.version for v in store.history(OWNER)] == [2, 1]


def test_the_first_save_is_based_on_version_zero(store):
    assert saved(store.save(OWNER, "- first\n", source="user", based_on=0)) == 1
    # Another editor that also opened the empty document is now stale.
    assert store.save(OWNER, "- other\n", source="user", based_on=0) == Conflict(store.get(OWNER))


def test_a_base_from_the_future_is_a_conflict_too(store):
    saved(store.save(OWNER, "- one\n", source="user"))
    assert isinstance(store.save(OWNER, "- two\n", source="user", based_on=7), Conflict)
    assert store.get(OWNER).version == 1


def test_the_editor_resolves_a_conflict_by_saving_on_the_current_version(store):
    for n in range(5):
        store.save(OWNER, f"- version {n + 1}\n", source="user")
    opened = store.get(OWNER)
    assert opened.version == 5
    # A rebuild lands version 6 while the editor is open.
    assert store.save_if_unchanged([Change(OWNER, "- version 5\n- from a chat\n", 5)],
                                   source="rebuild", chat_id="ch_x")
    result = store.save(OWNER, "- version 5, edited\n", source="user", based_on=opened.version)
    assert isinstance(result, Conflict) and result.current.version == 6
    merged = result.current.text + "- edited by hand\n"
    assert saved(store.save(OWNER, merged, source="user", based_on=result.current.version)) == 7
    assert "- from a chat" in store.get(OWNER).text  # nothing the rebuild wrote was dropped


@pytest.mark.parametrize("based_on", [None, 2, 1])
def test_identical_text_adds_no_version(store, based_on):
    store.save(OWNER, "- one\n", source="user")
    store.save(OWNER, "- one\n- two\n", source="rebuild", chat_id="ch_x")
    current, history = store.get(OWNER), store.history(OWNER)
    # Nothing newer would be lost, so even a stale base gets Saved with the current document.
    result = store.save(OWNER, "- one\n- two\n", source="user", based_on=based_on)
    assert result == Saved(current)
    assert store.get(OWNER) == current and store.history(OWNER) == history


def test_identical_text_on_a_document_never_saved(store):
    assert store.save(PERSONAL, "", source="user") == Saved(store.get(PERSONAL))
    assert store.get(PERSONAL).version == 0 and store.history(PERSONAL) == []


def test_an_unknown_source_is_refused_even_for_identical_text(store):
    with pytest.raises(ValueError):
        store.save(OWNER, "", source="editor")


def test_without_a_base_a_save_lands_on_top(store):
    store.save(OWNER, "- one\n", source="user")
    store.save(OWNER, "- two\n", source="rebuild")
    result = store.save(OWNER, "- three\n", source="user")  # knowledge set, import
    assert isinstance(result, Saved) and result.document.version == 3


def test_restore_is_a_version_unless_the_text_is_current(store):
    store.save(OWNER, "- one\n", source="user")
    store.save(OWNER, "- two\n", source="user")
    restored = store.restore(OWNER, 1)
    assert (restored.version, restored.text, restored.source) == (3, "- one\n", "restore")
    assert store.restore(OWNER, 1) == restored and len(store.history(OWNER)) == 3


def test_a_hand_save_between_the_rebuilds_read_and_write_wins(store):
    store.save(OWNER, "- Budget 40000 EUR\n", source="user")
    read = store.get(OWNER)  # the rebuild reads its documents
    edited = "- Budget 45000 EUR (changed by hand)\n"
    assert saved(store.save(OWNER, edited, source="user")) == 2  # the person saves meanwhile
    assert not store.save_if_unchanged(
        [Change(OWNER, read.text + "- Launch 2027-04-15\n", read.version)], source="rebuild")
    assert store.get(OWNER).text == edited and len(store.history(OWNER)) == 2


def test_two_writers_on_one_base_one_lands_and_one_conflicts(registry, isolated):
    """Two connections (as two processes would be) race on the same base version: the
    comparison and the write share a transaction, so exactly one lands every time."""
    other_db = Database.open(isolated)
    try:
        stores = [KnowledgeStore(registry.db), KnowledgeStore(other_db)]
        stores[0].save(OWNER, "- base\n", source="user")
        for round_ in range(20):
            base = stores[0].get(OWNER).version
            barrier = threading.Barrier(2)
            results: list[Saved | Conflict] = [Conflict(stores[0].get(OWNER))] * 2

            def write(n: int, base: int = base, round_: int = round_,
                      barrier: threading.Barrier = barrier,
                      results: list[Saved | Conflict] = results) -> None:
                barrier.wait()
                results[n] = stores[n].save(OWNER, f"- round {round_} by writer {n}\n",
                                            source="user", based_on=base)

            threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            landed = [r for r in results if isinstance(r, Saved)]
            refused = [r for r in results if isinstance(r, Conflict)]
            assert len(landed) == len(refused) == 1, results
            assert refused[0].current == landed[0].document == stores[1].get(OWNER)
            assert landed[0].document.version == base + 1
        assert len(stores[0].history(OWNER)) == 21
    finally:
        other_db.close()


def test_cli_set_still_lands_on_top_and_identical_text_adds_no_version(isolated, tmp_path,
                                                                         capsys):
    from app import cli

    memory = tmp_path / "memory.md"
    memory.write_text("- Likes short answers\n")
    assert cli.main(["memory", "set", str(memory)]) == 0
    assert cli.main(["memory", "set", str(memory)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Personal memory saved (version 1)."
    memory.write_text("- Likes long answers\n")
    assert cli.main(["memory", "set", str(memory), "--json"]) == 0
    shown = capsys.readouterr().out
    assert '"version": 2' in shown and "long answers" in shown
