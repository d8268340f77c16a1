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
    owners = [ws.id for ws in registry.lineage(chat.workspace_id)]
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


# ===================================================================== one document


@dataclass(frozen=True, slots=True)
class OwnerKnowledge:
    """What the knowledge panel's status line says about one document (a workspace's, or
    personal memory): the chats with exchanges waiting for it, its last success, its last
    failure when nothing succeeded since."""

    waiting: int  # qualifying exchanges not learned yet, over the chats below
    chats: tuple[str, ...]  # those chats (what "Retry now" runs)
    learned_at: str | None
    failure: str | None
    # "2 suggestions could not be applied: …": what the last rebuild's model still suggested
    # wrongly after its corrective round (recorded with no time of its own; issue 14)
    unapplied: str | None = None


SOURCE_WORDS = {"rebuild": "Updated from a chat", "user": "Edited by you",
                "restore": "Restored from the history", "import": "Imported"}


def owner_knowledge(registry: Registry, rebuilder: Rebuilder, owner: str) -> OwnerKnowledge:
    """The state of *owner*'s document (storage thread: it reads what is pending).

    A workspace's document learns from the chats in it and in its folders; personal memory
    from every chat.
    """
    from app.knowledge.store import PERSONAL

    if owner == PERSONAL:
        candidates = rebuilder.waiting()
    else:
        ids: list[str] = []
        stack = [owner]
        while stack:
            ws_id = stack.pop()
            ids += [chat.id for chat in registry.chats_of(ws_id)]
            stack += [child.id for child in registry.children(ws_id)]
        candidates = _with_news(registry, ids)
    waiting: dict[str, int] = {}
    for chat_id in candidates:
        count = sum(e.qualifies for e in rebuilder.pending(chat_id))
        if count:
            waiting[chat_id] = count
    rows = registry.db.query(
        "SELECT last_success, last_error, last_error_at FROM knowledge_status WHERE owner = ?",
        (owner,))
    success, error, error_at = rows[0] if rows else (None, None, None)
    failing = bool(error and error_at and (not success or error_at > success))
    return OwnerKnowledge(sum(waiting.values()), tuple(waiting), success,
                          error if failing else None,
                          error if error and not error_at else None)


def _with_news(registry: Registry, chat_ids: list[str]) -> list[str]:
    """Those of *chat_ids* with a message of the conversation after their watermark."""
    found: list[str] = []
    for start in range(0, len(chat_ids), 500):  # well under SQLite's variable limit
        part = chat_ids[start:start + 500]
        marks = ", ".join("?" * len(part))
        found += [r[0] for r in registry.db.query(
            f"SELECT c.id FROM chat c WHERE c.id IN ({marks}) AND EXISTS (SELECT 1 FROM"
            " message m WHERE m.chat_id = c.id AND m.superseded_by IS NULL"
            " AND m.id > c.knowledge_watermark)", part)]
    return found


def document_line(source: str | None, updated_at: str | None, waiting: int,
                  now: datetime | None = None) -> str:
    """"Updated from a chat 2 min ago · 3 exchanges waiting", "Edited by you yesterday"."""
    parts: list[str] = []
    if source and updated_at:
        parts.append(f"{SOURCE_WORDS.get(source, 'Saved')} {ago(updated_at, now)}")
    if waiting:
        parts.append(f"{waiting} exchange{'' if waiting == 1 else 's'} waiting")
    return " · ".join(parts)
