"""What a rebuild does not apply by itself waits for the person as a
suggestion (never erased by a later rebuild, never hidden by a moot correction); exchanges are
learned where they were said; near-duplicates and one fact sent to two documents land once;
labels are never stripped; "Keep mine" learns again exactly what it replaced; the command
line runs a superseded rebuild again as the window does."""

from __future__ import annotations

import asyncio

import pytest

from app.errors import Refused
from app.knowledge import suggestions
from app.knowledge.meaning import CLAUDE, PERSON, Said
from app.knowledge.status import owner_knowledge
from app.knowledge.validator import Layer, apply_ops
from app.store import watermarks
from tests.helpers import run, run_json

TODAY = "2027-05-01"
PREFERENCES = ("## Working style & preferences\n- Write in a warm, friendly tone.\n"
               "- Keep answers short.\n- Use metric units only.\n")
LOSSY = {"op": "merge", "refs": ["P1", "P2", "P3"], "text": "Keep answers short."}
REPLY = ("As you asked: a warm, friendly tone, short answers, and metric units only, always, "
         "in every answer I write for this project.")


@pytest.fixture
def cairn(online):
    return online


async def talk(cairn, fake, chat_id: str, question: str, reply: str = REPLY) -> None:
    fake.reply_text(reply)
    result = await cairn.engine.send(chat_id, question)
    assert result.status == "complete"


async def rebuild(cairn, fake, chat_id: str, *answers: list[dict]):
    for ops in answers:
        fake.reply_json("update_knowledge", {"ops": ops})
    return await cairn.rebuilder.rebuild(chat_id)


async def lossy_merge_suggested(cairn, fake, workspace):
    cairn.knowledge.save(workspace.id, PREFERENCES, source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "How should you write for me?")
    report = await rebuild(cairn, fake, chat.id, [LOSSY], [LOSSY])
    return chat, report


# ======================================================================= suggestions kept


async def test_a_refused_merge_waits_as_a_suggestion_with_its_text(cairn, fake, workspace):
    chat, report = await lossy_merge_suggested(cairn, fake, workspace)
    assert cairn.knowledge.get(workspace.id).text == PREFERENCES
    assert report.suggested == 1
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    assert kept.kind == "merge" and kept.text == "Keep answers short."
    assert kept.targets == ("Write in a warm, friendly tone.", "Keep answers short.",
                            "Use metric units only.")
    assert "merge was refused" in kept.reason and kept.chat_id == chat.id
    status = owner_knowledge(cairn.registry, cairn.rebuilder, workspace.id)
    assert [s.id for s in status.suggestions] == [kept.id]


async def test_a_later_clean_rebuild_never_erases_a_suggestion(cairn, fake, workspace):
    await lossy_merge_suggested(cairn, fake, workspace)
    other = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, other.id, "We also chose Hetzner for hosting, decided today.",
               "Noted: hosting is on Hetzner, as decided today. I will keep that in mind from now on.")
    report = await rebuild(cairn, fake, other.id, [{
        "op": "add", "target": "project", "section": "Decisions", "text": "Chose Hetzner for hosting",
        "evidence": "We also chose Hetzner for hosting"}])
    assert report.status == "applied" and report.refused == []
    status = owner_knowledge(cairn.registry, cairn.rebuilder, workspace.id)
    assert status.unapplied is None  # the note of the last rebuild is clean ...
    assert [s.text for s in status.suggestions] == ["Keep answers short."]  # ... this stays


async def test_the_same_refusal_again_is_one_suggestion(cairn, fake, workspace):
    chat, _ = await lossy_merge_suggested(cairn, fake, workspace)
    await talk(cairn, fake, chat.id, "Please remember how I like answers, again.")
    await rebuild(cairn, fake, chat.id, [LOSSY], [LOSSY])
    assert len(cairn.knowledge.suggestions([workspace.id])) == 1


