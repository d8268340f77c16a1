"""Find anything: the index, its queries, the command line."""

from __future__ import annotations

import json

import pytest

from app.cairn import Cairn
from app.errors import Refused
from app.knowledge.document import parse as parse_document
from app.store import search_index
from app.store.search_index import split_entries
from tests.helpers import database_before, run, run_json


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


@pytest.fixture
def cairn(quiet_cairn):  # type: ignore[no-untyped-def]
    return quiet_cairn


@pytest.fixture
def world(cairn, folders, tmp_path):  # type: ignore[no-untyped-def]
    """Two workspaces with a chat each, knowledge, and a file."""
    acme_path, zen_path = folders("Acme", "Zen")
    acme, _ = cairn.registry.add_workspace(acme_path)
    zen, _ = cairn.registry.add_workspace(zen_path)
    c1 = cairn.registry.new_chat(folder=acme_path, title="Supplier review")
    c2 = cairn.registry.new_chat(folder=zen_path, title="Garden plans")
    m1 = cairn.chats.append(c1.id, "user", text("Which supplier handles the café invoices?"))
    m2 = cairn.chats.append(c1.id, "assistant", text("Dupont Logistics handles them monthly."))
    m3 = cairn.chats.append(c2.id, "user", text("Plant tomatoes beside the basil"))
    cairn.knowledge.save(acme.id, "# Acme\n\n## Facts\n\n- The supplier is Dupont Logistics\n"
                         "- Invoices go out monthly\n\n## Decisions\n\n- Ship by boat\n",
                         source="user")
    source = tmp_path / "prices.csv"
    source.write_text("item,price\nquarterly widget,42\n", encoding="utf-8")
    f = cairn.files.add(acme.id, source, description="Price list for widgets")
    return {"acme": acme, "zen": zen, "c1": c1, "c2": c2, "m1": m1, "m2": m2, "m3": m3,
            "file": f}


def kinds(hits) -> list[tuple[str, object]]:  # type: ignore[no-untyped-def]
    return [(h.kind, h.message or h.chat or h.file or h.line) for h in hits]


# ===================================================================== each kind

def test_each_kind_is_indexed_and_found(cairn, world):
    found = cairn.search.find("dupont")
    assert ("message", world["m2"].id) in kinds(found)
    assert any(h.kind == "knowledge" and h.section == "Facts" and h.owner == world["acme"].id
               for h in found)
    assert kinds(cairn.search.find("garden")) == [("chat", world["c2"].id)]
    assert kinds(cairn.search.find("quarterly")) == [("file", world["file"].id)]
    assert kinds(cairn.search.find("widgets")) == [("file", world["file"].id)]  # description
    assert kinds(cairn.search.find("prices")) == [("file", world["file"].id)]  # its name
    hit = next(h for h in cairn.search.find("tomatoes"))
    assert (hit.kind, hit.chat, hit.workspace, hit.title) == (
        "message", world["c2"].id, world["zen"].id, "Garden plans")


def test_snippets_mark_the_matched_words_as_plain_text(cairn, world):
    (hit,) = cairn.search.find("tomatoes basil")
    marked = [hit.snippet[s:e] for s, e in hit.marks]
    assert marked == ["tomatoes", "basil"]
    assert "\ue000" not in hit.snippet and "<" not in hit.snippet


def test_a_snippet_shows_the_entry_without_its_list_mark_and_a_file_beyond_its_name(
        cairn, world):
    (entry,) = cairn.search.find("dupont in:knowledge")
    assert entry.snippet.startswith("The supplier is Dupont")
    (named,) = cairn.search.find("prices in:files")  # only its name says "prices"
    assert named.title == "prices.csv" and named.snippet == "Price list for widgets"


def test_diacritics_are_folded(cairn, world):
    assert ("message", world["m1"].id) in kinds(cairn.search.find("cafe"))
    assert ("message", world["m1"].id) in kinds(cairn.search.find("CAFÉ"))


# ===================================================================== prefix and phrase

def test_words_match_as_prefixes_while_typing(cairn, world):
    for typed in ("sup", "suppl", "supplier"):
        assert ("message", world["m1"].id) in kinds(cairn.search.find(typed))


