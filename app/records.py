"""The registry's records as the rest of Cairn sees them: immutable snapshots."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

BUILD_STATUSES: tuple[str, ...] = ("idea", "planning", "building", "shipped")
OK = "ok"
MISSING_DIR = "missing-dir"


@dataclass(frozen=True, slots=True)
class Workspace:
    id: str
    path: str  # canonical at creation; never rewritten
    key: str  # de-duplication key of the path
    title: str
    description: str
    instructions: str
    build_status: str
    created_at: str
    updated_at: str
    status: str = OK  # ``ok`` or ``missing-dir``, as last checked
    identity: tuple[int, int] | None = field(default=None, compare=False)

    def to_json(self, *, parent: str | None) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "path": self.path,
            "status": self.status,
            "parent": parent,
            "build_status": self.build_status,
            "description": self.description,
            "instructions": self.instructions,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class Chat(NamedTuple):
    """A chat header.  A tuple because 50,000 of them load at start: cheap to build."""

    id: str
    title: str
    folder: str | None  # as recorded, even when it no longer resolves
    workspace_id: str | None
    created_at: str
    updated_at: str
    archived_at: str | None = None
    pin_seq: int | None = None  # larger = pinned more recently

    @property
    def pinned(self) -> bool:
        return self.pin_seq is not None

    @property
    def archived(self) -> bool:
        return self.archived_at is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "folder": self.folder,
            "workspace": self.workspace_id,
            "pinned": self.pinned,
            "archived": self.archived,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


@dataclass(frozen=True, slots=True)
class ChatListing:
    """The sidebar's grouping: pinned first, then each workspace, then Ungrouped, then archived."""

    pinned: list[Chat]
    workspaces: list[tuple[Workspace, list[Chat]]]
    ungrouped: list[Chat]
    archived: list[Chat]

    def to_json(self) -> dict[str, Any]:
        return {
            "pinned": [c.to_json() for c in self.pinned],
            "workspaces": [
                {"id": ws.id, "title": ws.title, "chats": [c.to_json() for c in chats]}
                for ws, chats in self.workspaces
            ],
            "ungrouped": [c.to_json() for c in self.ungrouped],
            "archived": [c.to_json() for c in self.archived],
        }


# ===================================================================== a bundle's records
# What a ``.cairn`` bundle holds, as checked by ``app.sharing.manifest``; the store writes them
# (``app.store.registry.imports``) and the sharing package reads and writes the file.


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    media_type: str
    size: int
    sha256: str
    description: str
    created_at: str


@dataclass(frozen=True, slots=True)
class VersionEntry:
    version: int
    text: str
    source: str
    saved_at: str
    chat: int | None


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    text: str
    version: int
    updated_at: str
    source: str
    chat: int | None
    history: tuple[VersionEntry, ...] | None


@dataclass(frozen=True, slots=True)
class MessageEntry:
    role: str
    content: list[Any]
    status: str
    error: str | None
    model: str | None
    input_tokens: int | None
    cache_write_tokens: int | None
    cache_read_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    created_at: str
    parent: int | None  # the place of its parent in the chat (before it); None: a root


@dataclass(frozen=True, slots=True)
class ChatEntry:
    number: int  # the n of chats/<n>.json
    title: str
    created_at: str
    updated_at: str
    watermark: int | None
    messages: tuple[MessageEntry, ...]  # parents before children
    leaf: int | None = None  # the place of the message the chat shows last


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    folder: str  # "" for the workspace itself
    title: str
    description: str
    instructions: str
    build_status: str
    created_at: str
    updated_at: str
    knowledge: KnowledgeEntry | None
    files: tuple[FileEntry, ...]
    chats: tuple[int, ...]  # chat numbers, in manual order
    knowledge_file: bool = False  # its document was kept as CAIRN.md where it came from


@dataclass(frozen=True, slots=True)
class WebSettings:
    """Whether Claude may search and fetch the web in a workspace's chats (off until the person
    turns it on), how many searches one reply may make, and which sites it may use: only the
    allowed ones when any are listed, else any but the blocked ones (the API takes one list).
    """

    enabled: bool = False
    max_uses: int = 5
    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "max_uses": self.max_uses,
                "allowed_domains": list(self.allowed_domains),
                "blocked_domains": list(self.blocked_domains)}
