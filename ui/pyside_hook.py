"""PySide6's import hook, kept from reading every module's source.

Once PySide6 is imported, every later import passes through its hook, which reads the new
module's source (``inspect.getsource``: the whole file, then kept in ``linecache`` for the
life of the process) to learn whether the module mentions PySide6.  The answer serves
PySide6's opt-in ``from __feature__ import snake_case, true_property`` switches, which Cairn
never uses.  Measured here: ~250 modules read before the window is filled in, ~20-40 ms of the
start and ~9 MB held for good.

A module whose source cannot be read is taken as not using PySide6: that is every module of
the installers' bundles (compiled code only).  :func:`read_no_sources` gives every module that
answer, so a start from source behaves as the bundle does, without the reading.  (The answer
only matters once some module selects a feature: then a module taken as not using PySide6
keeps whatever selection was made last.  No module Cairn runs selects one.)
"""

from __future__ import annotations

import sys


def read_no_sources() -> None:
    """Call right after ``import PySide6`` (the package: shiboken and its hook), before any
    Qt module, so that no later import pays for the reading.  Does nothing on a PySide6
    whose hook is made otherwise."""
    feature = sys.modules.get("shibokensupport.feature")
    if feature is not None and callable(getattr(feature, "_mod_uses_pyside", None)):
        feature._mod_uses_pyside = _uses_no_switches  # type: ignore[attr-defined]


def _uses_no_switches(module: object) -> bool:
    return False
