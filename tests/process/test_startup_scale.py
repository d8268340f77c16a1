"""The window starts and quits cleanly on the benchmark's data: 1,000 workspaces, 50,000 chats.

With PySide6-Essentials 6.12.0 (a reference to ``None`` lost per void Qt call, see
tests/process/test_qt_binding.py) this aborted with SIGABRT every time; small data never showed it.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from tests.scale_data import CHATS, WORKSPACES, build

ROOT = Path(__file__).resolve().parents[2]


def test_exit_after_first_paint_on_a_thousand_workspaces_and_fifty_thousand_chats(
    isolated: Path, tmp_path: Path
) -> None:
    from app.store.registry.registry import Registry

    build(isolated, tmp_path / "folders", random.Random(1))
    registry = Registry.open(isolated)  # the start-up check accepts the data
    try:
        assert len(registry.workspaces()) == WORKSPACES
        listing = registry.chat_listing()
        shown = (sum(len(chats) for _, chats in listing.workspaces) + len(listing.ungrouped)
                 + len(listing.archived))
        assert shown == CHATS
    finally:
        registry.close()

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")  # CAIRN_DATA_DIR is the test's folder
    done = subprocess.run([sys.executable, "-m", "ui.main", "--exit-after-first-paint"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        raise AssertionError(f"the window was killed by {name} at {WORKSPACES:,} workspaces and "
                             f"{CHATS:,} chats:\n{done.stderr[-2000:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Fatal Python error" not in done.stderr, done.stderr[-2000:]
