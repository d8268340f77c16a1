"""The quick loop (``uv run pytest -m "not slow"``) leaves out what tests/slow.py says is
slow; a test named there that was renamed or moved would silently come back into it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.slow import SLOW_TESTS

ROOT = Path(__file__).resolve().parents[2]


def test_every_test_marked_slow_by_name_still_exists():
    missing = []
    for module, names in SLOW_TESTS.items():
        path = ROOT / module
        assert path.is_file(), f"SLOW_TESTS names {module}, which is not there"
        defined = {node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        missing += [f"{module}::{name}" for name in names if name not in defined]
    assert missing == []
