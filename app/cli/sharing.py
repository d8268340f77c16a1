"""Command-line subcommands that share a workspace: ``export`` and ``import``.

They need the registry only (never the chat engine nor the SDK), and load the bundle code
only when they run.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.output import Commands, Emit, JsonFlag
from app.commands import SHARING as COMMANDS  # noqa: F401 - the names, in one place

if TYPE_CHECKING:
    from app.store.registry.registry import Registry



def add_parsers(commands: Commands, json_flag: JsonFlag) -> None:
    p = json_flag(commands.add_parser(
        "export", help="write a workspace and its folders to a .cairn bundle",
        description="Write a workspace, its folders, their knowledge and files to FILE (a new "
                    "file). Never the API key, settings, personal memory or a path of this "
                    "machine."))
    p.add_argument("id", metavar="ID")
    p.add_argument("file", metavar="FILE", help="the bundle to write (relative to the current "
                                                "folder; it must not exist yet)")
    p.add_argument("--with-chats", action="store_true", help="include the chats and messages")
    p.add_argument("--with-history", action="store_true",
                   help="include every saved version of the knowledge documents")
    p = json_flag(commands.add_parser(
        "import", help="open a .cairn bundle into a folder as a new workspace",
        description="Open FILE into the folder PATH (fully qualified; made when missing) as a "
                    "new workspace, its folders as nested workspaces."))
    p.add_argument("file", metavar="FILE", help="the bundle (relative to the current folder)")
    p.add_argument("path", metavar="PATH", help="the folder, fully qualified")
    p.add_argument("--keep-cairn-md", choices=("document", "file"), dest="keep_cairn_md",
                   help="when the bundle keeps its knowledge as CAIRN.md and the folder has "
                        "its own: keep the bundle's document or the folder's file")


def run(registry: Registry, args: argparse.Namespace, emit: Emit) -> int:
    from app.sharing import export as sharing
    from app.sharing import importing

    if args.command == "export":
        target = Path(os.path.abspath(os.path.expanduser(args.file))) if args.file.strip() \
            else Path(args.file)
        exported = sharing.export_workspace(registry, args.id, target,
                                            with_chats=args.with_chats,
                                            with_history=args.with_history)
        emit(exported.to_json(), lambda: (
            f"Exported {args.id} to {shown(exported.path)}: {exported.workspaces} workspace"
            f"{'s' if exported.workspaces != 1 else ''} (with folders), {exported.files} "
            f"file{'s' if exported.files != 1 else ''}, {exported.chats} "
            f"chat{'s' if exported.chats != 1 else ''}."))
        return 0
    source = Path(os.path.abspath(os.path.expanduser(args.file))) if args.file.strip() \
        else Path(args.file)
    imported = importing.import_bundle(registry, source, args.path)
    ws = imported.workspace
    asked: list[str] = []
    if imported.knowledge_files:  # the bundle kept its knowledge as CAIRN.md: so does this
        from app.knowledge.cairn_file import CairnFileSync
        from app.store.documents import KnowledgeStore
        from app.store.folder_access import FolderStore

        files = CairnFileSync(registry=registry, knowledge=KnowledgeStore(
            registry.db, hub=registry.hub), folders=FolderStore(registry.db), hub=registry.hub)
        asked = files.adopt(imported.knowledge_files, keep=args.keep_cairn_md)
    data = {"workspace": registry.workspace_json(ws),
            "folders": [registry.workspace_json(f) for f in imported.folders],
            "files": imported.files, "chats": imported.chats,
            "knowledge_file": {"on": [i for i in imported.knowledge_files if i not in asked],
                               "not_turned_on": asked}}
    note = "".join(
        f" {shown(registry.get_workspace(i).path)} has its own CAIRN.md, left as it is: "
        "CAIRN.md stays off there until you say which to keep (`cairn workspace "
        f"knowledge-file {i} on --keep document` or `--keep file`)." for i in asked)
    emit(data, lambda: (
        f"Imported {shown(ws.title)} as {ws.id} at {shown(ws.path)}: "
        f"{len(imported.folders)} folder{'s' if len(imported.folders) != 1 else ''}, "
        f"{imported.files} file{'s' if imported.files != 1 else ''}, "
        f"{imported.chats} chat{'s' if imported.chats != 1 else ''}." + note))
    return 0
