"""The status board, offscreen: columns by build status, advancing, dragging, opening, and
changes made elsewhere (another thread, another process) showing without a reopen."""

from __future__ import annotations

import random
from typing import Any

import pytest
from PySide6.QtCore import QModelIndex, QPoint, Qt
from PySide6.QtWidgets import QLabel

from app.ops import Operations
from app.records import BUILD_STATUSES
from ui.board import Board, ColumnModel
from ui.bridge import EventBridge


@pytest.fixture
def cairn(online: Any) -> Any:
    """The online Cairn with an empty list (the first-use workspace removed)."""
    first = online.registry.first_use_workspace_id
    if first:
        online.registry.remove_workspace(first)
    return online


@pytest.fixture
def board(qtbot: Any, loop: Any, cairn: Any) -> Board:
    bridge = EventBridge(cairn.registry)
    widget = Board(cairn.registry, bridge, Operations(cairn))
    bridge.setParent(widget)
    qtbot.addWidget(widget)
    widget.resize(1100, 640)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def columns(board: Board) -> dict[str, list[str]]:
    return {status: board.workspace_ids(status) for status in BUILD_STATUSES}


def registry_columns(registry: Any) -> dict[str, list[str]]:
    """Each column as the sidebar's tree lists its workspaces: a project, then its folders."""
    found: dict[str, list[str]] = {status: [] for status in BUILD_STATUSES}
    tree = registry.tree()

    def walk(parent: str | None) -> None:
        for ws in tree.get(parent, []):
            found[ws.build_status].append(ws.id)
            walk(ws.id)

    walk(None)
    return found


def test_a_folder_added_before_its_project_is_listed_after_it(qtbot, board, cairn, folders):
    registry = cairn.registry
    acme_path, brand_path, logos_path = folders("Acme", "Acme/Brand", "Acme/Brand/Logos")
    brand, _ = registry.add_workspace(brand_path)  # the folders first: first in display order
    logos, _ = registry.add_workspace(logos_path)
    acme, _ = registry.add_workspace(acme_path, at_end=True)
    first_use = [ws.id for ws in registry.workspaces() if ws.id not in (acme.id, brand.id,
                                                                          logos.id)]
    qtbot.waitUntil(lambda: len(board.workspace_ids("idea")) == 3 + len(first_use))
    shown = [w for w in board.workspace_ids("idea") if w not in first_use]
    assert shown == [acme.id, brand.id, logos.id]


def test_the_board_shows_every_workspace_in_the_column_of_its_status(qtbot, board, cairn,
                                                                     folders):
    registry = cairn.registry
    acme_path, brand_path, thesis_path = folders("Acme", "Acme/Brand", "Thesis")
    acme, _ = registry.add_workspace(acme_path)
    brand, _ = registry.add_workspace(brand_path)
    thesis, _ = registry.add_workspace(thesis_path)
    registry.update_workspace(thesis.id, build_status="building")
    qtbot.waitUntil(lambda: board.workspace_ids("building") == [thesis.id])
    assert set(board.workspace_ids("idea")) == {acme.id, brand.id}
    assert board.workspace_ids("planning") == [] and board.workspace_ids("shipped") == []
    assert columns(board) == registry_columns(registry)

    idea = board.column("idea")
    brand_card = idea.card_at(idea.column_model().row_of(brand.id))
    assert brand_card is not None and brand_card.parents == ("Acme",)  # a folder names its parent
    spoken = idea.column_model().index(idea.column_model().row_of(brand.id)).data(
        Qt.ItemDataRole.AccessibleTextRole)
    assert spoken == "Brand, folder of Acme, Idea"
    assert board.windowTitle() == "Status board"
    assert [board.column(s).accessibleName() for s in BUILD_STATUSES] == [
        "Idea", "Planning", "Building", "Shipped"]
    assert board.column("idea").accessibleDescription() == "2 workspaces"


