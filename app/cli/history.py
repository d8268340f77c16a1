"""``cairn import-history PATH``: a Claude.ai or ChatGPT export (a zip or its folder) into
Cairn, through the same use case as the window (``app.history.importing``).

Ctrl+C stops it between chats: what was imported stays, and the report says so.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.base.paths import shown
from app.cli.output import Commands, JsonFlag, Out, text_of
from app.commands import HISTORY as COMMANDS  # noqa: F401 - the names, in one place

if TYPE_CHECKING:
    from app.store.registry.registry import Registry


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    p = json_flag(commands.add_parser(
        "import-history", help="import chats and projects from a Claude.ai or ChatGPT export",
        description="Import PATH, the data export of Claude.ai or ChatGPT (the zip, or the "
                    "folder it unpacks to): every chat with its branches, projects as "
                    "workspaces, memories as suggestions. Importing again adds only what is "
                    "new."))
    p.add_argument("path", metavar="PATH", help="the export (relative to the current folder)")
    p.add_argument("--dry-run", action="store_true",
                   help="say what would be imported; write nothing")
    p.add_argument("--folder-for", action="append", default=[], metavar="PROJECT=DIR",
                   help="the folder of a project's workspace (the project by name or id); "
                        "repeat for each project")
    p.add_argument("--into", metavar="DIR",
                   help="where new project folders go (default: <first-use folder>/Imported)")


def _absolute(text: str) -> str:
    return os.path.abspath(os.path.expanduser(text)) if text.strip() else text


def run(registry: Registry, args: argparse.Namespace, out: Out) -> int:
    from app.history.importing import import_history
    from app.store.blobs import BlobStore
    from app.store.files import FileStore

    folders: dict[str, str] = {}
    for item in args.folder_for:
        project, sep, folder = item.partition("=")
        if not sep or not project.strip() or not folder.strip():
            sys.stderr.write(f"cairn import-history: --folder-for takes PROJECT=DIR, not "
                             f"'{shown(item)}'\n")
            return 2
        folders[project.strip()] = _absolute(folder)
    into = _absolute(args.into) if args.into else None
    source = Path(_absolute(args.path)) if args.path.strip() else Path(args.path)
    files = FileStore(registry.db, BlobStore(registry.db.path.parent / "files"),
                      hub=registry.hub)
    stop = threading.Event()
    previous: Any = None
    shown_at = [0.0]

    def progress(p: Any) -> None:  # on a terminal: a line that counts, a few times a second
        import time

        now = time.monotonic()
        if now - shown_at[0] >= 0.25 or p.chats == p.total:
            shown_at[0] = now
            sys.stderr.write(f"\rReading chat {p.chats:,} of {p.total:,}…")
            sys.stderr.flush()

    tell = progress if sys.stderr.isatty() and not out.as_json else None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        report = import_history(registry, files, source, folders=folders, into=into,
                                dry_run=args.dry_run, stop=stop, progress=tell)
    finally:
        if tell is not None:
            sys.stderr.write("\r\033[K")
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    out.emit(report.to_json(), lambda: "\n".join(text_of(line) for line in report.lines()))
    return 0
