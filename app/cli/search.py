"""``cairn search QUERY``: find anything in chats, knowledge and files (the search index
only: no model, no network), and ``cairn search --reindex`` to rebuild the index."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.conversation import whole_number
from app.cli.output import Commands, JsonFlag, Out
from app.errors import Refused
from app.store.blobs import BlobStore
from app.store.search import Finder, Hit

if TYPE_CHECKING:
    from app.store.registry.registry import Registry

_KINDS = {"message": "message", "chat": "chat", "knowledge": "knowledge", "file": "file"}


def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    p = json_flag(commands.add_parser(
        "search", help="find anything in chats, knowledge and files",
        description="Words match as prefixes; \"an exact phrase\" in quotes; filters "
                    "workspace:NAME, in:chats|knowledge|files, before:YYYY-MM-DD, "
                    "after:YYYY-MM-DD, is:archived."))
    p.add_argument("query", metavar="QUERY", nargs="*", help="what to find")
    p.add_argument("--workspace", metavar="ID", help="only in this workspace (its id)")
    p.add_argument("--in", dest="in_", choices=("chats", "knowledge", "files"),
                   help="only this kind")
    p.add_argument("--archived", action="store_true", help="archived chats too")
    p.add_argument("--limit", type=whole_number, default=20, metavar="N",
                   help="at most N results (20)")
    p.add_argument("--reindex", action="store_true",
                   help="rebuild the search index from scratch")


def run(registry: Registry, args: argparse.Namespace, out: Out) -> int:
    finder = Finder(registry.db, BlobStore(registry.db.path.parent / "files").read)
    text = " ".join(args.query)
    if args.reindex:
        counts = finder.reindex()
        out.emit({"reindexed": counts}, lambda: (
            f"Rebuilt the search index: {counts['message']:,} messages, {counts['chat']:,} "
            f"chats, {counts['knowledge']:,} knowledge entries, {counts['file']:,} files."))
        if not text:
            return 0
    elif not text.strip():
        raise Refused("cannot search for nothing: type the words to find, e.g. "
                      "cairn search invoice")
    workspaces = None
    if args.workspace is not None:
        registry.get_workspace(args.workspace, verb="search in")  # refused in a sentence when there is none
        workspaces = [args.workspace]
    hits = finder.find(text, in_=args.in_, workspaces=workspaces, archived=args.archived,
                       limit=args.limit)
    out.emit([h.to_json() for h in hits], lambda: _text(hits))
    return 0


def _text(hits: list[Hit]) -> str:
    if not hits:
        return "Nothing found."
    lines = []
    for hit in hits:
        where = {"message": f"chat {hit.chat} message {hit.message}", "chat": f"chat {hit.chat}",
                 "knowledge": f"knowledge {hit.owner} line {(hit.line or 0) + 1}",
                 "file": f"file {hit.file}"}[hit.kind]
        lines.append(f"{hit.kind:<9} {shown(hit.title)}  ({where}, {hit.when[:10]})")
        lines.append("          " + shown(" ".join(hit.marked("[", "]").split())))
    return "\n".join(lines)
