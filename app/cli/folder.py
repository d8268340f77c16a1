"""``cairn workspace knowledge-file|folder-access ID on|off|status``: what a workspace may do
in its own folder (the same use cases as the window's switches)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.output import Emit

if TYPE_CHECKING:
    from app.cairn import Cairn


def run(cairn: Cairn, args: argparse.Namespace, emit: Emit) -> int:
    if args.action == "knowledge-file":
        files = cairn.knowledge_files
        ws = cairn.registry.get_workspace(args.id, verb="change the knowledge file of")
        if args.switch == "status":
            files.sync(ws.id)
            state = files.state(ws.id)
        else:
            state = files.switch(ws.id, args.switch == "on", keep=args.keep)
        said = {"on": f"{shown(ws.title)}'s knowledge is kept as {shown(state.path)}.",
                "off": f"{shown(ws.title)}'s knowledge is no longer written to "
                       f"{shown(state.path)}; the file, if any, is left where it is."}
        emit({"id": ws.id, **state.to_json()},
             lambda: " ".join(filter(None, (said["on" if state.on else "off"],
                                             shown(state.sentence)))))
        return 0
    from app.tools.folder import access, switch_access

    ws = cairn.registry.get_workspace(args.id, verb="change the folder access of")
    if args.switch != "status":
        switch_access(cairn.registry, cairn.folders, ws.id, args.switch == "on",
                      allow=args.allow)
    on, allow = access(cairn.registry, cairn.folders, ws.id)
    emit({"id": ws.id, "folder_access": on, "allow": list(allow)},
         lambda: (f"Claude may list and read the files in {shown(ws.path)} (not hidden files, "
                  "likely secrets or what .gitignore leaves out" +
                  (f", except those allowed: {', '.join(shown(a) for a in allow)}" if allow
                   else "") + ").") if on else
         f"Claude cannot see the files in {shown(ws.path)}.")
    return 0
