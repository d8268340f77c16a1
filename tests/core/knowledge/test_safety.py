"""Knowledge that cannot be quietly rewritten.  Each reproduction of
the adversarial review as a regression test, through the validator and end to end through
the fake server, and a property checked by an independent, simpler oracle: an update or a
merge that applies by itself never removes a word the evidence does not replace."""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.knowledge.document import entries, head, parse
from app.knowledge.meaning import CLAUDE, PERSON, Said
from app.knowledge.status import owner_knowledge
from app.knowledge.validator import Layer, Outcome, apply_ops

TODAY = "2027-05-01"
WEATHER = "the weather is pleasant"
REPLY = "Noted, I will keep that in mind for the rest of the project and the next steps."


def run(project: str, *ops: dict, said: str | list[Said] = "", qualifying: int = 1) -> Outcome:
    return apply_ops({"ops": list(ops)}, layers=[Layer("project", "P", project)], exchanges=said,
                     today=TODAY, qualifying_exchanges=qualifying)


def person(text: str, reply: str = REPLY) -> list[Said]:
    """An exchange: the person says *text*, Claude answers *reply*."""
    return [Said(PERSON, text), Said(CLAUDE, reply)]


def update(ref: str, text: str, evidence: str) -> dict:
    return {"op": "update", "ref": ref, "text": text, "evidence": evidence}


def merge(refs: list[str], text: str) -> dict:
    return {"op": "merge", "refs": refs, "text": text}


def reasons(outcome: Outcome) -> list[str]:
    return [r.reason for r in outcome.refused]


def refused(outcome: Outcome) -> str:
    assert outcome.texts == {} and outcome.applied == [], outcome
    assert len(outcome.refused) == 1
    return outcome.refused[0].reason


# ============================================== merges that drop or reverse facts


PREFERENCES = ("## Working style & preferences\n- Write in a warm, friendly tone.\n"
               "- Keep answers short.\n- Use metric units only.\n")
PEOPLE = "## People & contacts\n- Ana Ruiz — design lead\n- Bob Chen — backend\n"
DATABASE = "## Decisions\n- We chose Postgres over MySQL\n- We host on Hetzner\n"
CALLS = ("## Working style & preferences\n- Never call the client before 10:00\n"
         "- Email the client every Friday\n")
FACTS = "## Facts\n- Office in Lyon\n- Team of twelve people\n- Founded by Ana in Berlin\n"


@pytest.mark.parametrize("document, refs, text", [
    (PREFERENCES, ["P1", "P2", "P3"], "Keep answers short."),
    (PEOPLE, ["P1", "P2"], "Ana Ruiz — backend; Bob Chen — design lead"),
    (DATABASE, ["P1", "P2"], "We chose MySQL over Postgres and host on Hetzner"),
    (CALLS, ["P1", "P2"], "Never call the client after 10:00; email the client every Friday"),
    (FACTS, ["P1", "P2", "P3"], "Office in Lyon"),
    (FACTS, ["P1", "P2", "P3"], "Team of twelve people"),
    # plain words that go, or trade places, with every value and name kept
    (PREFERENCES, ["P1", "P2"], "Write in a warm tone; keep answers short."),
    ("## Facts\n- Ana leads design\n- Bob leads backend\n", ["P1", "P2"],
     "Ana and Bob lead design and backend"),
    ("## Facts\n- Ana leads design\n- Bob leads backend\n", ["P1", "P2"],
     "Ana Bob leads design backend"),
    # a word no entry said, or a qualifier, added
    ("## Facts\n- Office in Lyon\n- Team of twelve people\n", ["P1", "P2"],
     "Office in Lyon; team of twelve people only"),
    ("## Facts\n- Office in Lyon\n- Team of twelve people\n", ["P1", "P2"],
     "Office in Lyon, team of twelve people since 2020"),
])
def test_a_merge_that_drops_moves_or_adds_words_is_refused(document, refs, text):
    assert "merge was refused" in refused(run(document, merge(refs, text)))


def test_a_merge_never_crosses_sections():
    document = "## Facts\n- Office in Lyon\n\n## Decisions\n- Move to Paris next year\n"
    reason = refused(run(document, merge(["P2", "P1"], "Move to Paris next year; office in Lyon")))
    assert reason == "A merge keeps to one section: P2 is in Decisions, P1 is in Facts."


