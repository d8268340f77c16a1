"""What the knowledge panel's status line reads about a document: waiting exchanges, the
last success, a failure since, and suggestions a rebuild could not apply."""

from __future__ import annotations

from app.knowledge.status import owner_knowledge


def test_suggestions_that_could_not_be_applied_are_a_note_not_a_failure(online, workspace):
    db = online.registry.db
    note = "2 suggestions could not be applied: an update dropped '2027-04-15'."
    with db.write() as conn:  # as a rebuild records them: a note beside its success
        conn.execute("INSERT INTO knowledge_status (owner, last_success, last_error,"
                     " last_error_at) VALUES (?, ?, ?, NULL)",
                     (workspace.id, "2026-11-30T10:00:00.000Z", note))
    state = owner_knowledge(online.registry, online.rebuilder, workspace.id)
    assert state.unapplied == note and state.failure is None
    with db.write() as conn:  # a real failure since: that is what is said
        conn.execute("UPDATE knowledge_status SET last_error = ?, last_error_at = ?"
                     " WHERE owner = ?", ("The knowledge model could not be reached.",
                                          "2026-11-30T11:00:00.000Z", workspace.id))
    state = owner_knowledge(online.registry, online.rebuilder, workspace.id)
    assert state.failure == "The knowledge model could not be reached."
    assert state.unapplied is None


async def test_the_chat_line_says_learned_only_once_a_chat_changed_the_knowledge(
        online, fake, workspace):
    """A rebuild that found nothing to keep has learned nothing, so the
    chat header never says "learned 1 min ago" before anything was learned."""
    from app.knowledge.status import chat_knowledge
    from tests.helpers import add_op, exchange_in

    chat_id = await exchange_in(online, fake, workspace)
    fake.reply_json("update_knowledge", {"ops": []})
    report = await online.rebuilder.rebuild(chat_id)
    assert report.status != "failed", report.error
    assert online.knowledge.last_rebuild(workspace.id).last_success  # the rebuild did run
    chat = online.registry.chat(chat_id)
    state = chat_knowledge(online.registry, online.rebuilder, chat)
    assert state.line() == "" and "learned" not in state.line()
    fake.reply_text("And the second launch is 2027-09-01, as the board decided in its meeting today, which is final.")
    assert (await online.engine.send(chat_id, "And the second?")).status == "complete"
    fake.reply_json("update_knowledge", {"ops": [add_op("Second launch 2027-09-01",
                                                        "the second launch is 2027-09-01")]})
    report = await online.rebuilder.rebuild(chat_id)
    assert report.status == "applied", report.error
    state = chat_knowledge(online.registry, online.rebuilder, chat)
    assert state.line() == "learned just now"
