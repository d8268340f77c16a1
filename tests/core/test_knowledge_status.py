"""What the knowledge panel's status line reads about a document: waiting exchanges, the
last success, a failure since, and suggestions a rebuild could not apply (issue 14)."""

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