async def test_accepting_a_suggestion_applies_it_as_the_person_s_version(cairn, fake, workspace):
    await lossy_merge_suggested(cairn, fake, workspace)
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    before = cairn.knowledge.get(workspace.id).version
    doc = suggestions.accept(cairn.knowledge, kept.id)
    assert doc.text == "## Working style & preferences\n- Keep answers short.\n"
    assert doc.version == before + 1 and doc.source == "user"
    assert cairn.knowledge.suggestions([workspace.id]) == []
    # the facts the merge dropped are in the history, and the person decided it
    assert "metric" in cairn.knowledge.version_text(workspace.id, before)


async def test_accepting_an_edited_suggestion_saves_the_person_s_words(cairn, fake, workspace):
    await lossy_merge_suggested(cairn, fake, workspace)
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    doc = suggestions.accept(cairn.knowledge, kept.id,
                             edited="Warm, friendly tone; short answers; metric units only.")
    assert doc.text == ("## Working style & preferences\n"
                        "- Warm, friendly tone; short answers; metric units only.\n")


async def test_dismissing_a_suggestion_leaves_the_document(cairn, fake, workspace):
    await lossy_merge_suggested(cairn, fake, workspace)
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    version = cairn.knowledge.get(workspace.id).version
    suggestions.dismiss(cairn.knowledge, kept.id)
    assert cairn.knowledge.get(workspace.id).version == version
    assert cairn.knowledge.suggestions([workspace.id]) == []
    with pytest.raises(Refused, match="no suggestion"):
        suggestions.dismiss(cairn.knowledge, kept.id)


async def test_a_suggestion_whose_entry_was_edited_since_is_refused_in_one_sentence(
        cairn, fake, workspace):
    await lossy_merge_suggested(cairn, fake, workspace)
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    edited = PREFERENCES.replace("Keep answers short.", "Keep answers very short.")
    cairn.knowledge.save(workspace.id, edited, source="user")
    with pytest.raises(Refused, match="no longer reads as it did"):
        suggestions.accept(cairn.knowledge, kept.id)
    assert cairn.knowledge.get(workspace.id).text == edited
    assert len(cairn.knowledge.suggestions([workspace.id])) == 1  # still the person's to decide


async def test_a_moot_correction_never_hides_a_refusal(cairn, fake, workspace):
    """The corrective round answers with the unchanged entry: that says nothing, so the first
    refusal (a name swapped on unrelated evidence) stands, is reported and kept."""
    document = "## People & contacts\n- Dana owns QA.\n"
    cairn.knowledge.save(workspace.id, document, source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "Nice day, the weather is pleasant.",
               "Indeed, the weather is pleasant; a good day for a walk before the afternoon meetings.")
    swap = {"op": "update", "ref": "P1", "text": "Bob owns QA.",
            "evidence": "the weather is pleasant"}
    same = {"op": "update", "ref": "P1", "text": "Dana owns QA.",
            "evidence": "the weather is pleasant"}
    report = await rebuild(cairn, fake, chat.id, [swap], [same])
    assert cairn.knowledge.get(workspace.id).text == document
    assert report.unapplied and "does not state Bob" in report.unapplied
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    assert kept.kind == "update" and kept.text == "Bob owns QA." and kept.targets == ("Dana owns QA.",)


async def test_claude_s_own_guess_is_kept_as_claude_s(cairn, fake, workspace):
    cairn.knowledge.save(workspace.id, "## Facts\n- The launch is on 2027-04-03\n", source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "When is the launch again?",
               "I believe the launch is on 2027-05-10, but please check it with the team first, to be sure.")
    guess = {"op": "update", "ref": "P1", "text": "The launch is on 2027-05-10",
             "evidence": "I believe the launch is on 2027-05-10"}
    await rebuild(cairn, fake, chat.id, [guess], [guess])
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    assert kept.said_by == "claude" and kept.evidence == "I believe the launch is on 2027-05-10"
    doc = suggestions.accept(cairn.knowledge, kept.id, today=__import__("datetime").date(2027, 5, 2))
    assert doc.text == "## Facts\n- The launch is on 2027-05-10 (updated 2027-05-02)\n"