@pytest.mark.parametrize("document, refs, text", [
    (PREFERENCES, ["P1", "P2", "P3"],
     "Write in a warm, friendly tone; keep answers short; use metric units only."),
    (PEOPLE, ["P2", "P1"], "Bob Chen — backend; Ana Ruiz — design lead"),
    (DATABASE, ["P1", "P2"], "We chose Postgres over MySQL; we host on Hetzner"),
    ("## Facts\n- Deploy with make\n- Deploy needs VPN\n", ["P1", "P2"],
     "Deploy with make, deploy needs VPN"),
])
def test_a_merge_that_joins_entries_word_for_word_applies(document, refs, text):
    outcome = run(document, merge(refs, text))
    assert reasons(outcome) == [] and f"- {text}\n" in outcome.texts["project"]


# =========================================== updates with evidence about something else


@pytest.mark.parametrize("old, new", [
    ("Office is 5 km from the station", "Office is 5 mi from the station"),
    ("Budget is 5,000 euros", "Budget is 5,000 dollars"),
    ("Budget is €5,000", "Budget is $5,000"),
    ("Stand-up at 10 am", "Stand-up at 10 pm"),
    ("Invite at most 8 people", "Invite at least 8 people"),
    ("Deploy only on weekdays", "Deploy on weekends"),
    ("We buy from Acme Corp, not Globex", "We buy from Globex, not Acme Corp"),
    ("Ana approved Bob's plan", "Bob approved Ana's plan"),
    ("Raise three million", "Raise thirty million"),
    ("Ship the beta in May", "Do not ship the beta in May"),
    ("We chose Postgres over MySQL", "We chose MySQL over Postgres"),
    ("Never call the client before 10:00", "Never call the client after 10:00"),
    ("Keep answers short", "Keep answers long"),
    ("Ship from Berlin to Paris", "Ship to Berlin from Paris"),
])
def test_an_update_on_unrelated_evidence_changes_nothing(old, new):
    said = person(f"By the way, {WEATHER} today.")
    assert refused(run(f"## Facts\n- {old}\n", update("P1", new, WEATHER), said=said))


def test_one_shared_word_no_longer_lets_a_never_go():
    said = person("The deploy script is slow today, sorry about that.")
    reason = refused(run("## Working style & preferences\n- Never deploy on Fridays\n",
                         update("P1", "Deploy on Fridays", "The deploy script is slow"),
                         said=said))
    assert "drops a negation (never)" in reason


@pytest.mark.parametrize("old, new, said", [
    ("Ana approved Bob's plan", "Bob approved Ana's plan", "Sorry, Bob approved Ana's plan."),
    ("Raise three million", "Raise thirty million", "We now raise thirty million in May."),
    ("Launch 2027-04-03", "Launch 2027-05-10", "The launch moved to 2027-05-10, sadly."),
    ("Ports: web 8080, api 8443", "Ports: web 8443, api 8080", "Now api 8080 and web 8443."),
    ("Keep answers short", "Keep answers detailed", "Please keep answers detailed from now."),
])
def test_an_update_the_person_states_in_the_same_role_applies(old, new, said):
    evidence = said.rstrip(".")
    outcome = run(f"## Facts\n- {old}\n", update("P1", new, evidence), said=person(said))
    assert reasons(outcome) == [] and f"- {new} (updated {TODAY})\n" in outcome.texts["project"]


# ================================================= names in their common forms


@pytest.mark.parametrize("old, new", [
    ("Dana owns QA.", "Bob owns QA."),
    ("Dana — QA lead", "Sam — QA lead"),
    ("Contact: Dana", "Contact: Sam"),
    ("Mr. Smith approves budgets", "Mr. Jones approves budgets"),
    ("Zoë signs contracts", "Chloé signs contracts"),
    ("dana owns qa", "bob owns qa"),
    ("由美负责质量", "健太负责质量"),
])
def test_a_name_in_any_form_is_replaced_only_by_what_the_evidence_states(old, new):
    outcome = run(f"## People & contacts\n- {old}\n", update("P1", new, WEATHER),
                  said=person(f"By the way, {WEATHER} today."))
    assert "the evidence does not state" in refused(outcome)
    stated = f"From now on: {new}"
    outcome = run(f"## People & contacts\n- {old}\n", update("P1", new, stated),
                  said=person(stated + "."))
    assert reasons(outcome) == [], (old, new)


