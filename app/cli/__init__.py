"""The ``cairn`` command line: the core, without a window.

Exit codes: 0 success, 1 a refused operation (its sentence verbatim on stderr), 2 bad usage.
Nothing here imports Qt or the Anthropic SDK: ``cairn workspace list`` must stay instant.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from app import version
from app.base.paths import shown
from app.cli import branches as cli_branches
from app.cli import chat as cli_chat
from app.cli import completion as cli_completion
from app.cli import conversation as cli_conversation
from app.cli import desktop as cli_desktop
from app.cli import history as cli_history
from app.cli import mcp as cli_mcp
from app.cli import search as cli_search
from app.cli import sharing as cli_sharing
from app.cli import workspace as cli_workspace
from app.cli.output import Out, say
from app.errors import CairnError

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

log = logging.getLogger(__name__)


# ===================================================================== parsing


class _Parser(argparse.ArgumentParser):
    """Bad usage is one line on stderr (exit 2): what is wrong, then the command's usage."""

    def error(self, message: str) -> NoReturn:
        usage = " ".join(self.format_usage().split())
        self.exit(2, f"{self.prog}: {shown(message)}{_did_you_mean(message)} ({usage})\n")


class _Version(argparse.Action):
    """--version, looked up only when asked: importlib.metadata costs ~15 ms of every
    command otherwise."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=help or "show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        sys.stdout.write(f"Cairn {version()}\n")
        parser.exit()


def _did_you_mean(message: str) -> str:
    """"; did you mean 'workspace'?" for a mistyped command (argparse's invalid choice)."""
    import difflib
    import re

    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if found is None:
        return ""
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


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
    parser.add_argument("--version", action=_Version)
    parser.add_argument("--data-dir", type=_folder, help="use this data folder (or set CAIRN_DATA_DIR)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def json_flag(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
        p.add_argument("--json", action="store_true", help="print JSON")
        return p

    cli_workspace.add_parsers(commands, json_flag)
    cli_chat.add_parsers(commands, json_flag)
    cli_conversation.add_parsers(commands, json_flag)
    cli_conversation.add_setting_parsers(commands, json_flag)
    cli_sharing.add_parsers(commands, json_flag)
    cli_history.add_parsers(commands, json_flag)
    cli_search.add_parsers(commands, json_flag)
    cli_completion.add_parser(commands)
    cli_desktop.add_parser(commands, json_flag)
    cli_mcp.add_parsers(commands, json_flag)
    return parser


def main(argv: Sequence[str] | None = None, *, stdout: TextIO | None = None,
         stderr: TextIO | None = None) -> int:
    stdout = stdout or sys.stdout
    stderr = stderr or sys.stderr
    parser = build_parser()
    argv, program = cli_mcp.split_program(list(sys.argv[1:] if argv is None else argv))
    try:
        args = parser.parse_args(argv)
        if program:
            if getattr(args, "action", None) != "add" or args.command != "mcp":
                parser.error("-- and a program follow only `cairn mcp add NAME`")
            args.program = program
    except SystemExit as exit_:  # --help, --version (0) or bad usage (2)
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help(stdout)
        return 0
    if args.command == "completion":  # reads no data folder: works before Cairn ever ran
        stdout.write(cli_completion.script(args.shell, parser))
        return 0
    if args.command == "install-desktop":  # the person's desktop, not a data folder
        try:
            return cli_desktop.run(args, Out(stdout, args.json))
        except CairnError as error:
            say(stderr, str(error))
            return 1

    from app.base.logs import setup_logging

    if args.data_dir is not None:
        os.environ["CAIRN_DATA_DIR"] = str(args.data_dir)  # logs follow the data folder
    setup_logging()
    conversation = args.command in (*cli_conversation.COMMANDS, "mcp") or (
        args.command == "workspace" and args.action in ("knowledge-file", "folder-access", "web",
                                                "learn-imported")
    ) or (args.command == "chat" and args.action in cli_branches.TURNS)
    registry: Registry | None = None
    try:
        # Imported here so --help and --version stay instant, and the registry's commands
        # never load the chat engine or the SDK.
        if conversation:
            from app.cairn import Cairn

            cairn = Cairn.open(args.data_dir, background_rebuilds=False)
            registry = cairn.registry
        else:
            from app.store.registry.registry import Registry
            from app.store.registry.state import FirstPaint

            # The registry's commands are short and never wait on a person or the network:
            # what one reads is read as it asks (a page of one workspace's chats; all of them
            # for a change), from one read snapshot kept for the command; the integrity check
            # at once.  (A conversation reads every chat now, as before: it may hold the core
            # open for minutes, and a snapshot kept that long would hold back the WAL.)
            registry = Registry.open(args.data_dir, first=FirstPaint(), check_later=False)
        out = Out(stdout, getattr(args, "json", False))
        if args.command == "mcp":
            return cli_mcp.run(cairn, args, out)
        if conversation and args.command == "chat":
            return cli_branches.run_turn(cairn, args, stdout, stderr)
        if conversation and args.command == "workspace":
            from app.cli import workspace_switches

            return workspace_switches.run(cairn, args, out.emit)
        if conversation:
            return cli_conversation.run(cairn, args, out.emit, stdout, stderr)
        if args.command in cli_sharing.COMMANDS:
            return cli_sharing.run(registry, args, out.emit)
        if args.command in cli_history.COMMANDS:
            return cli_history.run(registry, args, out)
        if args.command == "workspace":
            return cli_workspace.run(registry, args, out)
        if args.command == "search":
            return cli_search.run(registry, args, out)
        return cli_chat.run(registry, args, out)
    except CairnError as error:
        say(stderr, str(error))
        return 1
    except BrokenPipeError:  # the reader went away (cairn … | head): not worth a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as error:  # noqa: BLE001 - the last line of defence: never a traceback
        log.exception("cairn %s failed", args.command)
        from app.base import locations

        say(stderr, f"Cairn stopped on an unexpected problem ({type(error).__name__}); the "
                     f"details are in {locations.log_dir() / 'cairn.log'}")
        return 1
    finally:
        if registry is not None:
            try:
                registry.close()
            except Exception:  # noqa: BLE001 - closing must not turn an answer into a traceback
                log.exception("closing the registry failed")


