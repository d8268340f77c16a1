"""The tests' own layout (docs/testing.md): test modules never import one another, and each
is named for what it tests."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def modules_of_tests() -> list[Path]:
    """Every test module (the benchmarks are scripts, not tests)."""
    return sorted(p for p in TESTS.rglob("test_*.py") if "benchmarks" not in p.parts)


def imported_names(path: Path) -> list[str]:
    """Every module *path* imports (``from tests.ui import drivers`` gives tests.ui.drivers)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def test_no_test_module_imports_another():
    """Helpers shared by test modules live in tests/helpers.py, tests/ui/helpers.py and the
    window drivers in tests/ui/drivers.py; fixtures in a conftest.py.  A helper imported from
    another test module ties the two together (and a fixture imported so is shadowed and
    collected twice)."""
    found = [f"{path.relative_to(TESTS.parent)}: {name}" for path in modules_of_tests()
             for name in imported_names(path) if is_test_module(name)]
    assert found == []


def test_the_check_finds_an_import_of_a_test_module(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text("from tests.ui.chat.test_view import send\nimport tests.core.cli.test_cli\n"
                      "from tests.ui import drivers\n")
    assert [n for n in imported_names(sample) if is_test_module(n)] == [
        "tests.ui.chat.test_view", "tests.core.cli.test_cli"]


def test_test_modules_are_named_for_what_they_test():
    """Not for a tracker's issue or a review's round: the tracker is not in the repository,
    and a round says nothing of what the tests check."""
    named_after = re.compile(r"(^|_)(issue|round|item|polish_\d|fixes)(_|$)|_\d+$")
    found = [str(p.relative_to(TESTS.parent)) for p in modules_of_tests()
             if named_after.search(p.stem.removeprefix("test_"))]
    assert found == []


def test_the_private_state_the_drivers_read_is_read_nowhere_else():
    """tests/ui/drivers.py reads these once (no public way says them): a test that needs one
    calls the driver (``ChatPanel._anchor`` called on a stand-in ``self`` tests the method
    itself)."""
    private = re.compile(r"(?<!ChatPanel)\.(_draft_for|_chat_id|_workspace_selected|_anchor|"
                         r"_live|_sending)\b")
    found = [f"{path.relative_to(TESTS.parent)}:{n}" for path in modules_of_tests()
             if "ui" in path.parts
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if private.search(line)]
    assert found == []
