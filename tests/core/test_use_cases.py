"""Each use case written once, in the core: the command line and the window's
operations call the same function and say the same thing — knowledge status, "Retry now",
"Keep mine", the safe save of a description and instructions, the file manifest's scope,
and a pasted image's name."""

from __future__ import annotations

import re

import pytest

from app.errors import Refused
from app.events import WorkspaceChanged
from app.knowledge.status import owner_knowledge
from app.ops import Operations
from app.store.documents import PERSONAL, Conflict, Saved
from app.store.registry.registry import Registry
from tests.helpers import run as cli
from tests.helpers import run_json

LONG = "Noted: the launch is in April and the accent colour stays orange. " * 2  # qualifies


def exchange(cairn, chat_id: str, text: str = "Our launch is in April.") -> None:
    """A person's message and a reply long enough to be learned, stored as a turn stores
    them (no model needed)."""
    cairn.chats.append(chat_id, "user", [{"type": "text", "text": text}])
    cairn.chats.append(chat_id, "assistant", [{"type": "text", "text": LONG}])


@pytest.fixture
def tree(online, folders):  # type: ignore[no-untyped-def]
    """A project (Acme), its folder (Brand) and a folder inside that (Logos), registered."""
    paths = folders("Acme", "Acme/Brand", "Acme/Brand/Logos")
    reg = online.registry
    project, folder, inner = (reg.add_workspace(path)[0] for path in paths)
    assert reg.parent_of(folder.id) == project.id and reg.parent_of(inner.id) == folder.id
    return project, folder, inner


# ================================================================= knowledge status


async def test_the_command_line_and_the_window_report_the_same_knowledge_status(
        online, tree, capsys):
    project, folder, inner = tree
    reg = online.registry
    in_project = reg.new_chat(folder=project.path)
    in_folder = reg.new_chat(folder=folder.path)
    in_inner = reg.new_chat(folder=inner.path)
    ungrouped = reg.new_chat()
    for chat in (in_project, in_folder, in_inner, ungrouped):
        exchange(online, chat.id)
    exchange(online, in_folder.id, "And the colour is orange.")  # two waiting there
    note = "1 suggestion could not be applied: an update dropped '2027-04-15'."
    with reg.db.write() as conn:  # a failure of the project's, a note beside the folder's success
        conn.executemany(
            "INSERT INTO knowledge_status (owner, last_success, last_error, last_error_at)"
            " VALUES (?, ?, ?, ?)",
            [(project.id, None, "Cannot reach the server.", "2026-11-30T10:00:00.000Z"),
             (folder.id, "2026-11-30T09:00:00.000Z", note, None)])
    ops = Operations(online)
    owners = (project.id, folder.id, inner.id, PERSONAL)
    window: dict = {}

    async def look() -> None:
        for owner in owners:
            window[owner] = await ops.knowledge_status(owner)

    def said(owner: str) -> dict:
        """``cairn knowledge status OWNER --json``, checked against the window's state."""
        printed = run_json(capsys, "knowledge", "status", owner)
        state = window[owner]
        assert printed == {"owner": owner, "last_success": state.learned_at,
                           "last_error": state.failure, "pending_exchanges": state.waiting,
                           "unapplied": state.unapplied,
                       "suggestions": [s.to_json() for s in state.suggestions]}
        return printed

    await look()
    # A project learns from every chat below it, a folder from its own chats (a folder
    # between a chat and its project is read by the rebuild, never written), personal
    # memory from every chat.
    assert said(project.id)["pending_exchanges"] == 4
    assert said(folder.id)["pending_exchanges"] == 2
    assert said(inner.id)["pending_exchanges"] == 1
    assert said(PERSONAL)["pending_exchanges"] == 5
    assert set(window[project.id].chats) == {in_project.id, in_folder.id, in_inner.id}
    assert said(project.id)["last_error"] == "Cannot reach the server."
    assert said(folder.id)["unapplied"] == note and said(folder.id)["last_error"] is None
    assert said(folder.id)["last_success"] == "2026-11-30T09:00:00.000Z"
    assert owner_knowledge(reg, online.rebuilder, project.id) == window[project.id]

    # The text form says the same count.
    code, out, _ = cli(capsys, "knowledge", "status", project.id)
    assert code == 0 and "4 exchanges waiting for a rebuild." in out

    # An archived chat's exchanges are still learned: they still wait.
    reg.archive_chat(in_project.id)
    await look()
    assert said(project.id)["pending_exchanges"] == 4

    # With the Memory switch off no rebuild writes personal memory: nothing waits for it.
    online.settings.set("memory.enabled", False)
    await look()
    assert said(PERSONAL)["pending_exchanges"] == 0
    assert said(project.id)["pending_exchanges"] == 4
    # `memory show` and `knowledge show` carry the same state.
    assert run_json(capsys, "memory", "show")["rebuild"] == window[PERSONAL].to_json()
    assert run_json(capsys, "knowledge", "show", folder.id)["rebuild"] == \
        window[folder.id].to_json()


