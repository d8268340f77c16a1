"""Command-line subcommands about conversations: ask, context, files, memory, knowledge.

Kept apart from the registry's commands so that ``cairn workspace list`` never imports the
chat engine (nor, through it, the Anthropic SDK).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.errors import Refused

COMMANDS = ("ask", "context", "files", "memory", "knowledge")

JsonFlag = Callable[[argparse.ArgumentParser], argparse.ArgumentParser]


def add_parsers(commands: Any, json_flag: JsonFlag) -> None:
    p = json_flag(commands.add_parser("ask", help="send a message and stream Claude's reply"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--folder", metavar="PATH", help="start a chat in this folder")
    where.add_argument("--chat", metavar="ID", help="continue this chat")
    p.add_argument("--attach", metavar="FILE", action="append", default=[], type=Path,
                   help="send a file with the message (text, PDF, image); repeatable")
    p.add_argument("message", metavar="MESSAGE")

    p = json_flag(commands.add_parser("context", help="print the system prompt of the next turn"))
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--folder", metavar="PATH")
    where.add_argument("--chat", metavar="ID")

    files = commands.add_parser("files", help="a workspace's knowledge files")
    actions = files.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(actions.add_parser("add", help="upload a file into a workspace"))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", type=Path)
    p.add_argument("--description", metavar="T", default="")
    p = json_flag(actions.add_parser("list", help="the files a chat in this workspace sees"))
    p.add_argument("id", metavar="ID")

    memory = commands.add_parser("memory", help="personal memory and its switch")
    actions = memory.add_subparsers(dest="action", metavar="ACTION", required=True)
    json_flag(actions.add_parser("show", help="print personal memory"))
    p = json_flag(actions.add_parser("set", help="replace personal memory with a file's text"))
    p.add_argument("file", metavar="FILE", type=Path)
    json_flag(actions.add_parser("on", help="send personal memory to the model"))
    json_flag(actions.add_parser("off", help="stop sending personal memory"))

    knowledge = commands.add_parser("knowledge", help="a workspace's knowledge document")
    actions = knowledge.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(actions.add_parser("show", help="print the document"))
    p.add_argument("id", metavar="ID")
    p = json_flag(actions.add_parser("set", help="replace the document with a file's text"))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", type=Path)


def run(cairn: Any, args: argparse.Namespace, emit: Callable[[Any, Callable[[], str]], None],
        stdout: Any, stderr: Any) -> int:
    command = args.command
    if command == "ask":
        return _ask(cairn, args, stdout, stderr)
    if command == "context":
        chat = _chat_for(cairn, args, create=False)
        blocks = cairn.engine.system(chat, "")
        emit(blocks, lambda: "\n\n".join(b["text"] for b in blocks))
        return 0
    if command == "files":
        ws = cairn.registry.get_workspace(args.id, verb="use the files of")
        if args.action == "add":
            record = cairn.files.add(ws.id, args.file, description=args.description)
            scope = "project" if cairn.registry.parent_of(ws.id) is None else "folder"
            emit(record.to_json(scope=scope), lambda: f"Added {record.id}  {record.name}")
            return 0
        chain = [layer.workspace.id for layer in cairn.engine.chain(_probe_chat(ws.id))]
        listed = [f.to_json(scope="project" if f.workspace_id == chain[0] else "folder")
                  for f in cairn.files.of_workspaces(chain)]
        emit(listed, lambda: "\n".join(
            f"{f['id']}  {f['name']}  ({f['scope']})  {f['description']}".rstrip()
            for f in listed) or "No knowledge files.")
        return 0
    if command == "memory":
        from app.knowledge.store import PERSONAL

        return _document(cairn, PERSONAL, args, emit, label="Personal memory")
    if command == "knowledge":
        ws = cairn.registry.get_workspace(args.id, verb=f"{args.action} the knowledge of")
        return _document(cairn, ws.id, args, emit, label=f"Knowledge of {ws.title}")
    raise AssertionError(command)


def _document(cairn: Any, owner: str, args: argparse.Namespace,
              emit: Callable[[Any, Callable[[], str]], None], *, label: str) -> int:
    if args.action in ("on", "off"):
        cairn.settings.set("memory.enabled", args.action == "on")
        emit({"memory": args.action}, lambda: f"Personal memory is {args.action}.")
        return 0
    if args.action == "set":
        try:
            text = args.file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise Refused(f"cannot read '{args.file}': {error}") from error
        doc = cairn.knowledge.save(owner, text, source="user")
    else:
        doc = cairn.knowledge.get(owner)
    data = {"owner": owner, "text": doc.text, "version": doc.version,
            "updated_at": doc.updated_at, "source": doc.source}
    if owner == "personal":
        data["enabled"] = cairn.settings.get("memory.enabled")
    emit(data, lambda: doc.text if args.action == "show" else f"{label} saved (version {doc.version}).")
    return 0


def _probe_chat(ws_id: str | None) -> Any:
    """A chat header that is not stored: what a new chat in *ws_id* would be."""
    from app.records import Chat

    return Chat("ch_unsaved", "", None, ws_id, "", "")


def _chat_for(cairn: Any, args: argparse.Namespace, *, create: bool) -> Any:
    if args.chat:
        return cairn.registry.get_chat(args.chat)
    folder = os.path.abspath(args.folder)  # typed in a shell: relative to here
    if create:
        return cairn.registry.new_chat(folder=folder)
    home = cairn.registry.workspace_for_folder(folder)
    return _probe_chat(home.id if home else None)


def _ask(cairn: Any, args: argparse.Namespace, stdout: Any, stderr: Any) -> int:
    chat = _chat_for(cairn, args, create=True)
    as_json = getattr(args, "json", False)

    def stream(text: str) -> None:
        if not as_json:
            stdout.write(text)
            stdout.flush()

    result = asyncio.run(cairn.engine.send(chat.id, args.message, attachments=args.attach,
                                           on_text=stream))
    if not as_json:
        if result.text and not result.text.endswith("\n"):
            stdout.write("\n")
    if not as_json and not result.error:
        u = result.usage
        price = f" · ${result.cost_usd:.4f}" if result.cost_usd is not None else ""
        # On stderr, so that stdout holds the reply alone (cairn ask … > answer.md).
        stderr.write(f"{u.input:,} in · {u.cache_write:,} cache write · {u.cache_read:,} cached"
                     f" · {u.output:,} out{price} · {chat.id}\n")
    summary = {"chat": chat.id, "status": result.status, "error": result.error,
               "model": result.model, "usage": result.usage.to_json(),
               "cost_usd": result.cost_usd, "text": result.text}
    if as_json:
        stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    if result.error:
        stderr.write(result.error + "\n")
        return 1
    if result.status == "stopped":
        stderr.write("Stopped; the partial reply is kept.\n")
        return 1
    return 0
