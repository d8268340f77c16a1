"""Which workspace holds which: lookups by key and identity, and parents by path.

A workspace's parent is the nearest registered ancestor of its path.  Keys never change after
creation, so each workspace's ancestor keys are computed once; adding or removing a workspace
then re-parents only the workspaces it affects, instead of recomputing the whole tree.
"""

from __future__ import annotations

from collections.abc import Iterable

from app import paths
from app.records import Workspace


class Nesting:
    def __init__(self) -> None:
        self.by_key: dict[str, str] = {}
        self.by_identity: dict[tuple[int, int], str] = {}
        self._key_of: dict[str, str] = {}
        self._ancestors: dict[str, tuple[str, ...]] = {}  # nearest first
        self._parents: dict[str, str | None] = {}

    def rebuild(self, workspaces: Iterable[Workspace]) -> None:
        for table in (self.by_key, self.by_identity, self._key_of, self._ancestors, self._parents):
            table.clear()
        items = list(workspaces)
        for ws in items:
            self._remember(ws)
        for ws in items:
            self._parents[ws.id] = self._nearest(ws.id)

    def add(self, ws: Workspace) -> None:
        self._remember(ws)
        self._parents[ws.id] = self._nearest(ws.id)
        # Workspaces inside the new one whose nearest registered ancestor it now is.
        for other, ancestors in self._ancestors.items():
            if other != ws.id and ws.key in ancestors:
                current = self._parents[other]
                if current is None or ancestors.index(ws.key) < ancestors.index(
                    self._key_of[current]
                ):
                    self._parents[other] = ws.id

    def remove(self, ws_id: str) -> None:
        key = self._key_of.pop(ws_id)
        self.by_key.pop(key, None)
        self.by_identity = {i: w for i, w in self.by_identity.items() if w != ws_id}
        del self._ancestors[ws_id]
        del self._parents[ws_id]
        for other, parent in self._parents.items():
            if parent == ws_id:  # lifted to the next registered ancestor, or the top
                self._parents[other] = self._nearest(other)

    def set_identities(self, workspaces: Iterable[Workspace]) -> None:
        self.by_identity = {ws.identity: ws.id for ws in workspaces if ws.identity is not None}

    def parent_of(self, ws_id: str) -> str | None:
        return self._parents.get(ws_id)

    def _remember(self, ws: Workspace) -> None:
        self.by_key[ws.key] = ws.id
        self._key_of[ws.id] = ws.key
        self._ancestors[ws.id] = tuple(paths.parent_keys(ws.key))
        if ws.identity is not None:
            self.by_identity[ws.identity] = ws.id

    def _nearest(self, ws_id: str) -> str | None:
        return next((self.by_key[k] for k in self._ancestors[ws_id] if k in self.by_key), None)