async def test_retry_now_rebuilds_the_chats_the_status_counts(online, tree, monkeypatch):
    project, folder, inner = tree
    reg = online.registry
    in_folder = reg.new_chat(folder=folder.path)
    in_inner = reg.new_chat(folder=inner.path)
    quiet = reg.new_chat(folder=project.path)  # nothing new in it
    for chat in (in_folder, in_inner):
        exchange(online, chat.id)
    ran: list[str] = []
    monkeypatch.setattr(online.scheduler, "run_now", lambda chat_id: ran.append(chat_id))
    ops = Operations(online)
    for owner, expected in ((project.id, {in_folder.id, in_inner.id}),
                            (folder.id, {in_folder.id}), (inner.id, {in_inner.id})):
        ran.clear()
        state = await ops.knowledge_status(owner)
        assert await ops.retry_knowledge(owner) == len(expected)
        assert set(ran) == expected == set(state.chats)
        ran.clear()
        assert await online.scheduler.retry(owner) == len(expected)  # the core, directly
        assert set(ran) == expected
    assert quiet.id not in ran


# ================================================================= keep mine


async def test_keep_mine_is_the_stores_use_case_and_the_operation_only_schedules_it(
        online, workspace, monkeypatch):
    import time

    reg, store = online.registry, online.knowledge
    chat = reg.new_chat(folder=workspace.path)
    ws = workspace.id
    store.save(ws, "## Facts\n", source="user")  # version 1: the person opens it
    exchange(online, chat.id)
    time.sleep(0.005)  # the rebuild's result is stored after what it learned
    store.save(ws, "## Facts\n- Launch in April\n", source="rebuild", chat_id=chat.id)  # 2
    ran: list[str] = []
    monkeypatch.setattr(online.scheduler, "run_now", lambda chat_id: ran.append(chat_id))
    kept: list[tuple] = []
    real = type(store).keep_mine

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        kept.append(real(self, *args, **kwargs))
        return kept[-1]

    monkeypatch.setattr(type(store), "keep_mine", spy)
    result, _ = await Operations(online).keep_knowledge(ws, "## Facts\n- Mine\n", based_on=2,
                                                        opened_at=1)
    assert isinstance(result, Saved) and result.document.version == 3
    assert kept == [(result, (chat.id,))] and ran == [chat.id]
    # On a version that moved on again: a conflict, nothing rewound, nothing scheduled.
    ran.clear()
    stale, relearn = store.keep_mine(ws, "## Facts\n- Other\n", based_on=2, opened_at=1)
    assert isinstance(stale, Conflict) and relearn == () and ran == []


# ================================================================= description and instructions


