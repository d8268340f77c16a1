"""The Qt binding must not corrupt the interpreter (DESIGN.md §2).

PySide6-Essentials 6.12.0 on CPython 3.11 drops one reference to ``None`` on every Qt call
that returns nothing, and one to ``True`` on every signal emit; after a few thousand void
calls (a few hundred emits) the process dies with ``Fatal Python error: none_dealloc`` (or
``bool_dealloc``), SIGABRT. No ordinary test makes enough calls to notice, so these make
20,000 of each kind the window makes — void calls, item inserts, signal emits to a Python
slot — in a fresh interpreter, and check that the reference counts of ``None``, ``True`` and
``False`` hold and the process exits cleanly. An upgrade of the locked binding that brings
the leak back fails here.

On Python 3.12 and later these singletons are immortal (PEP 683): their counts do not track
references and a lost reference cannot free them, so there only the clean exit is checked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import fresh_python

ROOT = Path(__file__).resolve().parents[2]
CALLS = 20_000
MARGIN = 50  # what a singleton's count may move by for reasons of its own (caches, interning)
SINGLETONS_ARE_MORTAL = sys.version_info < (3, 12)

# One kind of call per process, so a failure names the kind that leaks. The script prints the
# drifts after the first 100 calls (before a leaking binding has aborted) and after all of them.
SCRIPT = """
import sys
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QApplication, QLabel

kind, calls = sys.argv[1], int(sys.argv[2])
app = QApplication([])

if kind == "void-call":
    label = QLabel()
    def call(i):
        label.setText("x")
elif kind == "item-insert":
    model = QStandardItemModel()
    def call(i):
        model.appendRow(QStandardItem("x"))
elif kind == "signal-emit":
    class Source(QObject):
        changed = Signal(int)
    source = Source()
    received = []
    source.changed.connect(received.append)
    def call(i):
        source.changed.emit(i)
else:
    raise SystemExit("unknown kind " + kind)

def counts():
    return [sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False)]

def drift(before):
    return " ".join(str(now - then) for now, then in zip(counts(), before))

before = counts()
for i in range(calls):
    call(i)
    if i == 99:
        print("after 100:", drift(before), flush=True)
print("after all:", drift(before), flush=True)
if kind == "signal-emit" and len(received) != calls:
    raise SystemExit(f"the slot ran {len(received)} times, not {calls}")
"""


SINGLETONS = ("None", "True", "False")


def drifts(stdout: str) -> dict[str, dict[str, int]]:
    """{"after 100": {"None": d, "True": d, "False": d}, "after all": {…}} from the output."""
    found = {}
    for line in stdout.splitlines():
        name, _, values = line.partition(":")
        if name in ("after 100", "after all"):
            found[name] = dict(zip(SINGLETONS, map(int, values.split())))
    return found


@pytest.mark.parametrize("kind", ["void-call", "item-insert", "signal-emit"])
def test_many_qt_calls_keep_none_alive_and_exit_cleanly(kind: str) -> None:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    done = subprocess.run([sys.executable, "-c", SCRIPT, kind, str(CALLS)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    import PySide6

    where = (f"PySide6-Essentials {PySide6.__version__} on Python "
             f"{sys.version.split()[0]}, {CALLS:,} × {kind}")
    seen = drifts(done.stdout)
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        pytest.fail(f"{where}: the interpreter was killed by {name} (refcount drifts "
                    f"{seen or 'not reached'}); the Qt binding corrupts reference counts — "
                    f"constrain it in pyproject.toml.\n{done.stderr[-2000:]}")
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert "Fatal Python error" not in done.stderr, f"{where}:\n{done.stderr[-2000:]}"
    assert set(seen) == {"after 100", "after all"}, done.stdout
    if SINGLETONS_ARE_MORTAL:
        for name in SINGLETONS:
            assert seen["after all"][name] >= -MARGIN, (
                f"{where}: {name}'s refcount fell by {-seen['after all'][name]:,} "
                f"({-seen['after 100'][name]:,} after the first 100 calls); the binding drops "
                f"a reference per call and will abort the process — constrain it in "
                f"pyproject.toml")


def test_modules_imported_after_qt_are_not_read_for_its_feature_switches():
    """PySide6's import hook reads every later module's source and keeps it in ``linecache``
    (~9 MB, ~20-40 ms of a start) for switches Cairn never uses (ui/pyside_hook.py): the
    window's modules, imported as ``cairn`` imports them, leave none of their sources held."""
    code = ("import ui.app, ui.window, ui.sidebar.view, linecache, sys, shibokensupport.feature"
            " as f; print(f._mod_uses_pyside.__module__); print('\\n'.join(linecache.cache))")
    hook, *held = fresh_python(code, QT_QPA_PLATFORM="offscreen").split("\n")
    assert hook == "ui.pyside_hook"
    ours = [f for f in held if f.startswith((str(ROOT / "app"), str(ROOT / "ui")))]
    assert ours == [str(ROOT / "ui" / "pyside_hook.py")]  # (imported before the hook is set)
