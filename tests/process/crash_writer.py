"""The child process of tests/process/test_crash.py: applies registry operations until it is killed.

Usage: ``python crash_writer.py PLAN.json`` with ``CAIRN_DATA_DIR`` naming the data folder.
PLAN is ``{"first": N, "ops": [...]}``: the operations with global indexes N, N+1, … (the
parent starts the plan where the stored state is).  The child prints, each line flushed:

- ``READY`` once the registry is open;
- ``REFUSED <index> <message>`` when the registry refuses an operation (nothing changed);
- ``OK <index>`` after the operation returned, i.e. after its transaction committed;
- ``DONE <seconds>`` when it ran out of operations (seconds since READY).

Operations name workspaces by canonical folder path and chats by their unique titles:
``["add", folder, at_end]``, ``["rename", folder, title]``, ``["remove", folder]``,
``["new", folder_or_null, title]``, ``["archive"|"unarchive"|"pin"|"unpin", chat]``,
``["move", chat, index]``.

It imports only the registry, so that start-up stays cheap: the parent spawns it hundreds
of times.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from app.errors import Refused
from app.store.registry.registry import Registry


def main(plan_path: str) -> None:
    with open(plan_path, encoding="utf-8") as file:
        plan = json.load(file)
    first: int = plan["first"]
    ops: list[list] = plan["ops"]

    registry = Registry.open(cleanup=[note_cleanup])  # CAIRN_DATA_DIR
    workspaces = {ws.path: ws.id for ws in registry.workspaces()}
    listing = registry.chat_listing()
    chats = {
        chat.title: chat.id
        for group in (listing.ungrouped, listing.archived, *(c for _, c in listing.workspaces))
        for chat in group
    }

    out = sys.stdout
    out.write("READY\n")
    out.flush()
    started = time.perf_counter()
    for index, op in enumerate(ops, start=first):
        kind = op[0]
        try:
            if kind == "add":
                ws, _created = registry.add_workspace(op[1], at_end=op[2])
                workspaces[ws.path] = ws.id
            elif kind == "rename":
                if op[1] in workspaces:
                    registry.rename_workspace(workspaces[op[1]], op[2])
            elif kind == "remove":
                if op[1] in workspaces:
                    registry.remove_workspace(workspaces.pop(op[1]))
            elif kind == "new":
                chat = registry.new_chat(folder=op[1], title=op[2])
                chats[chat.title] = chat.id
            elif kind == "archive":
                registry.archive_chat(chats[op[1]])
            elif kind == "unarchive":
                registry.unarchive_chat(chats[op[1]])
            elif kind == "pin":
                registry.pin_chat(chats[op[1]])
            elif kind == "unpin":
                registry.unpin_chat(chats[op[1]])
            elif kind == "move":
                registry.move_chat(chats[op[1]], index=op[2])
            else:
                raise SystemExit(f"unknown operation {op!r}")
        except Refused as error:
            out.write(f"REFUSED {index} {error}\n")
        out.write(f"OK {index}\n")
        out.flush()
    out.write(f"DONE {time.perf_counter() - started:.6f}\n")
    out.flush()
    registry.close()


def note_cleanup(ws_id: str) -> None:
    """The removal's cleanup step (blobs, later): here it leaves a mark the test looks for."""
    marks = Path(os.environ["CAIRN_DATA_DIR"]) / "cleaned"
    marks.mkdir(exist_ok=True)
    (marks / ws_id).touch()


if __name__ == "__main__":
    main(sys.argv[1])
