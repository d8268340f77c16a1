"""The ``cairn`` command line: the core, without a window.

Exit codes: 0 success, 1 a refused operation (its sentence verbatim on stderr), 2 bad usage.
Nothing here imports Qt or the Anthropic SDK: ``cairn workspace list`` must stay instant.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from app.errors import CairnError, Refused
from app.titles import visible
from app.paths import shown
from app.records import BUILD_STATUSES, Chat, Workspace

from app import cli_conversation, cli_sharing
from app.cli_conversation import whole_number

from app.commands import SUBCOMMANDS  # noqa: E402, F401 - re-exported: the one list of names

log = logging.getLogger(__name__)


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("cairn")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


# ===================================================================== parsing


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (exit 2): what is wrong, then the command's usage."""

    def error(self, message: str) -> NoReturn:
        usage = " ".join(self.format_usage().split())
        self.exit(2, f"{self.prog}: {shown(message)} ({usage})\n")


def _folder(text: str) -> Path:
    """A folder typed on the command line; empty is refused (it would mean "here")."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the data folder cannot be empty")
    return Path(text)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cairn",
        description="Chat with Claude inside local folders that keep their own knowledge. "
        "Without a command, Cairn opens its window.",
        epilog="the window: `cairn` opens it; `cairn PATH` or `cairn open PATH` opens it with "
               "PATH (relative to the current folder) added and selected, or hands PATH to the "
               "window already running on this data folder; `--exit-after-first-paint` opens "
               "it and quits once it has painted (for timing start-up). Every COMMAND works "
               "without a window: `cairn COMMAND --help` says more.",
    )
    parser.add_argument("--version", action="version", version=f"Cairn {version()}")
    parser.add_argument("--data-dir", type=_folder, help="use this data folder (or set CAIRN_DATA_DIR)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def json_flag(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--json", action="store_true", help="print JSON")
        return p

    ws = commands.add_parser("workspace", help="add, list and change workspaces")
    ws_cmds = ws.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(ws_cmds.add_parser("add", help="register a folder (a fully qualified path)"))
    p.add_argument("path", metavar="PATH")
    p.add_argument("--end", action="store_true", help="place it last instead of first")
    json_flag(ws_cmds.add_parser("list", help="every workspace in display order"))
    p = json_flag(ws_cmds.add_parser("show", help="one workspace"))
    p.add_argument("id", metavar="ID")
    p = json_flag(ws_cmds.add_parser("rename", help="change the title (only the title)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("title", metavar="TITLE")
    p = json_flag(ws_cmds.add_parser("set", help="description, instructions or build status"))
    p.add_argument("id", metavar="ID")
    p.add_argument("--description", metavar="T")
    p.add_argument("--instructions", metavar="T")
    p.add_argument("--status", metavar="S", choices=BUILD_STATUSES)
    p = json_flag(ws_cmds.add_parser("advance", help="move the build status one step"))
    p.add_argument("id", metavar="ID")
    p = json_flag(ws_cmds.add_parser("move", help="re-point a workspace whose folder is gone"))
    p.add_argument("id", metavar="ID")
    p.add_argument("path", metavar="PATH")
    p = json_flag(ws_cmds.add_parser("remove", help="take a workspace off the list (the folder "
                                                    "is untouched; restorable for 30 days)"))
    p.add_argument("id", metavar="ID")
    json_flag(ws_cmds.add_parser("removed", help="the recently removed workspaces"))
    p = json_flag(ws_cmds.add_parser("restore", help="bring a recently removed workspace back"))
    p.add_argument("id", metavar="ID")

    chat = commands.add_parser("chat", help="create, list, archive and pin chats")
    chat_cmds = chat.add_subparsers(dest="action", metavar="ACTION", required=True)
    p = json_flag(chat_cmds.add_parser("new", help="start a chat"))
    p.add_argument("--folder", metavar="PATH", help="the folder it runs in (relative to the current folder; recorded even if missing)")
    p.add_argument("--title", metavar="T", default="")
    json_flag(chat_cmds.add_parser("list", help="pinned, by workspace, ungrouped, archived"))
    for action, text in (
        ("show", "one chat"),
        ("archive", "hide a chat from the grouping"),
        ("unarchive", "return a chat to its place"),
        ("pin", "surface a chat ahead of the others"),
        ("unpin", "stop surfacing a chat"),
    ):
        p = json_flag(chat_cmds.add_parser(action, help=text))
        p.add_argument("id", metavar="ID")
    p = json_flag(chat_cmds.add_parser(
        "move", help="place a chat in its workspace's order, or move it into another workspace"))
    p.add_argument("id", metavar="ID")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--to", type=whole_number, metavar="N", help="1 is the top")
    where.add_argument("--workspace", metavar="WS",
                       help="move it to the top of workspace WS (an id, or 'ungrouped'): it "
                            "then runs in that folder")
    cli_conversation.add_parsers(commands, json_flag)
    cli_conversation.add_setting_parsers(commands, json_flag)
    cli_sharing.add_parsers(commands, json_flag)
    return parser


# ===================================================================== output


class _Out:
    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json

    def emit(self, data: Any, text: Callable[[], str]) -> None:
        if self.as_json:
            self.stream.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        else:
            body = text()
            if body:
                self.stream.write(body + "\n")


def text_of(value: str) -> str:
    """Text for a terminal: line breaks and tabs kept, every other control character (an
    escape sequence, a bidi override) shown escaped, so stored text cannot recolour or
    reorder the terminal."""
    return "\n".join("\t".join(shown(part) for part in line.split("\t"))
                     for line in value.replace("\r\n", "\n").split("\n"))


# Letters that draw nothing (Hangul fillers, the blank Braille pattern).
def _check_title(title: str, refusal: str) -> None:
    if title.strip() and not visible(title):
        raise Refused(f"{refusal}: the title has only invisible characters")


def _workspace_line(ws: Workspace, depth: int = 0) -> str:
    flag = "" if ws.status == "ok" else f"  [{ws.status}]"
    return (f"{'  ' * depth}{ws.id}  {shown(ws.title)}  ({ws.build_status})  {shown(ws.path)}"
            f"{flag}")


def _workspace_block(ws: Workspace, parent: str | None) -> str:
    lines = [
        f"{shown(ws.title)}",
        f"  id            {ws.id}",
        f"  path          {shown(ws.path)}",
        f"  status        {ws.status}",
        f"  parent        {parent or '-'}",
        f"  build status  {ws.build_status}",
        f"  created       {ws.created_at}",
        f"  updated       {ws.updated_at}",
    ]
    if ws.description:
        lines.append(f"  description   {text_of(ws.description)}")
    if ws.instructions:
        lines.append("  instructions  "
                     + text_of(ws.instructions).replace("\n", "\n                "))
    return "\n".join(lines)


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


def _conversation(messages: list[Any]) -> str:
    """The conversation as text: who said what, with each reply's state and cost."""
    lines: list[str] = []
    for message in messages:
        names = [shown(str(b.get("name", "a file"))) for b in message.content
                 if b.get("type") == "attachment"]
        text = text_of(message.text.strip())
        if message.role == "user" and not text and not names:
            continue  # tool results: part of the reply's round trip
        lines.append("")
        if message.role == "user":
            lines.append("You: " + text + "".join(f"\n  [attached {n}]" for n in names))
            continue
        if not text and message.status == "complete":
            continue  # a round that only called a tool
        lines.append("Claude: " + (text or "(nothing)"))
        if message.status != "complete":
            lines.append(f"  [{message.status}"
                         f"{': ' + shown(message.error) if message.error else ''}]")
    return "\n".join(lines)


