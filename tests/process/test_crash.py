"""Crash safety (DESIGN.md §10): no kill loses a committed change.

A child process (tests/process/crash_writer.py) applies a deterministic, seeded sequence of registry
operations to one data folder and reports each operation after it returned (``OK <index>``).
The parent kills it with SIGKILL (TerminateProcess on Windows) at a random moment, most of
the time while it is committing, then opens the data folder itself — which runs the start-up
checks — runs ``PRAGMA integrity_check``, and compares what the registry shows with a small
reference model: the state must be that after every operation that reported success, plus
possibly the one in flight.  The next child continues on the same data folder from where the
stored state is, so the state accumulates over all the cycles.

Set ``CAIRN_CRASH_SEED`` to replay another sequence of operations (kill moments stay random).
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.store.registry.registry import Registry
from tests.process.crash_writer import note_cleanup

ROOT = Path(__file__).resolve().parents[2]
WRITER = Path(__file__).with_name("crash_writer.py")

CYCLES = 200  # kills; the issue asks for at least 200
BUDGET = 24  # operations handed to one child (it is normally killed before it runs out)
EARLY_KILLS = 0.08  # share of kills aimed at the child's start-up instead of its writes
SEED = int(os.environ.get("CAIRN_CRASH_SEED", "20241130"))

Op = list[Any]


# ===================================================================== the reference model


@dataclass
class Model:
    """The observable state of the registry, by folder path and chat title."""

    order: list[str] = field(default_factory=list)  # workspace folders, display order
    titles: dict[str, str] = field(default_factory=dict)  # folder -> workspace title
    members: dict[str, list[str]] = field(default_factory=dict)  # folder -> manual order
    home: dict[str, str | None] = field(default_factory=dict)  # chat -> folder (None: ungrouped)
    folders: dict[str, str | None] = field(default_factory=dict)  # chat -> folder as recorded
    archived: set[str] = field(default_factory=set)
    pinned: list[str] = field(default_factory=list)  # most recently pinned first

    def copy(self) -> Model:
        return copy.deepcopy(self)

    def apply(self, op: Op) -> bool:
        """Apply *op*; False when the registry refuses it (and nothing changes)."""
        kind = op[0]
        if kind == "add":
            _, folder, at_end = op
            if folder in self.titles:
                return True  # an existing folder returns its workspace unchanged
            self.titles[folder] = os.path.basename(folder)
            self.members[folder] = []  # a fresh identity: none of the old chats
            if at_end:
                self.order.append(folder)
            else:
                self.order.insert(0, folder)
        elif kind == "rename":
            _, folder, title = op
            if folder in self.titles:
                self.titles[folder] = title
        elif kind == "remove":
            _, folder = op
            if folder in self.titles:
                self.order.remove(folder)
                del self.titles[folder]
                for chat in self.members.pop(folder):
                    self.home[chat] = None  # ungrouped, never deleted
        elif kind == "new":
            _, folder, chat = op
            home = folder if folder in self.titles else None
            self.home[chat] = home
            self.folders[chat] = folder
            if home is not None:
                self.members[home].insert(0, chat)  # a new chat attaches at the top
        elif kind == "archive":
            chat = op[1]
            self.archived.add(chat)  # keeps its place in its workspace
            if chat in self.pinned:
                self.pinned.remove(chat)  # the pin goes in the same write
        elif kind == "unarchive":
            self.archived.discard(op[1])  # back to its place, unpinned
        elif kind == "pin":
            chat = op[1]
            if chat in self.archived:
                return False  # cannot pin session '…': the session is archived
            if chat not in self.pinned:
                self.pinned.insert(0, chat)
        elif kind == "unpin":
            if op[1] in self.pinned:
                self.pinned.remove(op[1])
        elif kind == "move":
            _, chat, index = op
            folder = self.home[chat]
            if folder is None or chat in self.archived:
                return False
            order = [c for c in self.members[folder] if c != chat]
            visible = [c for c in order if c not in self.archived]
            if not 0 <= index <= len(visible):
                return False
            # Archived chats keep their slots: the chat goes just before the visible chat now
            # at *index*, or just after the last visible chat (at the end when none is).
            if index < len(visible):
                at = order.index(visible[index])
            elif visible:
                at = order.index(visible[-1]) + 1
            else:
                at = len(order)
            order.insert(at, chat)
            self.members[folder] = order
        else:
            raise AssertionError(f"unknown operation {op!r}")
        return True

    def observable(self) -> dict[str, Any]:
        return {
            # The whole manual order, archived chats' slots included: a move can change only
            # where a hidden chat sits, and that must be observable too, or an in-flight move
            # that did not commit would be taken as committed.
            "workspaces": [(f, self.titles[f], list(self.members[f])) for f in self.order],
            "pinned": list(self.pinned),
            "archived": sorted(self.archived),
            "ungrouped": sorted(
                c for c, home in self.home.items() if home is None and c not in self.archived
            ),
            "folders": dict(sorted(self.folders.items())),
        }


def observe(registry: Registry) -> dict[str, Any]:
    """The same view, read from a registry."""
    listing = registry.chat_listing()
    assert [ws.id for ws in registry.workspaces()] == [ws.id for ws, _ in listing.workspaces]
    every = [*listing.ungrouped, *listing.archived]
    every += [c for _, chats in listing.workspaces for c in chats]
    return {
        "workspaces": [
            (ws.path, ws.title, [registry.chat(c).title for c in registry._members[ws.id]])
            for ws, _chats in listing.workspaces
        ],
        "pinned": [c.title for c in listing.pinned],
        "archived": sorted(c.title for c in listing.archived),
        "ungrouped": sorted(c.title for c in listing.ungrouped),
        "folders": dict(sorted((c.title, c.folder) for c in every)),
    }


# ===================================================================== the operations


class Generator:
    """A seeded stream of operations, drawn against the model so most of them do something."""

    WEIGHTS = {
        "add": 9, "rename": 5, "remove": 4, "new": 14, "archive": 7, "unarchive": 5,
        "pin": 7, "unpin": 4, "move": 10,
    }

    def __init__(self, seed: int, model: Model, pool: list[str], strays: list[str]) -> None:
        self.rng = random.Random(seed)
        self.model = model.copy()  # the state at the end of the generated list
        self.pool = pool  # directories that may become workspaces
        self.strays = strays  # chat folders that never resolve to a workspace
        self.ops: list[Op] = []

    def ensure(self, count: int) -> None:
        while len(self.ops) < count:
            op = self._draw(len(self.ops))
            self.model.apply(op)
            self.ops.append(op)

    def _draw(self, index: int) -> Op:
        rng, m = self.rng, self.model
        kind = rng.choices(list(self.WEIGHTS), weights=list(self.WEIGHTS.values()))[0]
        chats = list(m.home)
        live = [c for c in chats if c not in m.archived]
        if kind == "add" or (kind in ("rename", "remove") and not m.order):
            return ["add", rng.choice(self.pool), rng.random() < 0.3]
        if kind == "rename":
            return ["rename", rng.choice(m.order), f"t{index}"]
        if kind == "remove":
            return ["remove", rng.choice(m.order)]
        if kind == "new" or not chats:
            roll = rng.random()
            if roll < 0.6 and m.order:
                folder: str | None = rng.choice(m.order)
            elif roll < 0.85:
                folder = rng.choice(self.pool)  # registered or not
            elif roll < 0.93:
                folder = None
            else:
                folder = rng.choice(self.strays)
            return ["new", folder, f"c{index}"]
        if kind == "archive":
            return ["archive", rng.choice(live or chats)]
        if kind == "unarchive":
            return ["unarchive", rng.choice(sorted(m.archived) or chats)]
        if kind == "pin":
            if m.archived and rng.random() < 0.08:
                return ["pin", rng.choice(sorted(m.archived))]  # refused
            return ["pin", rng.choice(live or chats)]
        if kind == "unpin":
            return ["unpin", rng.choice(m.pinned or chats)]
        # move
        groups = [
            visible for f in m.order
            if (visible := [c for c in m.members[f] if c not in m.archived])
        ]
        if not groups or rng.random() < 0.05:
            return ["move", rng.choice(chats), rng.randrange(3)]  # often refused
        visible = rng.choice(groups)
        return ["move", rng.choice(visible), rng.randrange(len(visible))]


# ===================================================================== the test


def _describe(observed: dict[str, Any], expected: dict[str, Any], short: str) -> str:
    """Only what differs, with the temporary folder's prefix cut off."""

    def cut(value: Any) -> str:
        return repr(value).replace(short, "…")

    lines = []
    for key, want in expected.items():
        got = observed[key]
        if got == want:
            continue
        if isinstance(want, dict):
            keys = sorted(set(got) | set(want))
            diff = {k: (got.get(k, "<absent>"), want.get(k, "<absent>"))
                    for k in keys if got.get(k, "<absent>") != want.get(k, "<absent>")}
            lines.append(f"  {key} (stored, expected): {cut(diff)}")
        elif key in ("archived", "ungrouped"):
            lines.append(f"  {key}: only stored {sorted(set(got) - set(want))}, "
                         f"only expected {sorted(set(want) - set(got))}")
        elif key == "workspaces" and [w[0] for w in got] == [w[0] for w in want]:
            for mine, theirs in zip(got, want):
                if mine != theirs:
                    lines.append(f"  workspace {cut(mine[0])}: stored {cut(mine[1:])}, "
                                 f"expected {cut(theirs[1:])}")
        else:
            lines.append(f"  {key}:\n    stored   {cut(got)}\n    expected {cut(want)}")
    return "\n".join(lines) or "  (equal)"