# ============================================================================ command line


async def test_the_command_line_lists_accepts_and_dismisses(cairn, fake, workspace, capsys):
    await lossy_merge_suggested(cairn, fake, workspace)
    listed = run_json(capsys, "knowledge", "suggestions", workspace.id)
    assert [s["text"] for s in listed] == ["Keep answers short."]
    number = str(listed[0]["id"])
    code, out, _ = run(capsys, "knowledge", "status", workspace.id)
    assert code == 0 and "1 suggestion wait" in out and "+ Keep answers short." in out
    assert "- Use metric units only." in out and "Not applied by itself:" in out
    code, _, err = run(capsys, "knowledge", "accept", "personal", number)
    assert code == 1 and "not a suggestion for this document" in err
    code, out, _ = run(capsys, "knowledge", "dismiss", workspace.id, number)
    assert code == 0 and f"Suggestion {number} dismissed" in out
    assert run_json(capsys, "knowledge", "suggestions", workspace.id) == []
    code, _, err = run(capsys, "knowledge", "accept", workspace.id, number)
    assert code == 1 and err.count("\n") == 1 and "no suggestion" in err


async def test_the_command_line_accepts_with_the_person_s_text(cairn, fake, workspace, capsys):
    await lossy_merge_suggested(cairn, fake, workspace)
    (kept,) = cairn.knowledge.suggestions([workspace.id])
    printed = run_json(capsys, "knowledge", "accept", workspace.id, str(kept.id), "--text",
                       "Short answers, warm tone, metric units")
    assert printed["text"].endswith("- Short answers, warm tone, metric units\n")


# ================================================================================ routing


async def test_exchanges_waiting_when_a_chat_moves_are_learned_where_they_were_said(
        cairn, fake, folders):
    first, second = folders("Alpha", "Beta")
    alpha, _ = cairn.registry.add_workspace(first)
    beta, _ = cairn.registry.add_workspace(second)
    chat = cairn.registry.new_chat(folder=alpha.path)
    await talk(cairn, fake, chat.id, "The Alpha kickoff is on 2027-06-01, in Lyon.",
               "Noted: the Alpha kickoff is on 2027-06-01, in Lyon. I will plan around that date.")
    cairn.registry.move_chat_to(chat.id, beta.id)
    assert owner_knowledge(cairn.registry, cairn.rebuilder, alpha.id).waiting == 1
    assert owner_knowledge(cairn.registry, cairn.rebuilder, beta.id).waiting == 0
    report = await rebuild(cairn, fake, chat.id, [{
        "op": "add", "target": "project", "section": "Facts",
        "text": "Alpha kickoff on 2027-06-01 in Lyon",
        "evidence": "The Alpha kickoff is on 2027-06-01, in Lyon"}])
    assert report.status == "applied"
    assert "Alpha kickoff on 2027-06-01" in cairn.knowledge.get(alpha.id).text
    assert cairn.knowledge.get(beta.id).text == ""
    assert watermarks.origins(cairn.registry.db, chat.id) == []  # learned: nothing to remember
    # what it says from now on is learned in Beta
    await talk(cairn, fake, chat.id, "Beta ships on 2027-09-01, we agreed this morning.",
               "Noted: Beta ships on 2027-09-01, as agreed this morning. I will keep it in mind.")
    await rebuild(cairn, fake, chat.id, [{
        "op": "add", "target": "project", "section": "Facts", "text": "Beta ships 2027-09-01",
        "evidence": "Beta ships on 2027-09-01"}])
    assert "Beta ships 2027-09-01" in cairn.knowledge.get(beta.id).text
    assert "Beta" not in cairn.knowledge.get(alpha.id).text


