"""The window's operations: run off the caller's thread, return what changed."""

from __future__ import annotations

import threading

import pytest

from app.errors import Refused
from app.events import ChatAdded, WorkspaceAdded, WorkspaceChanged
from app.ops import Changes, Operations
from app.store.documents import Conflict, Saved


@pytest.fixture
def ops(online):
    return Operations(online)


async def test_an_operation_runs_on_the_writer_and_says_what_changed(ops, folders):
    (root,) = folders("Acme")
    caller = threading.get_ident()
    seen: list[int] = []
    ops.cairn.registry.hub.subscribe(lambda e: seen.append(threading.get_ident()))
    (ws, created), changes = await ops.add_workspace(root)
    assert created and seen and caller not in seen  # the commit happened elsewhere
    assert [e.id for e in changes.of(WorkspaceAdded)] == [ws.id]
    renamed, changes = await ops.rename_workspace(ws.id, "Acme Inc")
    assert renamed.title == "Acme Inc" and changes.of(WorkspaceChanged)
    chat, changes = await ops.new_chat(folder=root)
    assert changes.of(ChatAdded)[0].id == chat.id


async def test_a_refusal_comes_back_as_the_sentence_and_changes_nothing(ops, tmp_path):
    before = list(ops.cairn.registry.workspaces())
    with pytest.raises(Refused, match="path does not exist"):
        await ops.add_workspace(str(tmp_path / "nowhere"))
    assert list(ops.cairn.registry.workspaces()) == before


async def test_another_threads_change_is_not_this_operations(ops, folders):
    (a, b) = folders("A", "B")
    other = threading.Thread(target=lambda: ops.cairn.registry.add_workspace(b))

    def work() -> None:
        ops.cairn.registry.add_workspace(a)
        other.start()
        other.join()

    _, changes = await ops.run(work)
    assert len(changes.of(WorkspaceAdded)) == 1 and isinstance(changes, Changes)


async def test_the_editor_save_meets_a_newer_version_as_a_conflict(ops, workspace):
    saved, _ = await ops.save_knowledge(workspace.id, "## Facts\n- One\n", based_on=0)
    assert isinstance(saved, Saved)
    opened_at = saved.document.version
    ops.cairn.knowledge.save(workspace.id, "## Facts\n- One\n- Two\n", source="rebuild")
    result, _ = await ops.save_knowledge(workspace.id, "## Facts\n- Mine\n", based_on=opened_at)
    assert isinstance(result, Conflict) and "- Two" in result.current.text
    assert (await ops.document(workspace.id)).text.endswith("- Two\n")


async def test_pages_of_messages_and_the_warm_up(ops, workspace):
    chat = ops.cairn.registry.new_chat(folder=workspace.path)
    for n in range(7):
        ops.cairn.chats.append(chat.id, "user", [{"type": "text", "text": f"m{n}"}])
    page = await ops.messages(chat.id, limit=3)
    assert [m.text for m in page] == ["m4", "m5", "m6"]
    older = await ops.messages(chat.id, before=page[0].id, limit=3)
    assert [m.text for m in older] == ["m1", "m2", "m3"]
    await ops.warm_up()
    assert await ops.has_api_key()


async def test_recently_removed_and_restore_as_operations(ops, workspace):
    _, _ = await ops.remove_workspace(workspace.id)
    removed = await ops.removed_workspaces()
    assert workspace.id in [r.id for r in removed]
    restored, changes = await ops.restore_workspace(workspace.id)
    assert restored.id == workspace.id and changes.of(WorkspaceAdded)[0].id == workspace.id
    with pytest.raises(Refused, match="not among the recently removed"):
        await ops.restore_workspace(workspace.id)


async def test_export_and_import_as_operations(ops, workspace, tmp_path):
    from app.events import Reset

    target = tmp_path / "acme.cairn"
    exported, _ = await ops.export_workspace(workspace.id, target)
    assert exported.workspaces == 1 and target.is_file()
    imported, changes = await ops.import_bundle(target, str(tmp_path / "copy"))
    assert imported.workspace.title == workspace.title and changes.of(Reset)
    assert ops.cairn.registry.workspace(imported.workspace.id) is not None
    with pytest.raises(Refused, match="a file is already there"):
        await ops.export_workspace(workspace.id, target)


async def test_the_warm_up_runs_once_off_the_calling_thread(ops, monkeypatch):
    import app.llm.requests  # noqa: PLC0415

    threads: list[threading.Thread] = []
    monkeypatch.setattr(app.llm.requests, "load_sdk",
                        lambda: threads.append(threading.current_thread()))
    await ops.warm_up()
    await ops.warm_up()  # the second waits for the first and does nothing more
    assert len(threads) == 1
    assert threads[0] is not threading.current_thread() and threads[0].daemon


async def test_the_keychain_is_asked_on_a_daemon_thread_not_the_storage_thread(ops, monkeypatch):
    asked: list[threading.Thread] = []

    def api_key() -> str:
        asked.append(threading.current_thread())
        return "sk-ant-x"

    monkeypatch.setattr(ops.cairn.settings, "api_key", api_key)
    assert await ops.api_key() == "sk-ant-x"
    (thread,) = asked
    assert thread.daemon and thread is not threading.current_thread()
    assert not thread.name.startswith(("cairn-storage", "cairn-writer"))
