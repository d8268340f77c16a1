"""Start-up with 10 MCP servers configured and on, against the same data without them,
interleaved in one run: the start-up benchmark's measures (tests/benchmarks/
startup_bench.py: the window's first paint, filled in, panels built, and the whole process of
``cairn --exit-after-first-paint``) on two copies of one data folder (1,000 workspaces and
50,000 chats unless ``--chats``), the second with 10 servers, each on in the workspaces the
window opens (the chat left open's and the three expanded ones).  At the panels' build each
start also says whether any process was started (its children, read in /proc) and whether the
``mcp`` SDK was imported: neither may be, before a chat uses a server.

    uv run python tests/benchmarks/mcp_startup_bench.py [--runs 9] [--chats 50000]

Linux (reads /proc).  Prints the figures and a Markdown table for docs/performance.md; exits 1
when a start with servers started a process or loaded the SDK.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.startup_bench import AGE, leave_window_state, run  # noqa: E402
from tests.scale_data import build  # noqa: E402

SERVERS = 10

# startup_bench's CAIRN, and at the panels: the children this process has, and whether the
# SDK was imported.
CAIRN = AGE + """
import sys
from pathlib import Path
import ui.main
from ui.app import run
times = []
seen = []
def children():
    found = 0
    for task in Path("/proc/self/task").iterdir():
        try:
            found += len((task / "children").read_text().split())
        except OSError:
            pass
    return found
def panels():
    times.append(age())
    seen.append(children())
    seen.append(int("mcp" in sys.modules))
    from PySide6.QtWidgets import QApplication
    QApplication.instance().quit()
code = run(data_dir=None, open_path=None, exit_after_first_paint=False,
           on_first_paint=lambda: times.append(age()), on_ready=lambda: times.append(age()),
           on_panels=panels)
print(" ".join(f"{t:.4f}" for t in times), *seen)
from ui.app import exit_now
exit_now(code)
"""


def add_servers(data: Path) -> list[str]:
    """10 servers (the tests' own, over stdio: any start would show as a child), each on in
    the workspaces the window shows at start; their names."""
    from app.cairn import Cairn
    from app.store.mcp import ServerConfig

    conn = sqlite3.connect(data / "cairn.db")
    order = [r[0] for r in conn.execute("SELECT workspace_id FROM display_order"
                                        " ORDER BY position")][:3]
    conn.close()
    cairn = Cairn.open(data, background_rebuilds=False)
    try:
        names = []
        for n in range(SERVERS):
            name = f"server-{n}"
            cairn.mcp.add(ServerConfig(name, command=sys.executable,
                                       args=(str(ROOT / "tests" / "mcp_test_server.py"),)))
            for ws_id in order:
                cairn.mcp.turn_on(name, ws_id)
            names.append(name)
        return names
    finally:
        cairn.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--chats", type=int, default=50_000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cairn-mcp-startup-"))
    try:
        raise SystemExit(measure(args.runs, args.chats, root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(runs: int, chats: int, root: Path) -> int:
    base_env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
                    PYTHONPATH=str(ROOT))
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    plain = root / "data-plain"
    counts = build(plain, root / "folders", random.Random(7), chats=chats)
    print(f"data: 1,000 workspaces, {chats:,} chats: {counts}")
    whole_args = [sys.executable, "-m", "ui.main", "--exit-after-first-paint"]
    env_plain = dict(base_env, CAIRN_DATA_DIR=str(plain),
                     CAIRN_FIRST_USE_DIR=str(root / "first-use"))
    run(whole_args, env_plain)  # the first start migrates and checks, as after an update
    leave_window_state(plain)
    servers = root / "data-servers"
    shutil.copytree(plain, servers)
    names = add_servers(servers)
    env_servers = dict(env_plain, CAIRN_DATA_DIR=str(servers))
    run(whole_args, env_servers)
    print(f"{len(names)} servers, each on in the 3 workspaces the window opens")
    cairn_args = [sys.executable, "-c", CAIRN]
    for env in (env_plain, env_servers):  # file cache and bytecode, for both alike
        run(cairn_args, env)
    sides = {"without": env_plain, "with 10 servers on": env_servers}
    figures: dict[str, dict[str, list[float]]] = {
        side: {"first": [], "filled": [], "panels": [], "whole": []} for side in sides}
    started = {side: 0 for side in sides}
    loaded = {side: 0 for side in sides}
    loads = [os.getloadavg()[0]]
    for n in range(runs):  # interleaved, the order swapped each round
        order = list(sides) if n % 2 == 0 else list(reversed(sides))
        for side in order:
            out = run(cairn_args, sides[side])[1].split()
            first, filled, panels = (float(x) for x in out[:3])
            started[side] = max(started[side], int(out[3]))
            loaded[side] = max(loaded[side], int(out[4]))
            figures[side]["first"].append(first)
            figures[side]["filled"].append(filled)
            figures[side]["panels"].append(panels)
            figures[side]["whole"].append(run(whole_args, sides[side])[0])
        loads.append(os.getloadavg()[0])
    med = statistics.median
    spread = {side: {k: (max(v) - min(v)) for k, v in f.items()} for side, f in figures.items()}
    print(f"\nmedians of {runs} interleaved rounds; load average (1 min): "
          f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores")
    rows = []
    labels = {"first": "first paint", "filled": "filled in", "panels": "panels built",
              "whole": "whole process (`cairn --exit-after-first-paint`)"}
    base, other = list(sides)
    for key, label in labels.items():
        a, b = med(figures[base][key]) * 1000, med(figures[other][key]) * 1000
        noise = med([spread[base][key], spread[other][key]]) * 1000
        rows.append(f"| {label} | {a:.0f} ms | {b:.0f} ms | {b / a:.2f}× "
                    f"(round-to-round spread ~{noise:.0f} ms) |")
    for side in sides:
        print(f"{side}: processes started by the window at its panels: {started[side]}, "
              f"mcp SDK imported: {'yes' if loaded[side] else 'no'}")
    print("\nMarkdown (for docs/performance.md):\n")
    print("| measure | without servers | with 10 servers on | ratio |")
    print("| --- | ---: | ---: | --- |")
    print("\n".join(rows))
    print(f"| processes started before a chat uses a server | {started[base]} | "
          f"{started[other]} | target 0 |")
    print(f"| `mcp` SDK imported at start | {'yes' if loaded[base] else 'no'} | "
          f"{'yes' if loaded[other] else 'no'} | target no |")
    return 1 if started[other] or loaded[other] else 0


if __name__ == "__main__":
    main()
