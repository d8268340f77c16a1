"""``cairn chat …``: create, list, show, archive, pin and move chats (the registry and the
stored messages only); versions, switch, fork, retry and edit in :mod:`app.cli.branches`."""

from __future__ import annotations

import argparse
import logging
import os
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.conversation import whole_number
from app.cli.output import Commands, JsonFlag, Out, check_title, text_of
from app.errors import Refused
from app.records import Chat, Workspace

if TYPE_CHECKING:
    from app.store.messages import Message
    from app.store.registry.registry import Registry

log = logging.getLogger(__name__)


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    chat = commands.add_parser("chat", help="create, list, archive and pin chats")
    chat_cmds = chat.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(chat_cmds.add_parser("new", help="start a chat"))
    p.add_argument("--folder", metavar="PATH", help="the folder it runs in (relative to the current folder; recorded even if missing)")
    p.add_argument("--title", metavar="T", default="")
    json_flag(chat_cmds.add_parser("list", help="pinned, by workspace, ungrouped, archived"))
    for action, text in (
        ("show", "one chat and its shown path (each message's id, parent and version)"),
        ("archive", "hide a chat from the grouping"),
        ("unarchive", "return a chat to its place"),
        ("pin", "surface a chat ahead of the others"),
        ("unpin", "stop surfacing a chat"),
    ):
        p = json_flag(chat_cmds.add_parser(action, help=text))
        p.add_argument("id", metavar="ID")
    from app.cli import branches

    branches.add_parsers(chat_cmds, json_flag, whole_number)
    p = json_flag(chat_cmds.add_parser("export", help="write one chat as a Markdown file"))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", help="the Markdown file to write (relative to the "
                   "current folder)")
    p.add_argument("--replace", action="store_true", help="overwrite FILE if it exists")
    p = json_flag(chat_cmds.add_parser(
        "move", help="place a chat in its workspace's order, or move it into another workspace"))
    p.add_argument("id", metavar="ID")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--to", type=whole_number, metavar="N", help="1 is the top")
    where.add_argument("--workspace", metavar="WS",
                       help="move it to the top of workspace WS (an id, or 'ungrouped'): it "
                            "then runs in that folder")


def run(registry: Registry, args: argparse.Namespace, out: Out) -> int:
    action = args.action
    if action == "list":
        listing = registry.chat_listing()
        tree = registry.tree()
        chats_of = {ws.id: chats for ws, chats in listing.workspaces}
        # As the sidebar shows them: each workspace with its folders nested under it, in
        # display order (the JSON lists them depth first, each with its parent).
        nested: list[tuple[int, Workspace, str | None]] = []

        def walk(parent: str | None, depth: int) -> None:
            for ws in tree.get(parent, []):
                nested.append((depth, ws, parent))
                walk(ws.id, depth + 1)

        walk(None, 0)
        data = listing.to_json()
        data["workspaces"] = [
            {"id": ws.id, "title": ws.title, "parent": parent, "depth": depth,
             "chats": [c.to_json() for c in chats_of.get(ws.id, [])]}
            for depth, ws, parent in nested]

        def text() -> str:
            lines: list[str] = []
            if listing.pinned:
                lines.append("PINNED")
                lines += [_chat_line(c) for c in listing.pinned]
            lines.append("WORKSPACES")

            def branch(parent: str | None, depth: int) -> None:
                indent = "  " * (depth + 1)
                for ws in tree.get(parent, []):
                    lines.append(f"{indent}{shown(ws.title)}  ({ws.id})")
                    branch(ws.id, depth + 1)  # its folders first, as the sidebar shows them
                    lines.extend(_chat_line(c, indent + "  ") for c in chats_of.get(ws.id, []))

            branch(None, 0)
            if listing.ungrouped:
                lines.append("UNGROUPED")
                lines += [_chat_line(c) for c in listing.ungrouped]
            if listing.archived:
                lines.append("ARCHIVED")
                lines += [_chat_line(c) for c in listing.archived]
            return "\n".join(lines)

        out.emit(data, text)
        return 0
    chat: Chat
    if action == "new":
        check_title(args.title, "cannot create a chat")
        folder = args.folder
        if folder is not None:
            # One rule with ask and context: a folder typed in a shell is relative to here.
            if not folder.strip():
                raise Refused("cannot create a chat: --folder is empty; give a folder, or leave "
                              "--folder out for an Ungrouped chat")
            folder = os.path.abspath(os.path.expanduser(folder))
        chat = registry.new_chat(folder=folder, title=args.title)
    elif action == "show":
        from app.store.messages import ChatStore

        chat = registry.get_chat(args.id)
        try:  # a row edited by hand must not cost a traceback: say so in one sentence
            chats = ChatStore(registry.db)
            messages = chats.messages(chat.id)
            data = {**chat.to_json(), "leaf": chats.leaf(chat.id),
                    "messages": [m.to_json() for m in messages]}
            page = _chat_block(chat) + _conversation(messages)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as error:
            log.warning("chat %s holds a message that cannot be read: %s", chat.id,
                        type(error).__name__)
            raise Refused(f"cannot show session '{chat.id}': one of its stored messages is "
                          "damaged and cannot be read") from None
        out.emit(data, lambda: page)
        return 0
    elif action == "export":
        return _export(registry, args, out)
    elif action in ("versions", "switch", "fork"):
        from app.cli import branches

        return branches.run(registry, args, out)
    elif action == "archive":
        chat = registry.archive_chat(args.id)
    elif action == "unarchive":
        chat = registry.unarchive_chat(args.id)
    elif action == "pin":
        chat = registry.pin_chat(args.id)
    elif action == "unpin":
        chat = registry.unpin_chat(args.id)
    elif action == "move":
        if args.workspace is not None:
            target = None if args.workspace.lower() == "ungrouped" else args.workspace
            chat = registry.move_chat_to(args.id, target)
        else:
            chat = registry.move_chat(args.id, index=args.to - 1)
    else:  # pragma: no cover
        raise AssertionError(action)
    out.emit(chat.to_json(), lambda: _chat_block(chat))
    return 0


