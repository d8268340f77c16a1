"""Importing Claude.ai and ChatGPT exports: exports built in the documented shapes
(tests/history_exports.py) go in through the core and the command line; crafted ones are
refused or bounded with nothing written; a second import adds nothing."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from app.base.db import SCHEMA_VERSION, Database
from app.cli import main
from app.errors import Refused
from app.history.importing import import_history, preview
from app.store import watermarks
from app.store.documents import PERSONAL, KnowledgeStore
from app.store.messages import ChatStore, checked_content
from tests.helpers import database_before
from tests.history_exports import (
    gpt_chats,
    png,
    write_claude_export,
    write_gpt_export,
)


@pytest.fixture
def core(quiet_cairn):  # type: ignore[no-untyped-def]
    return quiet_cairn


def run(core, path: Path, **kw):  # type: ignore[no-untyped-def]
    return import_history(core.registry, core.files, path, **kw)


def chat_titled(core, title: str):  # type: ignore[no-untyped-def]
    listing = core.registry.chat_listing()
    chats = list(listing.ungrouped) + [c for _, cs in listing.workspaces for c in cs]
    found = [c for c in chats if c.title == title]
    assert len(found) == 1, [c.title for c in chats]
    return found[0]


def all_messages(core, chat_id: str) -> list[tuple[int, int | None, str, list]]:  # type: ignore[no-untyped-def]
    return [(r[0], r[1], r[2], json.loads(r[3])) for r in core.registry.db.query(
        "SELECT id, parent_id, role, content FROM message WHERE chat_id = ? ORDER BY id",
        (chat_id,))]


def texts(messages) -> list[str]:  # type: ignore[no-untyped-def]
    return [" ".join(b.get("text", "") for b in m.content if b.get("type") == "text")
            for m in messages]


def counts(core) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    q = core.registry.db.query
    return tuple(q(f"SELECT count(*) FROM {t}")[0][0] for t in (
        "chat", "message", "workspace", "knowledge_file", "knowledge_suggestion",
        "imported_chat", "imported_message"))


def every_block_is_one_cairn_writes(core) -> None:  # type: ignore[no-untyped-def]
    for role, content in core.registry.db.query("SELECT role, content FROM message"):
        checked_content(role, json.loads(content))  # raises on any shape Cairn does not write


# ===================================================================== Claude.ai


def test_a_claude_export_of_the_newer_layout_imports_with_projects_branches_and_memories(
        core, tmp_path):
    path = write_claude_export(tmp_path / "claude.zip")
    seen = preview(core.registry, path)
    assert (seen.source, seen.chats, seen.messages, seen.memories) == ("claude", 2, 8, True)
    assert [p.name for p in seen.projects] == ["Acme Inc"]
    assert seen.projects[0].folder.endswith("Imported/Acme Inc")

    report = run(core, path)
    assert (report.chats_new, report.messages, report.knowledge_files) == (2, 8, 1)
    every_block_is_one_cairn_writes(core)

    # The project is a workspace at <first-use folder>/Imported/Acme Inc, with its
    # instructions, description and its document as a knowledge file.
    ws = next(w for w in core.registry.tree().get(core.registry.first_use_workspace_id, [])
              + core.registry.top_level() if w.title == "Acme Inc")
    assert ws.path.endswith("Imported/Acme Inc") and Path(ws.path).is_dir()
    assert ws.instructions == "Answer as Acme's brand editor."
    assert ws.description == "Our client Acme"
    assert [f.name for f in core.files.of_workspaces([ws.id])] == ["style-guide.md"]
    brand = chat_titled(core, "Brand colours")
    assert brand.workspace_id == ws.id
    trip = chat_titled(core, "Trip to Lisbon")
    assert trip.workspace_id is None  # outside any project: Ungrouped
    assert trip.created_at == "2025-03-01T10:00:00.000Z"

    # Every branch is kept; the chat shows the export's current leaf.
    chats = ChatStore(core.registry.db)
    shown = chats.messages(trip.id)
    assert texts(shown) == ["Plan three days in Lisbon", "Day one: Alfama and tram 28.",
                            "Make it slower", "Spend day two in Sintra."]
    versions = chats.versions(trip.id, shown[2].id)
    assert [texts([v])[0] for v in versions] == ["Make it cheaper", "Make it slower"]
    reply = shown[1].content
    assert [b["type"] for b in reply] == ["thinking", "tool_use", "text"]
    assert reply[0]["signature"] == ""  # never sent back
    assert reply[1]["name"] == "web_search" and reply[1]["input"] == {"query": "Lisbon trams"}
    assert shown[1].created_at == "2025-03-01T10:00:05.000Z"

    # The attachment's extracted text is a text attachment; a file without content is named.
    first = chats.messages(brand.id)[0]
    attachment = next(b for b in first.content if b["type"] == "attachment")
    assert attachment["name"] == "brief.txt" and attachment["media_type"] == "text/plain"
    assert core.files.blobs.read(attachment["sha256"]) == b"Acme brand brief: orange #FF5500"
    assert "logo.png" in texts([first])[0]

    # Not learned from: nothing waits for a rebuild.
    assert watermarks.chats_with_news(core.registry.db, [trip.id, brand.id]) == []

    # Memories wait as suggestions: personal memory and the project's knowledge.
    store = KnowledgeStore(core.registry.db)
    assert [s.text for s in store.suggestions([PERSONAL])] == [
        "Ana works at Acme and prefers short answers."]
    assert [s.text for s in store.suggestions([ws.id])] == ["The launch is on 2027-04-15."]
    assert store.get(PERSONAL).text == ""  # never merged silently


def test_the_same_export_twice_adds_nothing_and_a_newer_one_only_what_is_new(core, tmp_path):
    path = write_claude_export(tmp_path / "claude.zip")
    run(core, path)
    before = counts(core)
    again = run(core, path)
    assert (again.chats_new, again.chats_updated, again.messages, again.suggestions,
            again.knowledge_files) == (0, 0, 0, 0, 0)
    assert again.chats_unchanged == 2
    assert counts(core) == before
    assert preview(core.registry, path).known_chats == 2

    # A newer export: the trip chat went on, and a new chat was started.
    from tests import history_exports as ex

    chats = ex.claude_new_chats()
    chats[0]["chat_messages"].append(ex.claude_message(
        "m5", "human", "And a day in Porto?", "2025-03-02T10:00:00Z", parent="m4b"))
    chats[0]["current_leaf_message_uuid"] = "m5"
    newer = tmp_path / "newer.zip"
    with zipfile.ZipFile(newer, "w") as zf:
        zf.writestr("conversations.json", json.dumps(chats + [{
            "uuid": "c-new", "name": "Fresh chat", "created_at": "2025-05-01T00:00:00Z",
            "updated_at": "2025-05-01T00:00:00Z", "chat_messages": [
                ex.claude_message("f1", "human", "Hi again", "2025-05-01T00:00:00Z")]}]))
    report = run(core, newer)
    assert (report.chats_new, report.chats_updated, report.messages) == (1, 1, 2)
    trip = chat_titled(core, "Trip to Lisbon")
    assert texts(ChatStore(core.registry.db).messages(trip.id))[-2:] == [
        "Spend day two in Sintra.", "And a day in Porto?"]
    assert watermarks.chats_with_news(core.registry.db, [trip.id]) == []


def test_an_older_claude_export_reads_inline_tags_and_a_flat_list_with_an_edit(core, tmp_path):
    path = write_claude_export(tmp_path / "old.zip", old=True)
    report = run(core, path)
    assert report.chats_new == 1
    every_block_is_one_cairn_writes(core)
    chat = chat_titled(core, "Old script chat")
    chats = ChatStore(core.registry.db)
    shown = chats.messages(chat.id)
    assert texts(shown)[:3] == ["Write hello world", "Sure, in which language?",
                                "Python please"]
    assert [texts([v])[0] for v in chats.versions(chat.id, shown[2].id)] == [
        "Ruby", "Python please"]  # two consecutive messages of the person: an edit
    reply = shown[3].content
    assert reply[0] == {"type": "thinking", "thinking": "A small script is worth an artifact.",
                        "signature": ""}
    assert "<antArtifact" not in reply[1]["text"] and "<antThinking>" not in reply[1]["text"]
    assert '**hello.py**\n\n```python\nprint("hello")\n```' in reply[1]["text"]


def test_batch_zips_project_files_and_an_unpacked_folder_read_alike(core, tmp_path):
    path = write_claude_export(tmp_path / "batch.zip", batch=True, project_files=True)
    seen = preview(core.registry, path)
    assert (seen.chats, [p.name for p in seen.projects]) == (2, ["Acme Inc"])
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(folder)
    assert preview(core.registry, folder).chats == 2
    report = run(core, folder, folders={"Acme Inc": str(tmp_path / "Work" / "Acme")})
    assert report.chats_new == 2
    ws = core.registry.workspace_for_folder(str(tmp_path / "Work" / "Acme"))
    assert ws is not None and ws.title == "Acme Inc"
    assert chat_titled(core, "Brand colours").workspace_id == ws.id


def test_the_kind_is_told_by_content_not_by_file_names(core, tmp_path):
    from tests import history_exports as ex

    path = tmp_path / "renamed.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("data/chats-part-1.json", json.dumps(ex.claude_new_chats()))
        zf.writestr("whatever.json", json.dumps(ex.claude_projects()))
    seen = preview(core.registry, path)
    assert (seen.source, seen.chats, len(seen.projects)) == ("claude", 2, 1)
    named = tmp_path / "conversations-only-name.zip"
    with zipfile.ZipFile(named, "w") as zf:
        zf.writestr("conversations.json", json.dumps({"hello": "world"}))
    with pytest.raises(Refused, match="holds no chats, projects or memories from Claude.ai "
                                      "or ChatGPT"):
        preview(core.registry, named)


# ===================================================================== ChatGPT


def test_a_chatgpt_export_imports_branches_images_and_leaves_hidden_messages_out(core, tmp_path):
    path = write_gpt_export(tmp_path / "gpt.zip")
    seen = preview(core.registry, path)
    assert (seen.source, seen.chats, seen.images) == ("chatgpt", 2, 1)
    report = run(core, path)
    assert report.chats_new == 2
    every_block_is_one_cairn_writes(core)
    chat = chat_titled(core, "Picture question")
    chats = ChatStore(core.registry.db)
    shown = chats.messages(chat.id)
    assert [m.role for m in shown] == ["user", "assistant"]  # no system message
    image = shown[0].content[0]
    assert image["type"] == "attachment" and image["media_type"] == "image/png"
    assert core.files.blobs.read(image["sha256"]) == png(7)
    assert texts(shown)[0] == "What is in this picture?"
    # The shown branch (current_node) is the regenerated reply; its tool round, output and
    # answer are one reply: thinking, code, output, recap, words.
    reply = shown[1].content
    assert [b["type"] for b in reply] == ["thinking", "text", "text", "thinking", "text"]
    assert reply[1]["text"] == "```python\nprint(1 + 1)\n```"
    assert reply[2]["text"] == "```\n2\n```"
    assert reply[4]["text"] == "An orange square, and 1 + 1 is 2."
    assert shown[1].model == "gpt-4o"
    other = chats.versions(chat.id, shown[1].id)
    assert [v.content[-1]["text"] for v in other] == ["A cat.",
                                                      "An orange square, and 1 + 1 is 2."]
    assert chat.created_at == "2024-05-29T16:26:40.500Z"
    # The custom instructions are suggestions for personal memory, not merged.
    store = KnowledgeStore(core.registry.db)
    assert sorted(s.text for s in store.suggestions([PERSONAL])) == [
        "About me: I am a designer in Porto.", "How ChatGPT should respond: Be brief."]
    assert run(core, path).chats_unchanged == 2


def test_search_finds_imported_chats_at_once(core, tmp_path):
    run(core, write_gpt_export(tmp_path / "gpt.zip"))
    run(core, write_claude_export(tmp_path / "claude.zip"))
    hits = core.search.find("Sintra")
    assert any(h.kind == "message" and h.chat == chat_titled(core, "Trip to Lisbon").id
               for h in hits)
    hits = core.search.find("cheaper")  # another branch: found too
    assert hits and hits[0].chat == chat_titled(core, "Trip to Lisbon").id
    assert any(h.kind == "chat" for h in core.search.find("Picture question"))


# ===================================================================== crafted exports


def crafted(tmp_path: Path, name: str, members: dict[str, bytes],
            packing: int = zipfile.ZIP_STORED) -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w", packing) as zf:
        for member, data in members.items():
            zf.writestr(member, data)
    return path


def bomb(tmp_path: Path) -> Path:
    return crafted(tmp_path, "bomb.zip", {"conversations.json": b"[" + b" " * 50_000_000 + b"]"},
                   zipfile.ZIP_DEFLATED)


def long_string(tmp_path: Path) -> Path:
    chat = {"uuid": "c", "name": "x", "chat_messages": [
        {"uuid": "m", "sender": "human", "text": "PLACEHOLDER"}]}
    raw = json.dumps([chat]).encode().replace(b"PLACEHOLDER", b"ab" * 5_000_001)
    return crafted(tmp_path, "long.zip", {"conversations.json": raw})


def deep(tmp_path: Path) -> Path:
    depth = 200_000
    raw = (b'[{"uuid": "c", "name": "deep", "chat_messages": [{"uuid": "m", "sender": "human",'
           b' "text": "hi", "extra": ' + b"[" * depth + b"]" * depth + b"}]}]")
    return crafted(tmp_path, "deep.zip", {"conversations.json": raw})


def escape(tmp_path: Path) -> Path:
    from tests import history_exports as ex

    return crafted(tmp_path, "escape.zip", {
        "conversations.json": json.dumps(ex.claude_new_chats()).encode(),
        "../../outside.png": png()})


def big_chat(tmp_path: Path) -> Path:
    from app.history import archive

    text = "word " * 1_000_000  # 5 MB a message: each string passes, the chat does not
    chat = {"uuid": "c", "name": "huge", "chat_messages": [
        {"uuid": f"m{i}", "sender": "human", "text": text}
        for i in range(archive.MAX_ITEM_BYTES // len(text) + 2)]}
    return crafted(tmp_path, "huge.zip", {"conversations.json": json.dumps([chat]).encode()})


@pytest.mark.parametrize(("make", "sentence"), [
    (bomb, "unpacks to more than 100 times its packed size, the mark of a zip bomb"),
    (long_string, "holds a text longer than 8,000,000 characters"),
    (deep, "nests deeper than 64 levels"),
    (escape, "points outside the export"),
    (big_chat, "holds one value larger than 64,000,000 bytes"),
])
def test_a_crafted_export_is_refused_in_one_sentence_with_nothing_written(
        core, tmp_path, make, sentence):
    before = counts(core)
    blobs_before = sorted(p.name for p in (core.registry.db.path.parent / "files").rglob("*"))
    path = make(tmp_path)
    with pytest.raises(Refused) as refused:
        run(core, path)
    message = str(refused.value)
    assert sentence in message and "\n" not in message
    assert message.startswith(f"cannot import '{path}'")
    assert counts(core) == before
    assert sorted(p.name for p in (core.registry.db.path.parent / "files").rglob("*")) \
        == blobs_before
    assert not (tmp_path / "Documents" / "Cairn" / "Imported").exists()


def test_a_loop_of_parents_in_a_mapping_is_bounded_and_said(core, tmp_path):
    chats = gpt_chats()[:1]
    mapping = chats[0]["mapping"]
    # x -> y -> x: never reached from the root.
    mapping["x"] = {"id": "x", "parent": "y", "children": ["y"], "message": {
        "id": "x", "author": {"role": "user"}, "content": {"content_type": "text",
                                                           "parts": ["looping"]}}}
    mapping["y"] = {"id": "y", "parent": "x", "children": ["x"], "message": {
        "id": "y", "author": {"role": "assistant"}, "content": {"content_type": "text",
                                                                "parts": ["loop"]}}}
    mapping["a2"]["parent"] = "a2"  # and one that is its own parent
    path = write_gpt_export(tmp_path / "loop.zip", chats=chats)
    report = run(core, path)
    assert report.chats_new == 1
    assert any("form a loop" in why for _, why in report.skipped)
    chat = chat_titled(core, "Picture question")
    assert "looping" not in json.dumps(all_messages(core, chat.id))


def test_a_dry_run_writes_nothing(core, tmp_path):
    before = counts(core)
    report = run(core, write_claude_export(tmp_path / "c.zip"), dry_run=True)
    assert (report.chats_new, report.messages, report.suggestions) == (2, 8, 2)
    assert counts(core) == before
    assert not (tmp_path / "Documents" / "Cairn" / "Imported").exists()


def test_a_stop_keeps_whole_chats_and_says_so(core, tmp_path):
    import threading

    stop = threading.Event()
    path = write_claude_export(tmp_path / "c.zip")
    report = run(core, path, progress=lambda p: stop.set(), stop=stop)
    assert report.cancelled and report.chats_new == 1
    for (leaf,) in core.registry.db.query("SELECT leaf_id FROM chat"):
        assert leaf is not None  # every chat stored is whole, with its shown leaf
    assert run(core, path).chats_new == 1  # the next import goes on where it stopped


# ===================================================================== the command line


def test_the_command_line_imports_and_prints_the_report(core, tmp_path, capsys):
    path = write_gpt_export(tmp_path / "gpt.zip")
    core.registry.close()
    assert main(["import-history", str(path), "--dry-run", "--json"]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["dry_run"] is True and dry["chats"]["new"] == 2
    assert main(["import-history", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Imported from ChatGPT: 2 new chat(s)")
    assert main(["import-history", str(path), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["chats"] == {"new": 0, "updated": 0, "unchanged": 2}


def test_the_command_line_takes_a_folder_per_project(tmp_path, capsys, isolated):
    path = write_claude_export(tmp_path / "claude.zip")
    target = tmp_path / "Clients" / "Acme"
    assert main(["import-history", str(path), "--folder-for", f"Acme Inc={target}",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["workspaces"][0]["folder"] == str(target)
    assert main(["import-history", str(path), "--folder-for", "Nope=/tmp/x"]) == 1
    assert "it holds no project named 'Nope'" in capsys.readouterr().err
    assert main(["import-history", str(path), "--folder-for", "oops"]) == 2
    assert "--folder-for takes PROJECT=DIR" in capsys.readouterr().err
    assert main(["import-history", str(tmp_path / "missing.zip")]) == 1
    assert capsys.readouterr().err.startswith("cannot import")


# ===================================================================== the migration


def test_a_database_of_the_previous_version_gains_the_import_tables_after_a_backup(isolated):
    conn, previous = database_before(isolated, "CREATE TABLE imported_chat")
    conn.execute("BEGIN")
    conn.execute("INSERT INTO chat (id, title, created_at, updated_at) VALUES "
                 "('ch_a', 'kept', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')")
    conn.execute("COMMIT")
    conn.close()
    db = Database.open(isolated)
    try:
        assert db.query("PRAGMA user_version")[0][0] == SCHEMA_VERSION
        assert db.query("SELECT title FROM chat") == [("kept",)]
        assert db.query("SELECT count(*) FROM imported_chat")[0][0] == 0
        assert list(isolated.glob(f"cairn-v{previous}-*.db.bak"))
    finally:
        db.close()


def test_a_crash_before_a_batch_commits_leaves_no_blob_behind(core, tmp_path, monkeypatch,
                                                               open_registry):
    """An image written for a chat whose batch never committed: its in-progress marker makes
    the next start drop it (as if the process died between the blob and the transaction)."""
    from app.history import importing
    from app.store import imported

    def dies(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt  # the process going away mid-import

    monkeypatch.setattr(imported, "store_chats", dies)
    monkeypatch.setattr(importing._Blobs, "undo", lambda self: None)  # it never ran
    with pytest.raises(KeyboardInterrupt):
        run(core, write_gpt_export(tmp_path / "gpt.zip"))
    files = core.registry.db.path.parent / "files"
    assert [p for p in files.rglob("*") if p.is_file()]  # the image landed, no record uses it
    assert core.registry.db.query("SELECT count(*) FROM pending_change")[0][0] == 1
    core.registry.close()
    (core.registry.db.path.parent / "imports").mkdir(exist_ok=True)
    for lock in (core.registry.db.path.parent / "imports").glob("*.lock"):
        lock.unlink()  # the dead process's lock went with it
    again = open_registry()
    assert again.db.query("SELECT count(*) FROM pending_change")[0][0] == 0
    assert not [p for p in files.rglob("*") if p.is_file()]
    assert again.db.query("SELECT count(*) FROM imported_chat")[0][0] == 0


# ===================================================================== learning, when asked


async def test_learn_from_imported_chats_says_the_cost_first_then_learns_them(
        online, fake, tmp_path):
    """Imported chats are not learned from; per workspace the person sees the estimate
    (exchanges × the knowledge model's price), then the rebuild learns them one by one."""
    from app.knowledge.imported import backlog, learn
    from tests.helpers import add_op

    cairn = online
    long = "Our brand colour is orange #FF5500, chosen in 2024 for the relaunch campaign."
    from tests import history_exports as ex

    chats = ex.claude_new_chats()
    chats[1]["chat_messages"][1] = ex.claude_message(
        "n2", "assistant", long + " It stays for print and web.", "2025-04-02T09:00:09Z",
        parent="n1")
    path = tmp_path / "learn.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("conversations.json", json.dumps(chats))
        zf.writestr("projects.json", json.dumps(ex.claude_projects()))
    import_history(cairn.registry, cairn.files, path,
                   folders={"Acme Inc": str(tmp_path / "Clients" / "Acme")})
    ws = cairn.registry.workspace_for_folder(str(tmp_path / "Clients" / "Acme"))
    assert ws is not None and ws.title == "Acme Inc"
    assert cairn.rebuilder.waiting() == []  # nothing is learned by itself
    plan = backlog(cairn.registry, cairn.chats, "claude-haiku-5-5", ws.id)
    assert (len(plan.chats), plan.exchanges) == (1, 1)
    assert plan.cost_usd is not None and plan.cost_usd > 0
    assert plan.sentence().startswith("Learning from 1 exchange(s) in 1 imported chat(s) "
                                      "costs about $")
    assert not fake.message_requests  # the estimate asks no model
    fake.reply_json("update_knowledge", {"ops": [add_op(
        "Brand colour is orange #FF5500", "Our brand colour is orange #FF5500")]})
    assert await learn(cairn.registry, cairn.rebuilder, plan) == 1
    assert "#FF5500" in cairn.knowledge.get(ws.id).text
    assert backlog(cairn.registry, cairn.chats, "claude-haiku-5-5", ws.id).exchanges == 0
    assert cairn.rebuilder.waiting() == []


async def test_stopping_the_learning_puts_the_rest_back_unlearned(quiet_cairn, tmp_path,
                                                                  monkeypatch):
    import asyncio

    from app.knowledge.imported import backlog, learn

    cairn = quiet_cairn
    path = write_claude_export(tmp_path / "c.zip")
    import_history(cairn.registry, cairn.files, path,
                   folders={"Acme Inc": str(tmp_path / "Clients" / "Acme")})
    ws = cairn.registry.workspace_for_folder(str(tmp_path / "Clients" / "Acme"))
    chat = chat_titled(cairn, "Brand colours")
    plan = backlog(cairn.registry, cairn.chats, "claude-haiku-5-5", ws.id)
    plan = type(plan)(ws.id, (chat.id,), 1, 1, 1, plan.model, 0.0)  # (its reply is short)
    before = cairn.registry.db.query("SELECT knowledge_watermark FROM chat WHERE id = ?",
                                     (chat.id,))[0][0]

    async def stopped(chat_id):  # type: ignore[no-untyped-def]
        raise asyncio.CancelledError  # the person pressed Stop while it ran

    monkeypatch.setattr(cairn.rebuilder, "rebuild", stopped)
    with pytest.raises(asyncio.CancelledError):
        await learn(cairn.registry, cairn.rebuilder, plan)
    after = cairn.registry.db.query("SELECT knowledge_watermark FROM chat WHERE id = ?",
                                    (chat.id,))[0][0]
    assert after == before > 0  # not learned, and not waiting to be learned either
    assert cairn.rebuilder.waiting() == []


def test_what_an_imported_chat_sends_next_is_only_what_cairn_writes(core, tmp_path):
    """Thinking and tool lines from another service are shown, never sent back: the next
    turn's history holds only words, and the files as Cairn sends them."""
    from app.chat.engine import history

    run(core, write_gpt_export(tmp_path / "gpt.zip"))
    run(core, write_claude_export(tmp_path / "claude.zip"))
    for title in ("Picture question", "Trip to Lisbon", "Brand colours"):
        chat = chat_titled(core, title)
        sent = history(ChatStore(core.registry.db).messages(chat.id), core.files.expand)
        kinds = {b["type"] for m in sent for b in m["content"]}
        assert kinds <= {"text", "image", "document"}, (title, kinds)
        assert [m["role"] for m in sent] == ["user", "assistant"] * (len(sent) // 2)


def test_an_unpacked_folder_never_follows_a_link_out_of_it(core, tmp_path):
    folder = tmp_path / "unpacked"
    with zipfile.ZipFile(write_claude_export(tmp_path / "c.zip")) as zf:
        zf.extractall(folder)
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "conversations.json").write_text("not json at all")
    (folder / "more.json").symlink_to(secret / "conversations.json")
    (folder / "linked").symlink_to(secret, target_is_directory=True)
    seen = preview(core.registry, folder)  # the links are not part of the export
    assert seen.chats == 2
