"""The layers hold: the core never imports Qt, no import goes against the order of
docs/ARCHITECTURE.md, no module imports itself round a cycle, SQL stays in the store."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.architecture import (
    FORBIDDEN_IN_CORE,
    TOP_LEVEL_MODULES_AT_MOST,
    back_arrows,
    cycles,
    graph,
    layer_of,
    modules,
    sql_outside_store,
)

ROOT = Path(__file__).resolve().parents[2]


def test_no_import_goes_against_the_layers() -> None:
    assert back_arrows(graph(ROOT)) == []


def test_no_import_cycle_in_app_or_ui() -> None:
    assert cycles(graph(ROOT)) == []


def test_every_module_has_a_layer_and_the_top_level_stays_small() -> None:
    names = modules(ROOT)
    assert [n for n in names if layer_of(n) is None] == []
    top = [n for n in names if n.count(".") == 1 and n.startswith("app.")
           and not (ROOT / n.replace(".", "/")).is_dir()]
    assert len(top) + 1 <= TOP_LEVEL_MODULES_AT_MOST, top  # + app/__init__.py


def test_sql_stays_in_base_and_store() -> None:
    assert sql_outside_store(ROOT) == []


def test_no_qt_import_in_app_sources() -> None:
    edges = graph(ROOT)
    offenders = [f"{source} -> {target}" for source, targets in edges.items()
                 if source.startswith("app") for target in targets
                 if target in FORBIDDEN_IN_CORE]
    assert offenders == []


def test_importing_every_core_module_loads_no_qt() -> None:
    names = sorted(n for n in modules(ROOT, ("app",)))
    probe = (
        "import importlib, sys\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN_IN_CORE!r}))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
    assert len(names) >= 40  # the probe really imported the core


# ----------------------------------------------------------------- the checks themselves


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for package in ("app", "ui"):
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").touch()
    return root


def test_a_back_arrow_is_caught_even_inside_a_function_or_for_the_type_checker(tmp_path):
    root = _tree(tmp_path, {
        "app/store/__init__.py": "",
        "app/store/registry.py": "def f():\n    from app.chat.engine import Engine\n",
        "app/store/files.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from app.llm.client import Client\n",
        "app/chat/__init__.py": "",
        "app/chat/engine.py": "from app.store import registry\n",
        "app/llm/__init__.py": "",
        "app/llm/client.py": "import anthropic\n",
        "app/knowledge/__init__.py": "",
        "app/knowledge/rebuild.py": "import anthropic\n",
        "ui/panel.py": "import sqlite3\n",
    })
    problems = back_arrows(graph(root))
    assert problems == [
        "app.knowledge.rebuild -> anthropic (only the llm layer)",
        "app.store.files (store) -> app.llm.client (llm)",
        "app.store.registry (store) -> app.chat.engine (chat)",
        "ui.panel -> sqlite3 (only base, store)",
    ]


def test_a_cycle_is_caught_through_a_lazy_import(tmp_path):
    root = _tree(tmp_path, {
        "app/chat/__init__.py": "",
        "app/chat/engine.py": "from app.chat.turn import Turn\n",
        "app/chat/turn.py": "def run():\n    from app.chat import engine\n",
        "app/chat/context.py": "from app.chat.turn import Turn\n",
    })
    assert cycles(graph(root)) == [["app.chat.engine", "app.chat.turn"]]


def test_sql_outside_the_store_is_caught(tmp_path):
    root = _tree(tmp_path, {
        "app/knowledge/__init__.py": "",
        "app/knowledge/status.py": 'Q = "SELECT last_success FROM knowledge_status"\n',
        "app/store/__init__.py": "",
        "app/store/documents.py": 'Q = "SELECT last_success FROM knowledge_status"\n',
    })
    assert sql_outside_store(root) == ["app.knowledge.status:1: SELECT last_success FROM knowledge_statu"]
