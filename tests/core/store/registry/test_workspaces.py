"""Spec 004 "The workspace list" and "Which folders can become a workspace", plus nesting,
build status and removal."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from app.errors import Refused


def ids(registry) -> list[str]:
    return [ws.id for ws in registry.workspaces()]


# ------------------------------------------------------------------ the list


def test_list_survives_restart_in_its_order(registry, open_registry, folders):
    a, b, c = folders("a", "b", "c")
    wa, _ = registry.add_workspace(a)
    wb, _ = registry.add_workspace(b)
    wc, _ = registry.add_workspace(c, at_end=True)
    assert ids(registry) == [wb.id, wa.id, wc.id]  # new leads; `end` goes last
    registry.close()
    again = open_registry()
    assert ids(again) == [wb.id, wa.id, wc.id]
    assert [ws.title for ws in again.workspaces()] == ["b", "a", "c"]


def test_title_defaults_to_final_segment_and_may_repeat(registry, folders):
    one, two = folders("x/Notes", "y/Notes")
    w1, _ = registry.add_workspace(one)
    w2, _ = registry.add_workspace(two)
    assert w1.title == w2.title == "Notes"
    assert w1.id != w2.id


def test_root_keeps_its_spelling(registry):
    ws, _ = registry.add_workspace("/")
    assert ws.path == "/" and ws.title == "/"


def test_id_is_generated_never_the_path(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    assert ws.id.startswith("ws_") and "Acme" not in ws.id and path not in ws.id


def test_rename_changes_title_only(registry, open_registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    renamed = registry.rename_workspace(ws.id, "  Acme   Inc ")
    assert (renamed.id, renamed.path, renamed.title) == (ws.id, ws.path, "Acme Inc")
    assert renamed.created_at == ws.created_at and renamed.updated_at >= ws.updated_at
    registry.close()
    assert open_registry().workspace(ws.id).title == "Acme Inc"


def test_rename_refusals(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    with pytest.raises(Refused, match=rf"^cannot rename workspace '{ws.title}': the title is empty$"):
        registry.rename_workspace(ws.id, "   ")
    with pytest.raises(Refused, match=r"^cannot rename workspace 'ws_nope': no such workspace$"):
        registry.rename_workspace("ws_nope", "x")
    assert registry.workspace(ws.id).title == "Acme"


def test_refusals_name_a_workspace_and_a_chat_by_title_never_by_id(registry, folders):
    """The sentences a person reads say 'Thesis', not 'ws_…'."""
    from app.base.titles import MAX_DESCRIPTION

    thesis, other = folders("Thesis", "Other")
    ws, _ = registry.add_workspace(thesis)
    taken, _ = registry.add_workspace(other)
    chat = registry.new_chat(folder=thesis, title="Draft")
    registry.update_workspace(ws.id, build_status="shipped")
    said: list[str] = []
    for attempt in (lambda: registry.rename_workspace(ws.id, " "),
                    lambda: registry.rename_workspace(ws.id, "\u200b"),
                    lambda: registry.advance_workspace(ws.id),
                    lambda: registry.update_workspace(ws.id, build_status="done"),
                    lambda: registry.update_workspace(ws.id, description="x" * (MAX_DESCRIPTION + 1)),
                    lambda: registry.move_to_folder(ws.id, other),
                    lambda: registry.rename_chat(chat.id, "")):
        with pytest.raises(Refused) as refused:
            attempt()
        said.append(str(refused.value))
    assert all("'Thesis'" in s or "'Draft'" in s for s in said), said
    assert not [s for s in said if ws.id in s or chat.id in s or taken.id in s], said
    shutil.rmtree(thesis)
    registry.refresh_status()
    with pytest.raises(Refused) as refused:
        registry.move_to_folder(ws.id, other)
    assert str(refused.value) == (f"cannot move workspace 'Thesis' to '{other}': that folder is "
                                  "already the workspace 'Other'")


# ------------------------------------------------------------------ which folders qualify


@pytest.mark.parametrize("path", [".", "work", "Acme/Brand", "./x", "../x", ""])
def test_relative_paths_are_refused_with_nothing_created(registry, path):
    with pytest.raises(Refused) as refused:
        registry.add_workspace(path)
    assert str(refused.value) == f"Workspace path is not fully qualified: '{path}'"
    assert registry.workspaces() == []


def test_missing_path_refused(registry, tmp_path):
    missing = str(tmp_path / "gone")
    with pytest.raises(Refused) as refused:
        registry.add_workspace(missing)
    assert str(refused.value) == f"cannot create a workspace at '{missing}': path does not exist"
    assert registry.workspaces() == []


def test_file_refused_with_canonical_path(registry, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "notes.txt").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "alias")
    given = str(tmp_path / "alias" / "notes.txt")
    with pytest.raises(Refused) as refused:
        registry.add_workspace(given)
    canonical = str(tmp_path / "real" / "notes.txt")
    assert str(refused.value) == f"cannot create a workspace at '{canonical}': path is not a directory"
    assert registry.workspaces() == []


def test_existing_folder_returns_existing_workspace_unchanged(registry, folders):
    (path,) = folders("Acme")
    ws, created = registry.add_workspace(path)
    registry.rename_workspace(ws.id, "Acme Inc")
    again, created_again = registry.add_workspace(path, at_end=True)
    assert created and not created_again
    assert again.id == ws.id and again.title == "Acme Inc"
    assert ids(registry) == [ws.id]


def test_aliases_return_the_same_workspace(registry, folders, tmp_path):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    link = tmp_path / "link-to-acme"
    os.symlink(path, link)
    for alias in (str(link), path + "/", path + "//", f"{path}/../Acme", str(link) + "/."):
        found, created = registry.add_workspace(alias)
        assert (found.id, created) == (ws.id, False), alias
    assert len(registry.workspaces()) == 1


def test_identity_catches_an_alias_the_key_misses(registry, folders, monkeypatch):
    """A bind mount (or a case alias on a volume the key did not fold) is the same inode."""
    from app.base import paths

    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    real = paths.resolve_folder

    def aliased(p: str) -> paths.Folder:
        folder = real(p)
        return paths.Folder(folder.canonical + "-alias-spelling", "other-key", folder.identity)

    monkeypatch.setattr(paths, "resolve_folder", aliased)
    found, created = registry.add_workspace(path)
    assert (found.id, created) == (ws.id, False)


def test_stored_path_is_canonical_and_never_rewritten(registry, open_registry, folders, tmp_path):
    (path,) = folders("real/Acme")
    link = tmp_path / "shortcut"
    os.symlink(Path(path).parent, link)
    ws, _ = registry.add_workspace(f"{link}/Acme/")
    assert ws.path == path and ws.status == "ok"
    shutil.rmtree(path)
    registry.close()
    again = open_registry()
    gone = again.workspace(ws.id)
    assert gone.path == path and gone.status == "missing-dir"
    Path(path).mkdir()
    again.refresh_status()
    assert again.workspace(ws.id).status == "ok"


# ------------------------------------------------------------------ nesting


def test_nesting_by_path_and_lifting_on_removal(registry, folders):
    acme, brand, logo, other = folders("Acme", "Acme/Brand", "Acme/Brand/Logo", "Acme2")
    w_logo, _ = registry.add_workspace(logo)  # added before its ancestors: re-parented later
    w_acme, _ = registry.add_workspace(acme)
    w_other, _ = registry.add_workspace(other)  # a sibling whose name extends "Acme"
    assert registry.parent_of(w_logo.id) == w_acme.id
    w_brand, _ = registry.add_workspace(brand)
    assert registry.parent_of(w_logo.id) == w_brand.id
    assert registry.parent_of(w_brand.id) == w_acme.id
    assert registry.parent_of(w_other.id) is None
    assert [ws.id for ws in registry.top_level()] == [w_other.id, w_acme.id]
    assert [ws.id for ws in registry.children(w_acme.id)] == [w_brand.id]
    registry.remove_workspace(w_acme.id)
    assert registry.parent_of(w_brand.id) is None  # lifted to the top level
    assert registry.parent_of(w_logo.id) == w_brand.id
    assert registry.workspace_json(registry.workspace(w_brand.id))["parent"] is None


# ------------------------------------------------------------------ build status and fields


def test_build_status_advance_and_set(registry, open_registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    assert ws.build_status == "idea"
    seen = [registry.advance_workspace(ws.id).build_status for _ in range(3)]
    assert seen == ["planning", "building", "shipped"]
    with pytest.raises(Refused, match=rf"^cannot advance workspace '{ws.title}': it is already shipped$"):
        registry.advance_workspace(ws.id)
    registry.update_workspace(ws.id, build_status="planning", description="Brand work",
                              instructions="Answer in British English.")
    with pytest.raises(Refused, match="the status must be one of idea, planning, building, shipped"):
        registry.update_workspace(ws.id, build_status="done", description="lost?")
    registry.close()
    stored = open_registry().workspace(ws.id)
    assert (stored.build_status, stored.description, stored.instructions) == (
        "planning", "Brand work", "Answer in British English.")


# ------------------------------------------------------------------ removal


def test_removal_touches_only_the_entry(registry, folders):
    (path,) = folders("Acme")
    (Path(path) / "keep.txt").write_text("precious")
    ws, _ = registry.add_workspace(path)
    chat = registry.new_chat(folder=path)
    assert registry.remove_workspace(ws.id) is True
    assert (Path(path) / "keep.txt").read_text() == "precious"
    assert registry.chat(chat.id).workspace_id is None
    assert chat.id in [c.id for c in registry.chat_listing().ungrouped]


def test_re_adding_starts_fresh_without_old_chats(registry, folders):
    (path,) = folders("Acme")
    ws, _ = registry.add_workspace(path)
    old_chat = registry.new_chat(folder=path)
    registry.remove_workspace(ws.id)
    fresh, created = registry.add_workspace(path)
    assert created and fresh.id != ws.id
    assert registry.chats_of(fresh.id) == []
    assert registry.chat(old_chat.id).workspace_id is None


def test_removing_an_unknown_workspace_is_no_error(registry):
    assert registry.remove_workspace("ws_unknown") is False


def test_removal_reports_success_when_cleanup_fails(isolated, folders, caplog):
    from app.store.registry.registry import Registry

    calls: list[str] = []

    def failing(ws_id: str) -> None:
        calls.append(ws_id)
        raise OSError("disk went away")

    reg = Registry.open(isolated, cleanup=[failing])
    (path,) = folders("Acme")
    ws, _ = reg.add_workspace(path)
    assert reg.remove_workspace(ws.id) is True
    assert reg.workspace(ws.id) is None and calls == [ws.id]
    assert "retried at next start" in caplog.text
    reg.close()
    # The marker stayed, so the next start finishes the cleanup.
    done: list[str] = []
    reg = Registry.open(isolated, cleanup=[done.append])
    assert done == [ws.id]
    assert reg.db.query("SELECT count(*) FROM pending_change") == [(0,)]
    reg.close()


def test_move_workspace_in_display_order(registry, open_registry, folders):
    a, b, c = folders("a", "b", "c")
    wa, wb, wc = (registry.add_workspace(p, at_end=True)[0] for p in (a, b, c))
    registry.move_workspace(wc.id, index=0)
    assert ids(registry) == [wc.id, wa.id, wb.id]
    with pytest.raises(Refused, match="to position 9: the list holds 3 workspaces"):
        registry.move_workspace(wa.id, index=8)
    registry.close()
    assert ids(open_registry()) == [wc.id, wa.id, wb.id]


def test_listing_performs_no_storage_reads(registry, folders):
    for path in folders(*(f"w{i}" for i in range(20))):
        ws, _ = registry.add_workspace(path)
        registry.new_chat(folder=path)
    statements: list[str] = []
    registry.db.set_trace(statements.append)
    listed = registry.workspaces()
    registry.top_level()
    registry.chat_listing()
    [registry.workspace_json(ws) for ws in listed]
    assert len(listed) == 20
    assert statements == []
    registry.rename_workspace(listed[0].id, "x")  # the trace itself works
    assert any("UPDATE workspace" in s for s in statements)


def test_changes_from_another_process_are_picked_up_by_the_next_write(open_registry, folders):
    first = open_registry()
    first.remove_workspace(first.first_use_workspace_id)
    second = open_registry()
    a, b = folders("a", "b")
    wa, _ = second.add_workspace(a)
    wb, _ = first.add_workspace(b)  # first catches up before writing
    assert ids(first) == [wb.id, wa.id]
    found, created = first.add_workspace(a)
    assert (found.id, created) == (wa.id, False)  # never two workspaces for one folder


def test_move_to_folder_keeps_the_workspace_at_its_new_folder(registry, open_registry, folders):
    """The same workspace, id included, at its new folder."""
    a, old, b = folders("a", "Thesis", "b")
    registry.add_workspace(a)
    ws, _ = registry.add_workspace(old)
    registry.add_workspace(b, at_end=True)
    registry.update_workspace(ws.id, description="PhD", instructions="Cite sources.",
                              build_status="building")
    registry.rename_workspace(ws.id, "My thesis")
    first = registry.new_chat(folder=old, title="first")
    second = registry.new_chat(folder=old, title="second")
    with pytest.raises(Refused, match="its folder '.*Thesis' is still there"):
        registry.move_to_folder(ws.id, b)
    Path(old).rename(Path(old).with_name("Thesis-moved"))
    with pytest.raises(Refused, match="that folder is already the workspace"):
        registry.move_to_folder(ws.id, b)
    with pytest.raises(Refused, match="^Workspace path is not fully qualified: 'rel'$"):
        registry.move_to_folder(ws.id, "rel")
    order_before = ids(registry)
    moved = registry.move_to_folder(ws.id, old.replace("Thesis", "Thesis-moved"))
    assert moved.id == ws.id and registry.workspace(ws.id).path == old.replace("Thesis",
                                                                               "Thesis-moved")
    assert (moved.title, moved.description, moved.instructions, moved.build_status) == (
        "My thesis", "PhD", "Cite sources.", "building")
    assert ids(registry) == order_before
    assert [c.id for c in registry.chats_of(moved.id)] == [second.id, first.id]
    assert registry.chat(first.id).folder == old  # the recorded folder is never rewritten
    registry.close()
    again = open_registry()
    assert ids(again) == ids(registry)
    assert [c.id for c in again.chats_of(moved.id)] == [second.id, first.id]
    assert again.workspace(ws.id).path == moved.path and again.workspace(ws.id).status == "ok"


def test_path_fuzzing_never_crashes_the_registry(registry, folders):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    (real,) = folders("real")
    pieces = st.sampled_from(["/", "\\", ".", "..", "C:", "\0", "~", real, "real", " ", "é", "\n"])
    fuzz = st.one_of(st.text(max_size=40), st.lists(pieces, max_size=8).map("".join))
    before = [ws.id for ws in registry.workspaces()]

    @settings(max_examples=300, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(fuzz)
    def check(path: str) -> None:
        try:
            ws, created = registry.add_workspace(path)
        except Refused as refused:
            assert "\n" not in str(refused)
        else:
            registry.remove_workspace(ws.id) if created else None
        chat = registry.new_chat(folder=path)
        assert chat.folder == path

    check()
    assert [ws.id for ws in registry.workspaces()] == before


def test_tree_groups_folders_under_parents_in_display_order(registry, folders):
    acme, brand, logo, thesis = folders("Acme", "Acme/Brand", "Acme/Brand/Logo", "Thesis")
    w_acme, _ = registry.add_workspace(acme)
    w_logo, _ = registry.add_workspace(logo)
    w_brand, _ = registry.add_workspace(brand)
    w_thesis, _ = registry.add_workspace(thesis, at_end=True)
    tree = registry.tree()
    assert [ws.id for ws in tree[None]] == [w_acme.id, w_thesis.id]
    assert [ws.id for ws in tree[w_acme.id]] == [w_brand.id]
    assert [ws.id for ws in tree[w_brand.id]] == [w_logo.id]
    assert tree[None] == registry.top_level() and tree[w_acme.id] == registry.children(w_acme.id)


def test_lineage_runs_from_the_project_down_to_the_folder(registry, folders):
    acme, brand, logo = folders("Acme", "Acme/Brand", "Acme/Brand/Logo")
    a, _ = registry.add_workspace(acme)
    b, _ = registry.add_workspace(brand)
    c, _ = registry.add_workspace(logo)
    assert [w.id for w in registry.lineage(c.id)] == [a.id, b.id, c.id]
    assert [w.id for w in registry.lineage(a.id)] == [a.id]
    assert registry.lineage(None) == [] and registry.lineage("ws_unknown") == []


async def test_a_chat_for_a_workspace_whose_folder_is_gone_is_refused(online, folders):
    """New chat on a workspace whose folder was deleted says so, marks it
    missing, and makes no Ungrouped chat instead."""
    import shutil

    from app.errors import Refused
    from app.ops import Operations
    from app.records import MISSING_DIR

    (thesis,) = folders("Thesis")
    ws, _ = online.registry.add_workspace(thesis)
    shutil.rmtree(thesis)
    before = online.registry.chat_count(None)
    with pytest.raises(Refused) as refused:
        await Operations(online).new_chat(workspace_id=ws.id)
    assert str(refused.value).startswith("cannot create a chat in 'Thesis': its folder ")
    assert online.registry.workspace(ws.id).status == MISSING_DIR
    assert online.registry.chat_count(None) == before
