"""A suggestion remembers where its entries stand (section,
position, whole text) and accepting finds them by all of it, never the first entry that opens
with the same line; a suggested move between sections (an answered open question accepted as
a decision) is kept and applied; a database from before these records opens, backed up, with
its waiting suggestions still accepted where that is unambiguous."""

from __future__ import annotations

import sqlite3

import pytest

from app.base import db as dbmod
from app.base.db import DB_NAME, Database
from app.errors import Refused
from app.knowledge import document as doc
from app.knowledge import suggestions
from app.knowledge.placing import place_of
from app.store.documents import KnowledgeStore
from app.store.suggestions import Place, Proposed

TWINS = ("## Facts\n- Venue: town hall\n  - capacity 200\n- Catering: Rossi\n\n"
         "## Decisions\n- Venue: town hall\n  - booked for 2027-06-12\n")


def suggest(cairn, owner: str, item: Proposed) -> int:
    chat = cairn.registry.new_chat()
    assert cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={},
                                        suggestions=[item])
    return cairn.knowledge.suggestions([owner])[-1].id


def test_an_update_of_the_second_of_two_entries_opening_alike_changes_that_one(
        online, workspace):
    online.knowledge.save(workspace.id, TWINS, source="user")
    # The model changed the Decisions entry: its section is recorded, and where it stands.
    sid = suggest(online, workspace.id, Proposed(
        workspace.id, "update", "Decisions", ("Venue: town hall",), "Venue: city library",
        "not safe", "the venue is now the city library"))
    waiting = online.knowledge.suggestion(sid)
    assert waiting.places == (Place("Decisions", 0, "- Venue: town hall\n  - booked for "
                                    "2027-06-12"),)
    after = suggestions.accept(online.knowledge, sid, today=__import__("datetime").date(
        2027, 5, 1)).text
    assert after == TWINS.replace("## Decisions\n- Venue: town hall",
                                  "## Decisions\n- Venue: city library (updated 2027-05-01)")


def test_accepting_finds_the_entry_by_its_whole_text_not_its_first_line():
    parsed = doc.parse(TWINS)
    facts, decisions = parsed.entries[0], parsed.entries[2]
    assert place_of(parsed, decisions) == Place("Decisions", 0, decisions.text)
    # Recorded for the Facts entry; the Decisions entry opens with the same line.
    item = _stored("update", "Facts", ("Venue: town hall",), "Venue: the old mill",
                   places=(place_of(parsed, facts),))
    after = suggestions.applied(TWINS, item, edited=None, today="2027-05-01")
    assert after.startswith("## Facts\n- Venue: the old mill (updated 2027-05-01)\n"
                            "  - capacity 200\n")
    assert "## Decisions\n- Venue: town hall\n  - booked" in after
    # The Facts entry edited since (its sub-item): not found, refused, nothing else changed.
    edited = TWINS.replace("capacity 200", "capacity 250")
    with pytest.raises(Refused, match="no longer reads as it did"):
        suggestions.applied(edited, item, edited=None, today="2027-05-01")


def test_an_old_suggestion_without_places_is_refused_when_its_first_line_is_ambiguous():
    same = TWINS.replace("## Decisions\n", "")  # both entries under Facts now
    item = _stored("update", "Facts", ("Venue: town hall",), "Venue: the old mill")
    with pytest.raises(Refused, match="2 entries of the document read as the one"):
        suggestions.applied(same, item, edited=None, today="2027-05-01")
    # With its section telling them apart, the one in that section.
    after = suggestions.applied(TWINS, _stored("update", "Decisions", ("Venue: town hall",),
                                               "Venue: library"), edited=None, today="2027-05-01")
    assert "## Decisions\n- Venue: library (updated 2027-05-01)\n  - booked" in after
    assert after.startswith("## Facts\n- Venue: town hall\n")


QUESTIONS = ("## Decisions\n- Ship weekly\n\n## Open questions\n- Which database do we use?\n"
             "- Who hosts the retreat?\n")


def test_an_answered_open_question_accepted_as_a_decision_leaves_open_questions():
    parsed = doc.parse(QUESTIONS)
    question = parsed.entries[1]
    # "put this text in Decisions at position 0 and remove the question"
    item = _stored("add", "Decisions", (), "Use PostgreSQL for the main database",
                   position=0, removes=(place_of(parsed, question),))
    after = suggestions.applied(QUESTIONS, item, edited=None, today="2027-05-01")
    assert after == ("## Decisions\n- Use PostgreSQL for the main database\n- Ship weekly\n\n"
                     "## Open questions\n- Who hosts the retreat?\n")
    # The question edited by hand since: the answer lands, the question stays (the person's).
    changed = QUESTIONS.replace("Which database do we use?", "Which database? (ask Ana)")
    after = suggestions.applied(changed, item, edited=None, today="2027-05-01")
    assert "Which database? (ask Ana)" in after and "- Use PostgreSQL" in after


