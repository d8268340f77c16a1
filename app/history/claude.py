"""Claude.ai's export, read liberally (DESIGN §14, docs/history-import.md).

A chat: ``uuid``, ``name``, ``created_at``, ``updated_at``, ``chat_messages`` (each
``uuid``, ``sender`` human|assistant, ``text``, ``content[]`` of text / thinking / tool_use /
tool_result blocks, ``attachments[]`` with ``extracted_content``, ``files[]`` by name only,
``created_at``; sometimes ``parent_message_uuid`` with the zero root), sometimes
``current_leaf_message_uuid`` and a project (``project_uuid`` or ``project{uuid}``).

Older exports have no ``content[]``: the text carries ``<antThinking>`` and ``<antArtifact>``
inline.  Without parents, the list is in order and an edit or a retry shows as two
consecutive messages from the same sender: they become two versions of one message.
"""

from __future__ import annotations

import re
from typing import Any

from app.history.model import (
    CLAUDE,
    Chat,
    Doc,
    File,
    Memory,
    Project,
    code_fence,
    files_note,
    name_of,
    text_block,
    text_of,
    thinking_block,
    tool_block,
    when,
)
from app.history.tree import Node, build

ROOT = "00000000-0000-4000-8000-000000000000"

_THINKING = re.compile(r"<antThinking>(.*?)</antThinking>", re.S)
_ARTIFACT = re.compile(r"<antArtifact\b([^>]*)>(.*?)</antArtifact>", re.S)
_ATTR = re.compile(r'(\w+)="([^"]*)"')


def is_chats(keys: frozenset[str]) -> bool:
    return "chat_messages" in keys


def is_projects(keys: frozenset[str]) -> bool:
    return "prompt_template" in keys or ("docs" in keys and "uuid" in keys)


def is_memories(keys: frozenset[str]) -> bool:
    return "conversations_memory" in keys or "project_memories" in keys


def chat(value: Any, now: str) -> Chat | None:
    """One chat of conversations.json; None when it is not an object with an id."""
    if not isinstance(value, dict):
        return None
    sid = text_of(value.get("uuid"))
    if not sid:
        return None
    created = when(value.get("created_at"), now)
    raw = value.get("chat_messages")
    raw = raw if isinstance(raw, list) else []
    threaded = any(isinstance(m, dict) and "parent_message_uuid" in m for m in raw)
    nodes: list[Node] = []
    previous: Node | None = None
    skipped: list[str] = []
    number = 0
    for item in raw:
        if not isinstance(item, dict):
            continue
        mid = text_of(item.get("uuid")) or f"{sid}#{len(nodes)}"
        role = {"human": "user", "user": "user", "assistant": "assistant"}.get(
            text_of(item.get("sender")))
        if role is None:
            skipped.append("a message from an unknown sender")
            continue
        if threaded:
            parent = text_of(item.get("parent_message_uuid")) or None
            if parent == ROOT:
                parent = None
        elif previous is None:
            parent = None
        elif previous.role == role:
            parent = previous.parent  # an edit or a retry: another version
        else:
            parent = previous.source_id
        blocks, files, number = _content(item, role, number)
        node = Node(mid, parent, role, blocks, when(item.get("created_at"), created),
                    None, files)
        nodes.append(node)
        previous = node
    leaf = text_of(value.get("current_leaf_message_uuid")) or None
    messages, shown, more = build(nodes, leaf)
    project = value.get("project")
    project_id = text_of(value.get("project_uuid")) or (
        text_of(project.get("uuid")) if isinstance(project, dict) else "") or None
    return Chat(CLAUDE, sid, name_of(value.get("name"), "Untitled chat"), created,
                when(value.get("updated_at"), created), project_id, messages, shown,
                skipped + more)


