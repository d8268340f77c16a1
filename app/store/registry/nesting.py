"""Which workspace holds which: lookups by key and identity, parents by path, and each
parent's folders in display order, kept as rows a tree model reads directly.

A workspace's parent is the nearest registered ancestor of its path.  Keys never change after
creation, so each workspace's ancestor keys are computed once; adding or removing a workspace
then re-parents only the workspaces it affects, instead of recomputing the whole tree.  Each
change returns the events that carry a model from the tree before it to the tree after it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.base import paths
from app.events import Event, WorkspaceAdded, WorkspaceMoved, WorkspaceRemoved
from app.records import Workspace


class Rows:
    """Ids in display order with an index map: ``len``, ``at`` and ``row_of`` in O(1).

    A change renumbers only the ids stored after it; the map is built on first use, so the
    rows of a thousand workspaces nobody looks at cost one list each.  A ``newest_first``
    list (Ungrouped, Pinned, Archived) is stored oldest first, so its usual change — a new id
    at the top — is an append.
    """

    __slots__ = ("_items", "_map", "_flip")

    def __init__(self, items: Iterable[str] = (), *, newest_first: bool = False) -> None:
        self._flip = newest_first
        self._items: list[str] = list(items)
        if newest_first:
            self._items.reverse()
        self._map: dict[str, int] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return reversed(self._items) if self._flip else iter(self._items)

    def __contains__(self, item: object) -> bool:
        return item in self._pos

    def at(self, row: int) -> str:
        if not 0 <= row < len(self._items):
            raise IndexError(f"row {row} of {len(self._items)}")
        return self._items[len(self._items) - 1 - row if self._flip else row]

    def row_of(self, item: str) -> int:
        pos = self._pos[item]
        return len(self._items) - 1 - pos if self._flip else pos

    def insert(self, row: int, item: str) -> None:
        """Put *item* at *row* (0 ≤ row ≤ len)."""
        if not 0 <= row <= len(self._items):
            raise IndexError(f"row {row} of {len(self._items)}")
        self._put(len(self._items) - row if self._flip else row, item)

    def insert_sorted(self, item: str, key: Callable[[str], Any]) -> int:
        """Put *item* where *key* sorts it (stored ascending: newest_first shows descending)."""
        items, wanted = self._items, key(item)
        if not items or key(items[-1]) < wanted:  # the usual case: newest, at the end
            pos = len(items)
        else:
            pos = bisect_left(items, wanted, key=key)
        self._put(pos, item)
        return len(self._items) - 1 - pos if self._flip else pos

    def remove(self, item: str) -> int:
        """Take *item* out; returns the row it had."""
        row = self.row_of(item)
        pos = self._pos.pop(item)
        del self._items[pos]
        self._renumber(pos)
        return row

    @property
    def _pos(self) -> dict[str, int]:
        if self._map is None:
            self._map = dict(zip(self._items, range(len(self._items))))
        return self._map

    def _put(self, pos: int, item: str) -> None:
        self._items.insert(pos, item)
        self._renumber(pos)

    def _renumber(self, start: int) -> None:
        if self._map is not None:  # else it is built, whole, when first needed
            items = self._items
            self._map.update(zip(items[start:], range(start, len(items))))


@dataclass(slots=True)
class TreeChange:
    """The events of one change to the tree, in the order a model applies them."""

    added: list[WorkspaceAdded] = field(default_factory=list)
    moved: list[WorkspaceMoved] = field(default_factory=list)
    removed: list[WorkspaceRemoved] = field(default_factory=list)

    def events(self, *, between: Iterable[Event] = ()) -> list[Event]:
        """Added, then *between* (chats leaving a workspace about to go), moved, removed."""
        return [*self.added, *between, *self.moved, *self.removed]


class Nesting:
    def __init__(self) -> None:
        self.by_key: dict[str, str] = {}
        self.by_identity: dict[tuple[int, int], str] = {}
        self._key_of: dict[str, str] = {}
        self._ancestors: dict[str, tuple[str, ...]] = {}  # nearest first
        self._below: Counter[str] = Counter()  # key -> how many workspaces lie inside it
        self._parents: dict[str, str | None] = {}
        self._children: dict[str | None, Rows] = {None: Rows()}
        # Place in the display order, as numbers that only keep the order: a workspace added
        # or moved takes one between its neighbours', so no change renumbers the others.
        self._rank: dict[str, float] = {}

    # ----------------------------------------------------------------- reading

    def parent_of(self, ws_id: str) -> str | None:
        return self._parents.get(ws_id)

    def children(self, parent: str | None) -> Rows:
        """The folders of *parent* (None: the top level) in display order.  Do not change."""
        return self._children.get(parent) or _NONE

    def row_of(self, ws_id: str) -> int:
        return self._children[self._parents[ws_id]].row_of(ws_id)

    def parents(self) -> Iterable[str | None]:
        """Every parent with folders, and None."""
        return self._children.keys()

    # ----------------------------------------------------------------- changing

    def rebuild(self, workspaces: Iterable[Workspace], order: Sequence[str]) -> None:
        for table in (self.by_key, self.by_identity, self._key_of, self._ancestors,
                      self._below, self._parents):
            table.clear()
        items = list(workspaces)
        for ws in items:
            self._remember(ws)
        for ws in items:
            self._parents[ws.id] = self._nearest(ws.id)
        inside: dict[str | None, list[str]] = {None: []}
        for ws_id in order:
            inside.setdefault(self._parents[ws_id], []).append(ws_id)
        self._children = {parent: Rows(ids) for parent, ids in inside.items()}
        self._rank = dict(zip(order, map(float, range(len(order)))))

    def change(
        self,
        order: Sequence[str],
        *,
        added: Workspace | None = None,
        removed: str | None = None,
        moved: str | None = None,
    ) -> TreeChange:
        """Take in the new display *order* after a workspace was *added*, *removed* (or both:
        one taking the other's place), or *moved* in the order; re-parent what that affects,
        and return the events.

        The add comes first, so a removed workspace's folders can land in the new one; each
        event's row is computed on the rows as they stand after the events before it, and a
        workspace about to go keeps its row until it goes.
        """
        was: dict[str, str | None] = {}  # re-parented: id -> the parent its row is under
        if added is not None:
            was.update(self._add(added))
            self._rank_between(order, added.id)
        under = None
        if removed is not None:
            parent, lifted = self._remove(removed)
            under = was.pop(removed, parent)  # the parent its row is under
            for other in lifted:
                if added is None or other != added.id:  # a new one has no row to leave yet
                    was.setdefault(other, removed)
        if moved is not None:
            self._rank_between(order, moved)
        change = TreeChange()
        if added is not None:
            row = self._place(added.id)
            change.added.append(WorkspaceAdded(added.id, self._parents[added.id], row, added))
        for ws_id in sorted(was, key=self._rank.__getitem__):
            if was[ws_id] != self._parents[ws_id]:
                old_row = self._children[was[ws_id]].remove(ws_id)
                row = self._place(ws_id)
                change.moved.append(
                    WorkspaceMoved(ws_id, was[ws_id], self._parents[ws_id], row, old_row))
        if moved is not None:
            parent = self._parents[moved]
            old_row = self._children[parent].remove(moved)
            row = self._place(moved)
            change.moved.append(WorkspaceMoved(moved, parent, parent, row, old_row))
        if removed is not None:
            row = self._children[under].remove(removed)
            self._children.pop(removed, None)  # its folders all moved out above
            del self._rank[removed]
            change.removed.append(WorkspaceRemoved(removed, under, row))
        return change

    def set_identities(self, workspaces: Iterable[Workspace]) -> None:
        self.by_identity = {ws.identity: ws.id for ws in workspaces if ws.identity is not None}

    # ----------------------------------------------------------------- private

    def _add(self, ws: Workspace) -> dict[str, str | None]:
        """Record *ws* and its parent; returns the workspaces it now holds, with their old
        parent."""
        self._remember(ws)
        self._parents[ws.id] = self._nearest(ws.id)
        taken: dict[str, str | None] = {}
        if not self._below[ws.key]:
            return taken  # nothing registered inside it: the usual case, and no scan
        # Workspaces inside the new one whose nearest registered ancestor it now is.
        for other, ancestors in self._ancestors.items():
            if other != ws.id and ws.key in ancestors:
                current = self._parents[other]
                if current is None or ancestors.index(ws.key) < ancestors.index(
                    self._key_of[current]
                ):
                    self._parents[other] = ws.id
                    taken[other] = current
        return taken

    def _remove(self, ws_id: str) -> tuple[str | None, list[str]]:
        """Forget *ws_id*; returns its parent and its folders, now lifted."""
        key = self._key_of.pop(ws_id)
        self.by_key.pop(key, None)
        self.by_identity = {i: w for i, w in self.by_identity.items() if w != ws_id}
        self._below.subtract(self._ancestors.pop(ws_id))
        parent = self._parents.pop(ws_id)
        lifted = [other for other, p in self._parents.items() if p == ws_id]
        for other in lifted:  # to the next registered ancestor, or the top
            self._parents[other] = self._nearest(other)
        return parent, lifted

    def _rank_between(self, order: Sequence[str], ws_id: str) -> None:
        """Give *ws_id* a rank between its neighbours' in the new *order*."""
        self._rank.pop(ws_id, None)
        at = order.index(ws_id)
        low = self._rank[order[at - 1]] if at > 0 else None
        high = self._rank[order[at + 1]] if at + 1 < len(order) else None
        if low is not None and high is not None:
            rank = (low + high) / 2
            if not low < rank < high:  # no number left between them: spread all out again
                spread = sorted(self._rank, key=self._rank.__getitem__)
                self._rank = dict(zip(spread, map(float, range(len(spread)))))
                return self._rank_between(order, ws_id)
        elif low is not None:
            rank = low + 1.0
        elif high is not None:
            rank = high - 1.0
        else:
            rank = 0.0
        self._rank[ws_id] = rank

    def _place(self, ws_id: str) -> int:
        """Insert *ws_id* among its parent's folders by display order; returns its row."""
        siblings = self._children.setdefault(self._parents[ws_id], Rows())
        return siblings.insert_sorted(ws_id, self._rank.__getitem__)

    def _remember(self, ws: Workspace) -> None:
        self.by_key[ws.key] = ws.id
        self._key_of[ws.id] = ws.key
        self._ancestors[ws.id] = ancestors = tuple(paths.parent_keys(ws.key))
        self._below.update(ancestors)
        if ws.identity is not None:
            self.by_identity[ws.identity] = ws.id

    def _nearest(self, ws_id: str) -> str | None:
        return next((self.by_key[k] for k in self._ancestors[ws_id] if k in self.by_key), None)


_NONE = Rows()  # the folders of a workspace that has none
