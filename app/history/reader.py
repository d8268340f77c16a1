"""An export opened and surveyed: what kind it is (told by content, not by file names), what it
holds, every bound checked on every JSON file before anything is written; then its chats,
projects and memories read one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.base.db import utc_now
from app.history import chatgpt, claude
from app.history.archive import (
    MAX_FILE_BYTES,
    Archive,
    Member,
    Summary,
    check_json,
    items,
    open_archive,
)
from app.history.model import CHATGPT, CLAUDE, SOURCE_NAMES, Chat, File, Memory, Project

IMAGE_TYPES = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
               (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


@dataclass(frozen=True, slots=True)
class ProjectInfo:
    source_id: str
    name: str
    chats: int
    docs: int
    has_instructions: bool

    def to_json(self) -> dict[str, Any]:
        return {"id": self.source_id, "name": self.name, "chats": self.chats,
                "docs": self.docs, "instructions": self.has_instructions}


@dataclass(slots=True)
class Survey:
    """What an export holds, counted without building it."""

    source: str  # CLAUDE | CHATGPT
    chats: int = 0
    messages: int = 0  # Claude: messages; ChatGPT: nodes of the mappings (an upper bound)
    projects: list[ProjectInfo] = field(default_factory=list)
    memories: bool = False
    images: int = 0
    chat_ids: list[str] = field(default_factory=list)
    chat_files: list[Member] = field(default_factory=list)
    project_files: list[Member] = field(default_factory=list)
    memory_files: list[Member] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # JSON files of no use here

    @property
    def source_name(self) -> str:
        return SOURCE_NAMES[self.source]

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "chats": self.chats, "messages": self.messages,
                "projects": [p.to_json() for p in self.projects],
                "memories": self.memories, "images": self.images}


class Export:
    """An open, surveyed export.  Use :func:`open_export` (a context manager)."""

    def __init__(self, archive: Archive, survey: Survey) -> None:
        self.archive = archive
        self.survey = survey
        self._images: dict[str, Member] | None = None
        self.instructions: list[Memory] = []  # ChatGPT's, found as its chats are read

    def close(self) -> None:
        self.archive.close()

    def __enter__(self) -> Export:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def chats(self) -> Iterator[Chat]:
        now = utc_now()
        for member in self.survey.chat_files:
            for value in items(self.archive, member):
                if self.survey.source == CLAUDE:
                    found = claude.chat(value, now)
                else:
                    found = chatgpt.chat(value, now, self._image, self.instructions)
                if found is not None:
                    yield found

    def projects(self) -> list[Project]:
        now = utc_now()
        found: dict[str, Project] = {}
        for member in self.survey.project_files:
            for value in items(self.archive, member):
                for entry in value if isinstance(value, list) else [value]:
                    p = claude.project(entry, now)
                    if p is not None and p.source_id not in found:
                        found[p.source_id] = p
        return list(found.values())

    def memories(self) -> list[Memory]:
        found: list[Memory] = []
        for member in self.survey.memory_files:
            for value in items(self.archive, member):
                found.extend(claude.memories(value))
        return found

    # ----------------------------------------------------------------- images

    def _image(self, asset: str) -> File | None:
        """The file the zip holds for an image asset id (``file-AbC``, ``file_00…``): named
        after it, with or without a suffix after a '-' and an extension; its type told by its
        first bytes (an export may name a PNG ``.dat``)."""
        if self._images is None:
            self._images = _image_index(self.archive.members)
        member = self._images.get(asset)
        if member is None or member.size > MAX_FILE_BYTES:
            return None
        data = self.archive.read(member)
        media_type = image_type(data)
        if media_type is None:
            return None
        return File(member.base, media_type, data)


def image_type(data: bytes) -> str | None:
    for magic, media_type in IMAGE_TYPES:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def _image_index(members: list[Member]) -> dict[str, Member]:
    index: dict[str, Member] = {}
    for m in members:
        base = m.base
        if base.lower().endswith(".json"):
            continue
        stem = base.rsplit(".", 1)[0]
        keys = {stem, base}
        if stem.startswith("file-"):
            keys.add("file-" + stem[5:].split("-", 1)[0])
        elif stem.startswith("file_"):
            keys.add(stem.split("-", 1)[0])
        for key in keys:
            index.setdefault(key, m)
    return index


def open_export(source: Path) -> Export:
    """Open *source* (a zip or its unpacked folder), tell which service made it, and check
    every JSON file in it; :class:`Refused` in one sentence when it is none of them or a
    bound is passed."""
    archive = open_archive(source)
    try:
        survey = _survey(archive)
    except BaseException:
        archive.close()
        raise
    return Export(archive, survey)


def _survey(archive: Archive) -> Survey:
    refuse = archive.refuse
    kinds: dict[str, list[tuple[Member, Summary]]] = {}
    ignored: list[str] = []
    images = 0
    for member in archive.members:
        if not member.base.lower().endswith(".json"):
            if not member.base.lower().endswith((".html", ".txt", ".md")):
                images += 1
            continue
        summary = check_json(archive, member)
        kind = _kind(summary)
        if kind is None:
            ignored.append(member.name)
            continue
        kinds.setdefault(kind, []).append((member, summary))
    if "claude-chats" in kinds and "chatgpt-chats" in kinds:
        refuse("it holds chats from both Claude.ai and ChatGPT; import each export on its own")
    if "chatgpt-chats" in kinds:
        survey = Survey(CHATGPT)
    elif kinds:
        survey = Survey(CLAUDE)
    else:
        refuse("it holds no chats, projects or memories from Claude.ai or ChatGPT")
    survey.ignored = ignored
    per_project: dict[str, int] = {}
    for member, summary in kinds.get("claude-chats", []) + kinds.get("chatgpt-chats", []):
        survey.chat_files.append(member)
        for e in summary.elements or ():
            sid = e.get("uuid") or e.get("conversation_id") or e.get("id")
            if not isinstance(sid, str):
                continue
            survey.chats += 1
            survey.chat_ids.append(sid)
            count = e.get("chat_messages", e.get("mapping", 0))
            survey.messages += count if isinstance(count, int) else 0
            project = e.get("project_uuid")
            if isinstance(project, str) and project:
                per_project[project] = per_project.get(project, 0) + 1
    if survey.source == CLAUDE:
        survey.project_files = [m for m, _ in kinds.get("claude-projects", [])]
        survey.memory_files = [m for m, _ in kinds.get("claude-memories", [])]
        survey.memories = bool(survey.memory_files)
        export = Export(archive, survey)
        for p in export.projects():
            survey.projects.append(ProjectInfo(p.source_id, p.name,
                                               per_project.get(p.source_id, 0), len(p.docs),
                                               bool(p.instructions.strip())))
        survey.images = 0
    else:
        survey.images = images
    return survey


def _kind(summary: Summary) -> str | None:
    keys = summary.keys
    if summary.top == "array":
        if chatgpt.is_chats(keys):
            return "chatgpt-chats"
        if claude.is_chats(keys):
            return "claude-chats"
        if claude.is_projects(keys):
            return "claude-projects"
        if claude.is_memories(keys):
            return "claude-memories"
    elif summary.top == "object":
        if claude.is_memories(keys):
            return "claude-memories"
        if claude.is_projects(keys):
            return "claude-projects"
        if claude.is_chats(keys):
            return "claude-chats"
    return None
