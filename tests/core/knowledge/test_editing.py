"""The core under the knowledge panel: merging a newer version into the person's text,
comparing versions, the document's status, knowledge files described and removed (the blob
only when nothing uses it), instructions saved safely, and 1,000 random interleavings of
hand saves and rebuild results that lose nothing."""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest

from app.errors import Refused
from app.events import FileChanged, FileRemoved
from app.knowledge.merge import changed_lines, compare, merge3
from app.knowledge.status import document_line, owner_knowledge
from app.ops import Operations
from app.store.documents import PERSONAL, Change, Conflict, KnowledgeStore, Saved

# ================================================================= merging and comparing


def test_merge_takes_each_sides_changes_and_keeps_both_where_both_changed():
    base = "## Facts\n- a\n- b\n- c\n"
    mine = "## Facts\n- a\n- b, by hand\n- c\n- mine\n"
    theirs = "## Facts\n- a\n- b\n- c\n- from a chat\n\n## Decisions\n- d\n"
    merged = merge3(base, mine, theirs)
    lines = merged.text.splitlines()
    new_theirs = [line for line in theirs.splitlines() if line not in base.splitlines()]
    for line in mine.splitlines() + new_theirs:
        assert line in lines  # nothing either side wrote is lost
    assert [lines[i] for i in merged.incoming] == ["- from a chat", "", "## Decisions", "- d"]
    same = merge3(base, base.replace("- b", "- B"), base.replace("- c", "- C"))
    assert same.text == "## Facts\n- a\n- B\n- C\n" and same.conflicts == 0
    both = merge3(base, base.replace("- b", "- B1"), base.replace("- b", "- B2"))
    assert both.text == "## Facts\n- a\n- B1\n- B2\n- c\n" and both.conflicts == 1
    assert merge3(base, base, base).text == base


def test_compare_and_changed_lines():
    hunks = compare("- a\n- b\n", "- a\n- B\n- c\n")
    assert [h.tag for h in hunks] == ["equal", "replace"]
    assert hunks[1].old == ("- b",) and hunks[1].new == ("- B", "- c")
    assert changed_lines("- a\n- b\n", "- a\n- b\n- c\n") == [2]


def test_document_line():
    from datetime import UTC, datetime

    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert document_line("rebuild", "2026-11-30T09:58:00Z", 0, now) == \
        "Updated from a chat 2 min ago"
    assert document_line("user", "2026-11-29T08:00:00Z", 3, now) == \
        "Edited by you yesterday · 3 exchanges waiting"
    assert document_line(None, None, 1, now) == "1 exchange waiting"


def test_owner_status_counts_waiting_chats_below_and_the_last_failure(online, folders):
    root, brand = folders("Acme", "Acme/Brand")
    reg = online.registry
    acme, _ = reg.add_workspace(root)
    folder, _ = reg.add_workspace(brand)
    chat = reg.new_chat(folder=brand)
    online.chats.append(chat.id, "user", [{"type": "text", "text": "Our launch is in April."}])
    online.chats.append(chat.id, "assistant", [{"type": "text", "text": "Noted. " * 20}])
    state = owner_knowledge(reg, online.rebuilder, acme.id)
    assert state.waiting == 1 and state.chats == (chat.id,) and state.failure is None
    assert owner_knowledge(reg, online.rebuilder, folder.id).waiting == 1
    with reg.db.write() as conn:
        conn.execute("INSERT INTO knowledge_status (owner, last_error, last_error_at) VALUES"
                     " (?, 'The network is down.', '2026-11-30T10:00:00Z')", (acme.id,))
    assert owner_knowledge(reg, online.rebuilder, acme.id).failure == "The network is down."
    assert owner_knowledge(reg, online.rebuilder, PERSONAL).chats == (chat.id,)


# ================================================================= files


def run(coroutine):  # type: ignore[no-untyped-def]
    return asyncio.run(coroutine)


def test_a_file_is_described_and_removed_its_blob_only_when_unused(online, workspace, tmp_path):
    source = tmp_path / "brief.md"
    source.write_text("# Brief\nLaunch in April.\n")
    ops = Operations(online)
    first, _ = run(ops.add_file(workspace.id, source, description="the brief"))
    second, _ = run(ops.add_file(workspace.id, source))  # the same bytes: one blob
    blob = online.files.blobs.path(first.sha256)
    described, changes = run(ops.describe_file(second.id, "  the   launch\nbrief "))
    assert described.description == "the launch brief"
    assert changes.of(FileChanged) == (FileChanged(workspace.id, second.id),)
    lines = run(ops.manifest(workspace.id))
    assert [line for _f, line in lines] == [
        f"- [{first.id}] brief.md (25 B, project) — the brief",
        f"- [{second.id}] brief.md (25 B, project) — the launch brief"]
    _, changes = run(ops.remove_file(first.id))
    assert changes.of(FileRemoved) == (FileRemoved(workspace.id, first.id),)
    assert blob.exists()  # the second record still uses it
    run(ops.remove_file(second.id))
    assert not blob.exists()
    assert online.files.of_workspaces([workspace.id]) == []
    with pytest.raises(Refused, match="removed already"):
        run(ops.remove_file(second.id))


