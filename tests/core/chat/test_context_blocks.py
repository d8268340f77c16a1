"""Above 30,000 characters the context sends a document's most relevant parts, and the
parts are not only list entries: a password written in a paragraph, an
address in a table, a setting in a code block reach Claude when the message asks for them."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from app.chat.context import KNOWLEDGE_BUDGET, fit_knowledge

FILLER = "".join(f"- Routine note {i} about logistics and shipping schedules\n"
                 for i in range(700))


def _note(fitted: str) -> int:
    last = fitted.splitlines()[-1]
    assert last.startswith("(") and "left out as less relevant to the current message" in last
    return int(last.split()[0].strip("("))


def test_a_password_in_a_paragraph_of_a_long_document_reaches_claude():
    doc = ("# Acme\n\nThe office wifi password is Zebra-Quartz-42; the guest network has none."
           "\n\n## Facts\n" + FILLER)
    assert len(doc) > KNOWLEDGE_BUDGET
    fitted = fit_knowledge(doc, "What is the wifi password?")
    assert "The office wifi password is Zebra-Quartz-42; the guest network has none." in fitted
    assert len(fitted) <= KNOWLEDGE_BUDGET


def test_an_address_in_a_table_row_reaches_claude_under_its_header():
    rows = [f"| Person {i} | {i} Harbour Road, Leith |\n" for i in range(400)]
    rows.insert(200, "| Ana Ruiz | 14 Rue de Rivoli, Paris |\n")
    doc = ("## Facts\n" + FILLER + "\n## People & contacts\n\n| Name | Address |\n|---|---|\n"
           + "".join(rows))
    assert len(doc) > KNOWLEDGE_BUDGET
    fitted = fit_knowledge(doc, "Where does Ana Ruiz live?", budget=3_000)
    assert "| Ana Ruiz | 14 Rue de Rivoli, Paris |" in fitted
    lines = fitted.splitlines()
    at = lines.index("| Ana Ruiz | 14 Rue de Rivoli, Paris |")
    table = lines.index("| Name | Address |")
    assert lines[table:table + 2] == ["| Name | Address |", "|---|---|"] and table < at
    assert all(line.startswith("|") for line in lines[table:at + 1])  # one table
    assert lines[table - 1] == "## People & contacts"
    assert len(fitted) <= 3_000


def test_a_code_block_and_a_quote_go_whole():
    doc = ("## Facts\n" + FILLER + "\n```sh\nexport API_HOST=db.internal\n\nexport PORT=5433\n```\n"
           "\n> The client said: never call before 10:00.\n> Only e-mail.\n")
    fitted = fit_knowledge(doc, "API_HOST", budget=2_000)
    assert "```sh\nexport API_HOST=db.internal\n\nexport PORT=5433\n```" in fitted
    quoted = fit_knowledge(doc, "When may we call the client?", budget=2_000)
    assert "> The client said: never call before 10:00.\n> Only e-mail." in quoted


def test_the_note_counts_every_part_left_out():
    paragraphs = "".join(f"\nParagraph {i} on shipping.\n" for i in range(50))
    table = "\n| a | b |\n|---|---|\n" + "".join(f"| {i} | shipping |\n" for i in range(40))
    doc = "## Facts\n" + FILLER + paragraphs + table
    for message in ("shipping", "logistics", "paragraph 7", "nothing matches"):
        fitted = fit_knowledge(doc, message, budget=4_000)
        sent_entries = len(re.findall(r"^- Routine note", fitted, re.MULTILINE))
        sent_paragraphs = len(re.findall(r"^Paragraph \d+", fitted, re.MULTILINE))
        sent_rows = len(re.findall(r"^\| \d+ \| shipping \|$", fitted, re.MULTILINE))
        assert sent_entries + sent_paragraphs + sent_rows > 0
        assert _note(fitted) == 700 + 50 + 40 - sent_entries - sent_paragraphs - sent_rows
        if sent_paragraphs < 50:  # not only entries were left out
            assert "more parts of this document left out" in fitted


def test_the_same_inputs_give_the_same_bytes():
    doc = "Intro.\n\n## Facts\n" + FILLER + "\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert fit_knowledge(doc, "intro shipping 2") == fit_knowledge(doc, "intro shipping 2")


def test_a_document_under_the_budget_goes_in_byte_for_byte():
    doc = ("---\ntags: [a]\n---\n# Acme\r\n\r\nIntro\u2028line.\r\n\r\n## Facts\r\n- a\r\n\r\n"
           "| x | y |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n> quote\n---\n- last")
    assert fit_knowledge(doc, "anything") == doc


_block = st.one_of(
    st.builds(lambda w: f"- entry {w}\n", st.text("abc xyz", min_size=1, max_size=60)),
    st.builds(lambda w: f"\nA paragraph {w}.\n\n", st.text("abc xyz", min_size=1, max_size=200)),
    st.builds(lambda n: "\n| k | v |\n|---|---|\n" + "".join(f"| {i} | abc |\n" for i in range(n))
              + "\n", st.integers(1, 30)),
    st.builds(lambda w: f"\n```\n{w}\n```\n", st.text("abc xyz\n", max_size=100)),
    st.sampled_from(["## Facts\n", "## Decisions\n", "# Title\n", "\n---\n"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_block, min_size=1, max_size=80), st.integers(300, 3_000), st.text("abc xyz"))
def test_the_budget_always_holds(blocks: list[str], budget: int, message: str):
    doc = "".join(blocks)
    fitted = fit_knowledge(doc, message, budget=budget)
    assert len(fitted) <= budget
    assert fitted == fit_knowledge(doc, message, budget=budget)