def _check_database(data: Path, seen: set[str]) -> dict[str, Any]:
    """Open as the app does (start-up checks included), check integrity, read the state.

    Opening also finishes any removal whose cleanup a kill interrupted: afterwards no change
    may be pending, and every workspace seen before and gone now must have been cleaned up.
    """
    registry = Registry.open(data, cleanup=[note_cleanup])
    try:
        assert registry.db.query("PRAGMA integrity_check") == [("ok",)]
        assert registry.db.query("PRAGMA foreign_key_check") == []
        assert registry.db.query("SELECT op, args FROM pending_change") == []
        now = {ws.id for ws in registry.workspaces()}
        gone = seen - now
        assert all((data / "cleaned" / ws_id).exists() for ws_id in gone), gone
        seen |= now
        return observe(registry)
    finally:
        registry.close()


def test_killed_writers_never_lose_a_committed_change(isolated: Path, tmp_path: Path) -> None:
    data = isolated
    base = Path(os.path.realpath(tmp_path)) / "folders"
    pool = [base / f"w{i:02d}" for i in range(18)]
    pool += [pool[0] / "inner", pool[1] / "inner", pool[1] / "inner" / "deeper"]  # nesting
    for folder in pool:
        folder.mkdir(parents=True, exist_ok=True)
    (base / "a-file.txt").write_text("not a folder")
    strays = [str(base / "a-file.txt"), str(base / "never-made"), "relative/folder"]

    # The first open creates the first-use workspace; it is part of the starting state.
    registry = Registry.open(data)
    model = Model()
    for ws in registry.workspaces():
        model.order.append(ws.path)
        model.titles[ws.path] = ws.title
        model.members[ws.path] = []
    registry.close()
    assert len(model.order) == 1, "expected exactly the first-use workspace"
    pool_paths = [str(p) for p in pool] + model.order  # the first-use folder can be removed too

    generator = Generator(SEED, model, pool_paths, strays)
    timing = random.Random()  # kill moments are random on purpose
    env = dict(os.environ, CAIRN_DATA_DIR=str(data), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    plan_path = tmp_path / "plan.json"
    stderr_path = tmp_path / "writer-stderr.txt"

    seen: set[str] = set()  # workspace ids observed so far (removals must get cleaned up)
    applied = 0  # operations the stored state reflects
    per_op = 0.004  # seconds per operation, learnt as we go
    startup = 0.1  # seconds from spawn to READY, learnt as we go
    stats = {"mid-run": 0, "early": 0, "ran out": 0, "in flight kept": 0, "in flight lost": 0}

    for cycle in range(CYCLES):
        end = applied + BUDGET
        generator.ensure(end + 1)
        ops = generator.ops
        plan_path.write_text(json.dumps({"first": applied, "ops": ops[applied:end]}))

        with open(stderr_path, "w+b") as stderr:
            spawned = time.perf_counter()
            child = subprocess.Popen(
                [sys.executable, str(WRITER), str(plan_path)],
                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            )
            early = timing.random() < EARLY_KILLS
            if early:
                time.sleep(timing.uniform(0, startup * 1.2))
            else:
                ready = child.stdout.readline()  # type: ignore[union-attr]
                if ready != "READY\n":
                    child.kill()
                    child.wait()
                    stderr.seek(0)
                    raise AssertionError(
                        f"cycle {cycle}: the writer did not start ({ready!r}):\n"
                        + stderr.read().decode(errors="replace")
                    )
                startup = 0.7 * startup + 0.3 * (time.perf_counter() - spawned)
                delay = timing.uniform(0, per_op * BUDGET)
                time.sleep(delay)
            child.kill()  # SIGKILL; does nothing if it already exited
            returncode = child.wait()
            output = child.stdout.read()  # type: ignore[union-attr]
            child.stdout.close()  # type: ignore[union-attr]
            stderr.seek(0)
            errors = stderr.read().decode(errors="replace")

        lines = output.splitlines()
        killed = 1 if os.name == "nt" else -9  # TerminateProcess's exit code on Windows
        assert returncode in (0, killed), (
            f"cycle {cycle}: the writer failed (exit {returncode}):\n{errors}"
        )
        assert "Traceback" not in errors, f"cycle {cycle}: the writer failed:\n{errors}"
        done = [ln for ln in lines if ln.startswith("DONE ")]
        oks = [int(ln.split()[1]) for ln in lines if ln.startswith("OK ")]
        assert oks == list(range(applied, applied + len(oks))), f"cycle {cycle}: {lines}"
        k = oks[-1] if oks else applied - 1  # the last operation that reported success

        # The child and the model agree on which operations are refused.
        refused = {int(ln.split()[1]) for ln in lines if ln.startswith("REFUSED ")}
        reference = model.copy()
        for index in range(applied, k + 1):
            accepted = reference.apply(ops[index])
            assert accepted == (index not in refused), (
                f"cycle {cycle}: operation {index} {ops[index]!r}: the model "
                f"{'accepts' if accepted else 'refuses'} it, the registry did the opposite: "
                + next((ln for ln in lines if ln.startswith(f"REFUSED {index} ")), "")
            )

        observed = _check_database(data, seen)
        without = reference.observable()  # every reported change, and no more
        candidates = [(k + 1, reference, without)]
        if k + 1 < end:  # the operation in flight may have committed before the kill
            with_next = reference.copy()
            with_next.apply(ops[k + 1])
            candidates.insert(0, (k + 2, with_next, with_next.observable()))
        match = next(((n, m) for n, m, view in candidates if view == observed), None)
        if match is None:
            short = str(base.parent) + os.sep
            report = [
                f"cycle {cycle} (seed {SEED}): operation {k} was the last to report success, "
                "but the stored state matches neither the state after it nor after the "
                "operation in flight.",
                f"against the state after operation {k} ({ops[k] if k >= 0 else None!r}):",
                _describe(observed, without, short),
            ]
            if len(candidates) == 2:
                report += [f"against the state after operation {k + 1} ({ops[k + 1]!r}):",
                           _describe(observed, candidates[0][2], short)]
            raise AssertionError("\n".join(report))
        n, model = match

        if early and not lines:
            stats["early"] += 1
        elif done:
            stats["ran out"] += 1
            per_op = 0.7 * per_op + 0.3 * float(done[0].split()[1]) / BUDGET
        else:
            stats["mid-run"] += 1
            if len(candidates) == 2 and candidates[0][2] != without:
                stats["in flight kept" if n == k + 2 else "in flight lost"] += 1
            if not early and len(oks) >= 3:  # at most this slow; the delay also holds a part op
                per_op = 0.7 * per_op + 0.3 * delay / len(oks)
        applied = n

    print(f"\ncrash test: {CYCLES} kills, {applied} operations applied, seed {SEED}, {stats}")
    assert applied >= CYCLES, "the writers barely wrote: the kills did not test much"
    assert stats["mid-run"] >= CYCLES // 2, f"too few kills landed during writes: {stats}"