def ops(document: str, *items: dict, said: str, folder: str | None = None):
    layers = [Layer("project", "P", document)]
    if folder is not None:
        layers.append(Layer("folder", "F", folder))
    return apply_ops({"ops": list(items)}, layers=layers, exchanges=said, today=TODAY,
                     qualifying_exchanges=1)


def add(text: str, evidence: str, target: str = "project", section: str = "Facts") -> dict:
    return {"op": "add", "target": target, "section": section, "text": text,
            "evidence": evidence}


def test_the_same_fact_in_other_words_is_a_duplicate():
    said = "Just so you know: the office is in Lyon, since March."
    outcome = ops("## Facts\n- Office in Lyon\n", add("The office is in Lyon.",
                                                      "the office is in Lyon"), said=said)
    assert outcome.texts == {} and outcome.refused[0].moot
    assert "duplicates P1 in other words" in outcome.refused[0].reason


def test_the_same_words_in_another_order_wait_for_the_person():
    said = "Careful: we chose MySQL over Postgres in the end, after the benchmarks."
    outcome = ops("## Decisions\n- We chose Postgres over MySQL\n",
                  add("We chose MySQL over Postgres", "we chose MySQL over Postgres",
                      section="Decisions"), said=said)
    assert outcome.texts == {} and not outcome.refused[0].moot
    assert "another order" in outcome.refused[0].reason


def test_one_fact_sent_to_folder_and_project_lands_once_in_the_folder():
    said = "The brand kit uses the Inter typeface everywhere, from now on."
    outcome = ops("## Facts\n- Founded 2020\n",
                  add("Brand kit uses Inter", "The brand kit uses the Inter typeface"),
                  add("Brand kit uses Inter", "The brand kit uses the Inter typeface",
                      target="folder"), said=said, folder="## Facts\n- Logo is blue\n")
    assert set(outcome.texts) == {"folder"}
    assert "- Brand kit uses Inter" in outcome.texts["folder"]
    assert outcome.refused[0].moot and "folder document" in outcome.refused[0].reason


# ========================================================================= smaller items


def test_an_added_entry_that_starts_with_a_label_keeps_it():
    said = "Priority list: P1: fix the login bug before the launch, everything else later."
    outcome = ops("## Facts\n- Founded 2020\n",
                  add("P1: fix the login bug before the launch",
                      "P1: fix the login bug before the launch"), said=said)
    assert outcome.applied[0]["text"] == "P1: fix the login bug before the launch"
    assert "- P1: fix the login bug before the launch\n" in outcome.texts["project"]


def test_an_update_echoing_its_own_label_is_sent_back_not_mended():
    said = "The office moved to Paris last week, for good."
    outcome = ops("## Facts\n- Office in Lyon\n", {
        "op": "update", "ref": "P1", "text": "P1: Office in Paris",
        "evidence": "The office moved to Paris last week"}, said=said)
    assert outcome.texts == {} and "starts with the label P1" in outcome.refused[0].reason


@pytest.mark.parametrize("entry", [
    "- ```\n  deploy.sh --prod\n  ```\n", "- > quoted advice\n  - sub-item\n",
    "- - nested\n  - list\n"])
def test_an_update_of_an_entry_that_opens_with_a_block_is_refused(entry):
    document = "## Facts\n" + entry
    said = "The deploy script is now release.sh, run it with care."
    outcome = ops(document, {"op": "update", "ref": "P1", "text": "Deploy with release.sh",
                             "evidence": "The deploy script is now release.sh"}, said=said)
    assert outcome.texts == {} and "does not open with a line of text" in outcome.refused[0].reason


