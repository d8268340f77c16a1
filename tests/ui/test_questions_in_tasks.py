"""No question asked from inside a task runs an event loop of its own, and
a background job whose run died is started again rather than staying "busy".

After a blocking "Replace the file?" inside the export's task, asyncio refused every other
task that came due while it was open (``RuntimeError: Cannot enter into task``): the catch-up
with other processes and the CAIRN.md watcher died with their busy flags set, and the window
stopped following outside changes until restarted.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

from PySide6.QtWidgets import QApplication, QMessageBox

from tests.ui.helpers import run, wait_for

UI = Path(__file__).resolve().parents[2] / "ui"

# Ways into a modal event loop besides a dialog's exec: Qt's static dialogs.
STATIC_DIALOGS = {
    "QFileDialog": {"getSaveFileName", "getOpenFileName", "getOpenFileNames",
                    "getExistingDirectory", "getOpenFileUrl", "getSaveFileUrl"},
    "QInputDialog": {"getText", "getMultiLineText", "getItem", "getInt", "getDouble"},
    "QMessageBox": {"question", "warning", "information", "critical", "about"},
    "QColorDialog": {"getColor"},
    "QFontDialog": {"getFont"},
}
MODAL_HELPERS = {"confirm", "ask_folder"}  # ui.text.confirm, ui.dialogs.ask_folder: exec


def _modal(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        if func.attr == "exec":
            return "exec"
        if isinstance(func.value, ast.Name) and func.attr in STATIC_DIALOGS.get(func.value.id,
                                                                               ()):
            return f"{func.value.id}.{func.attr}"
    if isinstance(func, ast.Name) and func.id in MODAL_HELPERS:
        return func.id
    return None


def _calls(function: ast.AST) -> list[ast.Call]:
    """The calls *function* makes itself, not awaited (nested functions and lambdas run
    later, elsewhere)."""
    awaited: set[int] = set()
    calls: list[ast.Call] = []

    def visit(node: ast.AST, top: bool = False) -> None:
        if not top and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            awaited.add(id(node.value))
        if isinstance(node, ast.Call) and id(node) not in awaited:
            calls.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(function, top=True)
    return calls


def modal_loops_inside_tasks(source: str, name: str) -> list[str]:
    """Where a coroutine in *source* reaches a modal event loop without awaiting: directly, or
    through its class's methods and hooks (``self.ask_x = self._ask_x``) or the module's
    functions.  Each as ``file:line coroutine -> … -> the modal call``."""
    tree = ast.parse(source)
    found: list[str] = []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        functions = {n.name: n for n in scope.body
                     if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        hooks: dict[str, str] = {}
        for function in functions.values():
            for node in ast.walk(function):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) \
                        and isinstance(node.value, ast.Attribute) \
                        and isinstance(node.value.value, ast.Name) \
                        and node.value.value.id == "self":
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute):
                            hooks[target.attr] = node.value.attr

        def callee(call: ast.Call, scope: ast.AST = scope,
                   hooks: dict[str, str] = hooks) -> str | None:
            func = call.func
            if scope is tree and isinstance(func, ast.Name):
                return func.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                    and func.value.id == "self":
                return hooks.get(func.attr, func.attr)
            return None

        def chain(call: ast.Call, seen: frozenset[str],
                  functions: dict[str, ast.AST] = functions) -> list[str] | None:
            modal = _modal(call)
            if modal is not None:
                return [f"{modal} (line {call.lineno})"]
            name_ = callee(call)
            function = functions.get(name_) if name_ else None
            if function is None or isinstance(function, ast.AsyncFunctionDef) or name_ in seen:
                return None
            for inner in _calls(function):
                rest = chain(inner, seen | {name_})
                if rest:
                    return [name_, *rest]
            return None

        for function in functions.values():
            if isinstance(function, ast.AsyncFunctionDef):
                for call in _calls(function):
                    path = chain(call, frozenset())
                    if path:
                        found.append(f"{name}:{call.lineno} {function.name} -> "
                                     + " -> ".join(path))
    return found


def test_no_coroutine_in_the_window_runs_a_modal_loop():
    """Every question asked inside a task awaits ``ui.text.answered``: read from the code,
    since the widget tests replace most questions with answers."""
    found = [hit for path in sorted(UI.rglob("*.py"))
             for hit in modal_loops_inside_tasks(path.read_text(encoding="utf-8"),
                                                 str(path.relative_to(UI.parent)))]
    assert found == []


def test_the_reading_finds_a_question_asked_through_a_hook():
    """The reading itself: a blocking question reached through a hook, from a coroutine."""
    source = '''
class Flows:
    def __init__(self):
        self.ask = self._ask
    async def export(self):
        if not self.ask("x"):
            return
    def _ask(self, path):
        return box.exec() == 1
    async def fine(self):
        await answered(box)
'''
    assert modal_loops_inside_tasks(source, "f.py") == [
        "f.py:6 export -> _ask -> exec (line 9)"]


def _the_box(title: str) -> QMessageBox | None:
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, QMessageBox) and widget.isVisible() \
                and widget.windowTitle() == title:
            return widget
    return None


def test_replace_the_file_waits_without_stopping_other_tasks(opened, loop, folders, tmp_path):
    """The real "Replace the file?" (not a test's answer): other tasks go on while it is
    open, it is asked once, No is its default, and Yes replaces the file."""
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    window = opened.window
    sharing = window.sharing
    target = tmp_path / "acme.cairn"
    target.write_text("an older export")
    sharing.ask_export_options = lambda title: (False, False)
    sharing.ask_export_file = lambda title: str(target)
    sharing.export(ws.id)
    wait_for(lambda: _the_box("Replace the file?") is not None)
    box = _the_box("Replace the file?")
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.No)
    # While the question is open, another task still runs to its end.
    other = asyncio.ensure_future(opened.ops.new_chat(workspace_id=ws.id, title="Meanwhile"))
    wait_for(other.done)
    assert other.exception() is None
    box.button(QMessageBox.StandardButton.Yes).click()
    wait_for(lambda: "Exported" in window.notice.label.text())
    assert target.read_bytes() != b"an older export"
    assert _the_box("Replace the file?") is None  # asked once


def test_no_keeps_the_file(opened, loop, folders, tmp_path):
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    sharing = opened.window.sharing
    target = tmp_path / "acme.cairn"
    target.write_text("an older export")
    sharing.ask_export_options = lambda title: (False, False)
    sharing.ask_export_file = lambda title: str(target)
    sharing.export(ws.id)
    wait_for(lambda: _the_box("Replace the file?") is not None)
    _the_box("Replace the file?").button(QMessageBox.StandardButton.No).click()
    wait_for(lambda: not any("_export" in repr(task.get_coro())
                             for task in opened.window._tasks.tasks()))
    assert target.read_text() == "an older export"
    assert "Exported" not in opened.window.notice.label.text()


def test_a_catch_up_that_never_ended_is_started_again(opened, loop):
    """A run whose task was dropped never ends: the catch-up with other processes is started
    again after its patience, instead of staying busy for good."""
    starter = opened
    real_run = starter.ops.run
    calls: list[int] = []
    never = loop.create_future()  # what a dropped task's step looks like from outside

    async def first_never_ends(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            await never
        return await real_run(*args, **kwargs)

    starter.ops.run = first_never_ends
    starter._timer.stop()  # the ticks are this test's
    starter._catching_up = None
    starter._catch_up()
    wait_for(lambda: calls)
    for _ in range(59):
        starter._catch_up()  # waited for: a slow run is not a dead one
    assert len(calls) == 1
    starter._catch_up()  # the 60th tick without an end: given up, started again
    wait_for(lambda: len(calls) >= 2 and not starter._catching_up.busy())


def test_the_cairn_md_watcher_that_never_ended_is_started_again(opened, loop, folders):
    (acme,) = folders("Acme")
    (ws, _), _ = run(opened.ops.add_workspace(acme))
    window = opened.window
    window.select_workspace(ws.id)
    folder_box = window.knowledge.folder
    folder_box.watcher.stop()
    real = opened.ops.watch_knowledge_files
    calls: list[int] = []
    never = loop.create_future()

    async def first_never_ends():
        calls.append(1)
        if len(calls) == 1:
            await never
        return await real()

    opened.ops.watch_knowledge_files = first_never_ends
    folder_box._watch()
    wait_for(lambda: calls)
    for _ in range(60):
        folder_box._watch()
    wait_for(lambda: len(calls) >= 2)
