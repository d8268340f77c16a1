"""The quick switcher's fuzzy title match."""

from __future__ import annotations

from app.base.fuzzy import best


def test_letters_in_order_match_and_word_starts_rank_first():
    titles = [("a", "Quarterly budget review"), ("b", "Quick notes"), ("c", "Unrelated"),
              ("d", "quibble bureau rant")]
    found = best("qbr", titles)
    assert {m.key for m in found} == {"a", "d"}
    assert next(m for m in found if m.key == "d").positions == (0, 8, 15)  # word starts
    assert [m.key for m in best("quick", titles)] == ["b"]
    (top,) = best("notes", [("x", "Meeting notes"), ("y", "n o t e s later")])[:1]
    assert top.key == "x" and top.positions == (8, 9, 10, 11, 12)


def test_a_blank_or_pasted_query_matches_no_title():
    titles = [("a", "Anything")]
    assert best("   ", titles) == []
    assert best("x" * 5000, titles) == []


def test_letters_merely_scattered_through_a_title_are_no_match():
    """"Bauer" found "Landsat bands: blue and red" and ranked it first."""
    titles = [("landsat", "Landsat bands: blue and red"), ("bauer", "Call with Bauer"),
              ("initials", "Budget and user research")]
    assert [m.key for m in best("bauer", titles)] == ["bauer"]
    # Initials and a word's start still match; so does one run inside a word.
    assert [m.key for m in best("bur", titles)] == ["initials"]
    assert [m.key for m in best("andsat", titles)] == ["landsat"]
    assert [m.key for m in best("lbbr", titles)] == ["landsat"]
