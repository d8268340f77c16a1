"""Merging a document the person edited with a newer version keeps every character as it
was written: only "\\n" ends a line, CRLF stays CRLF, a last line
without a newline stays without, and a line either side added twice is never dropped."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from app.base.lines import split_lines
from app.knowledge.merge import changed_lines, compare, merge3

# Every character str.splitlines breaks a line on, besides "\n".
SPLITLINES_BREAKS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def test_a_line_separator_inside_an_entry_never_becomes_a_heading():
    base = "## Facts\n- Launch 2027-04-15\n"
    mine = "## Facts\n- Launch 2027-04-15\n- Note\u2028## not a heading\n"
    theirs = "## Facts\n- Launch 2027-04-16\n"
    merged = merge3(base, mine, theirs)
    assert merged.text == "## Facts\n- Launch 2027-04-16\n- Note\u2028## not a heading\n"
    assert merged.conflicts == 0


def test_every_character_splitlines_breaks_on_comes_back_as_written():
    for odd in SPLITLINES_BREAKS:
        base = f"- a{odd}b\n- c\n"
        mine = f"- a{odd}b\n- c, by hand\n"
        theirs = f"- a{odd}b, from a chat\n- c\n"
        assert merge3(base, mine, theirs).text == f"- a{odd}b, from a chat\n- c, by hand\n", \
            repr(odd)


def test_crlf_stays_crlf_and_a_last_line_without_newline_stays_without():
    base = "## Facts\r\n- a\r\n- b"
    mine = "## Facts\r\n- a, by hand\r\n- b"
    theirs = "## Facts\r\n- a\r\n- b, from a chat"
    assert merge3(base, mine, theirs).text == "## Facts\r\n- a, by hand\r\n- b, from a chat"


def test_an_ending_only_one_side_changed_takes_that_sides_ending():
    base = "- a\r\n- b\r\n- c\r\n"
    theirs = "- a\r\n- b\n- c\r\n"  # the newer version wrote line 2 with LF
    mine = "- a, by hand\r\n- b\r\n- c\r\n"
    assert merge3(base, mine, theirs).text == "- a, by hand\r\n- b\n- c\r\n"


def test_the_editors_lf_text_merges_with_a_crlf_document_without_doubling_it():
    # The editor gives its text back with "\n"; the stored versions use CRLF.
    base = "## Facts\r\n- a\r\n- b\r\n"
    theirs = "## Facts\r\n- a\r\n- b\r\n- from a chat\r\n"
    mine = "## Facts\n- a, by hand\n- b\n"
    merged = merge3(base, mine, theirs)
    assert merged.text == "## Facts\n- a, by hand\n- b\n- from a chat\r\n"
    assert merged.conflicts == 0


def test_a_line_added_twice_on_either_side_is_kept_twice():
    base = "## Facts\n- a\n"
    mine = "## Facts\n- x\n- x\n"  # both replaced "- a": a conflict, mine first
    theirs = "## Facts\n- x\n- y\n- x\n- x\n"
    merged = merge3(base, mine, theirs)
    lines = Counter(merged.text.splitlines())
    assert lines["- x"] == 3 and lines["- y"] == 1 and merged.conflicts == 1
    # Blank lines count too: the newer version wrote two, the person's text has one.
    gaps = merge3("- a\n", "- mine\n\n- m2\n", "- b\n\n- c\n\n- d\n")
    assert gaps.text == "- mine\n\n- m2\n- b\n- c\n\n- d\n"


def test_two_last_lines_without_newline_are_never_glued_together():
    base = "- a\n- b\n"
    mine = "- a\n- b"  # the person removed the final newline
    theirs = "- a\n- b\n- c\n"
    assert merge3(base, mine, theirs).text == "- a\n- b\n- c\n"
    both = merge3("- a", "- a\n- mine", "- a\n- theirs")
    assert both.text == "- a\n- mine\n- theirs"


def test_the_diff_view_keeps_a_line_with_a_separator_as_one_line():
    hunks = compare("- a\u2028b\r\n- c\r\n", "- a\u2028b\r\n- C\r\n")
    assert [h.tag for h in hunks] == ["equal", "replace"]
    assert hunks[0].old == ("- a\u2028b",) and hunks[1].new == ("- C",)
    assert changed_lines("- a\u2028b\n- c\n", "- a\u2028b\n- c\n- d\n") == [2]
    assert changed_lines("- a\r\n- b\r\n", "- a\n- b\n") == []  # the editor's own endings


_piece = st.sampled_from(["- a", "- b", "- same", "## H", "", "x\u2028## y", "\x0c", "\x85z",
                          "\u2029", "é"])
_ending = st.sampled_from(["\n", "\r\n"])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.tuples(_piece, _ending), max_size=12))
    text = "".join(p + e for p, e in lines)
    return text.rstrip("\r\n") if draw(st.booleans()) else text


@settings(max_examples=400, deadline=None)
@given(_texts(), _texts())
def test_one_sided_merges_give_that_side_back_byte_for_byte(base: str, other: str):
    assert merge3(base, other, base).text == other
    assert merge3(base, base, other).text == other
    assert merge3(base, other, other).text == other


@settings(max_examples=400, deadline=None)
@given(_texts(), _texts(), _texts())
def test_no_line_either_side_wrote_is_lost(base: str, mine: str, theirs: str):
    merged = Counter(body for body in (line.rstrip("\r\n") for line in split_lines(
        merge3(base, mine, theirs).text)))
    mine_lines = Counter(line.rstrip("\r\n") for line in split_lines(mine))
    base_lines = Counter(line.rstrip("\r\n") for line in split_lines(base))
    theirs_added = Counter(line.rstrip("\r\n") for line in split_lines(theirs)) - base_lines
    for line, count in (mine_lines - base_lines).items():
        assert merged[line] >= count, line
    for line, count in theirs_added.items():
        assert merged[line] >= count, line


def test_a_line_only_the_person_replaced_never_comes_back_as_incoming():
    """The person changed the budget and the line above it; the newer
    version changed only the line above.  The budget the newer version never touched is not
    brought back beside the person's."""
    base = "## Facts\n- Venue: town hall\n- Budget 5000 EUR\n- Catering: Rossi\n"
    mine = "## Facts\n- Venue: the old mill\n- Budget 6500 EUR\n- Catering: Rossi\n"
    theirs = "## Facts\n- Venue: town hall, room B\n- Budget 5000 EUR\n- Catering: Rossi\n"
    merged = merge3(base, mine, theirs)
    assert "Budget 5000" not in merged.text
    assert merged.text == ("## Facts\n- Venue: the old mill\n- Venue: town hall, room B\n"
                           "- Budget 6500 EUR\n- Catering: Rossi\n")
    assert merged.incoming == (2,) and merged.conflicts == 1
    # A line only the newer version changed, inside a stretch the person rewrote around it,
    # takes the newer line in its place and the person's lines stay theirs.
    base = "- a\n- b\n- c\n"
    mine = "- A (mine)\n- b\n- C (mine)\n"
    theirs = "- a\n- B (theirs)\n- c\n"
    merged = merge3(base, mine, theirs)
    assert merged.text == "- A (mine)\n- B (theirs)\n- C (mine)\n"
    assert merged.incoming == (1,) and merged.conflicts == 0