def test_one_click_on_the_arrow_advances_the_card_and_the_registry_agrees(qtbot, board, cairn,
                                                                          folders):
    registry = cairn.registry
    (path,) = folders("Acme")
    acme, _ = registry.add_workspace(path)
    qtbot.waitUntil(lambda: board.workspace_ids("idea") == [acme.id])
    idea = board.column("idea")
    point = idea.advance_point(0)
    assert point is not None
    qtbot.mouseClick(idea.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.waitUntil(lambda: board.workspace_ids("planning") == [acme.id])
    assert board.workspace_ids("idea") == []
    assert registry.workspace(acme.id).build_status == "planning"

    # A click on the card but not on its arrow only selects it.
    planning = board.column("planning")
    qtbot.mouseClick(planning.viewport(), Qt.MouseButton.LeftButton,
                     pos=planning.visualRect(planning.column_model().index(0)).topLeft()
                     + QPoint(20, 16))
    assert registry.workspace(acme.id).build_status == "planning"
    assert planning.currentIndex().row() == 0


def test_the_keyboard_advances_moves_back_opens_and_walks_the_columns(qtbot, board, cairn,
                                                                      folders):
    registry = cairn.registry
    a_path, b_path = folders("Acme", "Thesis")
    acme, _ = registry.add_workspace(a_path)
    thesis, _ = registry.add_workspace(b_path)
    registry.update_workspace(thesis.id, build_status="shipped")
    qtbot.waitUntil(lambda: board.workspace_ids("shipped") == [thesis.id])
    assert board.select(acme.id)
    idea = board.column("idea")
    qtbot.keyClick(idea, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: registry.workspace(acme.id).build_status == "planning")
    qtbot.waitUntil(lambda: board.column("planning").hasFocus())  # the card is followed
    planning = board.column("planning")
    qtbot.keyClick(planning, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: board.workspace_ids("idea") == [acme.id])
    assert registry.workspace(acme.id).build_status == "idea"
    qtbot.waitUntil(lambda: board.column("idea").hasFocus()
                    and board.column("idea").currentIndex().row() == 0)

    with qtbot.waitSignal(board.sig_workspace_opened) as opened:
        qtbot.keyClick(board.column("idea"), Qt.Key.Key_Return)
    assert opened.args == [acme.id]
    qtbot.keyClick(board.column("idea"), Qt.Key.Key_Right)  # to the next column with cards
    assert board.column("shipped").hasFocus()
    assert board.column("shipped").currentIndex().row() == 0
    with qtbot.waitSignal(board.sig_workspace_opened) as opened:
        shipped = board.column("shipped")
        rect = shipped.visualRect(shipped.column_model().index(0))
        qtbot.mouseDClick(shipped.viewport(), Qt.MouseButton.LeftButton,
                          pos=rect.topLeft() + QPoint(20, 16))
    assert opened.args == [thesis.id]


def test_dropping_a_card_on_another_column_sets_that_status(qtbot, board, cairn, folders):
    registry = cairn.registry
    (path,) = folders("Acme")
    acme, _ = registry.add_workspace(path)
    qtbot.waitUntil(lambda: board.workspace_ids("idea") == [acme.id])
    source: ColumnModel = board.column("idea").column_model()
    data = source.mimeData([source.index(0)])
    target = board.column("shipped").column_model()
    assert target.canDropMimeData(data, Qt.DropAction.MoveAction, -1, -1, QModelIndex())
    # What the view calls when the card lands; it never removes the source row itself.
    assert target.dropMimeData(data, Qt.DropAction.MoveAction, -1, -1, QModelIndex()) is False
    qtbot.waitUntil(lambda: board.workspace_ids("shipped") == [acme.id])
    assert registry.workspace(acme.id).build_status == "shipped"
    assert board.workspace_ids("idea") == []
    # Dropped back on its own column: nothing to do.
    again = target.mimeData([target.index(0)])
    target.dropMimeData(again, Qt.DropAction.MoveAction, -1, -1, QModelIndex())
    assert registry.workspace(acme.id).build_status == "shipped"


def test_a_refusal_is_shown_as_its_sentence(qtbot, board, cairn, folders):
    registry = cairn.registry
    (path,) = folders("Acme")
    acme, _ = registry.add_workspace(path)
    registry.update_workspace(acme.id, build_status="shipped")
    qtbot.waitUntil(lambda: board.workspace_ids("shipped") == [acme.id])
    assert board.column("shipped").advance_point(0) is None  # the last column has no arrow
    board.advance(acme.id)  # as if a stale click raced another change
    label = next(w for w in board.findChildren(QLabel) if w.accessibleName() == "Board message")
    qtbot.waitUntil(label.isVisible)
    assert label.text() == f"Cannot advance workspace '{acme.title}': it is already shipped"


def test_a_change_from_another_process_shows_once_the_registry_catches_up(
        qtbot, board, cairn, folders, open_registry):
    registry = cairn.registry
    a_path, b_path = folders("Acme", "Thesis")
    acme, _ = registry.add_workspace(a_path)
    qtbot.waitUntil(lambda: board.workspace_ids("idea") == [acme.id])
    other = open_registry()  # the command line, say
    other.advance_workspace(acme.id)
    thesis, _ = other.add_workspace(b_path)
    other.rename_workspace(thesis.id, "Thesis (draft)")
    assert board.workspace_ids("planning") == []  # nothing yet: this process has not looked
    assert registry.sync()  # what the window does on its timer and on activation
    qtbot.waitUntil(lambda: board.workspace_ids("planning") == [acme.id])
    assert board.workspace_ids("idea") == [thesis.id]
    idea = board.column("idea")
    assert idea.card_at(0).title == "Thesis (draft)"


def test_the_columns_follow_a_random_sequence_of_changes_without_a_reset(qtbot, board, cairn,
                                                                         folders):
    registry = cairn.registry
    resets: list[str] = []
    for status in BUILD_STATUSES:
        model = board.column(status).column_model()
        model.modelReset.connect(lambda s=status: resets.append(s))
    rng = random.Random(9)
    paths = folders(*[f"P{i}" for i in range(6)], "P0/Sub", "P1/Sub/Deeper")
    ids: list[str] = []
    for _ in range(60):
        choice = rng.random()
        if choice < 0.3 or not ids:
            ws, created = registry.add_workspace(rng.choice(paths), at_end=rng.random() < 0.5)
            if created:
                ids.append(ws.id)
        elif choice < 0.6:
            registry.update_workspace(rng.choice(ids), build_status=rng.choice(BUILD_STATUSES))
        elif choice < 0.75:
            registry.move_workspace(rng.choice(ids), index=rng.randrange(len(ids)))
        elif choice < 0.85:
            registry.rename_workspace(rng.choice(ids), f"Renamed {rng.randrange(100)}")
        else:
            gone = rng.choice(ids)
            registry.remove_workspace(gone)
            ids.remove(gone)
        if rng.random() < 0.3:
            qtbot.waitUntil(lambda: columns(board) == registry_columns(registry))
    qtbot.waitUntil(lambda: columns(board) == registry_columns(registry))
    titles = {ws.id: ws.title for ws in registry.workspaces()}
    for status in BUILD_STATUSES:
        assert [c.title for c in board.column(status).column_model().cards()] == [
            titles[i] for i in board.workspace_ids(status)]
    assert resets == []