def test_an_exact_phrase_matches_only_in_that_order(cairn, world):
    assert ("message", world["m2"].id) in kinds(cairn.search.find('"dupont logistics handles"'))
    assert cairn.search.find('"handles dupont"') == []
    # An unclosed quote is the phrase being typed: its last word a prefix.
    assert ("message", world["m2"].id) in kinds(cairn.search.find('"dupont logi'))


# ===================================================================== filters

def test_filters_by_kind_workspace_and_dates(cairn, world):
    assert {h.kind for h in cairn.search.find("dupont in:knowledge")} == {"knowledge"}
    assert {h.kind for h in cairn.search.find("dupont in:chats")} == {"message"}
    assert {h.kind for h in cairn.search.find("widget in:files")} == {"file"}
    assert cairn.search.find("tomatoes workspace:acme") == []
    assert kinds(cairn.search.find("tomatoes workspace:Zen")) == [("message", world["m3"].id)]
    assert kinds(cairn.search.find('tomatoes workspace:"zen"')) == [("message", world["m3"].id)]
    assert cairn.search.find("tomatoes", workspaces=[world["acme"].id]) == []
    today = world["m3"].created_at[:10]
    assert cairn.search.find(f"tomatoes before:{today}") == []
    assert cairn.search.find(f"tomatoes after:{today}") == []
    assert kinds(cairn.search.find("tomatoes after:2000-01-01 before:2999-01-01")) == [
        ("message", world["m3"].id)]


def test_date_filters_find_a_message_written_out_of_order(cairn, world):
    """Dates become a range of message ids; a chat imported later carries older messages
    with newer ids, and the range still holds them."""
    with cairn.registry.db.write() as conn:
        old = conn.execute(
            "INSERT INTO message (chat_id, role, content, created_at) VALUES (?, 'user', ?,"
            " '2020-05-01T10:00:00.000Z')",
            (world["c2"].id, json.dumps(text("tomatoes from the old allotment")))).lastrowid
    newest = world["m3"].id
    assert old > newest
    assert kinds(cairn.search.find("tomatoes before:2021-01-01")) == [("message", old)]
    assert kinds(cairn.search.find("tomatoes after:2020-04-30 before:2020-05-02")) == [
        ("message", old)]
    assert kinds(cairn.search.find("tomatoes after:2020-05-01")) == [("message", newest)]
    assert cairn.search.find("tomatoes before:2020-05-01") == []
    assert cairn.search.find("tomatoes after:2999-01-01") == []


def test_a_filter_that_cannot_be_read_is_refused_in_one_sentence(cairn, world):
    for query, start in (("x in:mail", "cannot search in 'mail'"),
                         ("x before:yesterday", "cannot read 'before:yesterday' as a date"),
                         ("x workspace:Nowhere", "cannot search in workspace 'Nowhere'"),
                         ("x is:pinned", "cannot search with 'is:pinned'")):
        with pytest.raises(Refused) as refused:
            cairn.search.find(query)
        assert str(refused.value).startswith(start) and "\n" not in str(refused.value)


def test_archived_chats_are_left_out_unless_asked(cairn, world):
    cairn.registry.archive_chat(world["c2"].id)
    assert cairn.search.find("tomatoes") == []
    assert cairn.search.find("garden") == []
    assert kinds(cairn.search.find("tomatoes", archived=True)) == [("message", world["m3"].id)]
    assert kinds(cairn.search.find("tomatoes is:archived")) == [("message", world["m3"].id)]
    cairn.registry.unarchive_chat(world["c2"].id)
    assert kinds(cairn.search.find("tomatoes")) == [("message", world["m3"].id)]


# ===================================================================== ranking

def test_ranking_on_a_fixed_corpus(cairn, folders):
    """Titles above knowledge above message bodies; among equals, the newer first."""
    (root,) = folders("Rank")
    ws, _ = cairn.registry.add_workspace(root)
    body_chat = cairn.registry.new_chat(folder=root, title="Weekly notes")
    old = cairn.chats.append(body_chat.id, "user", text("the lighthouse keeper called"))
    new = cairn.chats.append(body_chat.id, "user", text("the lighthouse keeper called"))
    cairn.knowledge.save(ws.id, "## Facts\n\n- The lighthouse is white and has a keeper\n",
                         source="user")
    titled = cairn.registry.new_chat(folder=root, title="Lighthouse")
    order = [(h.kind, h.message or h.chat) for h in cairn.search.find("lighthouse")]
    assert order[0] == ("chat", titled.id)
    assert order[1][0] == "knowledge"
    assert order[2:] == [("message", new.id), ("message", old.id)]


