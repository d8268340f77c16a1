"""The layers of Cairn's code, as data, and the checks the architecture tests run on them.

Every import counts: at module level, inside functions (lazy) and under ``TYPE_CHECKING``.
docs/ARCHITECTURE.md explains the order; this table is what enforces it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

# Layers, lowest first.  A module may import its own layer and the layers it lists.
VOCABULARY = ("app", "app.errors", "app.events", "app.records", "app.commands")
LAYERS: dict[str, tuple[str, ...]] = {
    "vocabulary": (),
    "base": ("vocabulary",),
    "store": ("vocabulary", "base"),
    "llm": ("vocabulary", "base", "store"),
    "knowledge": ("vocabulary", "base", "store", "llm"),
    "tools": ("vocabulary", "base", "store"),
    "chat": ("vocabulary", "base", "store", "llm", "knowledge", "tools"),
    "sharing": ("vocabulary", "base", "store"),
    "history": ("vocabulary", "base", "store"),
    "composition": ("vocabulary", "base", "store", "llm", "knowledge", "tools", "chat",
                    "sharing", "history"),
    "operations": ("vocabulary", "base", "store", "llm", "knowledge", "tools", "chat",
                   "sharing", "history", "composition"),
    "cli": ("vocabulary", "base", "store", "llm", "knowledge", "tools", "chat", "sharing",
            "history", "composition"),
    "ui": ("vocabulary", "base", "store", "llm", "knowledge", "tools", "chat", "sharing",
           "history", "composition", "operations", "cli"),
}
PACKAGES = {
    "app.base": "base", "app.store": "store", "app.llm": "llm", "app.knowledge": "knowledge",
    "app.tools": "tools", "app.chat": "chat", "app.sharing": "sharing", "app.history": "history",
    "app.cairn": "composition",
    "app.ops": "operations", "app.cli": "cli", "ui": "ui",
}
# Third-party modules only one layer may import.
OWNED = {"anthropic": "llm", "httpx": "llm", "sqlite3": None, "mcp": "tools", "mcp_types": "tools",
         "ijson": "history",
         "httpx2": "tools"}
FORBIDDEN_IN_CORE = ("PySide6", "qasync", "shiboken6")
SQLITE_LAYERS = ("base", "store")  # the database and the store: the only code with SQL
TOP_LEVEL_MODULES_AT_MOST = 10


def layer_of(module: str) -> str | None:
    if module in VOCABULARY:
        return "vocabulary"
    best = None
    for prefix, layer in PACKAGES.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    return best[1] if best else None


def modules(root: Path, packages: Iterable[str] = ("app", "ui")) -> dict[str, Path]:
    found = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imports_of(name: str, path: Path, known: Mapping[str, Path]) -> set[str]:
    """Every module *name* imports, wherever the statement stands; third-party ones by their
    top-level name."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(_known_prefix(alias.name, known))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known]
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(_known_prefix(target, known))
    found.discard(name)
    return found


def _known_prefix(module: str, known: Mapping[str, Path]) -> str:
    """The longest project module *module* names, or its top-level name for a third party."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return parts[0]


def graph(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports_of(name, path, known) for name, path in known.items()}


def back_arrows(edges: Mapping[str, set[str]]) -> list[str]:
    """Imports that go against the layer order, or to a third party another layer owns."""
    problems = []
    for source, targets in sorted(edges.items()):
        here = layer_of(source)
        if here is None:
            problems.append(f"{source}: in no layer")
            continue
        for target in sorted(targets):
            there = layer_of(target)
            if there is None:
                owner = OWNED.get(target, "anyone")
                if target == "sqlite3" and here not in SQLITE_LAYERS:
                    problems.append(f"{source} -> sqlite3 (only {', '.join(SQLITE_LAYERS)})")
                elif owner not in ("anyone", None) and owner != here:
                    problems.append(f"{source} -> {target} (only the {owner} layer)")
                continue
            if there != here and there not in LAYERS[here]:
                problems.append(f"{source} ({here}) -> {target} ({there})")
    return problems


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in edges:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


SQL = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE ", "PRAGMA ", "BEGIN")


def sql_outside_store(root: Path) -> list[str]:
    """String constants that read as SQL in a module outside base and store."""
    found = []
    for name, path in sorted(modules(root).items()):
        if layer_of(name) in SQLITE_LAYERS:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.lstrip().startswith(SQL)):
                found.append(f"{name}:{node.lineno}: {node.value.strip()[:40]}")
    return found
