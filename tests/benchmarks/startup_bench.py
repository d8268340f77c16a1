"""Start-up at scale: Cairn's window on 1,000 workspaces and 50,000 chats against a bare
PySide6 window, interleaved in one run; and the window's idle memory with that data.

    uv run python tests/benchmarks/startup_bench.py [--runs 9]

Each run is a fresh process that reports its own age (from the kernel's process start time,
so the interpreter's start and every import count) at its first paint; Cairn's also at the
moment its filled-in window (the sidebar on the real data) has painted.  Besides, every round
runs `cairn --exit-after-first-paint` whole and checks its exit code: a window that paints and
then aborts fails the benchmark.  Linux (reads /proc).

Targets (DESIGN §10): first paint within 1.5x of the bare window; idle memory under 200 MB.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.scale_data import build  # noqa: E402

AGE = """
import os
def age():
    with open("/proc/self/stat") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as uptime:
        up = float(uptime.read().split()[0])
    return up - start_ticks / os.sysconf("SC_CLK_TCK")
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
code = run(data_dir=None, open_path=None, exit_after_first_paint=True,
           on_first_paint=lambda: times.append(age()), on_ready=lambda: times.append(age()))
print(" ".join(f"{t:.4f}" for t in times))
sys.exit(code)
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
    await asyncio.sleep(3)  # idle: the background work (warm-up, folder checks) settles
    rss = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    print(rss)
with loop:
    loop.run_until_complete(main())
    starter.window.close()
    loop.run_until_complete(starter.finish())
"""


def run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args} exited {done.returncode}: {done.stderr[-2000:]}")
    return elapsed, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cairn-startup-"))
    data = root / "data"
    counts = build(data, root / "folders", random.Random(7))
    print(f"data: {counts}")
    env = dict(os.environ, QT_QPA_PLATFORM=os.environ.get("QT_QPA_PLATFORM", "offscreen"),
               CAIRN_DATA_DIR=str(data), CAIRN_FIRST_USE_DIR=str(root / "first-use"),
               PYTHONPATH=str(ROOT))
    # As a person's Python runs (and the installers' bundles): with compiled bytecode.  Some
    # development machines set PYTHONDONTWRITEBYTECODE, which makes every start recompile
    # every module; the warm-up runs below write the .pyc files for both sides.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    bare_args = [sys.executable, "-c", BARE]
    cairn_args = [sys.executable, "-c", CAIRN]
    whole_args = [sys.executable, "-m", "ui.main", "--exit-after-first-paint"]
    for warm in (bare_args, cairn_args, whole_args):  # file cache and bytecode, for all alike
        run(warm, env)
    bare, first, filled, whole = [], [], [], []
    for _ in range(args.runs):  # interleaved: the machine's noise hits both alike
        bare.append(float(run(bare_args, env)[1]))
        painted, ready = (float(x) for x in run(cairn_args, env)[1].split())
        first.append(painted)
        filled.append(ready)
        whole.append(run(whole_args, env)[0])
    b = statistics.median(bare)
    print(f"bare PySide6 window, first paint:   median {b * 1000:.0f} ms (min {min(bare) * 1000:.0f})")
    print(f"Cairn, first paint:                 median {statistics.median(first) * 1000:.0f} ms "
          f"-> {statistics.median(first) / b:.2f}x the bare window (target 1.5x)")
    print(f"Cairn, filled in (sidebar on data): median {statistics.median(filled) * 1000:.0f} ms "
          f"-> {statistics.median(filled) / b:.2f}x")
    print(f"cairn --exit-after-first-paint, whole process: median "
          f"{statistics.median(whole) * 1000:.0f} ms, every exit code 0")
    idle = subprocess.run([sys.executable, "-c", IDLE.format(root=str(ROOT))], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    if idle.returncode != 0:
        raise SystemExit(f"idle run exited {idle.returncode}: {idle.stderr[-2000:]}")
    print(f"idle memory with that data: {idle.stdout.strip()} MB RSS (target 200 MB)")


if __name__ == "__main__":
    main()