def test_ranking_is_bm25_a_word_said_more_and_a_rarer_word_weigh_more(cairn, folders):
    """More of the word in a message of the same length ranks it higher; of two words, the
    rarer one decides (bm25's idf), newest first only on a tie."""
    (root,) = folders("Terms")
    cairn.registry.add_workspace(root)
    chat = cairn.registry.new_chat(folder=root, title="Orchard log")
    for n in range(12):  # "pear" in most messages, "quince" in few
        cairn.chats.append(chat.id, "user", text(f"pear number {n} checked today"))
    once = cairn.chats.append(chat.id, "user", text("pear quince apple plum fig"))
    twice = cairn.chats.append(chat.id, "user", text("pear quince quince plum fig"))
    assert [h.message for h in cairn.search.find("quince in:chats")] == [twice.id, once.id]
    many_pears = cairn.chats.append(chat.id, "user", text("pear pear pear quince fig"))
    found = [h.message for h in cairn.search.find("pear quince in:chats")]
    # Two quinces outweigh three pears: pear is in most messages, quince in three.
    assert found == [twice.id, many_pears.id, once.id]


# ===================================================================== keeping current

def test_every_indexed_write_updates_the_index(cairn, world, tmp_path):
    # A chat renamed: found by its new title, not its old one.
    cairn.registry.rename_chat(world["c2"].id, "Orchard")
    assert kinds(cairn.search.find("orchard")) == [("chat", world["c2"].id)]
    assert cairn.search.find("garden") == []
    # A message edited (a new version): both versions are found, each its own hit.
    new = cairn.chats.resend(world["c2"].id, world["m3"].id, "Plant peppers instead")
    assert kinds(cairn.search.find("tomatoes")) == [("message", world["m3"].id)]
    assert kinds(cairn.search.find("peppers")) == [("message", new.id)]
    # A knowledge version saved: the old entry leaves.
    cairn.knowledge.save(world["acme"].id, "## Facts\n\n- Ship by rail\n", source="user")
    assert not [h for h in cairn.search.find("boat") if h.kind == "knowledge"]
    assert [h.kind for h in cairn.search.find("rail")] == ["knowledge"]
    # A file described, then removed.
    cairn.files.describe(world["file"].id, "Costs of gadgets")
    assert kinds(cairn.search.find("gadgets")) == [("file", world["file"].id)]
    cairn.files.remove(world["file"].id)
    assert cairn.search.find("gadgets") == [] and cairn.search.find("quarterly") == []


def test_a_moved_chat_is_found_in_its_new_workspace(cairn, world):
    cairn.registry.move_chat_to(world["c2"].id, world["acme"].id)
    assert kinds(cairn.search.find("tomatoes workspace:acme")) == [("message", world["m3"].id)]


