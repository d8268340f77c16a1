"""The benchmark's data folder at scale: 1,000 workspaces and 50,000 chats (DESIGN.md §10).

Shared by ``tests/benchmarks/registry_bench.py`` and the start-up test at scale
(``tests/process/test_startup_scale.py``). Written with direct SQL in the registry's schema, on a
database created by the real migrations, in one transaction: a few seconds, where the
registry's API would take minutes.
"""

from __future__ import annotations

import os
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from app.base import paths
from app.base.db import Database
from app.base.ids import new_id

WORKSPACES = 1_000
CHATS = 50_000
UNGROUPED_SHARE = 0.10
ARCHIVED_SHARE = 0.05
PINNED = 50


def stamp(base: datetime, offset_ms: int) -> str:
    """The registry's timestamp form (app.base.db.utc_now) at *base* + *offset_ms*."""
    moment = base + timedelta(milliseconds=offset_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def build(data: Path, folders: Path, rng: random.Random, *, chats: int = CHATS,
          workspaces: int = WORKSPACES) -> dict[str, int]:
    """The data folder, written with direct SQL in the registry's schema in one transaction
    (*chats* and *workspaces*: the benchmark's 50,000 and 1,000 unless told)."""
    dirs = []
    for i in range(workspaces):
        folder = folders / f"project-{i:04d}"
        folder.mkdir(parents=True)
        dirs.append(os.path.realpath(folder))

    db = Database.open(data)  # creates the schema through the real migrations
    base = datetime(2025, 1, 1, tzinfo=timezone.utc)
    counts = {"archived": 0, "pinned": 0, "ungrouped": 0}
    with db.write() as conn:
        ws_ids = []
        for position, path in enumerate(dirs):
            ws_id = new_id("ws")
            ws_ids.append(ws_id)
            created = stamp(base, position)
            conn.execute(
                "INSERT INTO workspace (id, path, path_key, title, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (ws_id, path, paths.path_key(path), paths.title_for(path), created, created),
            )
            conn.execute(
                "INSERT INTO display_order (position, workspace_id) VALUES (?, ?)",
                (position, ws_id),
            )

        rows = []
        members: dict[str, list[str]] = {ws_id: [] for ws_id in ws_ids}
        for i in range(chats):
            chat_id = new_id("ch")
            created = stamp(base, 10_000 + i)
            if rng.random() < UNGROUPED_SHARE:
                folder = rng.choice([None, str(folders / "gone" / str(i))])
                counts["ungrouped"] += 1
            else:
                home = rng.randrange(workspaces)
                folder = dirs[home]
                members[ws_ids[home]].append(chat_id)
            archived = created if rng.random() < ARCHIVED_SHARE else None
            counts["archived"] += archived is not None
            rows.append((chat_id, f"Chat {i}", folder, created, created, archived))
        conn.executemany(
            "INSERT INTO chat (id, title, folder, created_at, updated_at, archived_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        pinnable = [c[0] for c in rows if c[5] is None]
        for seq, chat_id in enumerate(rng.sample(pinnable, PINNED), start=1):
            conn.execute("UPDATE chat SET pin_seq = ? WHERE id = ?", (seq, chat_id))
        counts["pinned"] = PINNED
        # Manual order: a new chat attaches at the top, so the newest has the smallest position.
        conn.executemany(
            "INSERT INTO membership (workspace_id, chat_id, position) VALUES (?, ?, ?)",
            (
                (ws_id, chat_id, position)
                for ws_id, ids in members.items()
                for position, chat_id in enumerate(reversed(ids))
            ),
        )
        conn.execute("INSERT INTO registry_state (key, value) VALUES ('initialised', '1')")
    db.close()
    return counts
