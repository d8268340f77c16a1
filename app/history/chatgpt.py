"""ChatGPT's export, read liberally (DESIGN §14, docs/history-import.md).

A chat: ``title``, ``create_time`` / ``update_time`` (epoch seconds), ``mapping`` {node id:
{``id``, ``message`` or null, ``parent``, ``children``}}, ``current_node`` (the shown leaf),
``id`` or ``conversation_id``.  A message: ``author.role`` (user, assistant, system, tool),
``content.content_type`` (text, multimodal_text with image asset pointers, code,
execution_output, thoughts, reasoning_recap, …), ``recipient`` (a tool's name when the reply
calls one), ``metadata`` (``is_visually_hidden_from_conversation``, ``model_slug``,
``user_context_message_data`` = the custom instructions).

System messages and hidden ones are left out (their children move up); a tool's output and
the reply around it join into one reply where the tree does not branch; images come from the
zip by their asset id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.history.model import (
    CHATGPT,
    Chat,
    File,
    Memory,
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

# An image asset's id -> (its file name, media type, bytes), or None when the zip lacks it.
Images = Callable[[str], "File | None"]


def is_chats(keys: frozenset[str]) -> bool:
    return "mapping" in keys


def chat(value: Any, now: str, images: Images, instructions: list[Memory]) -> Chat | None:
    """One chat of conversations.json; custom instructions found in it are added to
    *instructions* (once each)."""
    if not isinstance(value, dict):
        return None
    sid = text_of(value.get("conversation_id")) or text_of(value.get("id"))
    mapping = value.get("mapping")
    if not sid or not isinstance(mapping, dict):
        return None
    created = when(value.get("create_time"), now)
    nodes: list[Node] = []
    number = 0
    for key, node in mapping.items():
        if not isinstance(node, dict):
            continue
        nid = text_of(node.get("id")) or text_of(key)
        parent = text_of(node.get("parent")) or None
        message = node.get("message")
        role: str | None = None
        blocks: list[dict[str, Any]] = []
        files: list[File] = []
        model = None
        at = created
        if isinstance(message, dict):
            role, blocks, files, number = _message(message, images, instructions, number)
            meta = message.get("metadata")
            if isinstance(meta, dict):
                model = text_of(meta.get("model_slug"))[:100] or None
            at = when(message.get("create_time"), created)
        nodes.append(Node(nid, parent, role, blocks, at, model if role == "assistant" else None,
                          files))
    leaf = text_of(value.get("current_node")) or None
    messages, shown, skipped = build(nodes, leaf)
    project = value.get("project")
    project_id = text_of(project.get("id")) if isinstance(project, dict) else ""
    return Chat(CHATGPT, sid, name_of(value.get("title"), "Untitled chat"), created,
                when(value.get("update_time"), created), project_id or None, messages, shown,
                skipped)


def _message(message: dict[str, Any], images: Images, instructions: list[Memory],
             number: int) -> tuple[str | None, list[dict[str, Any]], list[File], int]:
    author = message.get("author")
    role = text_of(author.get("role")) if isinstance(author, dict) else ""
    meta = message.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    content = message.get("content")
    content = content if isinstance(content, dict) else {}
    kind = text_of(content.get("content_type"))
    _instructions(meta, content, kind, instructions)
    if role == "system" or kind in ("user_editable_context", "model_editable_context"):
        return None, [], [], number
    if meta.get("is_visually_hidden_from_conversation") is True:
        return None, [], [], number
    recipient = text_of(message.get("recipient")) or "all"
    blocks: list[dict[str, Any]] = []
    files: list[File] = []
    missing: list[str] = []
    if role == "user":
        blocks, files, missing = _parts(content, images)
        side = "user"
    elif role in ("assistant", "tool"):
        side = "assistant"
        if kind == "code":
            code = text_of(content.get("text"))
            if recipient in ("all", "python") or role == "tool":
                if code.strip():
                    language = text_of(content.get("language"))
                    if language in ("", "unknown"):
                        language = "python" if recipient == "python" else ""
                    blocks.append(text_block(code_fence(code, language)))
            else:
                number += 1
                blocks.append(tool_block(number, recipient, {"query": code}))
        elif kind == "execution_output":
            output = text_of(content.get("text"))
            if output.strip():
                blocks.append(text_block(code_fence(output)))
        elif kind == "thoughts":
            raw = content.get("thoughts")
            parts = []
            for t in raw if isinstance(raw, list) else ():
                if isinstance(t, dict):
                    summary = text_of(t.get("summary")).strip()
                    body = text_of(t.get("content")).strip()
                    parts.append("\n\n".join(p for p in (summary and f"**{summary}**", body)
                                             if p))
            thought = "\n\n".join(p for p in parts if p)
            if thought:
                blocks.append(thinking_block(thought))
        elif kind == "reasoning_recap":
            recap = text_of(content.get("content")).strip()
            if recap:
                blocks.append(thinking_block(recap))
        elif role == "tool" and kind not in ("text", "multimodal_text"):
            number += 1  # a tool's own display (a web page, a quote): a quiet line
            name = text_of(author.get("name")) if isinstance(author, dict) else ""
            blocks.append(tool_block(number, name or kind or "tool", {}))
        else:
            blocks, files, missing = _parts(content, images)
            if role == "tool" and blocks and not files:
                # A tool's text output (a browser's summary): quiet, not the reply's words.
                number += 1
                name = text_of(author.get("name")) if isinstance(author, dict) else ""
                blocks = [tool_block(number, name or "tool", {})]
    else:
        return None, [], [], number
    if missing:
        blocks.append(text_block(files_note(missing)))
    return side, blocks, files, number


def _parts(content: dict[str, Any], images: Images
           ) -> tuple[list[dict[str, Any]], list[File], list[str]]:
    texts: list[str] = []
    files: list[File] = []
    missing: list[str] = []
    parts = content.get("parts")
    if not isinstance(parts, list):
        text = text_of(content.get("text"))
        parts = [text] if text else []
    for part in parts:
        if isinstance(part, str):
            if part.strip():
                texts.append(text_of(part))
        elif isinstance(part, dict):
            kind = part.get("content_type")
            if kind == "image_asset_pointer":
                pointer = text_of(part.get("asset_pointer"))
                asset = pointer.split("://", 1)[-1]
                found = images(asset) if asset else None
                if found is not None:
                    files.append(found)
                else:
                    missing.append(asset or "image")
            elif kind == "audio_transcription":
                heard = text_of(part.get("text"))
                if heard.strip():
                    texts.append(heard)
            elif isinstance(part.get("text"), str) and part["text"].strip():
                texts.append(text_of(part["text"]))
    text = "\n".join(texts)
    return ([text_block(text)] if text.strip() else []), files, missing


def _instructions(meta: dict[str, Any], content: dict[str, Any], kind: str,
                  found: list[Memory]) -> None:
    """Custom instructions, wherever this export keeps them: once each."""
    texts: list[tuple[str, str]] = []
    data = meta.get("user_context_message_data")
    if isinstance(data, dict):
        texts += [("About me", text_of(data.get("about_user_message"))),
                  ("How ChatGPT should respond", text_of(data.get("about_model_message")))]
    if kind == "user_editable_context":
        texts += [("About me", text_of(content.get("user_profile"))),
                  ("How ChatGPT should respond", text_of(content.get("user_instructions")))]
    for label, text in texts:
        clean = text.strip()
        if clean and not any(m.text == f"{label}: {clean}" for m in found):
            found.append(Memory(CHATGPT, f"instructions:{label}:{clean[:80]}",
                                f"{label}: {clean}"))