def test_a_removed_file_keeps_a_blob_a_message_attachment_uses(online, workspace, tmp_path):
    source = tmp_path / "notes.txt"
    source.write_text("shared bytes\n")
    record = online.files.add(workspace.id, source)
    chat = online.registry.new_chat()
    online.chats.append(chat.id, "user", [online.files.attach(source)])
    online.files.remove(record.id)
    assert online.files.blobs.path(record.sha256).exists()


def test_a_folder_file_has_the_folder_scope_in_its_line(online, folders, tmp_path):
    root, brand = folders("Acme", "Acme/Brand")
    online.registry.add_workspace(root)
    folder, _ = online.registry.add_workspace(brand)
    source = tmp_path / "logo.txt"
    source.write_text("logo")
    online.files.add(folder.id, source)
    ((_, line),) = run(Operations(online).manifest(folder.id))
    assert line.endswith("logo.txt (4 B, folder)")


# ================================================================= keep mine


def test_keep_mine_learns_the_rebuild_it_replaced_again_on_top(online, workspace, monkeypatch):
    import time

    reg, store = online.registry, online.knowledge
    chat = reg.new_chat(folder=workspace.path)
    ws = workspace.id

    def exchange(text: str) -> int:
        online.chats.append(chat.id, "user", [{"type": "text", "text": text}])
        reply = online.chats.append(chat.id, "assistant",
                                    [{"type": "text", "text": "Noted. " * 20}])
        time.sleep(0.005)  # stored before the rebuild that learns it (milliseconds apart)
        return reply.id

    def rebuild(text: str, mark: int) -> None:
        store.save(ws, text, source="rebuild", chat_id=chat.id)
        with reg.db.write() as conn:
            conn.execute("UPDATE chat SET knowledge_watermark = ? WHERE id = ?", (mark, chat.id))
        time.sleep(0.005)

    store.save(ws, "## Facts\n", source="user")  # version 1
    first = exchange("Launch is in April.")
    rebuild("## Facts\n- Launch in April\n", first)  # version 2: the person opens this
    second = exchange("Dana signs contracts.")
    rebuild("## Facts\n- Launch in April\n- Dana signs\n", second)  # version 3 meanwhile
    ran: list[str] = []
    monkeypatch.setattr(online.scheduler, "run_now", lambda chat_id: ran.append(chat_id))
    result, _ = run(Operations(online).keep_knowledge(
        ws, "## Facts\n- Launch in April\n- Mine\n", based_on=3, opened_at=2))
    assert isinstance(result, Saved) and result.document.version == 4
    assert ran == [chat.id]
    mark = reg.db.query("SELECT knowledge_watermark FROM chat WHERE id = ?", (chat.id,))[0][0]
    assert mark == first  # the second exchange is learned again, on top of the person's text
    assert store.version_text(ws, 3).endswith("- Dana signs\n")  # and stays in the history


# ================================================================= instructions


def test_instructions_are_saved_only_over_what_was_opened(online, workspace):
    ops = Operations(online)
    saved, _ = run(ops.save_instructions(workspace.id, description="Analytics",
                                         instructions="Formal tone", expected=("", "")))
    assert (saved.description, saved.instructions) == ("Analytics", "Formal tone")
    online.registry.update_workspace(workspace.id, instructions="Cite the brand guide")
    stale, changes = run(ops.save_instructions(workspace.id, description="Analytics",
                                               instructions="Short answers",
                                               expected=("Analytics", "Formal tone")))
    assert stale is None and not changes
    assert online.registry.workspace(workspace.id).instructions == "Cite the brand guide"


# ================================================================= interleavings


class Editor:
    """What the panel's editor does with the store (ui/knowledge/editor.py): it saves on the
    version it opened, shows a newer version at once while unedited, and on a conflict the
    person merges, keeps theirs or reloads."""

    def __init__(self, store: KnowledgeStore, owner: str) -> None:
        self.store, self.owner = store, owner
        current = store.get(owner)
        self.base, self.base_text, self.text = current.version, current.text, current.text

    @property
    def dirty(self) -> bool:
        return self.text != self.base_text

    def newer(self) -> None:
        """A new version arrived (the panel hears KnowledgeSaved)."""
        if not self.dirty:
            current = self.store.get(self.owner)
            self.base, self.base_text, self.text = current.version, current.text, current.text

    def save(self) -> Saved | Conflict:
        result = self.store.save(self.owner, self.text, source="user", based_on=self.base)
        if isinstance(result, Saved):
            self.base, self.base_text = result.document.version, result.document.text
        return result


