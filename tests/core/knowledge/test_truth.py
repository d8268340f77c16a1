"""Knowledge that stays true: each reproduction of the adversarial review as a
regression test (contradictions replace, merges keep meaning, hard tokens complete, evidence
loose but real, the person's document keeps its shape), with properties per token kind."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.knowledge.document import entries, head, labelled, parse
from app.knowledge.tokens import missing_tokens, tokens
from app.knowledge.validator import Layer, Outcome, apply_ops

TODAY = "2027-05-01"


def run(project: str, *ops: dict, said: str = "", qualifying: int = 1) -> Outcome:
    return apply_ops({"ops": list(ops)}, layers=[Layer("project", "P", project)], exchanges=said,
                     today=TODAY, qualifying_exchanges=qualifying)


def update(ref: str, text: str, evidence: str, **extra: str) -> dict:
    return {"op": "update", "ref": ref, "text": text, "evidence": evidence, **extra}


def merge(refs: list[str], text: str) -> dict:
    return {"op": "merge", "refs": refs, "text": text}


def add(text: str, evidence: str, section: str = "Facts") -> dict:
    return {"op": "add", "target": "project", "section": section, "text": text,
            "evidence": evidence}


def reasons(outcome: Outcome) -> list[str]:
    return [r.reason for r in outcome.refused]


# ===================================================== 1. a contradiction replaces a value

LAUNCH = "## Facts\n- Launch 2027-03-01\n- Budget 5000 EUR\n"


def test_a_contradiction_replaces_the_value_and_marks_the_entry():
    said = "Person: the launch moved. Claude: Noted, the launch is now 2027-04-15."
    outcome = run(LAUNCH, update("P1", "Launch 2027-04-15", "the launch is now 2027-04-15"),
                  said=said)
    assert reasons(outcome) == []
    assert outcome.texts["project"] == (
        "## Facts\n- Launch 2027-04-15 (updated 2027-05-01)\n- Budget 5000 EUR\n")


def test_a_second_update_of_the_same_entry_works_and_replaces_the_mark():
    first = "## Facts\n- Launch 2027-04-15 (was 2027-03-01) (updated 2027-04-01)\n"
    said = "Claude: the launch slips again, to 2027-05-20."
    outcome = run(first, update("P1", "Launch 2027-05-20 (was 2027-04-15)", "to 2027-05-20",),
                  said=said)
    assert reasons(outcome) == [], "the prompt's own (was …) example must pass on a 2nd update"
    assert outcome.texts["project"] == (
        "## Facts\n- Launch 2027-05-20 (was 2027-04-15) (updated 2027-05-01)\n")


def test_a_value_leaves_only_for_a_new_one_of_its_kind_that_the_evidence_states():
    said = "Claude: the launch is on 2027-04-15 and the budget grows to 6000 EUR."
    refused = reasons(run(
        LAUNCH,
        update("P1", "Launch 2027-04-16", "the launch is on 2027-04-15"),  # not what was said
        update("P2", "Budget 6000", "budget grows to 6000 EUR"),  # EUR leaves, no currency in
        said=said))
    assert [r.split(" with ")[0] for r in refused] == [
        "The evidence does not state 2027-04-16; quote where the exchanges say it."
        .split(" with ")[0], "The new text of P2 drops EUR"]
    # a date for a number is no substitution
    refused = reasons(run(LAUNCH, update("P1", "Launch in 6000 EUR", "budget grows to 6000 EUR"),
                          said=said))
    assert "drops 2027-03-01" in refused[0]


def test_an_often_updated_entry_does_not_grow_a_chain():
    text = "## Facts\n- Launch 2027-01-01\n"
    for day in range(2, 30):
        date = f"2027-01-{day:02d}"
        outcome = run(text, update("P1", f"Launch {date}", f"launch moves to {date}"),
                      said=f"Claude: the launch moves to {date}, sorry.")
        assert reasons(outcome) == []
        text = outcome.texts["project"]
    assert text == "## Facts\n- Launch 2027-01-29 (updated 2027-05-01)\n"


def test_swapped_values_are_refused_unless_the_evidence_says_so():
    text = "## Facts\n- Ports: web 8080, api 8443\n"
    said = "Claude: we also expose metrics on 9090, and api 8080 now (web 8443)."
    refused = reasons(run(text, update("P1", "Ports: web 8443, api 8080, metrics 9090",
                                       "we also expose metrics on 9090"), said=said))
    assert "next to other labels" in refused[0]
    ok = run(text, update("P1", "Ports: web 8443, api 8080", "api 8080 now (web 8443)"), said=said)
    assert reasons(ok) == []


def test_an_update_cannot_turn_a_rule_around_on_unrelated_evidence():
    text = "## Working style & preferences\n- Never recommend competitor Globex\n"
    said = "Claude: the budget is now 6000 EUR, as agreed. Globex is fine to recommend now."
    refused = reasons(run(text, update("P1", "Recommend competitor Globex when useful",
                                       "the budget is now 6000 EUR"), said=said))
    assert "drops a negation" in refused[0]
    # Even on evidence about it, turning a rule around is the person's decision.
    still = reasons(run(text, update("P1", "Recommend competitor Globex when useful",
                                     "Globex is fine to recommend now"), said=said))
    assert "drops a negation" in still[0]


def test_an_update_changes_the_subject_only_by_a_name_the_evidence_states():
    text = "## People & contacts\n- Dana Ruiz signs contracts\n"
    said = "Claude: from May, Sam Lee signs the contracts."
    refused = reasons(run(text, update("P1", "Alex Kim signs contracts", "from May, Sam Lee"),
                          said=said))
    assert "drops dana, ruiz" in refused[0]
    ok = run(text, update("P1", "Sam Lee signs contracts", "Sam Lee signs the contracts"),
             said=said)
    assert reasons(ok) == []


# ============================================================= 2. merges keep the meaning

def test_lossy_merges_are_refused():
    cases = [
        ("- Never recommend competitor Globex\n- Formal tone\n", "Formal tone"),
        ("- Dana Ruiz signs contracts\n- Sam Lee is the designer\n", "Two people are involved"),
        ("- Never recommend Globex\n- Never use Comic Sans\n",
         "Never recommend Globex and use Comic Sans"),
        ("- web 8080\n- api 8443\n", "web 8443, api 8080"),
        ("- Floors 12 and 12 booked\n- Budget 5\n", "Floor 12 booked, budget 5"),
        ("- Deck at acme.com/Deck\n- Kit at acme.com/kit\n", "Deck and kit at acme.com/deck"),
    ]
    for text, merged in cases:
        outcome = run(text, merge(["P1", "P2"], merged))
        assert outcome.texts == {} and "merge was refused" in reasons(outcome)[0], text


def test_a_faithful_merge_compresses():
    outcome = run("- Never recommend competitor Globex\n- Formal tone\n",
                  merge(["P1", "P2"], "Formal tone; never recommend competitor Globex"))
    assert outcome.texts["project"] == "- Formal tone; never recommend competitor Globex\n"


def test_a_merge_carries_every_sub_item_including_code_blocks():
    text = ("## Facts\n- Deploy with make\n  ```\n  make deploy ENV=prod\n  ```\n"
            "- Deploy needs VPN\n  - ask Ann for access\n1. x\n")
    # Under one merged entry, whose sub-item is whose would be lost, so a merge of
    # entries with sub-items waits for the person, whatever its text.
    outcome = run(text, merge(["P1", "P2"], "Deploy with make, deploy needs VPN"))
    assert outcome.texts == {} and "has sub-items" in reasons(outcome)[0]


def test_a_merge_keeps_to_one_section():
    """A merge never moves an entry across sections (an answered open question
    leaves Open questions by an update that names its section)."""
    text = "## Facts\n- Launch 2027-04-15\n\n## Open questions\n- Who signs the contract?\n"
    outcome = run(text, merge(["P2", "P1"], "Launch 2027-04-15; who signs the contract?"))
    assert outcome.texts == {} and "keeps to one section" in reasons(outcome)[0]


# ========================================================== 3. hard tokens, completed

@pytest.mark.parametrize("old, new", [
    ("Brand kit at acme.com/brand", "Brand kit at acme.com/brands"),
    ("Site acme.com", "Site acme.org"),
    ("Logo is logo.svg", "Logo is logo.png"),
    ("See README.md", "See the readme"),
    ('Stored in "C:\\Program Files\\Acme"', "Stored in C:\\Program"),
    ("Brief at ~/My Documents/brief.pdf", "Brief at ~/My Docs/brief.pdf"),
    ("Deck in C:\\Program Files\\Acme\\deck.pptx", "Deck in C:\\Program\\deck.pptx"),
    ("Launch March 3", "Launch May 3"),
    ("Launch 3 March 2027", "Launch 3 May 2027"),
    ("Budget €5,000", "Budget $5,000"),
    ("Share 10%", "Share 15%"),
    ("Raise 3 million", "Raise 3 billion"),
    ("Run `npm run build:prod`", "Run `npm run build`"),
    ("Post in #launch-team", "Post in #launch"),
    ("Код ПР-12", "Код ПР-13"),
    ("https://acme.com/Brand", "https://acme.com/brand"),
    ("Tracking 1042 at https://x.io/1042", "Tracking at https://x.io/1042"),
    ("Rooms 12 and 12", "Room 12"),
    ("Contact Dana Ruiz", "Contact the designer"),
])
def test_hard_tokens_cover_the_holes(old, new):
    assert missing_tokens(old, new), (old, new)


KINDS = {
    "url": st.builds(lambda host, path: f"https://{host}.com/{path}",
                     st.sampled_from(["acme", "Globex", "x-y"]),
                     st.sampled_from(["Brand", "a/b", "v2", "S1042"])),
    "domain": st.builds(lambda host, tld: f"{host}.{tld}", st.sampled_from(["acme", "brand-x"]),
                        st.sampled_from(["com", "io", "co.uk"])),
    "email": st.builds(lambda u: f"{u}@acme.com", st.sampled_from(["ann", "ops7", "j.doe"])),
    "file": st.builds(lambda n, e: f"{n}.{e}", st.sampled_from(["logo", "README", "brief-v"]),
                      st.sampled_from(["svg", "md", "pdf"])),
    "date": st.one_of(st.dates().map(lambda d: d.isoformat()),
                      st.builds(lambda m, d: f"{m} {d}",
                                st.sampled_from(["March", "May", "Sept", "Dec"]),
                                st.integers(1, 28))),
    "amount": st.builds(lambda c, n: f"{c}{n:,}", st.sampled_from("€$£¥"),
                        st.integers(1, 10**7)),
    "percent": st.integers(0, 100).map(lambda n: f"{n}%"),
    "number": st.integers(0, 10**6).map(str),
    "id": st.sampled_from(["v2.14.0", "SKU_12", "iPhone", "NASA", "ПР-12", "ΑΒΓ"]),
    "channel": st.sampled_from(["#launch", "#brand-team"]),
    "code": st.sampled_from(["`make deploy`", "`npm run build:prod`"]),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_kind_finds_itself_and_is_lost_when_changed_or_dropped(kind, data):
    value = data.draw(KINDS[kind])
    other = data.draw(KINDS[kind].filter(lambda v: v != value))
    text = f"Noted: {value} here, see it."
    found = tokens(text)
    assert found and any(t.value == value.strip("`") for t in found), (value, found)
    assert missing_tokens(text, text) == []
    assert missing_tokens(text, "Noted: here, see it.") != []
    assert missing_tokens(text, text.replace(value, other)) != []
    # twice must stay twice
    assert missing_tokens(f"{text} And {value} again.", text) != []


# ============================================================================ 5. evidence

REPLY = ("Person: when?\nClaude: **Launch date:** 2027-04-15 — confirmed. The “brand kit” is "
         "at `https://acme.com/brand`, and the deck… is late.\u00a0Budget: 6,000 EUR.")


# (Every token of an add comes from its evidence: each text says no more.)
@pytest.mark.parametrize("evidence, text", [
    ("Launch date: 2027-04-15", "Launch date 2027-04-15"),  # emphasis dropped
    ('The "brand kit" is at https://acme.com/brand', "Brand kit at https://acme.com/brand"),
    ("2027-04-15 - confirmed", "2027-04-15 confirmed"),  # a dash for an em dash
    ("Launch date: 2027-04-15 … brand kit is at", "Launch date 2027-04-15"),  # an ellipsis
    ("the deck... is late. Budget", "The deck is late"),
])
def test_loose_quotes_of_a_formatted_reply_are_evidence(evidence, text):
    outcome = run("", add(text, evidence), said=REPLY)
    assert reasons(outcome) == [], evidence


@pytest.mark.parametrize("evidence, reason", [
    ("the", "too short"), ("e", "too short"), ("confirmed", "too short"),
    ("Launch date: 2027-04-15", "does not state 2027-04-16"),
    ("is late. Budget … Launch date: 2027-04-15", "does not occur"),  # parts in order
    ("Launch date: … confirmed", "at least 3 words"),  # each part of an ellipsis
])
def test_evidence_must_be_long_enough_and_state_the_new_values(evidence, reason):
    outcome = run("", add("Launch 2027-04-16", evidence), said=REPLY)
    assert reason in reasons(outcome)[0]


# ======================================================= 6. the document keeps its shape

def test_removing_a_merged_entry_never_makes_a_setext_heading():
    text = "- Hall 4\n\nIntro paragraph\n- Hall 3\n---\n"
    outcome = run(text, merge(["P1", "P2"], "Hall 4, Hall 3"))
    assert outcome.texts == {} and "structure" in reasons(outcome)[0]


@pytest.mark.parametrize("text", [
    "- Hall 4\n> First quote\n- Hall 3\n> Second quote\n",  # two quotes would become one
    "- Hall 4\n\nSome prose\n* Hall 3\n---\n",  # prose would become a heading
])
def test_removing_a_merged_entry_never_joins_or_reshapes_blocks(text):
    outcome = run(text, merge(["P1", "P2"], "Hall 4, Hall 3"))
    assert outcome.texts == {} and "structure" in reasons(outcome)[0]


def test_front_matter_is_never_entries():
    text = "---\ntags:\n- brand\n- q3\n---\n## Facts\n- Launch 2027-04-15\n"
    assert [e.text for e in entries(text)] == ["- Launch 2027-04-15"]
    assert labelled(text, "P").startswith("---\ntags:\n- brand\n- q3\n---\n## Facts\n- P1: ")
    said = "Claude: the launch is 2027-04-16 now, sorry."
    outcome = run(text, update("P1", "Launch 2027-04-16", "launch is 2027-04-16 now"), said=said)
    assert outcome.texts["project"] == text.replace("2027-04-15", "2027-04-16 (updated 2027-05-01)")


def test_a_bom_does_not_hide_the_first_heading():
    text = "\ufeff## Facts\n- Launch 2027-04-15\n"
    assert entries(text)[0].section == "Facts"
    outcome = run(text, add("Brand kit is ready", "the brand kit is ready"),
                  said="Claude: the brand kit is ready.")
    assert outcome.texts["project"] == text + "- Brand kit is ready\n"
    shown = labelled("\ufeff- first\n", "P")
    assert shown == "\ufeff- P1: first\n"


@pytest.mark.parametrize("heading", ["## facts", "## Facts:", "# Facts", "### Facts",
                                     "## People", "## People and contacts"])
def test_variant_headings_receive_the_adds_of_their_section(heading):
    section = "People & contacts" if "People" in heading else "Facts"
    text = f"{heading}\n- Old entry\n\n## Notes\nkeep\n"
    outcome = run(text, add("Ann designs the logo", "Ann designs the logo", section=section),
                  said="Claude: Ann designs the logo.")
    assert outcome.texts["project"] == text.replace(
        "- Old entry\n", "- Old entry\n- Ann designs the logo\n")


@pytest.mark.parametrize("text", [
    "## Open questions\n- Who signs?\n\n## Facts\n- Launch 2027-04-15\n",
    "## Assets & links\n## People & contacts\n- Ann\n\n## Open questions\n- Who signs?\n",
    "## Open questions\n- Who signs?\n## Assets & links\n",
])
def test_with_sections_reordered_by_hand_valid_adds_all_land(text):
    said = ("Claude: Ann designs the logo, and we ruled out Comic Sans for headings. The fact: "
            "Ann designs. The brand kit is ready. So who approves?")
    outcome = run(text, add("Ann designs the logo", "Ann designs the logo",
                            section="People & contacts"),
                  add("Ruled out Comic Sans", "ruled out Comic Sans", section="Decisions"),
                  add("Fact: Ann designs", "The fact: Ann designs"),
                  add("Brand kit ready", "brand kit is ready", section="Assets & links"),
                  add("Who approves?", "So who approves?", section="Open questions"),
                  said=said, qualifying=2)
    assert reasons(outcome) == []
    parsed = parse(outcome.texts["project"])
    assert [b for b in parsed.blocks if not b[1].startswith("## ")] == [
        b for b in parse(text).blocks if not b[1].startswith("## ")]
    found = {e.text: e.section for e in entries(outcome.texts["project"])}
    assert found["- Ann designs the logo"] == "People & contacts"
    assert found["- Ruled out Comic Sans"] == "Decisions"
    assert found["- Fact: Ann designs"] == "Facts"


# ================================================================================ 7. smaller

def test_a_fact_starting_with_a_code_keeps_it():
    said = "Claude: P0: the login bug blocks the launch, fix login first."
    outcome = run("## Facts\n- P1: fix login\n",
                  add("P0: login bug blocks the launch", "P0: the login bug blocks the launch"),
                  update("P1", "P1: fix login, first", "fix login first"), said=said)
    assert outcome.applied[0]["text"] == "P0: login bug blocks the launch"
    assert "- P1: fix login, first (updated 2027-05-01)\n" in outcome.texts["project"]
    # Labels are never stripped: a doubled label is not quietly mended.
    doubled = run("## Facts\n- P1: fix login\n", update("P1", "P1: P1: fix login, first",
                                                           "fix it first"), said=said)
    assert doubled.applied == [] and doubled.refused


def test_a_lone_surrogate_is_refused_not_a_crash():
    outcome = run("", add("Bad \ud800 text", "the launch is late"),
                  said="Claude: the launch is late.")
    assert outcome.texts == {} and "cannot be stored" in reasons(outcome)[0]
    from app.knowledge.corrections import correction, unapplied

    sent_back = correction({"ops": []}, outcome.refused)  # goes back in a UTF-8 request
    sent_back.encode("utf-8")
    unapplied(outcome.refused).encode("utf-8")  # and into the status


# =========================================== 6. the structure property, over wild documents

HEADINGS = ["## Facts", "## facts:", "# Facts", "### Decisions", "## People", "## Notes",
            "## Open questions", "## Assets and links", "# Part two", "Setext\n---"]
BLOCK = st.one_of(
    st.sampled_from(HEADINGS), st.sampled_from(["---", "***", "Some prose.", "Two\nlines."]),
    st.sampled_from(["```\n- not an entry 7\n```", "~~~\ncode\n~~~", "> - quoted"]),
    st.builds(lambda m, w: f"{m} {w}", st.sampled_from(["-", "*", "1.", "2)"]),
              st.sampled_from(["Hall 3", "Launch 2027-04-15", "Dana Ruiz signs",
                               "Never use Comic Sans", "Budget €5,000"])),
    st.just("- Deploy\n  ```\n  make deploy\n  ```"), st.just("- Parent\n  - child 9"))


@st.composite
def shaped_document(draw: st.DrawFn) -> str:
    body = "".join(b + draw(st.sampled_from(["\n", "\n\n"]))
                   for b in draw(st.lists(BLOCK, max_size=10)))
    if draw(st.booleans()):
        body = "---\ntitle: x\ntags:\n- brand\n---\n" + body
    return ("\ufeff" if draw(st.booleans()) else "") + body


def _outside(text: str) -> list[tuple[str, str]]:
    """The blocks outside the entries, less section headings code may add."""
    return [b for b in parse(text).blocks if not (b[0] == "heading_open h2" and
                                                  b[1].startswith("## ") and b[1][3:] in
                                                  ("Facts", "Decisions", "People & contacts",
                                                   "Assets & links", "Open questions",
                                                   "Working style & preferences"))]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shaped_document(), st.data())
def test_outside_the_named_entries_the_blocks_stay_byte_identical(text, data):
    found = entries(text)
    labels = [f"P{e.index + 1}" for e in found]
    said = "Claude: Ann designs the logo, Sam Lee approves, we ruled out Globex."
    ops: list[dict] = [add("Ann designs the logo", "Ann designs the logo",
                           section=data.draw(st.sampled_from(
                               ["Facts", "Decisions", "People", "Open questions"])))]
    if len(labels) >= 2:
        pair = data.draw(st.permutations(labels))[:2]
        heads = [parse(text).entries[int(r[1:]) - 1] for r in pair]
        ops.append(merge(pair, "; ".join(head(parse(text), e).split(" ", 1)[-1]
                                         for e in heads)))
    outcome = run(text, *ops, said=said)
    after = outcome.texts.get("project", text)
    assert _outside(after) == _outside(text), (text, after)
    assert text.startswith("\ufeff") == after.startswith("\ufeff")
    if any(op["op"] == "add" for op in outcome.applied):
        assert any(e.text.endswith("Ann designs the logo") for e in entries(after))


def test_an_answered_open_question_moves_by_an_update_that_names_its_section():
    text = "## Facts\n- Launch 2027-04-15\n\n## Open questions\n- Who signs the contract?\n"
    said = "Claude: Dana Ruiz signs the contract, confirmed by legal."
    answer = update("P2", "Dana Ruiz signs the contract", "Dana Ruiz signs the contract",
                    section="People")
    # The question's "?" leaves with nothing in its place: the answer is proposed
    # for the person to accept (DESIGN §6), never applied by itself.
    outcome = run(text, answer, said=said)
    assert outcome.texts == {} and "drops ?" in reasons(outcome)[0]
    refused = reasons(run(text, update("P1", "Launch 2027-04-15, firm", "Dana Ruiz signs the",
                                       section="Decisions"), said=said))
    assert refused == ["Only an open question moves to another section; P1 stays where it is."]


def test_reply_parts_around_a_tool_call_are_kept_apart():
    from app.knowledge.rebuild import exchanges_of
    from app.store.messages import Message

    def message(n: int, role: str, content: list) -> Message:
        return Message(n, "c", role, content, "complete", None, None, None, None, "t")

    found = exchanges_of([
        message(1, "user", [{"type": "text", "text": "What is in the kit?"}]),
        message(2, "assistant", [{"type": "text", "text": "The brand kit v2"}]),
        message(3, "user", [{"type": "tool_result", "tool_use_id": "t", "content": []}]),
        message(4, "assistant", [{"type": "text", "text": "3 colours and a logo."}])])
    assert found[0].reply == "The brand kit v2\n3 colours and a logo."


def test_a_corrected_add_sent_elsewhere_counts_as_addressed():
    from app.knowledge.corrections import addressed, unapplied
    from app.knowledge.validator import Refusal

    refused = Refusal(add("Ann designs the logo", "Ann designs"), "The evidence is too short.")
    moved = {**add("Ann designs the logo.", "Ann designs the logo"), "target": "folder"}
    assert addressed(refused, {"ops": [moved]})
    assert not addressed(refused, {"ops": []})
    assert unapplied([refused, refused]) == (
        "2 suggestions could not be applied: The evidence is too short; "
        "The evidence is too short.")
    assert unapplied([Refusal({}, "It duplicates P1, so it was dropped.")]) is None
