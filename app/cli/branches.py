"""``cairn chat versions|switch|fork|retry|edit``: the branches of a chat (DESIGN §13).

``versions``, ``switch`` and ``fork`` need the registry and the stored messages only (no
engine, no SDK); ``retry`` and ``edit`` stream a reply as ``cairn ask`` does, then run the
rebuild (a command line has no idle time to wait for).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING, Any, TextIO

from app.base.paths import shown
from app.cli.output import Out, text_of

if TYPE_CHECKING:
    from app.cairn import Cairn
    from app.store.messages import Message
    from app.store.registry.registry import Registry

# The actions that start a turn: they open the whole core (the engine, the SDK).
TURNS = ("retry", "edit")


def add_parsers(chat_cmds: Any, json_flag: Any, number: Any) -> None:
    p = json_flag(chat_cmds.add_parser(
        "versions", help="the versions of a message (it and its siblings)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("message", metavar="MESSAGE_ID", type=number)
    p = json_flag(chat_cmds.add_parser(
        "switch", help="show the branch of a version: the newest message below it"))
    p.add_argument("id", metavar="ID")
    p.add_argument("message", metavar="MESSAGE_ID", type=number)
    p = json_flag(chat_cmds.add_parser(
        "fork", help="a new chat holding the shown path up to a message"))
    p.add_argument("id", metavar="ID")
    p.add_argument("message", metavar="MESSAGE_ID", type=number)
    p = json_flag(chat_cmds.add_parser(
        "retry", help="stream a new version of the last reply (or of reply MESSAGE_ID)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("message", metavar="MESSAGE_ID", type=number, nargs="?")
    p = json_flag(chat_cmds.add_parser(
        "edit", help="add a version of one of your messages and stream its reply"))
    p.add_argument("id", metavar="ID")
    p.add_argument("message", metavar="MESSAGE_ID", type=number)
    p.add_argument("text", metavar="TEXT", help="the new text ('-' reads standard input)")


def run(registry: Registry, args: argparse.Namespace, out: Out) -> int:
    """versions, switch, fork."""
    from app.store.messages import ChatStore

    chats = ChatStore(registry.db)
    if args.action == "versions":
        chat = registry.get_chat(args.id, verb="list the versions in")
        found = chats.versions(chat.id, args.message)
        listed = [{**_line(m), "shown": chats.on_path(chat.id, m.id)} for m in found]
        out.emit(listed, lambda: "\n".join(
            f"{'*' if d['shown'] else ' '} {d['version']}/{d['versions']}  #{d['id']}  "
            f"{d['role']:<9} {d['status']:<8} {d['created_at']}  {text_of(_head(d['text']))}"
            for d in listed))
        return 0
    if args.action == "switch":
        chat = registry.get_chat(args.id, verb="switch versions in")
        leaf = chats.switch(chat.id, args.message)
        chosen = next(m for m in chats.versions(chat.id, args.message) if m.id == args.message)
        data = {"chat": chat.id, "message": args.message, "leaf": leaf,
                "version": chosen.version, "versions": chosen.versions}
        out.emit(data, lambda: f"{chat.id} shows version {chosen.version} of "
                               f"{chosen.versions} of message {args.message}; its branch "
                               f"ends at message {leaf}.")
        return 0
    if args.action == "fork":
        from app.store.registry.fork import fork_chat

        made = fork_chat(registry, args.id, args.message)
        count = chats.message_count(made.id)
        data = {**made.to_json(), "forked_from": {"chat": args.id, "message": args.message},
                "messages": count}
        out.emit(data, lambda: "\n".join([
            shown(made.title), f"  id         {made.id}",
            f"  workspace  {made.workspace_id or 'Ungrouped'}",
            f"  messages   {count} (copied from {args.id} up to message {args.message})"]))
        return 0
    raise AssertionError(args.action)  # pragma: no cover


def run_turn(cairn: Cairn, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """retry and edit: the reply streams to stdout (escaped), the usage line and any failure
    to stderr; --json prints one summary instead."""
    from app.cli.conversation import _rebuild_json, _report_rebuild, _stop_on_sigterm
    from app.llm.prices import usage_line

    as_json = getattr(args, "json", False)
    text = None
    if args.action == "edit":
        from app.cli import stdin

        text = stdin.message() if args.text == stdin.STDIN else str(args.text)
    chat = cairn.registry.get_chat(args.id, verb="retry in" if text is None
                                   else "edit a message in")

    def stream(delta: str) -> None:
        if not as_json:
            stdout.write(text_of(delta))
            stdout.flush()

    async def turn_then_rebuild() -> Any:
        _stop_on_sigterm()
        if text is None:
            turn = await cairn.engine.retry(chat.id, args.message)
        else:
            turn = await cairn.engine.edit_and_resend(chat.id, args.message, text)
        result = await cairn.engine.follow(turn, on_text=stream)
        return result, await cairn.rebuilder.rebuild(chat.id)

    try:
        result, rebuilt = asyncio.run(turn_then_rebuild())
    except (KeyboardInterrupt, asyncio.CancelledError) as stopped:
        stderr.write("\nStopped; the partial reply is kept.\n")
        return 130 if isinstance(stopped, KeyboardInterrupt) else 143
    finally:
        cairn.stop_mcp_servers()
    path = cairn.chats.messages(chat.id)
    mine = [m for m in path if m.id in result.message_ids]
    first = mine[0] if mine else None
    reply = next((m for m in mine if m.role == "assistant"), None)
    summary = {"chat": chat.id, "status": result.status, "error": result.error,
               "model": result.model, "usage": result.usage.to_json(),
               "cost_usd": result.cost_usd, "text": result.text,
               "message_ids": list(result.message_ids),
               "version": first.version if first else None,
               "versions": first.versions if first else None,
               "reply": reply.id if reply else None,
               "knowledge": _rebuild_json(rebuilt)}
    if as_json:
        stdout.write(json.dumps(summary, ensure_ascii=False, indent=2) + "\n")
    else:
        if result.text and not result.text.endswith("\n"):
            stdout.write("\n")
        if not result.error:
            what = "message" if text is not None else "reply"
            where = f"version {first.version} of {first.versions} of the {what}" \
                if first else "a new version"
            stderr.write(f"{usage_line(result.usage, result.cost_usd)} · {where} · "
                         f"{chat.id}\n")
        _report_rebuild(rebuilt, stderr)
    if result.error:
        stderr.write(text_of(result.error) + "\n")
        return 1
    if result.status == "stopped":
        stderr.write("Stopped; the partial reply is kept.\n")
        return 1
    return 0


def path_json(messages: list[Message]) -> list[dict[str, Any]]:
    """The shown path for ``cairn chat show --json``: every message whole, with its place."""
    return [m.to_json() for m in messages]


def _line(m: Message) -> dict[str, Any]:
    return {"id": m.id, "parent": m.parent_id, "version": m.version, "versions": m.versions,
            "role": m.role, "status": m.status, "created_at": m.created_at, "text": m.text}


def _head(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:59] + "…"