# ================================================ evidence matched on word boundaries


def test_evidence_is_matched_on_word_boundaries():
    said = person("The room capacity is 40 people, and the budget is €50,000 this year.")
    assert refused(run("## Facts\n- Room capacity is 30\n",
                       update("P1", "Room capacity is 4", "room capacity is 4"), said=said)) == (
        "The evidence does not occur in the new exchanges.")
    assert refused(run("## Facts\n- Budget is €9\n",
                       update("P1", "Budget is €5", "the budget is €5"), said=said)) == (
        "The evidence does not occur in the new exchanges.")
    adds = run("", {"op": "add", "target": "project", "section": "Facts",
                    "text": "Room capacity is 4", "evidence": "The room capacity is 4"},
               said=said)
    assert "does not occur" in refused(adds)


def test_each_part_of_an_ellipsis_is_three_words_from_one_message():
    said = [Said(PERSON, "Launch plans are on the agenda; the invoice is due 2027-05-10."),
            Said(CLAUDE, "The launch itself is planned for 2027-04-03, as you said before.")]
    document = "## Facts\n- Launch 2027-04-03\n"
    reason = refused(run(document, update("P1", "Launch 2027-05-10", "L ... 2027-05-10"),
                         said=said))
    assert reason.startswith("Each part of an elided quote must be at least 3 words")
    reason = refused(run(document, update(
        "P1", "Launch 2027-05-10", "The launch itself is planned … the invoice is due 2027-05-10"),
        said=said))
    assert reason == "The parts of the evidence come from different messages; quote one message."
    # a date said of an invoice is not a date said of the launch
    reason = refused(run(document, update("P1", "Launch 2027-05-10",
                                          "the invoice is due 2027-05-10"), said=said))
    assert "not of what P1 is about" in reason


# ================================================= Claude's guess against the person's word


def test_claude_s_guess_cannot_replace_what_the_person_stated():
    document = "## Facts\n- The launch is on 2027-04-03\n"
    said = [Said(PERSON, "When is the launch again?"),
            Said(CLAUDE, "I believe the launch is on 2027-05-10, but please check it.")]
    reason = refused(run(document, update("P1", "The launch is on 2027-05-10",
                                          "I believe the launch is on 2027-05-10"), said=said))
    assert "not by Claude's" in reason
    # the person's own words do it, even when Claude repeats them
    said = [Said(PERSON, "The launch is on 2027-05-10 now."),
            Said(CLAUDE, "Noted: the launch is on 2027-05-10 now.")]
    outcome = run(document, update("P1", "The launch is on 2027-05-10",
                                   "the launch is on 2027-05-10"), said=said)
    assert reasons(outcome) == []
    # An entry changes by itself only on a statement of the person's, even when
    # nothing leaves it; on Claude's words the change waits for the person
    said = [Said(PERSON, "Where is the launch?"),
            Said(CLAUDE, "The launch is in Hall 3 of the Lyon venue, says the brief.")]
    outcome = run(document, update("P1", "The launch is on 2027-04-03, in Hall 3",
                                   "The launch is in Hall 3"), said=said)
    assert "person's own words" in reasons(outcome)[0]


# ============================================================= end to end, fake server


@pytest.fixture
def cairn(online):
    return online


async def talk(cairn, fake, chat_id: str, question: str, reply: str) -> None:
    fake.reply_text(reply)
    result = await cairn.engine.send(chat_id, question)
    assert result.status == "complete"


async def rebuild_with(cairn, fake, workspace, document: str, question: str, reply: str,
                       first: list[dict], second: list[dict]):
    """A rebuild whose knowledge model answers *first*, then *second* in the corrective
    round; the report and the document after it."""
    cairn.knowledge.save(workspace.id, document, source="user")
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, question, reply)
    fake.reply_json("update_knowledge", {"ops": first})
    fake.reply_json("update_knowledge", {"ops": second})
    report = await cairn.rebuilder.rebuild(chat.id)
    return report, cairn.knowledge.get(workspace.id).text


