"""CAIRN.md: the knowledge document kept as a file in the workspace's
folder, written after every kind of version and edited outside Cairn, through the fake server
and the real file system."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.errors import Refused
from app.store.documents import KnowledgeStore
from tests.helpers import add_op, talk
from ui.main import main


@pytest.fixture
def cairn(online):
    return online


@pytest.fixture
def project(workspace):
    return workspace


def cairn_md(ws) -> Path:
    return Path(ws.path) / "CAIRN.md"


def sources(cairn, owner: str) -> list[str]:
    return [v.source for v in cairn.knowledge.history(owner)]


# ----------------------------------------------------------------- written out


async def test_cairn_md_is_written_on_switch_on_and_after_every_kind_of_version(
        cairn, fake, project):
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    assert not cairn_md(project).exists()  # off by default: nothing written into the folder
    state = cairn.cairn_file_sync.switch(project.id, True)
    assert state.on and state.state == "written"
    assert cairn_md(project).read_bytes() == b"## Facts\n- Budget 40000 EUR\n"

    # A save in Cairn, with text that must survive byte for byte (CRLF); the file ends with
    # a newline in the text's style even when the text does not (a line added with
    # `echo … >> CAIRN.md` is a line of its own).
    text = "## Facts\r\n- Budget 45000 EUR — café\r\n- Ünïcode ✓"
    cairn.knowledge.save(project.id, text, source="user")
    assert cairn_md(project).read_bytes() == (text + "\r\n").encode("utf-8")
    cairn.knowledge.save(project.id, "## Facts\n- Budget 46000 EUR", source="user")
    assert cairn_md(project).read_bytes() == b"## Facts\n- Budget 46000 EUR\n"
    with cairn_md(project).open("a", encoding="utf-8") as appended:  # echo … >> CAIRN.md
        appended.write("- Launch in May\n")
    assert cairn.cairn_file_sync.sync(project.id) is not None
    assert cairn.knowledge.get(project.id).text.rstrip("\n").splitlines()[-2:] == [
        "- Budget 46000 EUR", "- Launch in May"]
    cairn.knowledge.save(project.id, text, source="user")
    assert cairn_md(project).read_bytes() == (text + "\r\n").encode("utf-8")

    # A rebuild.
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    after_rebuild = cairn.knowledge.get(project.id)
    assert "Launch 2027-04-15" in after_rebuild.text
    assert cairn_md(project).read_bytes() == after_rebuild.text.encode("utf-8")

    # A restore.
    restored = cairn.knowledge.restore(project.id, 1)
    assert cairn_md(project).read_text(encoding="utf-8") == restored.text == (
        "## Facts\n- Budget 40000 EUR\n")

    # No temporary file is left beside it.
    assert sorted(p.name for p in Path(project.path).iterdir()) == ["CAIRN.md"]


def test_an_accepted_suggestion_is_written_too(cairn, project):
    from app.knowledge import suggestions
    from app.store.suggestions import Proposed

    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    cairn.knowledge.save_rebuild([], chat_id=chat.id, covered=0, notes={}, suggestions=[
        Proposed(owner=project.id, kind="add", section="Facts", targets=(),
                 text="Launch 2027-04-15", reason="r", evidence="launch", said_by=None)])
    (waiting,) = cairn.knowledge.suggestions([project.id])
    doc = suggestions.accept(cairn.knowledge, waiting.id)
    assert "Launch 2027-04-15" in doc.text
    assert cairn_md(project).read_text(encoding="utf-8") == doc.text


def test_a_crash_between_the_commit_and_the_file_write_is_healed_at_the_next_read(
        cairn, project):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    # Another writer of the same database that never writes the file (as if Cairn stopped
    # right after the commit).
    KnowledgeStore(cairn.registry.db).save(project.id, "## Facts\n- Two\n", source="user")
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- One\n"
    doc = cairn.knowledge.get(project.id)  # the next read
    assert doc.text == "## Facts\n- Two\n" and doc.version == 2  # not taken for an edit
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- Two\n"
    assert sources(cairn, project.id) == ["user", "user"]


def test_switching_off_leaves_the_file_where_it_is(cairn, project):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn.cairn_file_sync.switch(project.id, False)
    cairn.knowledge.save(project.id, "## Facts\n- Two\n", source="user")
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- One\n"
    cairn_md(project).write_text("outside, while off", encoding="utf-8")
    assert cairn.knowledge.get(project.id).text == "## Facts\n- Two\n"  # not taken in


def test_switching_on_over_a_different_cairn_md_asks_which_to_keep(cairn, project):
    cairn.knowledge.save(project.id, "## Facts\n- Mine in Cairn\n", source="user")
    cairn_md(project).write_text("# Hand-written\n", encoding="utf-8")
    with pytest.raises(Refused, match="already exists and is not this document: say which "
                                      "to keep"):
        cairn.cairn_file_sync.switch(project.id, True)
    assert cairn_md(project).read_text(encoding="utf-8") == "# Hand-written\n"
    cairn.cairn_file_sync.switch(project.id, True, keep="file")
    doc = cairn.knowledge.get(project.id)
    assert doc.text == "# Hand-written\n" and doc.source == "file"
    assert cairn.knowledge.version_text(project.id, 1) == "## Facts\n- Mine in Cairn\n"


# ----------------------------------------------------------------- taken in


def test_an_outside_edit_is_taken_in_by_knowledge_show(cairn, project, capsys):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn_md(project).write_text("## Facts\n- One\n- Two, from my editor\n", encoding="utf-8")
    cairn.close()  # the command line opens the same data folder
    assert main(["knowledge", "show", project.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == "## Facts\n- One\n- Two, from my editor\n"
    assert shown["source"] == "file" and shown["version"] == 2
    assert shown["knowledge_file"]["state"] == "written"
    assert main(["knowledge", "history", project.id, "--json"]) == 0
    assert [v["source"] for v in json.loads(capsys.readouterr().out)] == ["file", "user"]


async def test_an_outside_edit_reaches_the_next_turns_context(cairn, fake, project):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn_md(project).write_text("## Facts\n- Budget raised to 52000 EUR\n", encoding="utf-8")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "Budget?")
    system = json.dumps(fake.message_requests[-1].body["system"])
    assert "Budget raised to 52000 EUR" in system
    assert cairn.knowledge.history(project.id)[0].source == "file"


@pytest.mark.parametrize("data, why", [
    (b"## Facts\n- caf\xe9 in Latin-1\n", "it is not UTF-8 text"),
    (b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "it is a binary file, not text"),
    (b"- x\n" * 2_600_000, "it is 10.4 MB, and a knowledge document can be at most 1 MB (1,000,000 bytes)"),
])
def test_invalid_outside_text_is_refused_in_one_sentence(cairn, project, capsys, data, why):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn_md(project).write_bytes(data)
    doc = cairn.knowledge.get(project.id)
    assert doc.text == "## Facts\n- One\n" and doc.version == 1  # unchanged
    state = cairn.cairn_file_sync.state(project.id)
    assert state.state == "refused"
    assert state.sentence == (f"The edit of CAIRN.md was not taken in: {why}; the document "
                              "is unchanged and the file is left as it is.")
    assert cairn_md(project).read_bytes() == data  # left alone
    cairn.close()
    assert main(["knowledge", "show", project.id]) == 0
    out, err = capsys.readouterr()
    assert out == "## Facts\n- One\n\n" and err.strip() == state.sentence


def test_a_deleted_file_never_empties_the_document(cairn, project):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn_md(project).unlink()
    assert cairn.knowledge.get(project.id).text == "## Facts\n- One\n"
    state = cairn.cairn_file_sync.state(project.id)
    assert state.state == "missing" and "written again at its next version" in state.sentence
    assert not cairn_md(project).exists()
    cairn.knowledge.save(project.id, "## Facts\n- One\n- Two\n", source="user")
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- One\n- Two\n"


def test_the_command_line_switch(cairn, project, capsys):
    cairn.knowledge.save(project.id, "## Facts\n- One\n", source="user")
    cairn.close()
    assert main(["workspace", "knowledge-file", project.id, "on"]) == 0
    assert "is kept as" in capsys.readouterr().out
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- One\n"
    assert main(["workspace", "knowledge-file", project.id, "off", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["on"] is False
    assert cairn_md(project).exists()
    cairn_md(project).write_text("other", encoding="utf-8")
    assert main(["workspace", "knowledge-file", project.id, "on"]) == 1
    assert "say which to keep" in capsys.readouterr().err
    assert main(["workspace", "knowledge-file", project.id, "on", "--keep", "document"]) == 0
    assert cairn_md(project).read_text(encoding="utf-8") == "## Facts\n- One\n"


# ----------------------------------------------------------------- racing a rebuild


def hold_knowledge_calls(cairn, before=None):
    loop = asyncio.get_running_loop()
    gate, entered, calls = asyncio.Event(), asyncio.Event(), []
    real_client = cairn.rebuilder._client

    class Held:
        def __init__(self) -> None:
            self.messages = self

        async def create(self, **kwargs):
            calls.append(kwargs)
            if before is not None:
                before(len(calls))
            loop.call_soon_threadsafe(entered.set)
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(gate.wait(), loop))
            return await real_client().messages.create(**kwargs)

    cairn.rebuilder._client = Held
    return gate, entered, calls


async def test_a_rebuild_racing_an_outside_edit_loses_nothing(cairn, fake, project):
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    gate, entered, calls = hold_knowledge_calls(cairn)
    for _ in range(2):
        fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                           "launch date is 2027-04-15")]})
    task = asyncio.create_task(cairn.rebuilder.rebuild(chat.id))
    await asyncio.wait_for(entered.wait(), timeout=10)
    edited = "## Facts\n- Budget 45000 EUR (from my editor)\n"
    cairn_md(project).write_text(edited, encoding="utf-8")  # nobody has read it yet
    gate.set()
    report = await asyncio.wait_for(task, timeout=10)
    assert report.status == "applied" and len(calls) == 2  # superseded, then again on top
    text = cairn.knowledge.get(project.id).text
    assert text == "## Facts\n- Budget 45000 EUR (from my editor)\n- Launch 2027-04-15\n"
    assert sources(cairn, project.id) == ["rebuild", "file", "user"]
    assert cairn_md(project).read_text(encoding="utf-8") == text


FACT = "fact number {n} is confirmed by the whole team today, and written down for later use"


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["edit", "save", "rebuild", "race"]),
                          st.booleans()), min_size=1, max_size=7))
def test_outside_edits_hand_saves_and_rebuilds_interleaved_lose_nothing(
        online, fake, folders, steps):
    """Whatever the order of outside edits, hand saves and rebuilds (some racing an edit made
    while the model answers, seen or unseen before the save): every text the person wrote is
    a version in the history, every rebuilt fact ends in the document once things settle,
    and CAIRN.md is the document."""
    cairn = online
    (root,) = folders(f"prop-{id(steps)}-{len(cairn.registry.workspaces())}")
    ws, _ = cairn.registry.add_workspace(root)
    cairn.cairn_file_sync.switch(ws.id, True)
    path = cairn_md(ws)
    written: list[str] = []
    facts: list[str] = []
    chats: list[str] = []

    def outside_edit(n: int) -> None:
        text = (path.read_text(encoding="utf-8") if path.exists() else "") + f"- Edit {n}\n"
        path.write_text(text, encoding="utf-8")
        written.append(text)

    async def scenario() -> None:
        for n, (kind, seen) in enumerate(steps):
            if kind == "edit":
                outside_edit(n)
                if seen:
                    cairn.knowledge.get(ws.id)
            elif kind == "save":
                text = cairn.knowledge.get(ws.id).text + f"- Hand {n}\n"
                cairn.knowledge.save(ws.id, text, source="user")
                written.append(text)
            else:
                chat = cairn.registry.new_chat(folder=ws.path)
                chats.append(chat.id)
                fact = f"Fact {n} confirmed"
                facts.append(fact)
                await talk(cairn, fake, chat.id, "Note it", reply=FACT.format(n=n))
                real = cairn.rebuilder._client
                loop = asyncio.get_running_loop()

                class Answering:
                    def __init__(self) -> None:
                        self.messages = self

                    async def create(self, **kwargs):
                        if kind == "race":  # the person edits the file while the model answers
                            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(
                                asyncio.to_thread(outside_edit, 100 + n), loop))
                        fake.reply_json("update_knowledge", {"ops": [add_op(
                            fact, f"fact number {n} is confirmed")]})
                        return await real().messages.create(**kwargs)

                cairn.rebuilder._client = Answering
                try:
                    await cairn.rebuilder.rebuild(chat.id)
                finally:
                    cairn.rebuilder._client = real
        # Settle: what an outside edit replaced is learned again, as the window would.
        real = cairn.rebuilder._client
        for _round in range(3):
            for chat_id in chats:
                pending = cairn.rebuilder.pending(chat_id)
                if any(e.qualifies for e in pending):
                    n = int(pending[-1].reply.split("fact number ", 1)[1].split(" ", 1)[0])

                    class Again:
                        def __init__(self) -> None:
                            self.messages = self

                        async def create(self, **kwargs):
                            fake.reply_json("update_knowledge", {"ops": [add_op(
                                f"Fact {n} confirmed", f"fact number {n} is confirmed")]})
                            return await real().messages.create(**kwargs)

                    cairn.rebuilder._client = Again
                    try:
                        await cairn.rebuilder.rebuild(chat_id)
                    finally:
                        cairn.rebuilder._client = real

    asyncio.run(scenario())
    doc = cairn.knowledge.get(ws.id)
    versions = {cairn.knowledge.version_text(ws.id, v.version)
                for v in cairn.knowledge.history(ws.id)}
    for text in written:  # each line the person wrote is in a version (an unseen edit
        last = text.rstrip("\n").rsplit("\n", 1)[-1]  # lives on inside the next one)
        assert any(last in version for version in versions), last
    for fact in facts:
        assert fact in doc.text
    assert path.read_text(encoding="utf-8") == doc.text


# ----------------------------------------------------------------- export and import


def test_export_and_import_carry_the_switch_and_ask_over_a_folders_own_cairn_md(
        cairn, project, folders, tmp_path, capsys):
    from app.sharing.export import export_workspace

    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- Shared\n", source="user")
    bundle = tmp_path / "acme.cairn"
    export_workspace(cairn.registry, project.id, bundle)
    cairn.close()

    # Into an empty folder: on, and written.
    target = tmp_path / "disk" / "Imported"
    assert main(["import", str(bundle), str(target), "--json"]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["knowledge_file"]["on"] == [made["workspace"]["id"]]
    assert (target / "CAIRN.md").read_text(encoding="utf-8") == "## Facts\n- Shared\n"

    # Into a folder with its own CAIRN.md: without the flag it stays off, the file untouched.
    (other,) = folders("Other")
    (Path(other) / "CAIRN.md").write_text("# Their own\n", encoding="utf-8")
    assert main(["import", str(bundle), other]) == 0
    said = capsys.readouterr().out
    assert "has its own CAIRN.md, left as it is" in said and "--keep document" in said
    assert (Path(other) / "CAIRN.md").read_text(encoding="utf-8") == "# Their own\n"

    # With the flag: the folder's file is kept, as the document's newest version.
    (third,) = folders("Third")
    (Path(third) / "CAIRN.md").write_text("# Theirs wins\n", encoding="utf-8")
    assert main(["import", str(bundle), third, "--keep-cairn-md", "file", "--json"]) == 0
    ws_id = json.loads(capsys.readouterr().out)["workspace"]["id"]
    assert main(["knowledge", "show", ws_id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["text"] == "# Theirs wins\n" and shown["knowledge_file"]["on"] is True


async def test_an_outside_edit_unseen_until_after_a_rebuild_saved_is_merged_with_it(
        cairn, fake, project, monkeypatch):
    """The edit lands between the rebuild's last look at the file and its commit: it
    is merged against the version the file descends from, so the person's text
    and the rebuild's new entry both stay, with no second model call."""
    cairn.cairn_file_sync.switch(project.id, True)
    cairn.knowledge.save(project.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=project.path)
    await talk(cairn, fake, chat.id, "When?")
    edited = "## Facts\n- Budget 45000 EUR (from my editor)\n"
    real_save = cairn.knowledge.save_rebuild

    def edit_then_save(*args, **kwargs):
        cairn_md(project).write_text(edited, encoding="utf-8")  # too late to be seen
        return real_save(*args, **kwargs)

    once = iter([edit_then_save])
    monkeypatch.setattr(cairn.knowledge, "save_rebuild",
                        lambda *a, **k: next(once, real_save)(*a, **k))
    fake.reply_json("update_knowledge", {"ops": [add_op("Launch 2027-04-15",
                                                       "launch date is 2027-04-15")]})
    assert (await cairn.rebuilder.rebuild(chat.id)).status == "applied"
    both = edited + "- Launch 2027-04-15\n"
    assert sources(cairn, project.id) == ["file", "rebuild", "user"]
    assert cairn.knowledge.get(project.id).text == both
    assert cairn_md(project).read_text(encoding="utf-8") == both
    assert cairn.cairn_file_sync.state(project.id).removed == ()
