"""PyInstaller's entry script: the frozen app starts exactly like the `cairn` console script."""

import os
import sys

# Windows gives a windowed exe (Cairn.exe) no standard streams: None. `Cairn.exe workspace list`
# would then die on print(); the null device takes what it writes instead.
# (`cairn` in a terminal is cairn.com, the console entry, whose streams are real.)
for _name in ("stdin", "stdout", "stderr"):
    if getattr(sys, _name) is None:
        setattr(sys, _name, open(os.devnull, "r" if _name == "stdin" else "w", encoding="utf-8"))

from ui.main import _wants_cli, main  # noqa: E402  (imports nothing but the command names)


def _prepare_qt() -> None:
    """What PyInstaller's PySide6 runtime hook does, which the spec leaves out: that hook imports
    QtCore before every start, the command line's too, which must never load Qt. Here Qt's
    plugin path is set for every start (an environment variable costs nothing) and the qt.conf
    that tells Qt where its files are is registered only when the window is going to open."""
    qt = os.path.join(sys._MEIPASS, "PySide6")
    if sys.platform != "win32":
        qt = os.path.join(qt, "Qt")
    os.environ["QT_PLUGIN_PATH"] = os.path.join(qt, "plugins")
    if sys.platform == "win32":  # Qt's DLLs and plugins find their dependencies on PATH
        os.environ["PATH"] = sys._MEIPASS + os.pathsep + os.environ.get("PATH", "")
    if not _wants_cli(sys.argv[1:]):
        from _pyi_rth_utils import qt as pyinstaller_qt  # PyInstaller's own helper, in the bundle

        pyinstaller_qt.create_embedded_qt_conf("PySide6", qt)


if getattr(sys, "frozen", False):
    _prepare_qt()

raise SystemExit(main())