def test_an_update_that_moves_its_entry_to_another_section_moves_it_with_its_sub_items():
    text = ("## Decisions\n- Ship weekly\n\n## Open questions\n- Whether to use MySQL\n"
            "  - asked by Ana\n- Who hosts?\n")
    parsed = doc.parse(text)
    item = _stored("update", "Decisions", ("Whether to use MySQL",), "Decided to use MySQL",
                   places=(place_of(parsed, parsed.entries[1]),))
    after = suggestions.applied(text, item, edited=None, today="2027-05-01")
    assert after == ("## Decisions\n- Ship weekly\n- Decided to use MySQL (updated 2027-05-01)\n"
                     "  - asked by Ana\n\n## Open questions\n- Who hosts?\n")


def test_a_move_is_kept_through_storage_and_applied_end_to_end(online, workspace):
    online.knowledge.save(workspace.id, QUESTIONS, source="user")
    parsed = doc.parse(QUESTIONS)
    sid = suggest(online, workspace.id, Proposed(
        workspace.id, "add", "Decisions", (), "Use PostgreSQL for the main database",
        "an answer to an open question", "we use PostgreSQL for the main database",
        "person", position=1, removes=(place_of(parsed, parsed.entries[1]),)))
    stored = online.knowledge.suggestion(sid)
    assert stored.position == 1 and stored.removes[0].section == "Open questions"
    assert stored.to_json()["removes"][0]["text"] == "- Which database do we use?"
    text = suggestions.accept(online.knowledge, sid).text
    assert text == ("## Decisions\n- Ship weekly\n- Use PostgreSQL for the main database\n\n"
                    "## Open questions\n- Who hosts the retreat?\n")
    assert online.knowledge.suggestions([workspace.id]) == []


def _stored(kind, section, targets, text, *, places=(), position=None, removes=()):
    from app.store.suggestions import Suggestion

    return Suggestion(1, "ws_x", kind, section, tuple(targets), text, "r", "", None, None,
                      "2027-05-01T00:00:00.000Z", tuple(places), position, tuple(removes))


# ---------------------------------------------------------------- a database of the version before


def test_a_database_from_before_places_migrates_with_a_backup_and_keeps_its_suggestions(
        isolated):
    # The step that added places (found by its text: later steps may follow it).
    before = next(i for i, script in enumerate(dbmod.MIGRATIONS)
                  if "knowledge_suggestion ADD COLUMN places" in script)
    isolated.mkdir(parents=True)
    conn = sqlite3.connect(isolated / DB_NAME)
    for script in dbmod.MIGRATIONS[:before]:
        conn.executescript(script)
    conn.execute("INSERT INTO knowledge (owner, text, version, updated_at, source)"
                 " VALUES ('ws_a', ?, 1, '2026-11-01T00:00:00.000Z', 'user')", (TWINS,))
    conn.execute("INSERT INTO knowledge_suggestion (owner, kind, section, targets, text, reason,"
                 " created_at) VALUES ('ws_a', 'update', 'Decisions', '[\"Venue: town hall\"]',"
                 " 'Venue: library', 'r', '2026-11-01T00:00:00.000Z')")
    conn.execute("INSERT INTO workspace_folder (workspace_id, knowledge_file) VALUES ('ws_a', 1)")
    conn.execute(f"PRAGMA user_version = {before}")
    conn.commit()
    conn.close()

    db = Database.open(isolated)
    try:
        assert db.query("PRAGMA user_version") == [(dbmod.SCHEMA_VERSION,)]
        (backup,) = isolated.glob(f"cairn-v{before}-*.db.bak")
        old = sqlite3.connect(backup)
        assert old.execute("PRAGMA user_version").fetchone() == (before,)
        old.close()
        store = KnowledgeStore(db)
        (waiting,) = store.suggestions(["ws_a"])
        assert waiting.places == () and waiting.removes == () and waiting.position is None
        saved = suggestions.accept(store, waiting.id)  # its section tells the twins apart
        assert "## Decisions\n- Venue: library (updated" in saved.text
        assert saved.text.startswith("## Facts\n- Venue: town hall\n")
        assert db.query("SELECT read_version, removed, copies_done FROM workspace_folder") == [
            (None, "[]", "[]")]
    finally:
        db.close()


def test_the_command_line_says_what_a_suggestion_moves_and_removes():
    from app.cli.conversation import suggestion_text

    parsed = doc.parse(QUESTIONS)
    added = _stored("add", "Decisions", (), "Use PostgreSQL", position=0,
                    removes=(place_of(parsed, parsed.entries[1]),)).to_json()
    text = suggestion_text(added)
    assert "Add to Decisions" in text
    assert "and removes from Open questions: - Which database do we use?" in text
    moved = _stored("update", "Decisions", ("Which database do we use?",), "Use PostgreSQL",
                    places=(place_of(parsed, parsed.entries[1]),)).to_json()
    assert suggestion_text(moved).startswith("#1  Move to Decisions and change:")
