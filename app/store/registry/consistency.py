"""The start-up check: inconsistencies in the stored list are named, never guessed at.

The schema's UNIQUE indexes make most of these impossible while the database is intact; this
check is what still catches them in a database that was hand-edited, restored from elsewhere,
or lost an index.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Mapping

from app.records import Workspace


def find_problems(
    workspaces: Mapping[str, Workspace],
    order: Iterable[str],
    memberships: Iterable[tuple[str, str]],
    chat_ids: Collection[str],
) -> list[str]:
    """Each problem as a phrase naming it; an empty list means the list is consistent.

    Only what is stored is judged (never the disk's current state): *order* is the stored
    display order (workspace ids), *memberships* the stored ``(workspace_id, chat_id)``
    pairs, *chat_ids* every stored chat.
    """
    problems: list[str] = []

    def named(ws_id: str) -> str:
        ws = workspaces.get(ws_id)
        return f"'{ws_id}' (\"{ws.title}\")" if ws else f"'{ws_id}'"

    # A folder claimed by two workspaces: two stored paths with one de-duplication key.
    claims: dict[str, list[str]] = defaultdict(list)
    for ws in workspaces.values():
        claims[ws.key].append(ws.id)
    for ids in claims.values():
        if len(ids) > 1:
            folder = workspaces[ids[0]].path
            owners = " and ".join(named(i) for i in ids)
            problems.append(f"the folder '{folder}' is claimed by {len(ids)} workspaces: {owners}")

    # A chat accounted by two workspaces.
    pairs = list(memberships)
    counted = Counter(chat_id for _, chat_id in pairs)
    owners_of: dict[str, list[str]] = defaultdict(list)
    for ws_id, chat_id in pairs:
        if counted[chat_id] > 1:  # gather owners only for the (rare) chats counted twice
            owners_of[chat_id].append(ws_id)
    for ws_id, chat_id in pairs:
        if ws_id not in workspaces:
            problems.append(f"the chat '{chat_id}' is accounted by the unknown workspace '{ws_id}'")
        if chat_id not in chat_ids:
            problems.append(f"the workspace {named(ws_id)} accounts the unknown chat '{chat_id}'")
    for chat_id, ws_ids in owners_of.items():
        if ws_ids:
            problems.append(
                f"the chat '{chat_id}' is accounted by {len(ws_ids)} workspaces: "
                + " and ".join(named(i) for i in ws_ids)
            )

    # An order that repeats, misses, or names an unknown workspace.
    counts = Counter(order)
    for ws_id, count in counts.items():
        if ws_id not in workspaces:
            problems.append(f"the display order names the unknown workspace '{ws_id}'")
        elif count > 1:
            problems.append(f"the display order repeats the workspace {named(ws_id)}")
    for ws_id in workspaces:
        if ws_id not in counts:
            problems.append(f"the display order misses the workspace {named(ws_id)}")
    return problems