async def test_keep_mine_learns_again_only_what_the_replaced_rebuild_covered(
        cairn, fake, workspace):
    """Earlier rebuilds that made no version moved the watermark: Keep mine over the next
    rebuild's version goes back to where that rebuild started, never to the chat's start."""
    chat = cairn.registry.new_chat(folder=workspace.path)
    for n in range(3):
        await talk(cairn, fake, chat.id, f"Small talk number {n}, nothing to remember here.")
        assert (await rebuild(cairn, fake, chat.id, [])).status == "nothing"
    started = watermarks.watermark(cairn.registry.db, chat.id)
    opened = cairn.knowledge.get(workspace.id).version
    await talk(cairn, fake, chat.id, "The launch is on 2027-04-15, decided today.",
               "Noted: the launch is on 2027-04-15, as decided today. I will plan the rest around it.")
    report = await rebuild(cairn, fake, chat.id, [add("Launch 2027-04-15",
                                                      "The launch is on 2027-04-15")])
    assert report.status == "applied"
    newer = cairn.knowledge.get(workspace.id).version
    _, relearn = cairn.knowledge.keep_mine(workspace.id, "## Facts\n- Mine\n", based_on=newer,
                                           opened_at=opened)
    assert relearn == (chat.id,)
    assert watermarks.watermark(cairn.registry.db, chat.id) == started
    assert [e.user for e in cairn.rebuilder.pending(chat.id)] == [
        "The launch is on 2027-04-15, decided today."]


