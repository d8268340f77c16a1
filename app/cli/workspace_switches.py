"""``cairn workspace knowledge-file|folder-access|web ID on|off|status``: what a workspace may
do in its own folder, and on the web (the same use cases as the window's switches); and
``cairn workspace learn-imported ID [--yes]`` (issue 40)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from app.base.paths import shown
from app.cli.output import Emit

if TYPE_CHECKING:
    from app.cairn import Cairn


def run(cairn: Cairn, args: argparse.Namespace, emit: Emit) -> int:
    if args.action == "knowledge-file":
        files = cairn.cairn_file_sync
        ws = cairn.registry.get_workspace(args.id, verb="change the knowledge file of")
        if args.switch == "status":
            files.sync(ws.id)
            state = files.state(ws.id)
        else:
            state = files.switch(ws.id, args.switch == "on", keep=args.keep)
        said = {"on": f"{shown(ws.title)}'s knowledge is kept as {shown(state.path)}.",
                "off": f"{shown(ws.title)}'s knowledge is no longer written to "
                       f"{shown(state.path)}; the file, if any, is left where it is."}
        count = len(state.removed)
        notes = (f"An outside save of CAIRN.md removed {count} "
                 f"{'entry' if count == 1 else 'entries'} Cairn wrote (Restore in the "
                 "knowledge panel)." if count else "",
                 "Conflict copies beside it: " + ", ".join(shown(c) for c in state.copies)
                 + " (Compare, Merge or Dismiss in the knowledge panel)."
                 if state.copies else "")
        emit({"id": ws.id, **state.to_json()},
             lambda: " ".join(filter(None, (said["on" if state.on else "off"],
                                             shown(state.sentence), *notes))))
        return 0
    if args.action == "web":
        return _web(cairn, args, emit)
    if args.action == "learn-imported":
        return _learn_imported(cairn, args, emit)
    from app.tools.folder_reading import access, switch_access

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


def _web(cairn: Cairn, args: argparse.Namespace, emit: Emit) -> int:
    from dataclasses import replace

    from app.chat.web import set_web_settings, web_settings

    ws = cairn.registry.get_workspace(args.id, verb="change web search in")
    settings = web_settings(cairn.registry, cairn.web, ws.id)
    if args.switch != "status":
        changed = replace(settings, enabled=args.switch == "on")
        if args.max_uses is not None:
            changed = replace(changed, max_uses=args.max_uses)
        if args.allow is not None or args.block is not None:  # a new list replaces both
            changed = replace(changed, allowed_domains=tuple(args.allow or ()),
                              blocked_domains=tuple(args.block or ()))
        settings = set_web_settings(cairn.registry, cairn.web, ws.id, changed)

    def said() -> str:
        if not settings.enabled:
            return f"Claude does not search the web in {shown(ws.title)}."
        sites = (f" Only on: {', '.join(settings.allowed_domains)}." if settings.allowed_domains
                 else f" Never on: {', '.join(settings.blocked_domains)}."
                 if settings.blocked_domains else "")
        return (f"Claude may search and read the web in {shown(ws.title)}, up to "
                f"{settings.max_uses} searches a reply ($10 per 1,000 searches, besides "
                f"tokens).{sites}")

    emit({"id": ws.id, **settings.to_json()}, said)
    return 0


def _learn_imported(cairn: Cairn, args: argparse.Namespace, emit: Emit) -> int:
    """The estimate; with --yes, the rebuild over the imported chats (Ctrl+C stops it: what
    was learned stays, the rest stays unlearned)."""
    import asyncio

    from app.knowledge.imported import backlog, learn

    ws = cairn.registry.get_workspace(args.id, verb="learn from the imported chats of")
    plan = backlog(cairn.registry, cairn.chats, str(cairn.settings.get("model.knowledge")),
                   ws.id)
    if not args.yes or not plan.exchanges:
        emit({**plan.to_json(), "learned": 0}, lambda: plan.sentence() + (
            f" Run `cairn workspace learn-imported {ws.id} --yes` to start." if plan.exchanges
            else ""))
        return 0
    learned = asyncio.run(learn(cairn.registry, cairn.rebuilder, plan))
    emit({**plan.to_json(), "learned": learned},
         lambda: f"Learned from {learned} of {len(plan.chats)} imported chat(s) in "
                 f"{shown(ws.title)}.")
    return 0