def test_a_line_only_the_person_changed_beside_a_block_the_newer_version_rewrote():
    base = "- a\n- b\n"
    mine = "- a\n- b, by hand\n"
    theirs = "- a1\n- a2\n- b\n"  # "- a" became two lines; "- b" untouched
    merged = merge3(base, mine, theirs)
    assert merged.text == "- a1\n- a2\n- b, by hand\n"
    assert [merged.text.splitlines()[i] for i in merged.incoming] == ["- a1", "- a2"]


_line = st.sampled_from(["- a", "- b", "- c", "- d", "- e", "- x", "- y"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_line, max_size=7, unique=True), st.data())  # distinct: one alignment
def test_a_line_only_one_side_changed_is_never_incoming(base_lines, data):
    """Per base line: the person changes it, the newer version does, both, or neither.  A
    base line either side replaced never reappears; a line only the person wrote is never
    marked incoming; every changed line of either side is there."""
    mine_lines, theirs_lines, whose = [], [], []
    for n, line in enumerate(base_lines):
        who = data.draw(st.sampled_from(["none", "mine", "theirs", "both"]))
        whose.append(who)
        mine_lines.append(f"{line} m{n}" if who in ("mine", "both") else line)
        theirs_lines.append(f"{line} t{n}" if who in ("theirs", "both") else line)
    base = "".join(x + "\n" for x in base_lines)
    merged = merge3(base, "".join(x + "\n" for x in mine_lines),
                    "".join(x + "\n" for x in theirs_lines))
    out = merged.text.splitlines()
    for b, m, t, who in zip(base_lines, mine_lines, theirs_lines, whose):
        assert (b in out) == (who == "none"), (b, who, out)
        assert all(x in out for x in (m, t) if x != b)
    assert all(" t" in out[i] for i in merged.incoming)
    if "both" not in whose:
        assert out == [t if t != b else m for b, m, t in zip(base_lines, mine_lines,
                                                               theirs_lines)]
        assert merged.conflicts == 0
