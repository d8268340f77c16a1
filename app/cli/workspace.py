"""``cairn workspace …``: add, list, show and change workspaces (the registry only: no chat
engine, no SDK, so ``cairn workspace list`` answers at once)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.conversation import whole_number
from app.cli.output import Commands, JsonFlag, Out, check_title, text_of
from app.records import BUILD_STATUSES, Workspace

if TYPE_CHECKING:
    from app.store.registry.registry import Registry


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
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
    # What a workspace may do in its own folder (app/cli/workspace_switches.py runs them).
    p = json_flag(ws_cmds.add_parser("knowledge-file", help="keep the knowledge document as "
                                                            "CAIRN.md in the folder (on|off)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("switch", choices=("on", "off", "status"))
    p.add_argument("--keep", choices=("document", "file"),
                   help="when the folder has its own CAIRN.md: which one to keep")
    p = json_flag(ws_cmds.add_parser("folder-access", help="let Claude list and read the "
                                                           "project's folder (on|off)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("switch", choices=("on", "off", "status"))
    p.add_argument("--allow", metavar="PATH", action="append", default=None,
                   help="a hidden or secret-looking path Claude may read (repeatable)")
    # Claude searching and reading the web in the workspace's chats
    # (app/cli/workspace_switches.py runs it, with the window's use case).
    p = json_flag(ws_cmds.add_parser("web", help="let Claude search and read the web in this "
                                                 "workspace's chats (on|off; $10 per 1,000 "
                                                 "searches)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("switch", choices=("on", "off", "status"))
    p.add_argument("--max-uses", metavar="N", type=whole_number, default=None,
                   help="searches one reply may make (1-50, default 5)")
    p.add_argument("--allow", metavar="DOMAIN", action="append", default=None,
                   help="only this site (repeatable; replaces the blocked ones)")
    p.add_argument("--block", metavar="DOMAIN", action="append", default=None,
                   help="never this site (repeatable; replaces the allowed ones)")
    # Issue 40: learning from chats imported from Claude.ai or ChatGPT (app/cli/workspace_switches.py
    # runs it, with the window's use case): the estimate first, the run only with --yes.
    p = json_flag(ws_cmds.add_parser("learn-imported", help="learn from this workspace's "
                                                            "imported chats (says the cost "
                                                            "first; runs with --yes)"))
    p.add_argument("id", metavar="ID")
    p.add_argument("--yes", action="store_true", help="run it (after the estimate)")
    p = json_flag(ws_cmds.add_parser("restore", help="bring a recently removed workspace back"))
    p.add_argument("id", metavar="ID")
    p.add_argument("--into", metavar="PATH", default=None,
                   help="restore it into another folder (its own moved or is gone)")


def run(registry: Registry, args: argparse.Namespace, out: Out) -> int:
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
        named = registry.get_workspace(args.id, verb="rename").title
        check_title(args.title, f"cannot rename workspace '{shown(named)}'")
        ws = registry.rename_workspace(args.id, args.title)
    elif action == "set":
        # The texts as the window's editor saves them (with nothing expected: on top).
        saved = registry.save_description_and_instructions(
            args.id, description=args.description, instructions=args.instructions)
        assert saved is not None  # nothing expected: never refused for a moved text
        ws = saved
        if args.status is not None:
            ws = registry.update_workspace(args.id, build_status=args.status)
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
        removed_list = registry.removed_workspaces()

        def listing() -> str:
            if not removed_list:
                return "No recently removed workspaces."
            return "\n".join(
                f"{r.id}  {shown(r.title)}  {shown(r.path)}"
                f"{'  (folder missing: restore with --into PATH)' if r.folder_missing else ''}"
                f"  removed {r.removed_at[:10]}, purged after {r.purge_after[:10]}"
                for r in removed_list)

        out.emit([r.to_json() for r in removed_list], listing)
        return 0
    elif action == "restore":
        ws = registry.restore_workspace(args.id, into=args.into)
    else:  # pragma: no cover - argparse guards the choices
        raise AssertionError(action)
    parent = registry.parent_of(ws.id)
    note = ""
    if action == "add" and not created:
        note = "Already a workspace (unchanged):\n"
    out.emit(registry.workspace_json(ws), lambda: note + _workspace_block(ws, parent))
    return 0


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
