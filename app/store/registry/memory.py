"""The registry's memory: the workspaces and chats as rows, their order, and the lock around
them.  This is where the sidebar's order lives.

One object owns it (``Memory``); the registry's parts (chat lists, recently removed, first
start, fork, the start-up loader) are each handed it and change it only through a change
that committed first (see ``state``).  What a model shows is kept as rows with index maps
(``nesting.Rows``):

- the display order of the workspaces (``order``, as stored in ``display_order``) and the
  tree built from it (``nesting``: each parent's folders, in display order);
- each workspace's chats in their manual order (``members``, archived ones included; stored
  in ``membership.position``) and its visible ones as rows (``visible``);
- Ungrouped, newest first by creation (:meth:`Memory.created_key`), Pinned, most recently
  pinned first (:meth:`Memory.pin_key`), and Archived, most recently archived first
  (:meth:`Memory.archive_key`).

"Change the sidebar's order" means changing a sort key here (and the stored order it mirrors),
never a sort in the view: the sidebar model reads these rows as they are.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from app.base import paths
from app.events import (
    ChatArchived,
    ChatChanged,
    ChatPinned,
    ChatsRegrouped,
    ChatUnarchived,
    ChatUnpinned,
    Event,
)
from app.records import Chat, Workspace
from app.store.registry.nesting import Nesting, Rows, TreeChange

if TYPE_CHECKING:
    from collections.abc import Iterable


class Memory:
    """The rows and their order.  ``lock`` guards them: held only while they are read or
    changed, never across a SQLite call (a reader never waits on the disk)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.workspaces: dict[str, Workspace] = {}
        self.order: list[str] = []  # the workspaces' display order
        self.nesting = Nesting()
        self.chats: dict[str, Chat] = {}
        self.members: dict[str, list[str]] = {}  # manual order, archived chats included
        self.state: dict[str, str] = {}  # the stored registry_state (first start's marks)
        # The chat lists as rows (see index_chats); ``seq``: the order chats were made in.
        self.seq: dict[str, int] = {}
        self.visible: dict[str, Rows] = {}
        self.ungrouped = Rows(newest_first=True)
        self.pinned = Rows(newest_first=True)
        self.archived = Rows(newest_first=True)
        self.seq_top = -1  # the largest ``seq`` given: a new chat's is larger

    # ----------------------------------------------------------------- reading

    def in_order(self) -> list[Workspace]:
        """Every workspace, folders included, in display order."""
        with self.lock:
            return [self.workspaces[ws_id] for ws_id in self.order]

    def existing(self, folder: paths.Folder) -> Workspace | None:
        """The workspace of *folder* or of an alias of it: same key, or the same directory."""
        ws_id = self.nesting.by_key.get(folder.key)
        if ws_id is None and folder.identity is not None:
            candidate = self.nesting.by_identity.get(folder.identity)
            # The remembered identity may be stale (folder deleted, inode reused): look again.
            if candidate and paths.identity(self.workspaces[candidate].path) == folder.identity:
                ws_id = candidate
        return self.workspaces[ws_id] if ws_id else None

    def chat_rows(self, ws_id: str | None) -> Rows:
        """A workspace's visible chats as rows (None: Ungrouped's)."""
        if ws_id is None:
            return self.ungrouped
        rows = self.visible.get(ws_id)
        if rows is None:
            raise KeyError(f"no workspace '{ws_id}'")
        return rows

    def home(self, chat: Chat) -> Rows:
        """The rows a visible chat shows in: its workspace's, or Ungrouped's."""
        return self.ungrouped if chat.workspace_id is None else self.visible[chat.workspace_id]

    # ----------------------------------------------------------------- the sort keys

    # The newest-first lists are stored ascending by these.  Pin numbers are unique; chats
    # archived in the same millisecond show the older first.
    def pin_key(self, chat_id: str) -> int:
        """Pinned's order: the pin number (the most recent pin is the largest)."""
        return self.chats[chat_id].pin_seq or 0

    def archive_key(self, chat_id: str) -> tuple[str, int]:
        """Archived's order: when archived (``seq`` breaks ties within a millisecond)."""
        return self.chats[chat_id].archived_at or "", -self.seq[chat_id]

    def created_key(self, chat_id: str) -> tuple[str, int]:
        """Ungrouped's order: by creation (``seq`` breaks ties within a millisecond)."""
        return self.chats[chat_id].created_at, self.seq[chat_id]

    def next_seq(self) -> int:
        self.seq_top += 1
        return self.seq_top

    # ----------------------------------------------------------------- building

    def index_chats(self) -> None:
        """The chat lists as rows, from ``chats`` and ``members``: one pass (50,000 at start)."""
        ungrouped, pinned, archived = [], [], []
        for chat in self.chats.values():  # oldest first
            if chat.archived_at is not None:
                archived.append(chat.id)
            elif chat.workspace_id is None:
                ungrouped.append(chat.id)
            if chat.pin_seq is not None:
                pinned.append(chat.id)
        chats = self.chats
        self.seq = dict(zip(chats, range(len(chats))))
        hidden = set(archived)
        self.visible = {
            ws_id: Rows([c for c in ids if c not in hidden] if hidden else ids)
            for ws_id, ids in self.members.items()
        }
        ungrouped.reverse()
        self.ungrouped = Rows(ungrouped, newest_first=True)
        # Stable sorts, newest first: a tie keeps the older chat first, as the keys above do.
        pinned.sort(key=self.pin_key, reverse=True)
        self.pinned = Rows(pinned, newest_first=True)
        archived.sort(key=lambda c: chats[c].archived_at or "", reverse=True)
        self.archived = Rows(archived, newest_first=True)

    # ----------------------------------------------------------------- changing (after a commit)

    def add_chat(self, chat: Chat) -> int:
        """A new or restored visible chat, at the top of its workspace's manual order (or in
        Ungrouped by creation); returns its row."""
        self.chats[chat.id] = chat
        self.seq[chat.id] = self.next_seq()
        if chat.workspace_id is not None:
            self.members[chat.workspace_id].insert(0, chat.id)
        return self.show(chat)

    def show(self, chat: Chat) -> int:
        """Put a visible chat in its workspace's rows (or Ungrouped's); returns its row."""
        if chat.workspace_id is None:
            return self.ungrouped.insert_sorted(chat.id, self.created_key)
        # Its place in the manual order, counting only the visible chats before it.
        row = 0
        for other in self.members[chat.workspace_id]:
            if other == chat.id:
                break
            row += self.chats[other].archived_at is None
        self.visible[chat.workspace_id].insert(row, chat.id)
        return row

    def restate(self, before: Chat, after: Chat) -> list[Event]:
        """Memory after a committed change of one chat's header, and the events saying how."""
        chat_id = after.id
        events: list[Event] = []
        if before.pinned and before.pin_seq != after.pin_seq:
            events.append(ChatUnpinned(chat_id, self.pinned.remove(chat_id)))
        self.chats[chat_id] = after
        if before.archived != after.archived:
            if after.archived:
                row = self.home(before).remove(chat_id)
                archived_row = self.archived.insert_sorted(chat_id, self.archive_key)
                events.append(ChatArchived(chat_id, after.workspace_id, row, archived_row))
            else:
                archived_row = self.archived.remove(chat_id)
                events.append(ChatUnarchived(chat_id, after.workspace_id, self.show(after),
                                             archived_row))
        if after.pinned and before.pin_seq != after.pin_seq:
            events.append(ChatPinned(chat_id, self.pinned.insert_sorted(chat_id, self.pin_key)))
        events.append(ChatChanged(chat_id, after))
        return events

    def regroup(self, chat_ids: list[str], to: str | None) -> ChatsRegrouped | None:
        """Memory after the chats of a workspace being removed joined *to* (None: Ungrouped).

        The chats keep their manual order; the source's rows are dropped by the caller.
        """
        if not chat_ids:
            return None
        shown: list[tuple[int, str]] = []
        hidden: list[str] = []
        for chat_id in chat_ids:
            chat = self.chats[chat_id]._replace(workspace_id=to)
            self.chats[chat_id] = chat
            if chat.archived:
                hidden.append(chat_id)
            elif to is None:
                shown.append((self.ungrouped.insert_sorted(chat_id, self.created_key), chat_id))
        if to is not None:
            self.members[to] = list(chat_ids)
            self.visible[to] = Rows(c for c in chat_ids if self.chats[c].archived_at is None)
            shown = [(row, c) for row, c in enumerate(self.visible[to])]
        else:
            # Rows of earlier inserts shift as later ones land above them: read them at the end.
            shown = sorted((self.ungrouped.row_of(c), c) for _, c in shown)
        return ChatsRegrouped(
            ids=tuple(c for _, c in shown) + tuple(hidden),
            to=to,
            rows=tuple(row for row, _ in shown) + (None,) * len(hidden),
        )

    def reshape(
        self,
        order: list[str],
        *,
        added: Workspace | None = None,
        removed: str | None = None,
        moved: str | None = None,
    ) -> TreeChange:
        """Memory after a committed change to the list: the new display *order* and the tree.

        A removed workspace's chats must have been regrouped first.
        """
        if added is not None:
            self.workspaces[added.id] = added
            self.members.setdefault(added.id, [])
            self.visible.setdefault(added.id, Rows())
        if removed is not None:
            del self.workspaces[removed]
            del self.members[removed], self.visible[removed]
        self.order = order
        return self.nesting.change(order, added=added, removed=removed, moved=moved)

    def replace_workspaces(self, workspaces: dict[str, Workspace], order: Iterable[str],
                           state: dict[str, str]) -> None:
        """The workspaces, their order and the stored marks, as loaded (under ``lock``)."""
        self.workspaces = workspaces
        self.order = list(order)
        self.state = dict(state)
        self.nesting.rebuild(workspaces.values(), self.order)