def _export(registry: Registry, args: argparse.Namespace, out: Out) -> int:
    """``cairn chat export ID FILE``: the same use case as the window's Export chat as
    Markdown (``app.sharing.chat_markdown``)."""
    from pathlib import Path

    from app.sharing.chat_markdown import export_chat
    from app.store.messages import ChatStore

    if not args.file.strip():
        raise Refused("cannot export the chat: FILE is empty; give the Markdown file to write")
    target = Path(os.path.abspath(os.path.expanduser(args.file)))
    done = export_chat(registry, ChatStore(registry.db), args.id, target,
                       replace=args.replace)
    out.emit(done.to_json(), lambda: f"Exported {done.messages} message"
             f"{'s' if done.messages != 1 else ''} to {shown(done.path)}")
    return 0


def _chat_line(chat: Chat, indent: str = "  ") -> str:
    marks = ("★ " if chat.pinned else "") + ("[archived] " if chat.archived else "")
    return f"{indent}{chat.id}  {marks}{shown(chat.title)}"


def _chat_block(chat: Chat) -> str:
    return "\n".join([
        shown(chat.title),
        f"  id         {chat.id}",
        f"  folder     {shown(chat.folder) if chat.folder else '-'}",
        f"  workspace  {chat.workspace_id or 'Ungrouped'}",
        f"  pinned     {'yes' if chat.pinned else 'no'}",
        f"  archived   {'yes' if chat.archived else 'no'}",
        f"  created    {chat.created_at}",
    ])


def _conversation(messages: list[Message]) -> str:
    """The conversation as text: who said what, with each reply's state and cost."""
    lines: list[str] = []
    for message in messages:
        names = [shown(str(b.get("name", "a file"))) for b in message.content
                 if b.get("type") == "attachment"]
        text = text_of(message.text.strip())
        if message.role == "user" and not text and not names:
            continue  # tool results: part of the reply's round trip
        if message.role == "assistant" and not text and message.status == "complete":
            continue  # a round that only called a tool
        lines.append("")
        lines.append(f"#{message.id}" + (f" after #{message.parent_id}"
                                         if message.parent_id is not None else "")
                     + f" · version {message.version} of {message.versions}")
        if message.role == "user":
            lines.append("You: " + text + "".join(f"\n  [attached {n}]" for n in names))
            continue
        lines.append("Claude: " + (text or "(nothing)"))
        if message.status != "complete":
            lines.append(f"  [{message.status}"
                         f"{': ' + shown(message.error) if message.error else ''}]")
    return "\n".join(lines)
