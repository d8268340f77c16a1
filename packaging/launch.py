"""PyInstaller's entry script: the frozen app starts exactly like the `cairn` console script."""

import os
import sys

# Windows gives a windowed exe (Cairn.exe) no standard streams: None. `Cairn.exe workspace list`
# would then die on print(); the null device takes what it writes instead.
# (`cairn` in a terminal is cairn.com, the console entry, whose streams are real.)
for _name in ("stdin", "stdout", "stderr"):
    if getattr(sys, _name) is None:
        setattr(sys, _name, open(os.devnull, "r" if _name == "stdin" else "w", encoding="utf-8"))

from ui.main import main  # noqa: E402

raise SystemExit(main())