async def test_the_cli_and_the_editor_save_description_and_instructions_the_same_way(
        online, workspace, capsys, monkeypatch):
    calls: list[dict] = []
    real = Registry.save_description_and_instructions

    def spy(self, ws_id, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(kwargs)
        return real(self, ws_id, **kwargs)

    monkeypatch.setattr(Registry, "save_description_and_instructions", spy)
    ops = Operations(online)
    saved, changes = await ops.save_instructions(
        workspace.id, description="Analytics", instructions="Formal tone", expected=("", ""))
    assert (saved.description, saved.instructions) == ("Analytics", "Formal tone")
    assert changes.of(WorkspaceChanged)
    shown = run_json(capsys, "workspace", "set", workspace.id, "--instructions", "Short answers")
    assert len(calls) == 2  # one use case, two callers
    assert calls[1] == {"description": None, "instructions": "Short answers"}
    assert (shown["description"], shown["instructions"]) == ("Analytics", "Short answers")
    # The editor opened before the command line's save: its save is refused, nothing written.
    online.registry.sync()  # the window caught up with the other process (its focus returned)
    stale, changes = await ops.save_instructions(
        workspace.id, description="Analytics", instructions="Long answers",
        expected=("Analytics", "Formal tone"))
    assert stale is None and not changes
    assert run_json(capsys, "workspace", "show", workspace.id)["instructions"] == "Short answers"
    # A save of what is already stored is no conflict.
    same, _ = await ops.save_instructions(
        workspace.id, description="Analytics", instructions="Short answers",
        expected=("", ""))
    assert same is not None and same.instructions == "Short answers"
    # The build status still goes with the texts on the command line.
    shown = run_json(capsys, "workspace", "set", workspace.id, "--description", "Data",
                     "--status", "building")
    assert (shown["description"], shown["instructions"], shown["build_status"]) == \
        ("Data", "Short answers", "building")


# ================================================================= the file manifest


async def test_the_file_list_and_the_knowledge_panel_give_each_file_the_same_scope(
        online, tree, capsys, tmp_path):
    project, folder, inner = tree
    sources = {}
    for name in ("brief.md", "palette.md", "logo.md"):
        sources[name] = tmp_path / name
        sources[name].write_text(f"# {name}\n")
    added = {}
    for ws, name in ((project, "brief.md"), (folder, "palette.md"), (inner, "logo.md")):
        added[name] = run_json(capsys, "files", "add", ws.id, str(sources[name]))
    ops = Operations(online)
    panel = {}
    for ws in (project, folder, inner):
        for record, line in await ops.manifest(ws.id):
            assert record.workspace_id == ws.id  # a workspace's own files
            panel[record.name] = re.search(r", (\w+)\)", line).group(1)
    assert panel == {"brief.md": "project", "palette.md": "folder", "logo.md": "folder"}
    assert {name: data["scope"] for name, data in added.items()} == panel
    listed = run_json(capsys, "files", "list", inner.id)  # what a chat in Logos sees
    assert [(f["name"], f["scope"]) for f in listed] == [
        ("brief.md", "project"), ("palette.md", "folder"), ("logo.md", "folder")]
    assert [(f["name"], f["scope"]) for f in run_json(capsys, "files", "list", project.id)] \
        == [("brief.md", "project")]


# ================================================================= a pasted image


async def test_a_pasted_image_is_named_by_the_file_store(online):
    ops = Operations(online)
    first = await ops.keep_pasted_image(b"\x89PNG first")
    second = await ops.keep_pasted_image(b"\x89PNG second")
    third = online.files.keep_pasted_image(b"\x89PNG third")  # the core, directly
    assert first.parent == online.registry.db.path.parent / "pasted"
    assert re.fullmatch(r"Pasted image \d{4}-\d\d-\d\d \d\d\.\d\d\.\d\d\.png", first.name)
    for path, data in ((first, b"\x89PNG first"), (second, b"\x89PNG second"),
                       (third, b"\x89PNG third")):
        assert path.read_bytes() == data  # a paste in the same second never overwrites one
    assert len({first, second, third}) == 3
    with pytest.raises(Refused, match=r"^cannot keep the pasted image: '/\.\./x' is not a file "
                                      r"name extension such as \.png$"):
        await ops.keep_pasted_image(b"x", "/../x")