# ===================================================================== commands


def _run_workspace(registry: Any, args: argparse.Namespace, out: _Out) -> int:
    action = args.action
    if action == "list":
        items = registry.workspaces()

        def tree() -> str:
            inside = registry.tree()
            lines: list[str] = []

            def walk(ws: Workspace, depth: int) -> None:
                lines.append(_workspace_line(ws, depth))
                for child in inside.get(ws.id, []):
                    walk(child, depth + 1)

            for ws in inside.get(None, []):
                walk(ws, 0)
            return "\n".join(lines) or "No workspaces yet. Add one with: cairn workspace add PATH"

        out.emit([registry.workspace_json(ws) for ws in items], tree)
        return 0
    if action == "add":
        ws, created = registry.add_workspace(args.path, at_end=args.end)
    elif action == "show":
        ws = registry.get_workspace(args.id)
    elif action == "rename":
        _check_title(args.title, f"cannot rename workspace '{shown(args.id)}'")
        ws = registry.rename_workspace(args.id, args.title)
    elif action == "set":
        ws = registry.update_workspace(
            args.id, description=args.description, instructions=args.instructions,
            build_status=args.status,
        )
    elif action == "advance":
        ws = registry.advance_workspace(args.id)
    elif action == "move":
        ws = registry.move_to_folder(args.id, args.path)
    elif action == "remove":
        removed = registry.remove_workspace(args.id)
        out.emit(
            {"id": args.id, "removed": removed},
            lambda: f"Removed {args.id}; its folder and chats are untouched, and "
                    f"`cairn workspace restore {args.id}` brings it back within 30 days."
            if removed else f"No workspace '{shown(args.id)}': nothing to remove.",
        )
        return 0
    elif action == "removed":
        items = registry.removed_workspaces()

        def listing() -> str:
            if not items:
                return "No recently removed workspaces."
            return "\n".join(
                f"{r.id}  {shown(r.title)}  {shown(r.path)}  removed {r.removed_at[:10]}, "
                f"purged after {r.purge_after[:10]}" for r in items)

        out.emit([r.to_json() for r in items], listing)
        return 0
    elif action == "restore":
        ws = registry.restore_workspace(args.id)
    else:  # pragma: no cover - argparse guards the choices
        raise AssertionError(action)
    parent = registry.parent_of(ws.id)
    note = ""
    if action == "add" and not created:
        note = "Already a workspace (unchanged):\n"
    out.emit(registry.workspace_json(ws), lambda: note + _workspace_block(ws, parent))
    return 0