async def test_a_superseded_rebuild_runs_again_on_top_of_the_hand_edit(cairn, fake, workspace):
    """What `cairn knowledge rebuild` and `cairn ask` call: a hand save during the model call
    wins, and the rebuild runs once more on top of it, as the window's scheduler does."""
    cairn.knowledge.save(workspace.id, "## Facts\n- Budget 40000 EUR\n", source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "The launch is on 2027-04-15, decided today.",
               "Noted: the launch is on 2027-04-15, as decided today. I will plan the rest around it.")
    loop = asyncio.get_running_loop()
    real_client = cairn.rebuilder._client
    calls: list[dict] = []

    async def hand_edit() -> None:
        cairn.knowledge.save(workspace.id, "## Facts\n- Budget 41000 EUR (by hand)\n",
                             source="user")

    class Overtaken:
        def __init__(self) -> None:
            self.messages = self

        async def create(self, **kwargs):
            calls.append(kwargs)
            if len(calls) == 1:
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(hand_edit(), loop))
            return await real_client().messages.create(**kwargs)

    cairn.rebuilder._client = Overtaken
    for _ in range(2):
        fake.reply_json("update_knowledge", {"ops": [add("Launch 2027-04-15",
                                                         "The launch is on 2027-04-15")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert len(calls) == 2 and report.status == "applied"
    assert cairn.knowledge.get(workspace.id).text == (
        "## Facts\n- Budget 41000 EUR (by hand)\n- Launch 2027-04-15\n")


def test_a_person_and_claude_are_told_apart_in_proposals():
    from app.knowledge.meaning import hear
    from app.knowledge.validator import Refusal

    layers = [Layer("project", "P", "## Facts\n- Launch 2027-04-03\n")]
    refusal = Refusal({"op": "update", "ref": "P1", "text": "Launch 2027-05-10",
                       "evidence": "launch moves to 2027-05-10"}, "Only the person's words replace it.")
    heard = hear([Said(PERSON, "Hi there, any news today?"),
                  Said(CLAUDE, "I think the launch moves to 2027-05-10, check it.")])
    (made,) = suggestions.proposals([refusal], layers=layers, owners={"project": "ws_a"},
                                    heard=heard)
    assert made.said_by == "claude" and made.targets == ("Launch 2027-04-03",)
    assert made.owner == "ws_a" and made.kind == "update"


async def test_another_add_to_the_same_section_does_not_answer_a_refused_add(
        cairn, fake, workspace):
    """The corrective round fixes one add and gives up another of the same section: the one
    given up still waits for the person (it was hidden as 'answered' before)."""
    cairn.knowledge.save(workspace.id, "## Facts\n- Founded 2020\n", source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    said = ("Shipment S1068 leaves depot D5 on 2027-12-21. The brief for S1068 is at "
            "acme.example/briefs/s1068, please keep it.")
    await talk(cairn, fake, chat.id, said)
    leaves = add("Shipment S1068 leaves depot D5 on 2027-12-21",
                 "Shipment S1068 leaves … on 2027-12-21")
    brief = add("Brief for S1068 is at acme.example/briefs/s1068",
                "brief for S1068 … at acme.example/briefs/s1068")
    fixed = {**leaves, "evidence": "Shipment S1068 leaves depot D5 on 2027-12-21"}
    report = await rebuild(cairn, fake, chat.id, [leaves, brief], [fixed])
    assert "- Shipment S1068 leaves depot D5 on 2027-12-21\n" in cairn.knowledge.get(
        workspace.id).text
    assert [s.text for s in cairn.knowledge.suggestions([workspace.id])] == [
        "Brief for S1068 is at acme.example/briefs/s1068"]
    assert report.unapplied and report.suggested == 1


# ====================================== the smaller reproductions, end to end (fake server)


@pytest.mark.parametrize("document, said, op, expect", [
    ("## Facts\n- Founded 2020\n",
     "Priority list: P1: fix the login bug before the launch, everything else later on.",
     add("P1: fix the login bug before the launch", "P1: fix the login bug before the launch"),
     "## Facts\n- Founded 2020\n- P1: fix the login bug before the launch\n"),
    ("## Facts\n- Office in Lyon\n",
     "Just so you know: the office is in Lyon, it has been there since March of last year.",
     add("The office is in Lyon.", "the office is in Lyon"), None),
    ("## Facts\n- ```\n  deploy.sh --prod\n  ```\n",
     "The deploy script is now release.sh, run it with care on Fridays and never at night.",
     {"op": "update", "ref": "P1", "text": "Deploy with release.sh",
      "evidence": "The deploy script is now release.sh"}, None),
])
async def test_end_to_end_labels_near_duplicates_and_blocks(cairn, fake, workspace, document,
                                                           said, op, expect):
    cairn.knowledge.save(workspace.id, document, source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, said)
    await rebuild(cairn, fake, chat.id, [op], [op])
    assert cairn.knowledge.get(workspace.id).text == (expect or document)


async def test_end_to_end_one_fact_to_folder_and_project_lands_in_the_folder(cairn, fake,
                                                                            folders):
    root, brand = folders("Acme", "Acme/Brand")
    project, _ = cairn.registry.add_workspace(root)
    folder, _ = cairn.registry.add_workspace(brand)
    chat = cairn.registry.new_chat(folder=folder.path)
    await talk(cairn, fake, chat.id, "The brand kit uses the Inter typeface everywhere, from "
                                     "now on, in print and on the web.")
    fact = "The brand kit uses the Inter typeface"
    await rebuild(cairn, fake, chat.id, [add("Brand kit uses Inter", fact),
                                         add("Brand kit uses Inter", fact, target="folder")])
    assert cairn.knowledge.get(folder.id).text == "## Facts\n\n- Brand kit uses Inter\n" or \
        "- Brand kit uses Inter" in cairn.knowledge.get(folder.id).text
    assert "Inter" not in cairn.knowledge.get(project.id).text


def test_a_corrected_add_must_say_the_names_of_the_one_it_answers():
    from app.knowledge.corrections import addressed
    from app.knowledge.validator import Refusal

    priya = add("Priya Ruiz is the carrier contact for S1296", "Priya Ruiz is … for S1296")
    refusal = Refusal(priya, "Each part of an elided quote must be at least 3 words.")
    other = add("Never route S1296 through port P19", "Never route S1296 through port P19")
    assert not addressed(refusal, {"ops": [other]})  # shares S1296, not the names
    fixed = {**priya, "evidence": "Priya Ruiz is the carrier contact for S1296"}
    assert addressed(refusal, {"ops": [fixed]})
