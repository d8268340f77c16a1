"""Typed change events, and the one hub that delivers them.

Every event is emitted once, after commit, on the thread that committed; a listener must not
raise — exceptions are logged and swallowed.  A listener is called synchronously, so it must
be quick: the window's bridge (``ui/bridge.py``) only posts each event to the GUI thread.

Rows count from 0 in the list a model shows: a workspace's folders in display order (parent
``None``: the top level), a workspace's visible chats in manual order (workspace ``None``:
Ungrouped, newest first), Pinned (most recently pinned first) and Archived (most recently
archived first).  Each row is meant for the state right after the events before it, so a
model that applies the events in order, and nothing else, stays equal to the registry.
The registry delivers one change's events together, in commit order, while it still holds
its lock: a listener that reads the registry during delivery sees the state after that
change.  ``Reset`` replaces the other events of its change: re-read everything.

Another module emits through the registry's hub (``registry.hub.emit(KnowledgeSaved(...))``),
after its own commit, on the thread that committed: the storage thread for a turn's messages
and a rebuild's result, the operations' writer for what the window saves.  What is not
stored (live work, a rebuild queued or started) is emitted on the thread that began it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from app.records import Chat, Workspace

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Event:
    """What every change event is; subscribe with ``kinds=(Event,)`` to get them all."""


# ================================================================= workspaces


@dataclass(frozen=True, slots=True)
class WorkspaceAdded(Event):
    """A new workspace at *row* of its parent's folders (``None``: the top level)."""

    id: str
    parent: str | None
    row: int
    record: Workspace


@dataclass(frozen=True, slots=True)
class WorkspaceRemoved(Event):
    """Gone from *row* of its parent.  Its folders and chats moved out before this event."""

    id: str
    parent: str | None
    row: int


@dataclass(frozen=True, slots=True)
class WorkspaceChanged(Event):
    """Title, description, instructions, build status or folder status (``missing-dir``)."""

    id: str
    record: Workspace


@dataclass(frozen=True, slots=True)
class WorkspaceMoved(Event):
    """Re-parented (a parent folder was added or removed) or moved in the display order.

    It leaves *old_row* of *old_parent* and lands at *row* of *new_parent*, counted after
    it left.  Moving past workspaces of other parents changes the display order
    (``workspaces()``) but not the tree: then the parents are equal and ``row == old_row``.
    """

    id: str
    old_parent: str | None
    new_parent: str | None
    row: int
    old_row: int


# ================================================================= chats


@dataclass(frozen=True, slots=True)
class ChatAdded(Event):
    """A new chat at *row* of its workspace's chats (``None``: Ungrouped)."""

    id: str
    workspace: str | None
    row: int
    record: Chat


@dataclass(frozen=True, slots=True)
class ChatChanged(Event):
    """A chat's header changed: title, pin, archive.  After the events that moved it."""

    id: str
    record: Chat


@dataclass(frozen=True, slots=True)
class ChatMoved(Event):
    """Moved by hand within its workspace's visible chats."""

    id: str
    workspace: str
    old_row: int
    new_row: int


@dataclass(frozen=True, slots=True)
class ChatPinned(Event):
    """Now at *row* of Pinned; it keeps its row in its workspace."""

    id: str
    row: int


@dataclass(frozen=True, slots=True)
class ChatUnpinned(Event):
    """Gone from *row* of Pinned."""

    id: str
    row: int


@dataclass(frozen=True, slots=True)
class ChatArchived(Event):
    """Gone from *row* of its workspace (``None``: Ungrouped); now at *archived_row*."""

    id: str
    workspace: str | None
    row: int
    archived_row: int


@dataclass(frozen=True, slots=True)
class ChatUnarchived(Event):
    """Gone from *archived_row* of Archived; back at *row* of its workspace (or Ungrouped)."""

    id: str
    workspace: str | None
    row: int
    archived_row: int


@dataclass(frozen=True, slots=True)
class ChatRemoved(Event):
    """Deleted by the person (kept among the recently removed chats): gone from *row* of its
    workspace (``None``: Ungrouped), or from *archived_row* of Archived (the other is
    ``None``).  A pinned chat's ``ChatUnpinned`` comes first.  Restore is a ``ChatAdded``."""

    id: str
    workspace: str | None
    row: int | None
    archived_row: int | None


@dataclass(frozen=True, slots=True)
class ChatsRegrouped(Event):
    """Chats that now belong to workspace *to* (``None``: Ungrouped) because a workspace was
    removed or moved to another folder.

    Apply as: every chat of *ids* leaves the list it shows in, then each lands at its entry of
    *rows*, in order (rows ascend; ``None`` for an archived chat, which stays in Archived).
    """

    ids: tuple[str, ...]
    to: str | None
    rows: tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Reset(Event):
    """Another process wrote and the registry reloaded: re-read everything."""


# ================================================================= other stores


@dataclass(frozen=True, slots=True)
class MessageStored(Event):
    """A message was stored in *chat* (``ChatStore``): the person's, a reply, tool results."""

    chat: str
    message_id: int  # ``Message.id``
    role: str


@dataclass(frozen=True, slots=True)
class BranchShown(Event):
    """*chat* shows another branch (DESIGN §13): its shown path now ends at message *leaf*
    (kept as the chat's current leaf).  Above message *at* the path is as it was; from *at*
    on, a view reads it again (``ChatStore.messages``).  Sent by a switch between versions
    (*at*: the version chosen), an edit (*at* = *leaf*: the new version of the person's
    message, its ``MessageStored`` first) and a retry (*at* = *leaf*: the person's message,
    whose new reply follows as ``MessageStored``)."""

    chat: str
    leaf: int
    at: int


