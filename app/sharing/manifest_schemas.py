"""The shape of a ``.cairn`` bundle's manifest and chats as pydantic models: every field known,
present and of its type (``extra="forbid"``, ``strict``).  What a field's value must mean (a
time's form, a status of the list, a size within bounds, a folder inside the workspace) is
checked after, in :mod:`app.sharing.manifest`.  Nested records are ``Any`` here and checked by
their own model when they are read, so each refusal names the first field that is wrong."""

from __future__ import annotations

from typing import Any

from pydantic import StrictBool, StrictInt, StrictStr

from app.store.block_schemas import Strict


class Manifest(Strict):
    format: StrictStr
    format_version: StrictInt
    cairn_version: StrictStr
    created_at: StrictStr
    workspaces: list[Any]


class WorkspaceRecord(Strict):
    folder: StrictStr
    title: StrictStr
    description: StrictStr
    instructions: StrictStr
    build_status: StrictStr
    created_at: StrictStr
    updated_at: StrictStr
    knowledge: Any
    files: list[Any]
    chats: list[StrictStr]  # members like chats/0.json
    knowledge_file: StrictBool = False


class KnowledgeRecord(Strict):
    text: StrictStr
    version: StrictInt
    updated_at: StrictStr
    source: StrictStr
    chat: StrictInt | None
    history: list[Any] | None


class VersionRecord(Strict):
    version: StrictInt
    text: StrictStr
    source: StrictStr
    saved_at: StrictStr
    chat: StrictInt | None


class FileRecord(Strict):
    name: StrictStr
    media_type: StrictStr
    size: StrictInt
    sha256: StrictStr
    description: StrictStr
    created_at: StrictStr


class ChatRecordV1(Strict):
    """A chat of format 1 (before branches)."""

    title: StrictStr
    created_at: StrictStr
    updated_at: StrictStr
    watermark: StrictInt | None
    messages: list[Any]


class ChatRecord(ChatRecordV1):
    leaf: StrictInt | None


class MessageRecord(Strict):
    role: StrictStr
    content: Any  # the content check: app.store.messages.checked_content
    status: StrictStr
    error: StrictStr | None
    model: StrictStr | None
    input_tokens: StrictInt | None
    cache_write_tokens: StrictInt | None
    cache_read_tokens: StrictInt | None
    output_tokens: StrictInt | None
    cost_usd: Any  # a number from 0, or null: checked by value
    created_at: StrictStr
    parent: StrictInt | None


class MessageRecordV1(Strict):
    """A message of format 1: what a retry or an edit replaced, instead of a tree."""

    role: StrictStr
    content: Any
    status: StrictStr
    error: StrictStr | None
    model: StrictStr | None
    input_tokens: StrictInt | None
    cache_write_tokens: StrictInt | None
    cache_read_tokens: StrictInt | None
    output_tokens: StrictInt | None
    cost_usd: Any
    created_at: StrictStr
    superseded_by: StrictInt | None


SCHEMAS: dict[str, type[Strict]] = {
    "manifest": Manifest, "workspace": WorkspaceRecord, "knowledge": KnowledgeRecord,
    "version": VersionRecord, "file": FileRecord, "chat": ChatRecord, "message": MessageRecord,
    "chat_v1": ChatRecordV1, "message_v1": MessageRecordV1}