def _run_chat(registry: Any, args: argparse.Namespace, out: _Out) -> int:
    action = args.action
    if action == "list":
        listing = registry.chat_listing()

        def text() -> str:
            lines: list[str] = []
            if listing.pinned:
                lines.append("PINNED")
                lines += [_chat_line(c) for c in listing.pinned]
            lines.append("WORKSPACES")
            for ws, chats in listing.workspaces:
                lines.append(f"  {shown(ws.title)}  ({ws.id})")
                lines += [_chat_line(c, "    ") for c in chats]
            if listing.ungrouped:
                lines.append("UNGROUPED")
                lines += [_chat_line(c) for c in listing.ungrouped]
            if listing.archived:
                lines.append("ARCHIVED")
                lines += [_chat_line(c) for c in listing.archived]
            return "\n".join(lines)

        out.emit(listing.to_json(), text)
        return 0
    chat: Chat
    if action == "new":
        _check_title(args.title, "cannot create a chat")
        folder = args.folder
        if folder is not None:
            # One rule with ask and context: a folder typed in a shell is relative to here.
            if not folder.strip():
                raise Refused("cannot create a chat: --folder is empty; give a folder, or leave "
                              "--folder out for an Ungrouped chat")
            folder = os.path.abspath(os.path.expanduser(folder))
        chat = registry.new_chat(folder=folder, title=args.title)
    elif action == "show":
        from app.chats import ChatStore

        chat = registry.get_chat(args.id)
        try:  # a row edited by hand must not cost a traceback: say so in one sentence
            messages = ChatStore(registry.db).messages(chat.id)
            data = {**chat.to_json(), "messages": [m.to_json() for m in messages]}
            page = _chat_block(chat) + _conversation(messages)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError) as error:
            log.warning("chat %s holds a message that cannot be read: %s", chat.id,
                        type(error).__name__)
            raise Refused(f"cannot show session '{chat.id}': one of its stored messages is "
                          "damaged and cannot be read") from None
        out.emit(data, lambda: page)
        return 0
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


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version (0) or bad usage (2)
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help(stdout)
        return 0

    from app.logs import setup_logging

    if args.data_dir is not None:
        os.environ["CAIRN_DATA_DIR"] = str(args.data_dir)  # logs follow the data folder
    setup_logging()
    conversation = args.command in cli_conversation.COMMANDS
    registry: Any = None
    try:
        # Imported here so --help and --version stay instant, and the registry's commands
        # never load the chat engine or the SDK.
        if conversation:
            from app.cairn import Cairn

            cairn = Cairn.open(args.data_dir, background_rebuilds=False)
            registry = cairn.registry
        else:
            from app.registry import Registry

            registry = Registry.open(args.data_dir)
        out = _Out(stdout, getattr(args, "json", False))
        if conversation:
            return cli_conversation.run(cairn, args, out.emit, stdout, stderr)
        if args.command in cli_sharing.COMMANDS:
            return cli_sharing.run(registry, args, out.emit)
        runner = _run_workspace if args.command == "workspace" else _run_chat
        return runner(registry, args, out)
    except CairnError as error:
        _say(stderr, str(error))
        return 1
    except BrokenPipeError:  # the reader went away (cairn … | head): not worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as error:  # noqa: BLE001 - the last line of defence: never a traceback
        log.exception("cairn %s failed", args.command)
        from app import locations

        _say(stderr, f"Cairn stopped on an unexpected problem ({type(error).__name__}); the "
                     f"details are in {locations.log_dir() / 'cairn.log'}")
        return 1
    finally:
        if registry is not None:
            try:
                registry.close()
            except Exception:  # noqa: BLE001 - closing must not turn an answer into a traceback
                log.exception("closing the registry failed")


def _say(stderr: TextIO, sentence: str) -> None:
    """One line on stderr: the sentence verbatim, control characters shown escaped."""
    stderr.write(shown(sentence.rstrip("\n")) + "\n")