def interleave(store: KnowledgeStore, owner: str, rng: random.Random) -> Counter[str]:
    seen: Counter[str] = Counter()
    editor = Editor(store, owner)
    saved_texts: list[str] = []  # every text the person saved
    applied: list[str] = []  # every entry a rebuild added, as applied
    last: str = ""  # what the last decision made the document
    reading: tuple[int, str] | None = None  # a rebuild that read the document, not yet saved
    made = 0

    def rebuild_result(version: int, text: str) -> bool:
        nonlocal made, last
        made += 1
        entry = f"- From chat {made} in {owner}"
        if rng.random() < 0.3 and "\n- " in text:  # an update of an entry, in its place
            lines = text.splitlines()
            at = rng.choice([i for i, line in enumerate(lines) if line.startswith("- ")])
            lines[at] = f"{lines[at]} (updated {made})"
            entry, new = lines[at], "\n".join(lines) + "\n"
        else:
            new = text + ("\n" if text and not text.endswith("\n") else "") + entry + "\n"
        if store.save_if_unchanged([Change(owner, new, version)], source="rebuild",
                                   chat_id=f"chat-{made}"):
            applied.append(entry)
            last = new
            editor.newer()
            return True
        return False

    for _ in range(rng.randint(4, 9)):
        step = rng.random()
        if step < 0.3:  # the person types: an entry of their own, or a line changed
            lines = editor.text.splitlines()
            if lines and rng.random() < 0.4:
                at = rng.randrange(len(lines))
                lines[at] = lines[at] + f" (edited {rng.randrange(1000)})"
                editor.text = "\n".join(lines) + "\n"
            else:
                editor.text += f"- Mine {rng.randrange(10**6)}\n"
        elif step < 0.5 and reading is None:  # a rebuild reads the documents
            current = store.get(owner)
            reading = (current.version, current.text)
        elif step < 0.7:  # a rebuild's result: on what it read, or at once
            version, text = reading or (store.get(owner).version, store.get(owner).text)
            reading = None
            if not rebuild_result(version, text):  # a hand edit won: again, on top of it
                seen["superseded"] += 1
                current = store.get(owner)
                assert rebuild_result(current.version, current.text)
        else:
            result = editor.save()
            if isinstance(result, Conflict):
                choice = rng.choice(("merge", "keep", "reload"))
                seen[choice] += 1
                if choice == "merge":
                    mine = editor.text
                    merged = merge3(editor.base_text, mine, result.current.text)
                    lines = merged.text.splitlines()
                    before = set(editor.base_text.splitlines())
                    for side in (mine, result.current.text):  # what either side wrote
                        assert all(line in lines for line in side.splitlines()
                                   if line not in before)
                    editor.base, editor.base_text = result.current.version, result.current.text
                    editor.text = merged.text
                    result = editor.save()
                elif choice == "keep":
                    editor.base, editor.base_text = result.current.version, result.current.text
                    result = editor.save()
                else:
                    editor.base, editor.base_text = result.current.version, result.current.text
                    editor.text = result.current.text
                    last = result.current.text
                    continue
                assert isinstance(result, Saved)
            assert result.document.text == editor.text
            saved_texts.append(editor.text)
            last = editor.text
    if reading is not None:  # the last rebuild still lands, on top of whatever won
        version, text = reading
        if not rebuild_result(version, text):
            current = store.get(owner)
            assert rebuild_result(current.version, current.text)

    history = store.history(owner)
    texts = {store.version_text(owner, v.version) for v in history}
    assert all(text in texts for text in saved_texts if text), "a hand save is missing"
    for entry in applied:
        assert any(entry in text.splitlines() for text in texts), "an applied op is missing"
    assert store.get(owner).text == last
    assert [v.version for v in history] == list(range(len(history), 0, -1))
    return seen


def test_a_thousand_interleavings_of_hand_saves_and_rebuilds_lose_nothing(registry):
    store = KnowledgeStore(registry.db)
    seen: Counter[str] = Counter()
    for seed in range(1000):
        seen += interleave(store, f"ws_{seed}", random.Random(seed))
    # Every outcome was reached, many times over (so the checks above checked something).
    assert min(seen[k] for k in ("merge", "keep", "reload", "superseded")) >= 20, seen
