"""The start-up check: inconsistencies in the stored list are named, never guessed at.

Spec 004 lists what stops a start: a folder claimed by two workspaces, a chat accounted by
two, an order that repeats or misses a workspace.  The schema rules most of it out while it
is intact, so the check does not scan for it at every start (that cost grows with every
chat ever made):

- a folder claimed twice: the UNIQUE index ``workspace_path_key``;
- a chat accounted by two workspaces: the UNIQUE index ``membership_chat``;
- an order that repeats a workspace: the UNIQUE index ``display_order_workspace``;
- a membership naming an unknown chat or workspace: the triggers ``membership_known``,
  ``membership_known_update``, ``chat_id_fixed``, ``workspace_id_fixed``, ``chat_deleted`` and
  ``workspace_deleted``, which hold even where foreign keys are off (the sqlite3 shell).

What is checked at every start is that these exist (one read of ``sqlite_master``), and what
no constraint rules out: the order missing a workspace or naming an unknown one (a thousand
rows at most).  A database that lost one of them (hand-edited, restored from elsewhere) is
scanned for exactly what that one ruled out, with SQL aggregates; so is a database whose
constraints have not been seen to hold yet (``registry_state.checked``, written once after a
whole check found nothing).  ``tests/core/test_startup_constraints.py`` shows each constraint
refusing its inconsistency.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Mapping, Sequence

UNIQUE_INDEXES = {
    "workspace_path_key": "workspace",
    "membership_chat": "membership",
    "display_order_workspace": "display_order",
}
REFERENCE_TRIGGERS = ("membership_known", "membership_known_update", "chat_id_fixed",
                      "workspace_id_fixed", "chat_deleted", "workspace_deleted")
CHECKED = "checked"  # the registry_state key: a whole check once found nothing
Stored = tuple[str, str, str]  # a workspace's path, key and title


def missing_constraints(conn: sqlite3.Connection) -> set[str]:
    """The constraints above that the database lacks (names of indexes and triggers)."""
    present = {name for name, in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('index', 'trigger')")}
    return (set(UNIQUE_INDEXES) | set(REFERENCE_TRIGGERS)) - present


def find_problems(conn: sqlite3.Connection, workspaces: Mapping[str, Stored],
                  order: Sequence[str], *, whole: bool = False) -> list[str]:
    """Each problem as a phrase naming it; an empty list means the list is consistent.

    Read inside the caller's read transaction on *conn*; *workspaces* (id: path, key, title)
    and *order* are what it read there.  Only what is stored is judged (never the disk's current state).  *whole*:
    scan for everything, as if no constraint were there.
    """
    missing = set(UNIQUE_INDEXES) | set(REFERENCE_TRIGGERS) if whole else \
        missing_constraints(conn)
    problems: list[str] = []

    def named(ws_id: str) -> str:
        ws = workspaces.get(ws_id)
        return f"'{ws_id}' (\"{ws[2]}\")" if ws else f"'{ws_id}'"

    if "workspace_path_key" in missing:  # a folder claimed by two workspaces
        claims: dict[str, list[str]] = defaultdict(list)
        for ws_id, (_, key, _) in workspaces.items():
            claims[key].append(ws_id)
        for ids in claims.values():
            if len(ids) > 1:
                owners = " and ".join(named(i) for i in ids)
                problems.append(f"the folder '{workspaces[ids[0]][0]}' is claimed by "
                                f"{len(ids)} workspaces: {owners}")

    if missing & set(REFERENCE_TRIGGERS):  # memberships naming what is not stored
        for ws_id, chat_id in conn.execute(
                "SELECT workspace_id, min(chat_id) FROM membership"
                " WHERE workspace_id NOT IN (SELECT id FROM workspace) GROUP BY workspace_id"):
            problems.append(f"the chat '{chat_id}' is accounted by the unknown workspace '{ws_id}'")
        for ws_id, chat_id in conn.execute(
                "SELECT workspace_id, chat_id FROM membership"
                " WHERE chat_id NOT IN (SELECT id FROM chat)"):
            problems.append(f"the workspace {named(ws_id)} accounts the unknown chat '{chat_id}'")

    if "membership_chat" in missing:  # a chat accounted by two workspaces
        for chat_id, count, owners in conn.execute(
                "SELECT chat_id, count(*), group_concat(workspace_id, char(10)) FROM membership"
                " GROUP BY chat_id HAVING count(*) > 1"):
            problems.append(f"the chat '{chat_id}' is accounted by {count} workspaces: "
                            + " and ".join(named(i) for i in owners.split("\n")))

    # The order: repeating (when its index is gone), naming an unknown workspace, or missing
    # one.  A thousand rows at most: checked at every start.
    counts: dict[str, int] = defaultdict(int)
    for ws_id in order:
        counts[ws_id] += 1
    for ws_id, count in counts.items():
        if ws_id not in workspaces:
            problems.append(f"the display order names the unknown workspace '{ws_id}'")
        elif count > 1:
            problems.append(f"the display order repeats the workspace {named(ws_id)}")
    for ws_id in workspaces:
        if ws_id not in counts:
            problems.append(f"the display order misses the workspace {named(ws_id)}")
    return problems