async def test_end_to_end_a_lossy_merge_is_refused_and_said(cairn, fake, workspace):
    lossy = merge(["P1", "P2", "P3"], "Keep answers short.")
    report, text = await rebuild_with(
        cairn, fake, workspace, PREFERENCES, "How should you write for me?",
        "As you asked: a warm, friendly tone, short answers, and metric units only, always.",
        [lossy], [lossy])
    assert text == PREFERENCES and report.applied == []
    assert report.unapplied and "merge was refused" in report.unapplied
    status = owner_knowledge(cairn.registry, cairn.rebuilder, workspace.id).to_json()
    assert "merge was refused" in status["unapplied"]


async def test_end_to_end_a_name_swapped_on_unrelated_evidence_is_refused(cairn, fake, workspace):
    document = "## People & contacts\n- Dana owns QA.\n"
    swap = update("P1", "Bob owns QA.", WEATHER)
    report, text = await rebuild_with(
        cairn, fake, workspace, document, f"Nice day, {WEATHER}.",
        f"Indeed, {WEATHER}; a good day for a walk before the afternoon meetings.",
        [swap], [swap])
    assert text == document and report.applied == []
    assert "does not state Bob" in report.unapplied


async def test_end_to_end_evidence_inside_a_longer_number_is_refused(cairn, fake, workspace):
    document = "## Facts\n- Room capacity is 30\n"
    shrink = update("P1", "Room capacity is 4", "room capacity is 4")
    report, text = await rebuild_with(
        cairn, fake, workspace, document, "The room capacity is 40 people now.",
        "Thanks, I have noted that the room capacity is 40 people for the launch event in May.",
        [shrink], [])
    assert text == document and report.applied == []
    assert "does not occur" in report.unapplied


async def test_end_to_end_claude_s_guess_does_not_replace_the_person_s_date(
        cairn, fake, workspace):
    document = "## Facts\n- The launch is on 2027-04-03\n"
    guess = update("P1", "The launch is on 2027-05-10", "I believe the launch is on 2027-05-10")
    report, text = await rebuild_with(
        cairn, fake, workspace, document, "When is the launch again?",
        "I believe the launch is on 2027-05-10, but please check it with the team first, to be sure.",
        [guess], [guess])
    assert text == document and report.applied == []
    assert "not by Claude's" in report.unapplied
    # and when the person says it, the same change applies
    chat = cairn.registry.new_chat(folder=workspace.path)
    await talk(cairn, fake, chat.id, "The launch is on 2027-05-10 now, we moved it.",
               "Understood: the launch is on 2027-05-10 now. I will plan the rest of the work around it.")
    fake.reply_json("update_knowledge", {"ops": [update(
        "P1", "The launch is on 2027-05-10", "The launch is on 2027-05-10 now")]})
    report = await cairn.rebuilder.rebuild(chat.id)
    assert report.status == "applied" and report.refused == []
    assert "- The launch is on 2027-05-10 (updated " in cairn.knowledge.get(workspace.id).text


# =============================================================== the property, by oracle

# The oracle's own, simpler reading: words are runs of letters and digits (joined by . , : /
# or -), case folded; articles and "is"/"are" carry nothing; these words turn a statement.
_ORACLE_WORD = re.compile(r"[^\W_]+(?:[.,:/-][^\W_]+)*")
_ORACLE_STOP = {"a", "an", "the", "is", "are"}
_ORACLE_TURNS = {"never", "not", "no", "only", "except", "most", "least", "before", "after",
                 "over", "under", "unless"}
_MARK = re.compile(r"\(updated \d{4}-\d{2}-\d{2}\)")


def oracle_words(text: str) -> list[str]:
    text = _MARK.sub(" ", re.sub(r"^\s*[-*+]\s+", "", text))
    return [w for w in _ORACLE_WORD.findall(text.casefold()) if w not in _ORACLE_STOP]


def _in_order(part: list[str], whole: list[str]) -> bool:
    walk = iter(whole)
    return all(word in walk for word in part)


def _contiguous(part: list[str], whole: list[str]) -> bool:
    return any(whole[n:n + len(part)] == part for n in range(len(whole) - len(part) + 1))


NAMES = ["Dana", "Bob", "Ana Ruiz", "Sam Lee", "Zoë", "由美"]
WORDS = ["owns", "leads", "ships", "budget", "office", "tone", "answers", "short", "weekly",
         "client", "design", "backend", "launch", "room", "capacity", "invoice", "plan"]
