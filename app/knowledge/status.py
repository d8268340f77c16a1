"""The state of the knowledge, as a person is told it: what waits to be learned, when it was
last learned, the last failure.

For a chat, what the chat header shows beside the title; for one document (a workspace's, or
personal memory), what the knowledge panel's status line and ``cairn knowledge status`` say:
both read :func:`owner_knowledge`, so the window and the command line never disagree.

Read on the storage thread: counting what is pending reads each chat from its watermark on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app.knowledge.rebuild import QUALIFYING_REPLY, Rebuilder
from app.records import Chat
from app.store import watermarks
from app.store.documents import PERSONAL
from app.store.registry.registry import Registry
from app.store.suggestions import Suggestion


@dataclass(frozen=True, slots=True)
class ChatKnowledge:
    waiting: int  # qualifying exchanges of this chat no rebuild has covered yet
    learned_at: str | None  # when a chat last changed the chat's documents (UTC, ISO)
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
    records = rebuilder.knowledge.last_rebuilds(owners)
    failures = [r.failure for r in records if r.failure]  # the nearest document's said last
    # "learned" is when a chat last changed a document, not when a rebuild last ran: one that
    # found nothing to keep has learned nothing, and "learned 1 min ago" would say otherwise.
    return ChatKnowledge(waiting, rebuilder.knowledge.last_learned(owners),
                         failures[-1] if failures else None)


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
    # wrongly after its corrective round (recorded with no time of its own; the corrective round)
    unapplied: str | None = None
    # What waits for the person to accept, edit or dismiss, oldest first (no rebuild
    # erases these: they go only by the person's decision).
    suggestions: tuple[Suggestion, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """As ``cairn knowledge status --json`` prints it (beside the owner)."""
        return {"last_success": self.learned_at, "last_error": self.failure,
                "pending_exchanges": self.waiting, "unapplied": self.unapplied,
                "suggestions": [s.to_json() for s in self.suggestions]}


SOURCE_WORDS = {"rebuild": "Updated from a chat", "user": "Edited by you",
                "restore": "Restored from the history", "import": "Imported",
                "file": "Edited by you (CAIRN.md)"}


def owner_knowledge(registry: Registry, rebuilder: Rebuilder, owner: str) -> OwnerKnowledge:
    """The state of *owner*'s document (storage thread: it reads what is pending).

    The exchanges that wait are those of the chats a rebuild would write this document from
    (:func:`_chats_with_news_for`).
    """
    waiting: dict[str, int] = {}
    for chat_id in _chats_with_news_for(registry, rebuilder, owner):
        backlog = rebuilder.pending(chat_id)
        places = rebuilder.places(chat_id, backlog)
        count = sum(e.qualifies for e, place in zip(backlog, places, strict=True)
                    if _writes(registry, owner, place))
        if count:
            waiting[chat_id] = count
    record = rebuilder.knowledge.last_rebuild(owner)
    return OwnerKnowledge(sum(waiting.values()), tuple(waiting), record.last_success,
                          record.failure, record.unapplied,
                          tuple(rebuilder.knowledge.suggestions([owner])))


def _writes(registry: Registry, owner: str, place: str | None) -> bool:
    """Whether an exchange said in *place* is learned into *owner*'s document: personal
    memory from anywhere, a project's from itself and its folders, a folder's from itself."""
    if owner == PERSONAL:
        return True
    lineage = registry.lineage(place) if place is not None else []
    return bool(lineage) and owner in (lineage[0].id, lineage[-1].id)


def _chats_with_news_for(registry: Registry, rebuilder: Rebuilder, owner: str) -> list[str]:
    """The chats with something new since their watermark whose rebuild writes *owner*'s
    document, as the rebuild picks its layers: a project's from the chats in it and in its
    folders at any depth, a folder's from its own chats only (a folder between a chat and
    its project is read, never written), personal memory's from every chat while the Memory
    switch is on.  Archived chats count: their exchanges are still learned."""
    if owner == PERSONAL:
        if not rebuilder.settings.get("memory.enabled"):
            return []  # the rebuild leaves personal memory alone: nothing waits for it
        return watermarks.chats_with_long_replies(registry.db, QUALIFYING_REPLY)
    if registry.workspace(owner) is None:
        return []
    places = [owner]
    if registry.parent_of(owner) is None:  # a project: its folders at any depth too
        stack = [owner]
        while stack:
            stack += [child.id for child in registry.children(stack.pop())]
            places += [i for i in stack if i not in places]
    ids = [chat_id for ws_id in places for chat_id in registry.chat_order(ws_id)]
    # Chats that moved away with exchanges said here still teach this document.
    ids += [i for i in watermarks.chats_said_in(registry.db, places) if i not in set(ids)]
    return watermarks.chats_with_news(registry.db, ids)


def suggestions_line(count: int) -> str:
    """What the status line says of the suggestions that wait ('' when none does): counted
    from what waits now, so it is gone once the last one is decided.  (The last rebuild's own
    note, "2 suggestions could not be applied: P1 says …", is the knowledge model's language,
    and stays true after every suggestion was decided: the command line shows it.)"""
    if not count:
        return ""
    if count == 1:
        return "1 suggested change waits for you under Suggestions"
    return f"{count} suggested changes wait for you under Suggestions"


def document_line(source: str | None, updated_at: str | None, waiting: int,
                  now: datetime | None = None) -> str:
    """"Updated from a chat 2 min ago · 3 exchanges waiting", "Edited by you yesterday"."""
    parts: list[str] = []
    if source and updated_at:
        parts.append(f"{SOURCE_WORDS.get(source, 'Saved')} {ago(updated_at, now)}")
    if waiting:
        parts.append(f"{waiting} exchange{'' if waiting == 1 else 's'} waiting")
    return " · ".join(parts)
