"""Start-up at scale: Cairn's window on 1,000 workspaces with 50,000 and with 250,000 chats
against a bare PySide6 window, interleaved in one run; the window's idle memory with that
data; and what a chat's in-memory record costs, per 100,000 chats.

    uv run python tests/benchmarks/startup_bench.py [--runs 9]

Each round runs, one after the other: the bare window, then for each data folder Cairn's
window reporting its own age (from its spawn, so the interpreter's start and every
import count) at its first paint, when its filled-in window (the sidebar on the real data)
has painted, and when the chat and knowledge panels that come right after that paint are
built; and the whole process of `cairn --exit-after-first-paint`
(wall clock, from spawn to exit; its exit code is checked: a window that paints and then
aborts fails the benchmark).  The bare window's whole process is timed the same way.  The
window state of each data folder has three workspaces expanded and a chat open, as a person
leaves it.  Linux (reads /proc).  The load average is printed beside the figures: the machine
may be shared.

Targets: the whole process within 2.5x the bare window's at 50,000 chats; the
250,000-chat start within 1.25x the 50,000-chat start; first paint within 1.5x the bare
window's; idle memory at 50,000 chats under 150 MB (reported at 250,000).  The idle memory is
measured twice: as the window is left after its start (every chat read, the folders and the
keychain checked), and after the warm-up a first keystroke in a message starts (the SDK
loaded, ~90 MB of it).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.scale_data import build  # noqa: E402

SIZES = (50_000, 250_000)

# A process's age: seconds since the benchmark spawned it (the wall clock it wrote into the
# child's environment just before; /proc's start time counts in 10 ms ticks, too coarse for
# a ratio of ~100 ms figures).
AGE = """
import os, time
def age():
    return time.time() - float(os.environ["BENCH_SPAWNED_AT"])
"""

BARE = AGE + """
import sys
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

class Window(QMainWindow):
    painted = False
    def paintEvent(self, event):
        super().paintEvent(event)
        if not self.painted:
            self.painted = True
            print(f"{age():.4f}")
            QTimer.singleShot(0, app.quit)

app = QApplication(sys.argv)
app.setStyle("Fusion")
window = Window()
window.setCentralWidget(QLabel("bare"))
window.resize(1180, 760)
window.show()
sys.exit(app.exec())
"""

CAIRN = AGE + """
import sys
import ui.main  # what `cairn` imports first (the command line's entry point)
from ui.app import run
times = []
def panels():  # the chat and knowledge panels, built right after the filled paint
    times.append(age())
    from PySide6.QtWidgets import QApplication
    QApplication.instance().quit()
code = run(data_dir=None, open_path=None, exit_after_first_paint=False,
           on_first_paint=lambda: times.append(age()), on_ready=lambda: times.append(age()),
           on_panels=panels)
print(" ".join(f"{t:.4f}" for t in times))
from ui.app import exit_now
exit_now(code)  # as `cairn` ends (ui.main)
"""

IDLE = """
import asyncio, os, sys, time
sys.path.insert(0, {root!r})
import qasync
from PySide6.QtWidgets import QApplication
from ui.app import start
app = QApplication([])
loop = qasync.QEventLoop(app)
asyncio.set_event_loop(loop)
from pathlib import Path
starter = start(app, Path(os.environ["CAIRN_DATA_DIR"]))
ready = asyncio.Event()
starter.window.sig_ready.connect(ready.set)
async def main():
    starter.begin()
    await ready.wait()
    while not starter.cairn.registry.loaded(None):  # every chat read (the start-up load)
        await asyncio.sleep(0.1)
    await asyncio.sleep(3)  # idle: the background work (folder checks, keychain) settles
    if not {cold}:  # as the first keystroke in a message does: the SDK is loaded (warm-up)
        starter.window.chat_panel.sig_typing.emit()
        while "anthropic" not in sys.modules or not starter.ops._warm.done():
            await asyncio.sleep(0.1)
        await asyncio.sleep(3)
    rss = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    print(rss, "anthropic" in sys.modules)
with loop:
    loop.run_until_complete(main())
    starter.window.close()
    loop.run_until_complete(starter.finish())