def _content(item: dict[str, Any], role: str, number: int
             ) -> tuple[list[dict[str, Any]], list[File], int]:
    blocks: list[dict[str, Any]] = []
    content = item.get("content")
    if isinstance(content, list) and content:
        for part in content:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                blocks.extend(_text_blocks(text_of(part.get("text")), role))
            elif kind == "thinking" and role == "assistant":
                thought = text_of(part.get("thinking"))
                if thought.strip():
                    blocks.append(thinking_block(thought))
            elif kind == "tool_use" and role == "assistant":
                tool_input = part.get("input")
                body = text_of(tool_input.get("content")) if isinstance(tool_input, dict) \
                    else ""
                if isinstance(tool_input, dict) and part.get("name") == "artifacts" \
                        and body.strip():
                    blocks.append(text_block(_artifact(tool_input, body)))
                else:
                    number += 1
                    blocks.append(tool_block(number, text_of(part.get("name")), tool_input))
            elif kind == "tool_result":
                continue  # what the tool gave back: its call is the quiet line
            elif isinstance(part.get("text"), str) and part["text"].strip():
                blocks.extend(_text_blocks(text_of(part["text"]), role))
    else:
        blocks.extend(_text_blocks(text_of(item.get("text")), role))
    files: list[File] = []
    missing: list[str] = []
    attachments = item.get("attachments")
    for a in attachments if isinstance(attachments, list) else ():
        if not isinstance(a, dict):
            continue
        name = name_of(a.get("file_name"), "attachment.txt")
        extracted = text_of(a.get("extracted_content"))
        if extracted:
            files.append(File(name if "." in name else name + ".txt", "text/plain",
                              extracted.encode("utf-8")))
        else:
            missing.append(name)
    listed = item.get("files")
    for f in listed if isinstance(listed, list) else ():
        if isinstance(f, dict):
            name = name_of(f.get("file_name"), "")
            if name and name not in missing and not any(x.name == name for x in files):
                missing.append(name)
    if missing:
        blocks.append(text_block(files_note(missing)))
    if role == "user" and files and not blocks:
        pass  # the files alone are the message
    return blocks, files, number


def _text_blocks(text: str, role: str) -> list[dict[str, Any]]:
    """A message's text; in a reply of an older export, its inline thinking and artifacts."""
    if role == "assistant" and ("<antThinking>" in text or "<antArtifact" in text):
        thoughts = [t.strip() for t in _THINKING.findall(text) if t.strip()]
        text = _THINKING.sub("", text)
        text = _ARTIFACT.sub(lambda m: _artifact(dict(_ATTR.findall(m.group(1))),
                                                 m.group(2).strip("\n")), text)
        found = [thinking_block("\n\n".join(thoughts))] if thoughts else []
        return found + ([text_block(text.strip())] if text.strip() else [])
    return [text_block(text)] if text.strip() else []


def _artifact(attributes: dict[str, Any], body: str) -> str:
    title = name_of(attributes.get("title"), "")
    kind = text_of(attributes.get("type"))
    language = text_of(attributes.get("language"))
    if not language:
        language = {"application/vnd.ant.code": "", "text/html": "html",
                    "image/svg+xml": "svg", "application/vnd.ant.mermaid": "mermaid",
                    "application/vnd.ant.react": "jsx"}.get(kind, "")
    head = f"**{title}**\n\n" if title else ""
    if kind == "text/markdown":
        return head + body
    return head + code_fence(body, language)


def project(value: Any, now: str) -> Project | None:
    if not isinstance(value, dict):
        return None
    sid = text_of(value.get("uuid"))
    if not sid:
        return None
    docs = []
    raw = value.get("docs")
    for d in raw if isinstance(raw, list) else ():
        if isinstance(d, dict):
            content = text_of(d.get("content"))
            docs.append(Doc(name_of(d.get("filename"), "document.txt"), content))
    return Project(CLAUDE, sid, name_of(value.get("name"), "Imported project"),
                   text_of(value.get("description")), text_of(value.get("prompt_template")),
                   docs, when(value.get("created_at"), now))


def memories(value: Any) -> list[Memory]:
    """memories.json: an object (or a list of them) with ``conversations_memory`` and
    ``project_memories`` {project uuid: markdown}."""
    found: list[Memory] = []
    for entry in value if isinstance(value, list) else [value]:
        if not isinstance(entry, dict):
            continue
        general = text_of(entry.get("conversations_memory")).strip()
        if general:
            found.append(Memory(CLAUDE, "memory:conversations", general))
        per = entry.get("project_memories")
        if isinstance(per, dict):
            for uuid, text in per.items():
                clean = text_of(text).strip()
                if clean:
                    found.append(Memory(CLAUDE, f"memory:project:{uuid}", clean,
                                        project=text_of(uuid)))
    return found
