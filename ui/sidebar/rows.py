"""The sidebar's rows as plain data: the workspace tree, the chat lists read so far, and the
numbers Qt's indexes carry to find their container again.

No Qt and no registry here: the model (``model.py``) shows these rows and reads the lists into
them, ``updates.py`` changes them event by event, ``drops.py`` reads them to place a drop.

A *container* holds rows: ``ROOT`` (the four sections), a section, or a workspace (its folders
in display order, then its chats in manual order).  A *place* is a chat list: a workspace id
or one of the chat sections (Pinned, Ungrouped, Archived).
"""

from __future__ import annotations

from app.records import ChatListing, Workspace
from app.store.registry.nesting import Rows
from ui.sidebar.kinds import (
    ARCHIVED,
    CHAT,
    CHAT_SECTIONS,
    PINNED,
    SECTION,
    SECTIONS,
    UNGROUPED,
    WORKSPACE,
    WORKSPACES,
)

ROOT = ""  # the container of the sections
NO_ROWS = Rows()
_FIXED_NUMBERS = {key: n for n, key in enumerate((ROOT, *SECTIONS), start=1)}

Item = tuple[str, str, str]  # (kind, id, place): place is the container the row sits in
Tree = dict[str | None, list[Workspace]]  # folders by parent (None: the top level), in order


def place_of_workspace(ws_id: str | None) -> str:
    """The chat list of a workspace id (None: Ungrouped)."""
    return UNGROUPED if ws_id is None else ws_id


class SidebarRows:
    """What each container shows, and the internal id each container's children carry."""

    def __init__(self) -> None:
        self.ws: dict[str, Workspace] = {}
        self.parent: dict[str, str | None] = {}
        self.kids: dict[str | None, Rows] = {}  # folders by parent (None: the top level)
        # Chat lists by place (a workspace id, PINNED, UNGROUPED, ARCHIVED); None: not read yet.
        self.lists: dict[str, Rows | None] = {}
        self.home: dict[str, str] = {}  # chat -> the workspace list (or Ungrouped) showing it
        self._cid: dict[str, int] = {}  # container -> the internal id of its children's indexes
        self._container: dict[int, str] = {}
        self._next_cid = len(_FIXED_NUMBERS) + 1
        for key in (ROOT, *SECTIONS):
            self.number(key)

    # ================================================================= numbers

    def number(self, key: str) -> int:
        """The internal id that *key*'s children carry in their indexes (never reused)."""
        cid = self._cid.get(key)
        if cid is None:
            cid = _FIXED_NUMBERS.get(key, 0)
            if not cid:
                cid, self._next_cid = self._next_cid, self._next_cid + 1
            self._cid[key] = cid
            self._container[cid] = key
        return cid

    def cid(self, key: str) -> int:
        """The internal id of *key*'s children, which has one already."""
        return self._cid[key]

    def forget_number(self, key: str) -> None:
        cid = self._cid.pop(key, None)
        if cid is not None:
            del self._container[cid]

    def container(self, internal_id: int) -> str | None:
        """The container whose children carry *internal_id* (None: none, any more)."""
        return self._container.get(internal_id)

    # ================================================================= the tree

    def install_tree(self, tree: Tree) -> None:
        """The workspaces and their nesting, from a read of the registry's tree."""
        self.ws, self.parent, self.kids = {}, {}, {}
        for parent, kids in tree.items():
            self.kids[parent] = Rows(ws.id for ws in kids)
            for ws in kids:
                self.ws[ws.id] = ws
                self.parent[ws.id] = parent
        self.kids.setdefault(None, Rows())
        for ws_id in self.ws:
            self.number(ws_id)

    def install_list(self, place: str, ids: list[str]) -> None:
        """A chat list, as read."""
        self.lists[place] = Rows(ids)
        if place != PINNED and place != ARCHIVED:
            self.home.update(dict.fromkeys(ids, place))

    # ================================================================= reading rows

    def count(self, container: str) -> int:
        if container == ROOT:
            return len(SECTIONS)
        if container == WORKSPACES:
            return len(self.kids[None])
        rows = self.lists.get(container)
        chats = 0 if rows is None else len(rows)
        if container in CHAT_SECTIONS:
            return chats
        return len(self.kids.get(container, NO_ROWS)) + chats

    def offset(self, place: str) -> int:
        """The row of a list's first chat in its container: a workspace's folders come first."""
        return 0 if place in CHAT_SECTIONS else len(self.kids.get(place, NO_ROWS))

    def key_in(self, container: str, row: int) -> str | None:
        """The id (a section's name) at *row* of *container*, or None."""
        try:
            if container == ROOT:
                return SECTIONS[row]
            if container == WORKSPACES:
                return self.kids[None].at(row)
            folders = NO_ROWS if container in CHAT_SECTIONS else self.kids.get(container, NO_ROWS)
            if row < len(folders):
                return folders.at(row)
            rows = self.lists.get(container)
            return rows.at(row - len(folders)) if rows is not None else None
        except (IndexError, KeyError):  # an index kept from before a change
            return None

    def children_of(self, container: str, row: int) -> str | None:
        """The container of the children of the row at *row* of *container*; None for a chat
        (no children)."""
        if container in CHAT_SECTIONS:
            return None  # a chat of Pinned, Ungrouped or Archived
        if container == ROOT or container == WORKSPACES:
            return self.key_in(container, row)
        folders = self.kids.get(container, NO_ROWS)
        return folders.at(row) if 0 <= row < len(folders) else None  # else a chat

    def item(self, container: str, row: int) -> Item | None:
        """(kind, id, place) of the row at *row* of *container*."""
        key = self.key_in(container, row)
        if key is None:
            return None
        if container == ROOT:
            return SECTION, key, ROOT
        if container == WORKSPACES or key in self.ws and self.parent.get(key) == container:
            return WORKSPACE, key, container
        return CHAT, key, container

    def chat_row(self, chat_id: str, place: str) -> int | None:
        """The row of a chat in its place's container, or None when that list does not show
        it."""
        rows = self.lists.get(place)
        if rows is None or chat_id not in rows:
            return None
        return self.offset(place) + rows.row_of(chat_id)

    def read_places(self) -> set[str]:
        """The lists read so far."""
        return {place for place, rows in self.lists.items() if rows is not None}

    def matches(self, tree: Tree, listing: ChatListing) -> bool:
        """Whether every row equals a fresh read of the registry (the lists read so far)."""
        lists: dict[str, list[str]] = {ws.id: [c.id for c in chats]
                                       for ws, chats in listing.workspaces}
        lists.update({PINNED: [c.id for c in listing.pinned],
                      UNGROUPED: [c.id for c in listing.ungrouped],
                      ARCHIVED: [c.id for c in listing.archived]})
        return (
            {p: [w.id for w in kids] for p, kids in tree.items() if kids}
            == {p: list(kids) for p, kids in self.kids.items() if kids}
            and self.ws == {w.id: w for kids in tree.values() for w in kids}
            and all(list(rows) == lists.get(place) for place, rows in self.lists.items()
                    if rows is not None)
        )
