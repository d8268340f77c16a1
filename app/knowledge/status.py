"""A chat's knowledge in one line: what waits to be learned, when it was last learned, and
the last failure — what the chat header shows beside the title (issue "the chat view").

Read on the storage thread: counting what is pending reads the chat from its watermark on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from app.knowledge.rebuild import Rebuilder
from app.records import Chat
from app.registry import Registry


@dataclass(frozen=True, slots=True)
class ChatKnowledge:
    waiting: int  # qualifying exchanges of this chat no rebuild has covered yet
    learned_at: str | None  # the last successful rebuild of the chat's documents (UTC, ISO)
    failure: str | None  # the last rebuild's failure, when nothing succeeded since

    def line(self, now: datetime | None = None) -> str:
        """"2 exchanges waiting to be learned", "learned 2 min ago", or the failure."""
        if self.failure:
            return self.failure
        if self.waiting:
            plural = "exchange" if self.waiting == 1 else "exchanges"
            return f"{self.waiting} {plural} waiting to be learned"
        if self.learned_at:
            return f"learned {ago(self.learned_at, now)}"
        return ""


def chat_knowledge(registry: Registry, rebuilder: Rebuilder, chat: Chat) -> ChatKnowledge:
    """The knowledge state of *chat*'s documents (its workspace and the ones above it)."""
    owners: list[str] = []
    ws_id = chat.workspace_id
    while ws_id is not None:
        owners.append(ws_id)
        ws_id = registry.parent_of(ws_id)
    if not owners:  # Ungrouped: nothing is learned from it
        return ChatKnowledge(0, None, None)
    waiting = sum(e.qualifies for e in rebuilder.pending(chat.id))
    marks = ", ".join("?" * len(owners))
    rows = registry.db.query(
        "SELECT last_success, last_error, last_error_at FROM knowledge_status"
        f" WHERE owner IN ({marks})", owners)
    successes = [r[0] for r in rows if r[0]]
    learned = max(successes) if successes else None
    failure = None
    for success, error, error_at in rows:
        if error and (not success or (error_at or "") > success):
            failure = error
    return ChatKnowledge(waiting, learned, failure)


def ago(stamp: str, now: datetime | None = None) -> str:
    """"just now", "2 min ago", "3 h ago", "yesterday", "4 days ago", or the date."""
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = ((now or datetime.now(UTC)) - then).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 2 * 86_400:
        return "yesterday"
    if seconds < 30 * 86_400:
        return f"{int(seconds // 86_400)} days ago"
    return then.date().isoformat()