@dataclass(frozen=True, slots=True)
class KnowledgeSaved(Event):
    """A new version of *owner*'s document (a workspace id, or ``personal``)."""

    owner: str
    version: int
    source: str  # user, rebuild, import, restore


@dataclass(frozen=True, slots=True)
class SuggestionsChanged(Event):
    """Suggestions for *owner*'s document came (a rebuild) or went (accepted, dismissed)."""

    owner: str


@dataclass(frozen=True, slots=True)
class FileAdded(Event):
    workspace: str
    file_id: str


@dataclass(frozen=True, slots=True)
class FileChanged(Event):
    """A knowledge file's description was edited."""

    workspace: str
    file_id: str


@dataclass(frozen=True, slots=True)
class FileRemoved(Event):
    """A knowledge file was removed (its blob too, when nothing else used it)."""

    workspace: str
    file_id: str


@dataclass(frozen=True, slots=True)
class SettingChanged(Event):
    """A setting (a key of ``app.store.settings.SETTINGS``) was saved."""

    key: str


@dataclass(frozen=True, slots=True)
class RebuildQueued(Event):
    """A rebuild of what *chat* taught will run: after the idle delay, or when one that is
    running ends.  Not stored: emitted on the event loop's thread."""

    chat: str


@dataclass(frozen=True, slots=True)
class RebuildStarted(Event):
    """A rebuild with something to learn began (its ``WorkStarted`` follows); on the thread
    that runs rebuilds (the event loop's)."""

    chat: str


@dataclass(frozen=True, slots=True)
class RebuildApplied(Event):
    """A rebuild's result (one chunk of a backlog) is saved, the chat's watermark moved; after
    the ``KnowledgeSaved`` of each document it changed."""

    chat: str
    owners: tuple[str, ...]  # the knowledge documents that changed (maybe none)


@dataclass(frozen=True, slots=True)
class RebuildFailed(Event):
    """The documents stay as they were; *sentence* says why (also kept as the owners' last
    error)."""

    chat: str
    sentence: str


@dataclass(frozen=True, slots=True)
class WorkStarted(Event):
    """Live work (``turn``, ``background job``…) began on a chat; see ``app.base.live``."""

    chat: str
    kind: str


@dataclass(frozen=True, slots=True)
class WorkEnded(Event):
    chat: str
    kind: str


REGISTRY_EVENTS: tuple[type[Event], ...] = (
    WorkspaceAdded, WorkspaceRemoved, WorkspaceChanged, WorkspaceMoved,
    ChatAdded, ChatChanged, ChatMoved, ChatPinned, ChatUnpinned, ChatArchived, ChatUnarchived,
    ChatsRegrouped, ChatRemoved, Reset,
)
"""What the sidebar's models follow: the workspace tree and the chat lists."""


# ================================================================= the hub

E = TypeVar("E", bound=Event)


class Subscription:
    """A handle on one subscription; :meth:`close` stops delivery (also as a context manager)."""

    __slots__ = ("_hub", "callback", "kinds", "closed", "__weakref__")

    def __init__(self, hub: Hub, callback: Callable[[Event], None],
                 kinds: tuple[type[Event], ...]) -> None:
        self._hub = hub
        self.callback = callback
        self.kinds = kinds
        self.closed = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._hub._drop(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Hub:
    """Delivers events to subscribers; safe to use from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: tuple[Subscription, ...] = ()
        self._by_kind: dict[type[Event], tuple[Subscription, ...]] = {}
        self._local = threading.local()  # the events waiting while this thread delivers

    def subscribe(
        self,
        callback: Callable[[E], None],
        *,
        kinds: type[E] | Iterable[type[E]] | None = None,
    ) -> Subscription:
        """Call *callback* with each event of *kinds* (classes; default: every event)."""
        wanted: tuple[type[Event], ...] = (
            (Event,) if kinds is None
            else (kinds,) if isinstance(kinds, type)
            else tuple(kinds)
        )
        subscription = Subscription(self, callback, wanted)  # type: ignore[arg-type]
        with self._lock:
            self._subscriptions = (*self._subscriptions, subscription)
            self._by_kind = {}
        return subscription

    def emit(self, *events: Event) -> None:
        """Deliver *events*, in order, to every subscriber that wants them.

        An event emitted by a listener (on the same thread) waits until the one being
        delivered has reached every listener, so all of them see one order.
        """
        waiting: deque[Event] | None = getattr(self._local, "waiting", None)
        if waiting is not None:
            waiting.extend(events)
            return
        waiting = self._local.waiting = deque(events)
        try:
            while waiting:
                event = waiting.popleft()
                for subscription in self._subscribers(type(event)):
                    if subscription.closed:
                        continue
                    try:
                        subscription.callback(event)
                    except Exception:  # a broken listener must not undo or stop a change
                        log.exception("listener %r failed on %s",
                                      subscription.callback, type(event).__name__)
        finally:
            self._local.waiting = None

    @property
    def subscriber_count(self) -> int:
        return len(self._subscriptions)

    # ----------------------------------------------------------------- private

    def _subscribers(self, kind: type[Event]) -> tuple[Subscription, ...]:
        by_kind = self._by_kind
        found = by_kind.get(kind)
        if found is None:
            found = tuple(s for s in self._subscriptions if issubclass(kind, s.kinds))
            by_kind[kind] = found  # a stale table is replaced whole, never patched
        return found

    def _drop(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscriptions = tuple(s for s in self._subscriptions if s is not subscription)
            self._by_kind = {}