def index_rows(db) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Everything the index holds, comparable across rowids."""
    messages = sorted(db.query("SELECT rowid, text, chat_id, at FROM search_message"))
    docs = sorted(db.query(
        "SELECT k.kind, k.ref, k.owner, k.part, k.at, d.title, d.body, d.content"
        " FROM search_key AS k JOIN search_doc AS d ON d.rowid = k.n"))
    keys = db.query("SELECT count(*) FROM search_key")[0][0]
    return {"messages": messages, "docs": docs, "keys": keys}


def test_reindex_equals_the_incremental_index(cairn, world, capsys):
    cairn.registry.rename_chat(world["c1"].id, "Vendors")
    cairn.chats.resend(world["c2"].id, world["m3"].id, "Plant peppers")
    cairn.knowledge.save(world["acme"].id, "## Facts\n\n- New fact\n", source="user")
    before = index_rows(cairn.registry.db)
    code, out, err = run(capsys, "search", "--reindex")
    assert code == 0, err
    assert "Rebuilt the search index" in out
    assert index_rows(cairn.registry.db) == before
    assert before["docs"] and before["messages"]


def test_the_migration_indexes_an_existing_database(isolated, tmp_path):
    """A database from before the index: the migration indexes messages and chats, the
    first open after it knowledge and files; all is then found."""

    folder = isolated
    conn, before = database_before(folder, "search_message")
    now = "2026-01-01T00:00:00.000Z"
    conn.execute("INSERT INTO chat (id, title, created_at, updated_at) VALUES"
                 " ('ch_old', 'Harbour crane', ?, ?)", (now, now))
    conn.execute("INSERT INTO message (chat_id, role, content, created_at) VALUES"
                 " ('ch_old', 'user', ?, ?)", (json.dumps(text("the zeppelin landed")), now))
    conn.execute("INSERT INTO knowledge (owner, text, version, updated_at, source) VALUES"
                 " ('personal', '## Facts\n\n- I like marmalade\n', 1, ?, 'user')", (now,))
    conn.close()
    registry = __import__("app.store.registry.registry", fromlist=["Registry"]).Registry.open(
        folder)
    try:
        cairn = Cairn(registry, background_rebuilds=False)
        assert kinds(cairn.search.find("zeppelin")) == [("message", 1)]
        # The days of existing messages are known too: a date filter finds them.
        assert kinds(cairn.search.find("zeppelin before:2026-01-02")) == [("message", 1)]
        assert cairn.search.find("zeppelin after:2026-01-01") == []
        assert kinds(cairn.search.find("harbour")) == [("chat", "ch_old")]
        assert [h.kind for h in cairn.search.find("marmalade")] == ["knowledge"]
        assert cairn.search.check() is None
        cairn.storage.close()
        cairn.network.close()
    finally:
        registry.close()


def test_a_missing_index_is_said_never_an_empty_result(cairn, world, capsys):
    with cairn.registry.db.write() as conn:
        conn.execute("DROP TABLE search_message")
    cairn.search.reindex.__self__._checked = False  # a fresh start-up check
    assert cairn.search.check() == search_index.MISSING
    with pytest.raises(Refused, match="search index is missing or damaged"):
        cairn.search.find("tomatoes")
    code, _, err = run(capsys, "search", "tomatoes")
    assert code == 1 and "cairn search --reindex" in err
    run(capsys, "search", "--reindex")
    assert kinds(run_search(capsys, "tomatoes")) == [("message", world["m3"].id)]


def test_an_index_that_lost_rows_is_said(cairn, world):
    with cairn.registry.db.write() as conn:
        conn.execute("DELETE FROM search_message WHERE rowid = ?", (world["m3"].id,))
    cairn.search._checked = False
    assert cairn.search.check() == search_index.MISSING


def run_search(capsys, *argv):  # type: ignore[no-untyped-def]
    return [_Hit(h) for h in run_json(capsys, "search", *argv)]


class _Hit:
    def __init__(self, data: dict) -> None:  # type: ignore[type-arg]
        self.kind = data["kind"]
        self.message = data.get("message")
        self.chat = data.get("chat")
        self.file = data.get("file")
        self.line = data.get("line")


# ===================================================================== hostile queries

@pytest.mark.parametrize("typed", ['"unbalanced', 'NEAR(', '*', 'a"b"c"', 'AND OR NOT',
                                   '"', '(', 'x:y', '^start', 'col:umn:', '\x00\x1b[31m\x07',
                                   'tomatoes)', '{text}: basil', '- + * "', '\u202e', ""])
def test_hostile_queries_are_answered(cairn, world, typed):
    found = cairn.search.find(typed)
    assert isinstance(found, list)


def test_hostile_queries_that_hold_words_still_find_them(cairn, world):
    for typed in ('tomatoes)', '( tomatoes', 'tomat* (', '"tomatoes', '{ tomatoes }*', 'tomatoes:',
                  'tomatoes\x00\x1b'):
        assert kinds(cairn.search.find(typed)) == [("message", world["m3"].id)], typed


def test_a_query_too_long_is_refused_in_one_sentence(cairn, world, capsys):
    with pytest.raises(Refused) as refused:
        cairn.search.find("x" * 10_000)
    sentence = str(refused.value)
    assert "at most 1,000 characters" in sentence and "\n" not in sentence
    code, out, err = run(capsys, "search", "word " * 2000)
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err


# ===================================================================== the command line

def test_the_command_line_gives_json_results(cairn, world, capsys):
    found = run_json(capsys, "search", "dupont", "--limit", "5")
    message = next(h for h in found if h["kind"] == "message")
    assert set(message) >= {"kind", "workspace", "chat", "message", "title", "snippet", "when"}
    assert (message["workspace"], message["chat"], message["message"]) == (
        world["acme"].id, world["c1"].id, world["m2"].id)
    knowledge = next(h for h in found if h["kind"] == "knowledge")
    assert knowledge["workspace"] == world["acme"].id and knowledge["section"] == "Facts"
    (file,) = run_json(capsys, "search", "widget", "--in", "files")
    assert (file["kind"], file["file"], file["workspace"]) == (
        "file", world["file"].id, world["acme"].id)
    assert run_json(capsys, "search", "tomatoes", "--workspace", world["acme"].id) == []
    assert len(run_json(capsys, "search", "dupont", "--limit", "1")) == 1
    cairn.registry.archive_chat(world["c2"].id)
    assert run_json(capsys, "search", "tomatoes") == []
    assert len(run_json(capsys, "search", "tomatoes", "--archived")) == 1


def test_the_command_line_prints_marked_text(cairn, world, capsys):
    code, out, _ = run(capsys, "search", "tomatoes")
    assert code == 0 and "[tomatoes]" in out and "Garden plans" in out
    code, out, _ = run(capsys, "search", "zzzzqqq")
    assert code == 0 and out.strip() == "Nothing found."
    code, _, err = run(capsys, "search", "x", "--workspace", "ws_nothere")
    assert code == 1 and "no such workspace" in err


# ===================================================================== find in a chat

def test_find_in_chat_reaches_every_message_of_the_chat(cairn, folders):
    (root,) = folders("Long")
    cairn.registry.add_workspace(root)
    chat = cairn.registry.new_chat(folder=root, title="Long one")
    other = cairn.registry.new_chat(folder=root, title="Other")
    first = cairn.chats.append(chat.id, "user", text("the needle is here"))
    cairn.chats.append(other.id, "user", text("another needle elsewhere"))
    for i in range(50):
        cairn.chats.append(chat.id, "assistant", text(f"filler {i}"))
    last = cairn.chats.append(chat.id, "user", text("a second needle"))
    assert cairn.search.in_chat(chat.id, "needle") == [first.id, last.id]
    assert cairn.search.in_chat(chat.id, "nothing") == []


# ===================================================================== entries

def test_entries_split_as_the_knowledge_parser_splits_them():
    doc = ("# Acme\n\nIntro paragraph.\n\n## Facts\n\n- One fact\n  more of it\n- Two\n"
           "  - a sub-item\n\n1. numbered\n\n## Decisions\n\n* Star item (updated 2026-01-01)\n"
           "\n```\n- not an item\n```\n\n## People & contacts\n- Ann\n")
    parsed = parse_document(doc)
    ours = [e for e in split_entries(doc) if _is_item(e.text)]
    assert [(e.section or "", e.start) for e in parsed.entries] == [
        (e.section, e.line) for e in ours]
    texts = [e.text for e in split_entries(doc)]
    assert "Intro paragraph." in texts and any("not an item" in t for t in texts)


def _is_item(text: str) -> bool:
    return text.lstrip()[:1] in "-*+" or text.lstrip()[:1].isdigit()


def test_find_in_chat_counts_matches_not_messages(cairn, folders):
    """"1 of 1" with six highlights was a count of messages."""
    (root,) = folders("Counts")
    cairn.registry.add_workspace(root)
    chat = cairn.registry.new_chat(folder=root, title="Landsat")
    many = cairn.chats.append(chat.id, "assistant", text(
        "Landsat 8 and Landsat 9 image the Earth; LANDSAT data is free. The landsat archive "
        "goes back to 1972."))
    cairn.chats.append(chat.id, "user", text("nothing here"))
    once = cairn.chats.append(chat.id, "user", text("Thanks for the Landsat notes"))
    assert cairn.search.in_chat_counted(chat.id, "landsat") == [(many.id, 4), (once.id, 1)]
    both = cairn.search.in_chat_counted(chat.id, "landsat archive")
    assert both == [(many.id, 5)]  # each word where it occurs, as the window marks them
    assert cairn.search.in_chat_counted(chat.id, "nothing at all zzz") == []
