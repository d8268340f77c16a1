"""The words said about suggestions, in the person's language."""

from __future__ import annotations

from app.cli.conversation import suggestion_text
from app.knowledge.status import suggestions_line


def test_the_status_line_counts_what_waits():
    assert suggestions_line(0) == ""
    assert suggestions_line(1) == "1 suggested change waits for you under Suggestions"
    assert suggestions_line(3) == "3 suggested changes wait for you under Suggestions"


def test_a_quote_found_in_no_message_is_not_the_chat_s():
    listed = {"id": 4, "kind": "add", "section": "Facts", "targets": [], "text": "Budget 40k",
              "reason": "The evidence does not occur in the new exchanges.",
              "evidence": "the budget is forty thousand", "said_by": None}
    assert '  Evidence (not found in the chat\'s messages): "the budget is forty thousand"' \
        in suggestion_text(listed).splitlines()
    listed["said_by"] = "person"
    assert '  Evidence (you): "the budget is forty thousand"' in suggestion_text(listed)