VALUES = ["2027-04-03", "2027-05-10", "40", "4", "€5", "€50,000", "10:00", "5 km", "three",
          "thirty", "8080"]
TURNS = ["never", "not", "only", "at most", "at least", "before", "after", "over"]
JOINS = ["from", "to", "with", "and", "for"]
SECTIONS = ["Facts", "Decisions", "People & contacts"]


def _sentence(rng: random.Random, size: int) -> str:
    pools = [NAMES, WORDS, WORDS, VALUES, VALUES, TURNS, JOINS]
    return " ".join(rng.choice(rng.choice(pools)) for _ in range(size))


def _mutated(rng: random.Random, text: str) -> str:
    words = text.split()
    roll = rng.random()
    if roll < 0.3 and words:  # one word replaced, often by one of its kind
        at = rng.randrange(len(words))
        kinds = [pool for pool in (WORDS, VALUES, TURNS, JOINS) if words[at] in pool]
        pool = kinds[0] if kinds and rng.random() < 0.7 else rng.choice([NAMES, WORDS, VALUES])
        words[at] = rng.choice(pool)
    elif roll < 0.45 and len(words) > 1:  # one word dropped
        del words[rng.randrange(len(words))]
    elif roll < 0.6 and len(words) > 1:  # two words trade places
        a, b = rng.sample(range(len(words)), 2)
        words[a], words[b] = words[b], words[a]
    elif roll < 0.7:  # a qualifier slipped in
        words.insert(rng.randrange(len(words) + 1), rng.choice(TURNS))
    elif roll < 0.85:  # words added at the end
        words += _sentence(rng, rng.randint(1, 3)).split()
    return " ".join(words)


def scenario(seed: int) -> tuple[str, list[Said], list[dict]]:
    """A document, the messages of an exchange, and update and merge ops against them: many
    careful (so that they apply), many careless, some hostile."""
    rng = random.Random(seed)
    sections: list[str] = []
    for section in rng.sample(SECTIONS, rng.randint(1, 2)):
        items = [_sentence(rng, rng.randint(2, 6)) for _ in range(rng.randint(1, 4))]
        sections.append(f"## {section}\n" + "".join(f"- {item}\n" for item in items))
    document = "\n".join(sections)
    parsed = parse(document)
    found = [(f"P{e.index + 1}", head(parsed, e)[2:], e.section) for e in parsed.entries]
    messages = [Said(rng.choice([PERSON, CLAUDE]), _sentence(rng, rng.randint(4, 12)) + ".")
                for _ in range(rng.randint(1, 3))]
    ops: list[dict] = []
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.6 or len(found) < 2:
            label, old, _ = rng.choice(found)
            new = _mutated(rng, old)
            stated = rng.random() < 0.6
            if stated:  # the exchange states the new text
                messages.append(Said(rng.choice([PERSON, PERSON, CLAUDE]),
                                     f"{_sentence(rng, rng.randint(0, 2))} {new}."))
            if stated and rng.random() < 0.6:  # and the model quotes it
                evidence = new
            else:
                said = rng.choice(messages).text.rstrip(".").split()
                start = rng.randrange(len(said))
                evidence = " ".join(said[start:start + rng.randint(3, 8)])
            if rng.random() < 0.2:  # an elided quote, maybe from two messages
                other = rng.choice(messages).text.rstrip(".").split()
                evidence += " … " + " ".join(other[-rng.randint(1, 4):])
            ops.append(update(label, new, evidence))
        else:
            chosen = rng.sample(found, rng.randint(2, min(3, len(found))))
            text = rng.choice(["; ", ", ", " and "]).join(old for _, old, _ in chosen)
            if rng.random() < 0.5:
                text = _mutated(rng, text)
            ops.append(merge([label for label, _, _ in chosen], text))
    return document, messages, ops


