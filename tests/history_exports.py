"""Exports of Claude.ai and ChatGPT built in the shapes their services write (DESIGN §14,
REFERENCE "Export quirks"), for the import's tests and benchmark."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

ZERO = "00000000-0000-4000-8000-000000000000"


def png(seed: int = 0) -> bytes:
    """A real 1×1 PNG (its colour from *seed*)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"\x00" + bytes([seed % 256, 80, 160])
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


# ===================================================================== Claude.ai


def claude_message(uuid: str, sender: str, text: str, at: str, *, parent: str | None = None,
                   content: list[dict[str, Any]] | None | bool = True,
                   attachments: list[dict[str, Any]] | None = None,
                   files: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"uuid": uuid, "text": text, "sender": sender, "created_at": at,
                         "updated_at": at, "attachments": attachments or [],
                         "files": files or []}
    if content is True:
        m["content"] = [{"type": "text", "text": text, "start_timestamp": at,
                         "stop_timestamp": at, "citations": []}]
    elif isinstance(content, list):
        m["content"] = content
    if parent is not None:
        m["parent_message_uuid"] = parent
    return m


def claude_new_chats() -> list[dict[str, Any]]:
    """The newer layout: content[], parent_message_uuid with the zero root, an edit."""
    return [
        {"uuid": "c-branch", "name": "Trip to Lisbon", "created_at": "2025-03-01T10:00:00Z",
         "updated_at": "2025-03-01T10:10:00Z", "account": {"uuid": "acc-1"},
         "current_leaf_message_uuid": "m4b",
         "chat_messages": [
             claude_message("m1", "human", "Plan three days in Lisbon", "2025-03-01T10:00:00Z",
                            parent=ZERO),
             claude_message("m2", "assistant", "", "2025-03-01T10:00:05Z", parent="m1",
                            content=[
                                {"type": "thinking", "thinking": "They want a short plan."},
                                {"type": "tool_use", "name": "web_search",
                                 "input": {"query": "Lisbon trams"}},
                                {"type": "tool_result", "name": "web_search",
                                 "content": [{"type": "text", "text": "tram 28"}]},
                                {"type": "text", "text": "Day one: Alfama and tram 28."}]),
             claude_message("m3", "human", "Make it cheaper", "2025-03-01T10:02:00Z",
                            parent="m2"),
             claude_message("m4a", "assistant", "Skip the tram.", "2025-03-01T10:02:05Z",
                            parent="m3"),
             claude_message("m3b", "human", "Make it slower", "2025-03-01T10:05:00Z",
                            parent="m2"),
             claude_message("m4b", "assistant", "Spend day two in Sintra.",
                            "2025-03-01T10:05:05Z", parent="m3b"),
         ]},
        {"uuid": "c-project", "name": "Brand colours", "created_at": "2025-04-02T09:00:00Z",
         "updated_at": "2025-04-02T09:01:00Z", "project_uuid": "p-acme",
         "chat_messages": [
             claude_message("n1", "human", "What are our colours?", "2025-04-02T09:00:00Z",
                            parent=ZERO, attachments=[
                                {"file_name": "brief.txt", "file_size": 30,
                                 "file_type": "text/plain",
                                 "extracted_content": "Acme brand brief: orange #FF5500"}],
                            files=[{"file_name": "logo.png"}]),
             claude_message("n2", "assistant", "Orange, #FF5500.", "2025-04-02T09:00:09Z",
                            parent="n1"),
         ]},
    ]


def claude_old_chats() -> list[dict[str, Any]]:
    """The older layout: no content[], inline tags, a flat list where an edit is two
    consecutive messages from the person."""
    artifact = ('Here it is.\n<antThinking>A small script is worth an artifact.</antThinking>\n'
                '<antArtifact identifier="hello" type="application/vnd.ant.code" '
                'language="python" title="hello.py">\nprint("hello")\n</antArtifact>\nDone.')
    return [
        {"uuid": "c-old", "name": "Old script chat", "created_at": "2024-01-05T08:00:00Z",
         "updated_at": "2024-01-05T08:03:00Z",
         "chat_messages": [
             claude_message("o1", "human", "Write hello world", "2024-01-05T08:00:00Z",
                            content=None),
             claude_message("o2", "assistant", "Sure, in which language?",
                            "2024-01-05T08:00:03Z", content=None),
             claude_message("o3", "human", "Ruby", "2024-01-05T08:01:00Z", content=None),
             claude_message("o3b", "human", "Python please", "2024-01-05T08:02:00Z",
                            content=None),
             claude_message("o4", "assistant", artifact, "2024-01-05T08:02:05Z",
                            content=None),
         ]},
    ]


def claude_projects() -> list[dict[str, Any]]:
    return [{"uuid": "p-acme", "name": "Acme Inc", "description": "Our client Acme",
             "is_private": True, "is_starter_project": False,
             "prompt_template": "Answer as Acme's brand editor.",
             "created_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-02T00:00:00Z",
             "creator": {"uuid": "acc-1", "full_name": "Ana"},
             "docs": [{"uuid": "d1", "filename": "style-guide.md",
                       "content": "# Style\nUse orange.", "created_at": "2025-01-01T00:00:00Z"}]}]


def claude_memories() -> list[dict[str, Any]]:
    return [{"conversations_memory": "Ana works at Acme and prefers short answers.",
             "project_memories": {"p-acme": "The launch is on 2027-04-15."},
             "account_uuid": "acc-1"}]


