"""``cairn mcp …``: MCP servers from the command line — list, add, remove, import from Claude
Desktop, turn on or off per workspace, list a server's tools, set a tool's policy — and the
approver ``cairn ask`` uses before a call runs.

Only ``cairn mcp tools`` starts a server (to list its tools); the others never do.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from app.base.paths import shown
from app.cli.output import Commands, JsonFlag, Out, text_of
from app.errors import Refused

if TYPE_CHECKING:
    from app.cairn import Cairn
    from app.store.mcp import ServerConfig
    from app.tools import ApprovalRequest, Approver
    from app.tools.mcp_client import ServerTool

_POLICY_OF = {"allow": "allow", "ask": "ask", "deny": "off"}  # the command → the policy


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"'{shown(text[:60])}' is not KEY=VALUE")
    return key, value


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    mcp = commands.add_parser("mcp", help="MCP servers: the tools Claude may use in a workspace")
    cmds = mcp.add_subparsers(dest="action", metavar="ACTION", required=True)
    json_flag(cmds.add_parser("list", help="every server, and where it is on"))
    p = json_flag(cmds.add_parser(
        "add", help="add a server: NAME -- COMMAND [ARG]... or NAME --url URL",
        description="Add a server that Cairn runs (`cairn mcp add time -- uvx mcp-server-time`)"
                    " or one at a URL (`cairn mcp add docs --url https://…/mcp`). It is off in"
                    " every workspace until `cairn mcp on`."))
    p.add_argument("name", metavar="NAME")
    p.add_argument("--url", metavar="URL", help="a server over streamable HTTP")
    p.add_argument("--env", metavar="KEY=VALUE", type=_pair, action="append", default=[],
                   help="an environment variable for the program (kept in the keychain)")
    p.add_argument("--header", metavar="K=V", type=_pair, action="append", default=[],
                   help="an HTTP header (kept in the keychain)")
    p.set_defaults(program=[])  # what follows -- (split off before parsing: split_program)
    p = json_flag(cmds.add_parser("remove", help="remove a server (and its secrets)"))
    p.add_argument("name", metavar="NAME")
    p = json_flag(cmds.add_parser(
        "import-claude-desktop", help="add the servers of Claude Desktop's configuration",
        description="Read claude_desktop_config.json where Claude Desktop keeps it (or --file)"
                    " and add each server whose name is free, off in every workspace."))
    p.add_argument("--file", metavar="PATH", type=Path)
    for action, text in (("on", "let chats in a workspace use a server"),
                         ("off", "stop chats in a workspace using a server")):
        p = json_flag(cmds.add_parser(action, help=text))
        p.add_argument("name", metavar="NAME")
        p.add_argument("--workspace", metavar="ID", required=True)
    p = json_flag(cmds.add_parser("tools", help="start a server and list its tools"))
    p.add_argument("name", metavar="NAME")
    for action, text in (("allow", "run a tool without asking, in a workspace"),
                         ("ask", "ask before each call of a tool (the default)"),
                         ("deny", "never offer a tool to Claude, in a workspace")):
        p = json_flag(cmds.add_parser(action, help=text))
        p.add_argument("name", metavar="NAME")
        p.add_argument("tool", metavar="TOOL")
        p.add_argument("--workspace", metavar="ID", required=True)


def split_program(argv: list[str]) -> tuple[list[str], list[str]]:
    """``cairn mcp add NAME [OPTIONS] -- COMMAND [ARG]...``: what follows ``--`` is the
    program's, even what looks like an option (``-y``, ``--local-timezone``), so it is taken
    off before argparse sees it."""
    if len(argv) >= 2 and "--" in argv:
        at = argv.index("--")
        if "mcp" in argv[:at] and "add" in argv[:at]:
            return argv[:at], argv[at + 1:]
    return argv, []


def run(cairn: Cairn, args: argparse.Namespace, out: Out) -> int:
    action, store = args.action, cairn.mcp
    if action == "list":
        listed = [_listed(cairn, c) for c in store.servers()]
        out.emit(listed, lambda: "\n".join(_line(s) for s in listed) or "No MCP servers.")
        return 0
    if action == "add":
        config = store.add(_config(args))
        out.emit(_listed(cairn, config),
                 lambda: f"Added {shown(config.name)}; it is off until `cairn mcp on "
                         f"{shown(config.name)} --workspace ID`.")
        return 0
    if action == "remove":
        store.remove(args.name)
        out.emit({"removed": args.name}, lambda: f"Removed {shown(args.name)}.")
        return 0
    if action == "import-claude-desktop":
        from app.store.mcp import claude_desktop_file, read_claude_desktop

        path = args.file or claude_desktop_file()
        added, kept = store.import_servers(read_claude_desktop(path))
        out.emit({"file": str(path), "added": added, "kept": kept}, lambda: "\n".join(
            [f"Added {shown(n)} (off in every workspace)." for n in added]
            + [f"Kept {shown(n)} as it was: a server of that name exists." for n in kept])
            or "Claude Desktop's file names no servers.")
        return 0
    if action in ("on", "off"):
        ws = cairn.registry.get_workspace(args.workspace, verb=f"turn {action} an MCP server in")
        (store.turn_on if action == "on" else store.turn_off)(args.name, ws.id)
        out.emit({"server": args.name, "workspace": ws.id, "on": action == "on"},
                 lambda: f"{shown(args.name)} is {action} in {shown(ws.title)}.")
        return 0
    if action == "tools":
        return _tools(cairn, args, out)
    ws = cairn.registry.get_workspace(args.workspace, verb="set a tool's policy in")
    policy = _POLICY_OF[action]
    store.set_policy(args.name, args.tool, ws.id, policy)
    out.emit({"server": args.name, "tool": args.tool, "workspace": ws.id, "policy": policy},
             lambda: f"{shown(args.name)}.{shown(args.tool)} in {shown(ws.title)}: {policy}.")
    return 0


def _config(args: argparse.Namespace) -> ServerConfig:
    from app.store.mcp import ServerConfig

    program = list(args.program)
    if args.url and program:
        raise Refused(f"cannot add the MCP server '{shown(args.name)}': give either a command "
                      "to run or a URL, not both")
    if not args.url and not program:
        raise Refused(f"cannot add the MCP server '{shown(args.name)}': give the program after "
                      "--, e.g. cairn mcp add time -- uvx mcp-server-time")
    return ServerConfig(args.name, command=program[0] if program else None,
                        args=tuple(program[1:]), env=dict(args.env), url=args.url,
                        headers=dict(args.header))


def _listed(cairn: Cairn, config: ServerConfig) -> dict[str, Any]:
    return {"name": config.name, "transport": config.transport, "imported": config.imported,
            "config": config.to_json(), "workspaces": cairn.mcp.workspaces_of(config.name)}


def _line(server: dict[str, Any]) -> str:
    entry = server["config"]
    what = entry.get("url") or " ".join([entry.get("command") or "", *entry.get("args", [])])
    where = ", ".join(server["workspaces"]) or "off everywhere"
    return text_of(f"{server['name']}  ({server['transport']})  {what}  — {where}")


def _tools(cairn: Cairn, args: argparse.Namespace, out: Out) -> int:
    from app.tools.mcp_client import ServerProblem

    store = cairn.mcp
    config = store.with_secrets(store.get(args.name, verb="list the tools of the MCP server"))
    try:
        tools = asyncio.run(cairn.mcp_servers.tools(config))
    except ServerProblem as problem:
        raise Refused(str(problem)) from None
    finally:
        cairn.mcp_servers.close()
    listed: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema,
         "annotations": t.annotations} for t in tools]

    def line(tool: ServerTool) -> str:
        hints = [k for k, v in tool.annotations.items() if v is True]  # shown, never trusted
        return text_of(f"{tool.name}  {' '.join(tool.description.split())[:100]}"
                       + (f"  [{', '.join(hints)}]" if hints else ""))

    out.emit(listed, lambda: "\n".join(line(t) for t in tools)
             or f"{shown(config.name)} offers no tools.")
    return 0


# ----------------------------------------------------------------- cairn ask's approver


def approver(allowed: list[str], *, stdin: TextIO | None = None,
             stderr: TextIO | None = None) -> Approver:
    """What ``cairn ask`` asks before a call: a tool named by ``--allow-tool SERVER.TOOL``
    runs; otherwise, on a terminal, the person is asked; without one, the call is declined."""
    from app.tools import ALLOW_CHAT, ALLOW_ONCE, ALWAYS_ALLOW, DENY

    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    answers = {"o": ALLOW_ONCE, "c": ALLOW_CHAT, "a": ALWAYS_ALLOW, "d": DENY, "": DENY}

    async def ask(request: ApprovalRequest) -> str:
        if f"{request.server}.{request.tool}" in allowed:
            return ALLOW_ONCE
        if not (_is_terminal(stdin) and _is_terminal(stderr)):
            return DENY
        from app.tools.mcp import arguments_text, hints_text

        notes = hints_text(request.annotations)
        stderr.write(text_of(
            f"\nClaude wants to use {request.tool} on the MCP server {request.server}"
            + (f" (the server says: {notes})" if notes else "") + ":\n"
            + arguments_text(request.arguments) + "\n")
            + "Allow [o]nce, in this [c]hat, [a]lways in this workspace, or [d]eny? ")
        stderr.flush()
        line = await asyncio.to_thread(stdin.readline)
        return answers.get(line.strip().lower()[:1], DENY)

    return ask


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):
        return False
