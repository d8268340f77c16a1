"""One chat as a Markdown file: Export chat as Markdown in the window and
``cairn chat export ID FILE``.

The file is what a person reads or pastes elsewhere: the title, where the chat was, then who
said what, each reply as Claude wrote it (Markdown already).  Attachments are named, not
embedded; tool calls and their results are the reply's round trips and stay out.  Written
beside the target and moved into place in one step (a crash leaves no half-written file);
an existing file is refused unless *replace*.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.errors import Refused, os_reason
from app.sharing.export import checked_target
from app.store.messages import ChatStore, Message

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

SUFFIX = ".md"


@dataclass(frozen=True, slots=True)
class ChatExported:
    path: str
    messages: int
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "messages": self.messages, "size": self.size}


def chat_markdown(registry: Registry, chats: ChatStore, chat_id: str) -> tuple[str, int]:
    """The chat as Markdown, and how many messages it shows."""
    chat = registry.get_chat(chat_id, verb="export")
    lineage = [w.title for w in registry.lineage(chat.workspace_id)] if chat.workspace_id \
        else []
    lines = [f"# {_one_line(chat.title)}", ""]
    where = " › ".join(lineage) if lineage else "Ungrouped"
    lines += [f"*{_one_line(where)} · started {chat.created_at[:10]}*", ""]
    shown_count = 0
    for message in chats.messages(chat_id):
        part = _message(message)
        if part:
            lines += [part, ""]
            shown_count += 1
    return "\n".join(lines).rstrip("\n") + "\n", shown_count


def export_chat(registry: Registry, chats: ChatStore, chat_id: str, target: Path, *,
                replace: bool = False) -> ChatExported:
    """Write *chat_id* as Markdown to *target* (refused in one sentence: a folder, a file
    already there without *replace*, a folder that does not exist)."""
    text, count = chat_markdown(registry, chats, chat_id)
    refuse = checked_target(target, replace=replace)
    data = text.encode("utf-8")
    try:
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                    suffix=".partial")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            if replace:
                os.replace(temp, target)
            else:
                os.link(temp, target)  # never over a file that appeared meanwhile
                os.unlink(temp)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except FileExistsError:
        raise Refused(f"{refuse}: a file is already there") from None
    except (OSError, ValueError) as error:
        raise Refused(f"{refuse}: {os_reason(error)}") from None
    return ChatExported(path=str(target), messages=count, size=len(data))


def _message(message: Message) -> str:
    names = [str(b.get("name", "a file")) for b in message.content
             if b.get("type") == "attachment"]
    text = message.text.strip()
    if message.role == "user":
        if not text and not names:
            return ""  # tool results: part of the reply's round trip
        attached = "".join(f"\n\n*Attached: {_one_line(n)}*" for n in names)
        quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines())
        return f"**You:**\n\n{quoted}{attached}".rstrip()
    if not text and message.status == "complete":
        return ""  # a round that only called a tool
    said = f"**Claude:**\n\n{text or '(nothing)'}"
    if message.status != "complete":
        said += f"\n\n*({message.status}{': ' + message.error if message.error else ''})*"
    return said


def _one_line(text: str) -> str:
    return " ".join(text.split())