def claude_users() -> list[dict[str, Any]]:
    return [{"uuid": "acc-1", "full_name": "Ana", "email_address": "ana@example.com",
             "verified_phone_number": None}]


def write_claude_export(path: Path, *, old: bool = False, batch: bool = False,
                        project_files: bool = False, extra_chats: list[dict[str, Any]] = ()
                        ) -> Path:
    """A Claude.ai export zip: conversations.json (new or old layout), projects.json (or
    projects/<uuid>.json), memories.json, users.json; *batch*: the chats in a batch zip."""
    chats = (claude_old_chats() if old else claude_new_chats()) + list(extra_chats)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        if batch:
            inner = path.with_name(path.stem + "-batch-0001.zip")
            with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as bz:
                bz.writestr("conversations.json", json.dumps(chats))
            zf.write(inner, "batch-0001.zip")
            inner.unlink()
        else:
            zf.writestr("conversations.json", json.dumps(chats))
        if project_files:
            for p in claude_projects():
                zf.writestr(f"projects/{p['uuid']}.json", json.dumps(p))
        else:
            zf.writestr("projects.json", json.dumps(claude_projects()))
        if not old:
            zf.writestr("memories.json", json.dumps(claude_memories()))
        zf.writestr("users.json", json.dumps(claude_users()))
    return path


# ===================================================================== ChatGPT


def _node(nid: str, parent: str | None, children: list[str],
          message: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": nid, "message": message, "parent": parent, "children": children}


def gpt_message(nid: str, role: str, content: dict[str, Any], t: float, *,
                hidden: bool = False, recipient: str = "all", name: str | None = None,
                metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = dict(metadata or {})
    if hidden:
        meta["is_visually_hidden_from_conversation"] = True
    if role == "assistant":
        meta.setdefault("model_slug", "gpt-4o")
    return {"id": nid, "author": {"role": role, "name": name, "metadata": {}},
            "create_time": t, "update_time": None, "content": content, "status":
            "finished_successfully", "end_turn": True, "weight": 1.0, "metadata": meta,
            "recipient": recipient, "channel": None}


def text(*parts: Any) -> dict[str, Any]:
    return {"content_type": "text", "parts": list(parts)}


def gpt_chats() -> list[dict[str, Any]]:
    t = 1_717_000_000.5
    branchy = {
        "root": _node("root", None, ["sys"], None),
        "sys": _node("sys", "root", ["u1"], gpt_message(
            "sys", "system", text(""), t, hidden=True)),
        "u1": _node("u1", "sys", ["a1", "a1b"], gpt_message(
            "u1", "user", {"content_type": "multimodal_text", "parts": [
                {"content_type": "image_asset_pointer",
                 "asset_pointer": "file-service://file-Img123", "size_bytes": 100,
                 "width": 1, "height": 1},
                "What is in this picture?"]}, t + 1)),
        "a1": _node("a1", "u1", [], gpt_message("a1", "assistant", text("A cat."), t + 2)),
        "a1b": _node("a1b", "u1", ["c1"], gpt_message(
            "a1b", "assistant", {"content_type": "thoughts", "thoughts": [
                {"summary": "Looking", "content": "Pixels look orange."}]}, t + 3)),
        "c1": _node("c1", "a1b", ["o1"], gpt_message(
            "c1", "assistant", {"content_type": "code", "language": "unknown",
                                "text": "print(1 + 1)"}, t + 4, recipient="python")),
        "o1": _node("o1", "c1", ["r1"], gpt_message(
            "o1", "tool", {"content_type": "execution_output", "text": "2"}, t + 5,
            name="python")),
        "r1": _node("r1", "o1", ["a2"], gpt_message(
            "r1", "assistant", {"content_type": "reasoning_recap",
                                "content": "Thought for 3 seconds"}, t + 6)),
        "a2": _node("a2", "r1", [], gpt_message(
            "a2", "assistant", text("An orange square, and 1 + 1 is 2."), t + 7)),
    }
    instructions = {
        "root": _node("root", None, ["ci"], None),
        "ci": _node("ci", "root", ["u1"], gpt_message(
            "ci", "system", text(""), t, metadata={
                "is_user_system_message": True, "user_context_message_data": {
                    "about_user_message": "I am a designer in Porto.",
                    "about_model_message": "Be brief."}})),
        "u1": _node("u1", "ci", ["a1"], gpt_message("u1", "user", text("Hello"), t + 10)),
        "a1": _node("a1", "u1", [], gpt_message("a1", "assistant", text("Hi there!"),
                                                   t + 11)),
    }
    return [
        {"title": "Picture question", "create_time": t, "update_time": t + 7,
         "mapping": branchy, "current_node": "a2", "id": "g-1", "conversation_id": "g-1",
         "is_archived": False, "moderation_results": [], "safe_urls": []},
        {"title": "Greeting", "create_time": t + 10, "update_time": t + 11,
         "mapping": instructions, "current_node": "a1", "id": "g-2",
         "conversation_id": "g-2"},
    ]


def write_gpt_export(path: Path, *, chats: list[dict[str, Any]] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", json.dumps(gpt_chats() if chats is None else chats))
        zf.writestr("file-Img123-photo.png", png(7))
        zf.writestr("user.json", json.dumps({"id": "user-1", "email": "ana@example.com"}))
        zf.writestr("chat.html", "<html></html>")
        zf.writestr("message_feedback.json", "[]")
    return path
