"""CAIRN.md never loses the person's words and never reads what it must not:
outside edits merged against the
version the file descends from, every save taking in an unread edit first, an outside save
that removed Cairn's entries shown with Restore, sync conflict copies offered, the file's text
kept in the history whichever side the switch keeps, no link followed and no special file
read, an edit saved while Cairn writes never overwritten, no folder reached through a link."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from app.errors import Refused
from app.knowledge import cairn_disk, suggestions
from app.knowledge.cairn_file import CairnFileSync
from app.store.folder_access import FolderStore
from app.store.suggestions import Proposed
from tests.helpers import add_op, run, talk

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="links and FIFOs as on POSIX")

START = "## Facts\n- Budget 40000 EUR\n- Venue: town hall\n"


def md(ws) -> Path:
    return Path(ws.path) / "CAIRN.md"


def sources(cairn, owner: str) -> list[str]:
    return [v.source for v in cairn.knowledge.history(owner)]


def every_version(cairn, owner: str) -> list[str]:
    return [cairn.knowledge.version_text(owner, v.version)
            for v in cairn.knowledge.history(owner)]


@pytest.fixture
def on(online, workspace):
    online.cairn_file_sync.switch(workspace.id, True)
    online.knowledge.save(workspace.id, START, source="user")
    assert md(workspace).read_text(encoding="utf-8") == START
    return workspace


# ============================================================ every save takes in first (14)


def test_knowledge_set_takes_in_an_unread_edit_first_and_keeps_it(online, on, capsys, tmp_path):
    md(on).write_text(START.replace("town hall", "the old mill"), encoding="utf-8")  # unread
    new = tmp_path / "new.md"
    new.write_text(START + "- Catering: Rossi\n", encoding="utf-8")
    code, _out, err = run(capsys, "knowledge", "set", on.id, str(new))
    assert code == 0, err
    text = online.knowledge.get(on.id).text
    assert text == "## Facts\n- Budget 40000 EUR\n- Venue: the old mill\n- Catering: Rossi\n"
    assert sources(online, on.id)[:2] == ["user", "file"]  # the edit first, then the set
    assert md(on).read_text(encoding="utf-8") == text
    online.knowledge.get(on.id)  # and a later read never brings the older text back
    assert online.knowledge.get(on.id).text == text


def test_a_restore_takes_in_an_unread_edit_first(online, on):
    online.knowledge.save(on.id, START + "- Catering: Rossi\n", source="user")  # version 2
    md(on).write_text(START + "- Catering: Rossi\n- Parking: none\n", encoding="utf-8")
    restored = online.knowledge.restore(on.id, 1)  # back to START, the edit kept on top
    assert restored.text == START + "- Parking: none\n"
    assert "- Parking: none" in every_version(online, on.id)[1]
    assert md(on).read_text(encoding="utf-8") == restored.text


def test_the_windows_save_on_its_version_meets_the_unread_edit_instead_of_overwriting(
        online, on):
    opened = online.knowledge.get(on.id)
    md(on).write_text(START + "- From my editor\n", encoding="utf-8")
    result = online.knowledge.save(on.id, START + "- From the window\n", source="user",
                                   based_on=opened.version)
    assert type(result).__name__ == "Conflict"  # the window offers Merge / Keep mine
    assert result.current.text == START + "- From my editor\n"
    assert md(on).read_text(encoding="utf-8") == START + "- From my editor\n"


def test_accepting_a_suggestion_takes_in_an_unread_edit_first(online, on):
    chat = online.registry.new_chat(folder=on.path)
    online.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={}, suggestions=[
        Proposed(on.id, "add", "Facts", (), "Launch 2027-04-15", "r", "launch")])
    (waiting,) = online.knowledge.suggestions([on.id])
    md(on).write_text(START + "- From my editor\n", encoding="utf-8")
    text = suggestions.accept(online.knowledge, waiting.id).text
    assert text == START + "- From my editor\n- Launch 2027-04-15\n"
    assert md(on).read_text(encoding="utf-8") == text


# ============================================== an editor open before a rebuild (13, Restore)


async def test_an_editor_saving_over_a_rebuild_is_shown_with_restore(online, fake, on):
    in_editor = md(on).read_text(encoding="utf-8")  # the person opens CAIRN.md
    chat = online.registry.new_chat(folder=on.path)
    await talk(online, fake, chat.id, "When is the launch?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await online.rebuilder.rebuild(chat.id)).status == "applied"
    assert "Launch 2027-04-15" in md(on).read_text(encoding="utf-8")
    # The editor saves its older buffer, with the person's own change.
    md(on).write_text(in_editor.replace("40000", "45000"), encoding="utf-8")
    state = online.cairn_file_sync.sync(on.id)
    assert state is not None and state.removed == ("- Launch 2027-04-15",)
    assert state.to_json()["removed"] == ["- Launch 2027-04-15"]
    assert "Launch" not in online.knowledge.get(on.id).text  # the person's save stands…
    # …and stays noted across a restart (a new keeper on the same database).
    again = CairnFileSync(registry=online.registry, knowledge=online.knowledge,
                           folders=FolderStore(online.registry.db))
    assert again.state(on.id).removed == ("- Launch 2027-04-15",)
    restored = online.cairn_file_sync.restore_removed(on.id)
    assert restored.text == ("## Facts\n- Budget 45000 EUR\n- Venue: town hall\n"
                             "- Launch 2027-04-15\n")
    assert online.cairn_file_sync.state(on.id).removed == ()
    assert md(on).read_text(encoding="utf-8") == restored.text


def test_an_outside_edit_removing_only_the_persons_own_lines_is_not_flagged(online, on):
    md(on).write_text("## Facts\n- Budget 40000 EUR\n", encoding="utf-8")
    online.knowledge.get(on.id)
    assert online.cairn_file_sync.state(on.id).removed == ("- Venue: town hall",)
    online.cairn_file_sync.dismiss_removed(on.id)  # the person meant it
    md(on).write_text("## Facts\n- Budget 40000 EUR\n- New\n", encoding="utf-8")
    online.knowledge.get(on.id)
    assert online.cairn_file_sync.state(on.id).removed == ()  # read since: nothing of Cairn's


# ====================================================================== conflict copies (16)


DROPBOX = "CAIRN (Ana's conflicted copy 2026-12-01).md"
SYNCTHING = "CAIRN.sync-conflict-20261201-101010-ABCDEFG.md"


def test_sync_conflict_copies_are_noticed_and_offered(online, on):
    folder = Path(on.path)
    (folder / DROPBOX).write_text(START + "- From Ana's laptop\n", encoding="utf-8")
    (folder / SYNCTHING).write_text("## Facts\n- Budget 41000 EUR\n", encoding="utf-8")
    (folder / "CAIRN copy.md").write_text("not a conflict copy\n", encoding="utf-8")
    online.cairn_file_sync.sync_all()
    state = online.cairn_file_sync.state(on.id)
    assert state.copies == (DROPBOX, SYNCTHING)
    assert online.cairn_file_sync.copy_text(on.id, DROPBOX).endswith("From Ana's laptop\n")
    merged = online.cairn_file_sync.merge_copy(on.id, DROPBOX)
    assert merged.text == START + "- From Ana's laptop\n"
    # Merging keeps every line either side has: the other copy's budget beside ours.
    both = online.cairn_file_sync.merge_copy(on.id, SYNCTHING).text
    assert "- Budget 40000 EUR" in both and "- Budget 41000 EUR" in both
    assert online.cairn_file_sync.state(on.id).copies == ()
    assert (folder / DROPBOX).exists()  # never deleted
    # Dismissed or merged stays so after a restart, until the copy changes.
    again = CairnFileSync(registry=online.registry, knowledge=online.knowledge,
                           folders=FolderStore(online.registry.db))
    again.sync(on.id)
    assert again.state(on.id).copies == ()
    (folder / SYNCTHING).write_text("## Facts\n- Budget 42000 EUR\n", encoding="utf-8")
    again._folder_seen.clear()  # (the folder's time may not move within its resolution)
    again.sync(on.id)
    assert again.state(on.id).copies == (SYNCTHING,)
    again.dismiss_copy(on.id, SYNCTHING)
    assert again.state(on.id).copies == ()
    with pytest.raises(Refused, match="is not a conflict copy"):
        again.copy_text(on.id, "../secret.md")


@posix_only
def test_a_conflict_copy_that_is_a_link_is_never_read(online, on, tmp_path):
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n", encoding="utf-8")
    os.symlink(secret, Path(on.path) / SYNCTHING)
    online.cairn_file_sync.sync_all()
    with pytest.raises(Refused, match="symbolic link"):
        online.cairn_file_sync.merge_copy(on.id, SYNCTHING)
    assert all("PRIVATE KEY" not in t for t in every_version(online, on.id))


# ============================================ the switch keeps the file's text either way (36)


def test_keeping_the_document_keeps_the_files_text_in_the_history(online, workspace, capsys):
    online.knowledge.save(workspace.id, START, source="user")
    md(workspace).write_text("# My own notes\n- do not lose me\n", encoding="utf-8")
    state = online.cairn_file_sync.switch(workspace.id, True, keep="document")
    assert state.state == "written"
    assert md(workspace).read_text(encoding="utf-8") == START
    assert "# My own notes\n- do not lose me\n" in every_version(online, workspace.id)
    assert sources(online, workspace.id) == ["restore", "file", "user"]
    # The command line's --keep takes the same way.
    online.cairn_file_sync.switch(workspace.id, False)
    md(workspace).write_text("# Second notes\n", encoding="utf-8")
    code, _out, err = run(capsys, "workspace", "knowledge-file", workspace.id, "on",
                          "--keep", "document")
    assert code == 0, err
    assert "# Second notes\n" in every_version(online, workspace.id)
    assert md(workspace).read_text(encoding="utf-8") == START


# ========================================================= links and special files (35)


@posix_only
def test_a_cairn_md_that_is_a_link_is_never_read(online, workspace, tmp_path):
    secret = tmp_path / "credentials"
    secret.write_text("[default]\naws_secret_access_key = abc123\n", encoding="utf-8")
    os.symlink(secret, md(workspace))
    assert online.cairn_file_sync.conflict(workspace.id) is False
    for keep in (None, "document", "file"):
        with pytest.raises(Refused, match="symbolic link, and Cairn never follows one"):
            online.cairn_file_sync.switch(workspace.id, True, keep=keep)
    assert online.knowledge.get(workspace.id).version == 0
    # On already, and a pull replaces the file by a link: not read, not replaced.
    os.unlink(md(workspace))
    online.cairn_file_sync.switch(workspace.id, True)
    online.knowledge.save(workspace.id, START, source="user")
    os.unlink(md(workspace))
    os.symlink(secret, md(workspace))
    doc = online.knowledge.get(workspace.id)
    assert doc.text == START
    state = online.cairn_file_sync.state(workspace.id)
    assert state.state == "refused" and "never follows one" in state.sentence
    online.knowledge.save(workspace.id, START + "- more\n", source="user")
    assert os.path.islink(md(workspace)) and "abc123" in secret.read_text(encoding="utf-8")
    assert all("abc123" not in t for t in every_version(online, workspace.id))


def _special(kind: str, path: Path, tmp_path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "sparse":
        with open(path, "wb") as out:
            out.truncate(4 * 1024 ** 3)  # 4 GB, holding no block on the disk


@posix_only
@pytest.mark.parametrize("kind, said", [
    ("fifo", "not a regular file"), ("folder", "it is a folder"),
    ("dev-zero", "symbolic link"), ("sparse", "4,295.0 MB"),
])
@pytest.mark.parametrize("keep", [None, "document", "file"])
def test_turning_on_over_a_special_file_is_refused_without_blocking(
        online, workspace, tmp_path, kind, said, keep):
    online.knowledge.save(workspace.id, START, source="user")
    _special(kind, md(workspace), tmp_path)
    outcome: list[BaseException | None] = []

    def turn_on() -> None:
        try:
            online.cairn_file_sync.conflict(workspace.id)
            online.cairn_file_sync.switch(workspace.id, True, keep=keep)
            outcome.append(None)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            outcome.append(error)

    worker = threading.Thread(target=turn_on, daemon=True)
    worker.start()
    worker.join(timeout=30)  # a FIFO opened for reading would block here for good
    assert not worker.is_alive(), "turning CAIRN.md on blocked on the file"
    (error,) = outcome
    assert isinstance(error, Refused) and said in str(error)
    assert str(error).count(". ") == 0  # one sentence
    assert online.cairn_file_sync.state(workspace.id).on is False
    assert online.knowledge.get(workspace.id).text == START and len(
        online.knowledge.history(workspace.id)) == 1


@posix_only
def test_a_fifo_appearing_while_on_never_blocks_a_read(online, on):
    os.unlink(md(on))
    os.mkfifo(md(on))
    done = threading.Event()
    worker = threading.Thread(target=lambda: (online.knowledge.get(on.id), done.set()),
                              daemon=True)
    worker.start()
    assert done.wait(timeout=30), "a read blocked on a FIFO named CAIRN.md"
    assert "not a regular file" in online.cairn_file_sync.state(on.id).sentence


def test_a_hand_edit_saved_while_cairn_writes_is_never_overwritten(online, on, monkeypatch):
    """The editor saves after Cairn decided to write and before it moves
    the new text over the file; the write is dropped, the edit taken in, then written."""
    real_fsync = os.fsync
    once = []

    def editor_saves_meanwhile(fd: int) -> None:
        real_fsync(fd)
        if not once:
            once.append(fd)
            md(on).write_text(START + "- Saved in my editor meanwhile\n", encoding="utf-8")

    monkeypatch.setattr(cairn_disk.os, "fsync", editor_saves_meanwhile)
    online.knowledge.save(on.id, START.replace("40000", "41000"), source="user")
    monkeypatch.setattr(cairn_disk.os, "fsync", real_fsync)
    text = online.knowledge.get(on.id).text
    assert text == START.replace("40000", "41000") + "- Saved in my editor meanwhile\n"
    assert md(on).read_text(encoding="utf-8") == text
    assert "file" in sources(online, on.id)


@posix_only
def test_a_nested_folder_replaced_by_a_link_is_never_read_or_written(online, folders,
                                                                     tmp_path):
    project, nested = folders("Acme", "Acme/Notes")
    online.registry.add_workspace(project)
    ws, _ = online.registry.add_workspace(nested)
    online.cairn_file_sync.switch(ws.id, True)
    online.knowledge.save(ws.id, START, source="user")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CAIRN.md").write_text("# someone else's file\n", encoding="utf-8")
    os.rename(nested, tmp_path / "moved-away")
    os.symlink(outside, nested)
    doc = online.knowledge.get(ws.id)
    online.knowledge.save(ws.id, START + "- after the swap\n", source="user")
    assert doc.text == START
    assert (outside / "CAIRN.md").read_text(encoding="utf-8") == "# someone else's file\n"
    assert sorted(p.name for p in outside.iterdir()) == ["CAIRN.md"]  # no temp file either
    state = online.cairn_file_sync.state(ws.id)
    assert state.state == "no-folder" and "symbolic link" in state.sentence
    with pytest.raises(Refused, match="symbolic link"):
        online.cairn_file_sync.switch(ws.id, True)


def test_the_command_line_status_names_removed_entries_and_conflict_copies(online, on, capsys):
    md(on).write_text("## Facts\n- Budget 40000 EUR\n", encoding="utf-8")
    (Path(on.path) / DROPBOX).write_text(START, encoding="utf-8")
    code, out, err = run(capsys, "workspace", "knowledge-file", on.id, "status")
    assert code == 0, err
    assert "removed 1 entry Cairn wrote" in out and DROPBOX in out