def check_by_oracle(document: str, messages: list[Said], outcome: Outcome) -> None:
    parsed = parse(document)
    heads = {f"P{e.index + 1}": (head(parsed, e), e.section) for e in parsed.entries}
    said = [(m.role, oracle_words(m.text)) for m in messages]
    for op in outcome.applied:
        new = oracle_words(op["text"])
        if op["op"] == "merge":
            olds = [oracle_words(heads[ref][0]) for ref in op["refs"]]
            assert len({heads[ref][1] for ref in op["refs"]}) == 1, op  # one section
            for old in olds:  # every word of every entry, in its order
                assert _in_order(old, new), (op, old)
            assert sum(w in _ORACLE_TURNS for w in new) == sum(
                w in _ORACLE_TURNS for old in olds for w in old), op
            assert set(new) <= {w for old in olds for w in old} | {"and", "with", "for",
                                                                  "from", "to"}, op
            continue
        old = oracle_words(heads[op["ref"]][0])
        lost, gained = Counter(old) - Counter(new), Counter(new) - Counter(old)
        assert not any(w in _ORACLE_TURNS for w in lost | gained), op  # turns stay as they are
        parts = [oracle_words(p) for p in re.split(r"…|\.\.\.", op["evidence"])]
        parts = [p for p in parts if p]
        whole = oracle_words(op["evidence"])
        source = [(role, words) for role, words in said if _contiguous(whole, words)] or [
            (role, words) for role, words in said if all(_contiguous(p, words) for p in parts)]
        assert source, op  # the evidence is in one message, word for word
        if lost:  # whatever left was replaced by words the person stated, no fewer of them
            stated = [w for w in gained.elements() if w in whole]
            assert len(stated) >= sum(lost.values()), (op, lost, gained)
            assert any(role == PERSON for role, _ in source), op


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_an_op_that_applies_never_removes_a_word_the_evidence_does_not_replace(seed):
    document, messages, ops = scenario(seed)
    outcome = run(document, *ops, said=messages)
    assert len(outcome.applied) + len(outcome.refused) == len(ops)
    check_by_oracle(document, messages, outcome)


def test_the_property_is_not_vacuous():
    """Over fixed seeds, careful ops do apply — updates that replace words among them — and
    the oracle holds for every one."""
    applied: Counter[str] = Counter()
    replacing = 0
    for seed in range(600):
        document, messages, ops = scenario(seed)
        outcome = run(document, *ops, said=messages)
        check_by_oracle(document, messages, outcome)
        applied.update(op["op"] for op in outcome.applied)
        parsed = parse(document)
        for op in outcome.applied:
            if op["op"] == "update":
                old = head(parsed, entries(document)[int(op["ref"][1:]) - 1])
                replacing += bool(Counter(oracle_words(old)) - Counter(oracle_words(op["text"])))
    # (what code cannot account for token by token waits for the person, so fewer
    # of the generated updates apply by themselves than the 40 of before)
    assert applied["update"] >= 20 and applied["merge"] >= 60 and replacing >= 8, (
        applied, replacing)


# ==================================== nothing refused is lost from the suggestions


def check_kept(document: str, messages: list[Said], ops: list[dict], outcome: Outcome) -> None:
    """Every op that was refused and said something new (not moot) is a suggestion with its
    own text, for the entries it named, as they read (an oracle of its own: the labels
    looked up by hand)."""
    from app.knowledge.meaning import hear
    from app.knowledge.suggestions import proposals

    kept = proposals(outcome.refused, layers=[Layer("project", "P", document)],
                     owners={"project": "ws"}, heard=hear(messages))
    parsed = parse(document)
    heads = {f"P{e.index + 1}": head(parsed, e)[2:] for e in parsed.entries}
    for refusal in outcome.refused:
        if refusal.moot:
            continue
        op = refusal.op
        refs = [op["ref"]] if op["op"] == "update" else op["refs"]
        if len(set(refs)) != len(refs):
            continue  # names an entry twice: no change to show
        wanted = " ".join(op["text"].split())
        assert any(" ".join(k.text.split()) == wanted
                   and list(k.targets) == [heads[r] for r in refs] for k in kept), (op, kept)
    assert len(kept) <= len([r for r in outcome.refused if not r.moot])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_nothing_refused_is_lost_from_the_suggestions(seed):
    document, messages, ops = scenario(seed)
    outcome = run(document, *ops, said=messages)
    check_kept(document, messages, ops, outcome)


def test_refusals_are_kept_over_fixed_seeds():
    """Not vacuous: over fixed seeds many refusals become suggestions, checked each time."""
    refused = 0
    for seed in range(400):
        document, messages, ops = scenario(seed)
        outcome = run(document, *ops, said=messages)
        check_kept(document, messages, ops, outcome)
        refused += sum(not r.moot for r in outcome.refused)
    assert refused > 200