"""


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    env = dict(env, BENCH_SPAWNED_AT=repr(time.time()))
    started = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout.strip()


def leave_window_state(data: Path) -> None:
    """The window as a person leaves it: three workspaces expanded, a chat in one open."""
    import sqlite3

    from PySide6.QtCore import QSettings

    conn = sqlite3.connect(data / "cairn.db")
    order = [r[0] for r in conn.execute("SELECT workspace_id FROM display_order ORDER BY position")]
    expanded = order[:3]
    chat = conn.execute("SELECT chat_id FROM membership WHERE workspace_id = ? LIMIT 1",
                        (expanded[0],)).fetchone()[0]
    conn.close()
    state = QSettings(str(data / "window.ini"), QSettings.Format.IniFormat)
    state.setValue("expanded", expanded)
    state.setValue("chat", chat)
    state.sync()


def records_per_100k() -> tuple[float, float, float]:
    """Building 100,000 chat records from page rows as the start-up load does: (ms, MB, and
    the ms of the baseline: a plain tuple and a dict entry per row)."""
    from app.records import Workspace
    from app.store.registry.loader import Loader

    ws = Workspace(id="ws_1", path="/p/project", key="/p/project", title="project",
                   description="", instructions="", build_status="idea",
                   created_at="2025-01-01T00:00:00.000Z", updated_at="2025-01-01T00:00:00.000Z")
    # (the folder as SQLite gives it: a string of its own, equal to the workspace's path)
    rows = [("ws_1", i, f"ch_{i:026d}", f"Chat {i}", "/p/project".join(["", ""]),  # noqa: FLY002
             f"2025-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z",
             f"2025-01-01T00:00:{i % 60:02d}.{i % 1000:03d}Z", None, None)
            for i in range(100_000)]
    times = []
    for _ in range(5):  # the time untraced (tracing slows allocation), median of 5
        started = time.perf_counter()
        chats, seq = Loader._records(rows, {"ws_1": ws})
        times.append(time.perf_counter() - started)
        del chats, seq
    bare = []
    for _ in range(5):
        started = time.perf_counter()
        plain = {row[2]: tuple(row[2:]) for row in rows}
        bare.append(time.perf_counter() - started)
        del plain
    tracemalloc.start()
    chats, seq = Loader._records(rows, {"ws_1": ws})
    size, _ = tracemalloc.get_traced_memory()  # records, ids in the map, rowids
    tracemalloc.stop()
    del chats, seq
    return statistics.median(times) * 1000, size / 2**20, statistics.median(bare) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cairn-startup-"))
    try:
        measure(args.runs, root)
    finally:  # the two data folders take ~130 MB
        shutil.rmtree(root, ignore_errors=True)


def measure(runs: int, root: Path) -> None:
    base_env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
                    PYTHONPATH=str(ROOT))
    # As a person's Python runs (and the installers' bundles): with compiled bytecode.  Some
    # development machines set PYTHONDONTWRITEBYTECODE, which makes every start recompile
    # every module; the warm-up runs below write the .pyc files for both sides.
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    envs: dict[int, dict[str, str]] = {}
    for size in SIZES:
        data = root / f"data-{size}"
        counts = build(data, root / f"folders-{size}", random.Random(7), chats=size)
        print(f"data: 1,000 workspaces, {size:,} chats: {counts}")
        envs[size] = dict(base_env, CAIRN_DATA_DIR=str(data),
                          CAIRN_FIRST_USE_DIR=str(root / "first-use"))
        # The first start migrates and checks the whole database once, as after an update.
        run([sys.executable, "-m", "ui.main", "--exit-after-first-paint"], envs[size])
        leave_window_state(data)
    bare_args = [sys.executable, "-c", BARE]
    cairn_args = [sys.executable, "-c", CAIRN]
    whole_args = [sys.executable, "-m", "ui.main", "--exit-after-first-paint"]
    for warm in (bare_args, cairn_args, whole_args):  # file cache and bytecode, for all alike
        run(warm, envs[SIZES[0]])
    bare, bare_whole = [], []
    first: dict[int, list[float]] = {n: [] for n in SIZES}
    filled: dict[int, list[float]] = {n: [] for n in SIZES}
    built: dict[int, list[float]] = {n: [] for n in SIZES}
    whole: dict[int, list[float]] = {n: [] for n in SIZES}
    loads = [os.getloadavg()[0]]
    for _ in range(runs):  # interleaved: the machine's noise hits every side alike
        elapsed, painted = run(bare_args, envs[SIZES[0]])
        bare.append(float(painted))
        bare_whole.append(elapsed)
        for size in SIZES:
            at_paint, at_ready, at_panels = (float(x) for x in
                                             run(cairn_args, envs[size])[1].split())
            built[size].append(at_panels)
            first[size].append(at_paint)
            filled[size].append(at_ready)
            whole[size].append(run(whole_args, envs[size])[0])
        loads.append(os.getloadavg()[0])
    med = statistics.median
    b, bw = med(bare), med(bare_whole)
    small, large = SIZES
    print(f"\nmedians of {runs} interleaved rounds; load average (1 min) during the run: "
          f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores")
    print(f"bare PySide6 window: first paint {b * 1000:.0f} ms, whole process {bw * 1000:.0f} ms")
    for size in SIZES:
        print(f"{size:,} chats: first paint {med(first[size]) * 1000:.0f} ms "
              f"({med(first[size]) / b:.2f}x bare, target 1.5x); filled in "
              f"{med(filled[size]) * 1000:.0f} ms ({med(filled[size]) / b:.2f}x); chat and "
              f"knowledge panels built {med(built[size]) * 1000:.0f} ms "
              f"({med(built[size]) / b:.2f}x); "
              f"`cairn --exit-after-first-paint` whole process {med(whole[size]) * 1000:.0f} ms "
              f"({med(whole[size]) / bw:.2f}x the bare window's whole process)")
    print(f"250,000 against 50,000 chats: whole process {med(whole[large]) / med(whole[small]):.2f}x "
          f"(target 1.25x), filled in {med(filled[large]) / med(filled[small]):.2f}x")
    print(f"whole process at 50,000 chats: {med(whole[small]) / bw:.2f}x the bare window (target 2.5x)")
    idle_mb: dict[tuple[int, bool], str] = {}
    for size in SIZES:
        for cold in (True, False):
            idle = subprocess.run([sys.executable, "-c", IDLE.format(root=str(ROOT), cold=cold)],
                                  env=envs[size], cwd=ROOT, capture_output=True, text=True,
                                  timeout=300, check=False)
            if idle.returncode != 0:
                raise SystemExit(f"idle run exited {idle.returncode}: {idle.stderr[-2000:]}")
            rss, sdk = idle.stdout.split()
            idle_mb[size, sdk == "True"] = rss
            target = " (target 150 MB)" if size == small else ""
            what = ("the SDK warmed up (a message begun)" if sdk == "True" else
                    "no message begun (the SDK not loaded)")
            print(f"idle memory, {size:,} chats, every chat loaded, {what}: {rss} MB RSS{target}")
    ms, mb, bare_ms = records_per_100k()
    print(f"chat records: {ms:.0f} ms and {mb:.1f} MB per 100,000 chats (tuples, strings shared "
          f"with the workspace); a plain tuple and dict entry per row: {bare_ms:.0f} ms")
    print("\nMarkdown (for docs/performance.md):\n")
    print(table(b, bw, {size: med(first[size]) for size in SIZES},
                {size: med(filled[size]) for size in SIZES},
                {size: med(built[size]) for size in SIZES},
                {size: med(whole[size]) for size in SIZES}, idle_mb, (ms, mb, bare_ms)))


def table(bare: float, bare_whole: float, first: dict[int, float], filled: dict[int, float],
          built: dict[int, float], whole: dict[int, float], idle_mb: dict[tuple[int, bool], str],
          records: tuple[float, float, float]) -> str:
    """The page's table: medians in seconds, idle memory in MB by (chats, SDK loaded)."""
    small, large = SIZES

    def verdict(good: bool) -> str:
        return "ok" if good else "MISSED"

    ms, mb, bare_ms = records
    first_ok = first[small] / bare < 1.5 and first[large] / bare < 1.5
    whole_ok = whole[small] / bare_whole < 2.5 and whole[large] / whole[small] < 1.25
    rows = [
        ("measure", f"{small:,} chats", f"{large:,} chats", "target"),
        ("bare PySide6 window: first paint / whole process",
         f"{bare * 1000:.0f} ms / {bare_whole * 1000:.0f} ms", "(same run)", ""),
        ("Cairn, first paint", f"{first[small] * 1000:.0f} ms ({first[small] / bare:.2f}×)",
         f"{first[large] * 1000:.0f} ms ({first[large] / bare:.2f}×)",
         f"1.5× {verdict(first_ok)}"),
        ("Cairn, filled in (sidebar on the data)",
         f"{filled[small] * 1000:.0f} ms ({filled[small] / bare:.2f}×)",
         f"{filled[large] * 1000:.0f} ms ({filled[large] / filled[small]:.2f}× the "
         f"{small:,} start)", ""),
        ("Cairn, chat and knowledge panels built (right after)",
         f"{built[small] * 1000:.0f} ms", f"{built[large] * 1000:.0f} ms", ""),
        ("`cairn --exit-after-first-paint`, whole process",
         f"{whole[small] * 1000:.0f} ms ({whole[small] / bare_whole:.2f}× bare)",
         f"{whole[large] * 1000:.0f} ms ({whole[large] / whole[small]:.2f}× the {small:,} start)",
         f"2.5× bare; 1.25× {verdict(whole_ok)}"),
        ("idle memory, every chat read, no message begun", f"{idle_mb[small, False]} MB RSS",
         f"{idle_mb[large, False]} MB RSS",
         f"< 150 MB at {small:,} {verdict(float(idle_mb[small, False]) < 150)}"),
        ("idle memory, a message begun (the SDK loaded)", f"{idle_mb[small, True]} MB RSS",
         f"{idle_mb[large, True]} MB RSS", ""),
        ("a chat's record (tuples, strings shared)",
         f"{ms:.0f} ms, {mb:.1f} MB per 100,000 chats",
         f"a plain tuple and dict entry per row: {bare_ms:.0f} ms", ""),
    ]
    lines = [f"| {' | '.join(rows[0])} |", "| --- | ---: | ---: | --- |"]
    lines += [("| " + " | ".join(row)).rstrip() + " |" for row in rows[1:]]
    return "\n".join(lines)

if __name__ == "__main__":
    main()
