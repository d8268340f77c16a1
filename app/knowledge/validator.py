"""Validate and apply the knowledge model's ``update_knowledge`` operations (docs/knowledge.md).

Pure: no I/O, no clock. The model never re-types a document; it names entries by label and
code makes every change, so whatever no valid op names is carried forward byte for byte.
Every op is checked on its own (each refusal says why in one sentence; the meaning and
evidence rules are in :mod:`meaning`), then each changed document is re-parsed and compared
with what the applied ops should have produced — its entries, and every block outside them
byte for byte; an op whose edit would disturb anything else is refused rather than applied.

Decisions beyond what docs/knowledge.md says:
- an ``update`` replaces the entry's leading paragraph and keeps its sub-items and any later
  blocks under it (nothing under an entry is lost); an entry that does not open with a
  paragraph is replaced whole. An update of an open question may name another section: it
  moves there (only an entry without sub-items; else a merge).
- a ``merge`` rewrites the leading paragraphs into one line; it applies by itself only as a
  punctuation join of entries without sub-items (:mod:`accounting`), and each entry's
  ``(updated …)`` mark stays right after its own words, so merging never makes another
  fact look updated. Entries that do not open with a paragraph cannot be merged.
- after the checks of :mod:`meaning`, every add, update and merge must be accounted for
  token by token (:mod:`accounting`); an add that answers an open question or says the
  opposite of an entry is refused with that entry's label, for the person to decide.
- only ops that pass their checks claim their refs and use an add's place: a refused op
  does not block a later one. (One refused at the final re-parse has already used them.)
- an op text may start with list markers, which are stripped; a label is never stripped (an
  entry may start with "P1:"), but an update or merge whose text opens with the label of an
  entry it changes is sent back. A heading is refused only when the text really is one
  (``#FF5500 …`` is not). Sections are matched like headings.
- an update of an entry that does not open with a line of text (a code fence, a quote, a
  nested list) is refused: it would replace the whole entry, sub-items included.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from app.knowledge import accounting as ac
from app.knowledge import document as doc
from app.knowledge import tokens as tk
from app.knowledge import words as wd
from app.knowledge.document import Entry, Parsed, Splice
from app.knowledge.meaning import (
    Heard,
    Said,
    encodable,
    hear,
    merge_problem,
    quote,
    update_problem,
    values_of,
)

ADDS_PER_EXCHANGE = 3
MAX_TEXT = 1_000
TARGETS: dict[str, str] = {"project": "P", "folder": "F", "personal": "U"}

_REF = re.compile(r"\s*([PFU])([0-9]{1,9})\s*")
_BREAKS = re.compile(r"\s*[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
_LABEL = re.compile(r"\A([PFU][0-9]{1,9}):\s*")  # the label the model was shown, echoed
_BULLETS = re.compile(r"\A(?:[-*+](?:\s+|\Z))+")
_MARK = re.compile(r"\s*\(updated \d{4}-\d{2}-\d{2}\)")
_MARK_DATE = re.compile(r"\(updated (\d{4}-\d{2}-\d{2})\)")
_HEADING = re.compile(r"#{1,6}(?:\s|$)")
_ONE_ENTRY = ["bullet_list_open", "list_item_open", "paragraph_open", "inline",
              "paragraph_close", "list_item_close", "bullet_list_close"]


@dataclass(frozen=True)
class Layer:
    key: str  # "project" | "folder" | "personal"
    prefix: str  # "P" | "F" | "U"
    text: str


@dataclass(frozen=True)
class Refusal:
    op: object
    reason: str  # one sentence
    # An add that answers an open question: the question's label (e.g. "P4") and the
    # section the answer goes to; accepting it replaces the question there.
    question: str | None = None
    section: str | None = None
    # An add that says the opposite of an entry: that entry's label (it waits beside it).
    beside: str | None = None

    @property
    def moot(self) -> bool:
        """Nothing was lost: what the op said is already in the documents (a duplicate, an
        update that says the same).  Such ops are not sent back, nor reported as unapplied."""
        return self.reason.startswith("It duplicates ") or self.reason.endswith(
            "so nothing changes.")


@dataclass(frozen=True)
class Outcome:
    texts: dict[str, str]  # the new text of each layer that changed, by key
    applied: list[dict]  # the ops as applied (cleaned text, marks added), in order
    refused: list[Refusal]


@dataclass(frozen=True)
class _Edit:
    entry: int
    text: str | None  # None: the entry goes away (merged into another)
    whole: bool  # replace all its lines, not just its leading paragraph
    carried: tuple[int, ...] = ()  # merged entries whose sub-items and blocks follow this one


@dataclass(frozen=True)
class _Change:
    position: int  # of the op in the list, to keep reports in order
    layer: str
    op: object
    applied: dict
    edits: tuple[_Edit, ...] = ()
    add: tuple[str, str] | None = None  # (section, text)


@dataclass(frozen=True)
class _Doc:
    layer: Layer
    parsed: Parsed


@dataclass
class _Batch:
    """What validation carries from one op to the next."""

    docs: dict[str, _Doc]
    heard: tuple[Heard, ...]  # the new exchanges, message by message, as words
    today: str
    add_cap: int
    seen: dict[str, str]  # normalised entry text -> where it is, for duplicate detection
    # An entry's content words in order -> where it is: the same words, in other spacing,
    # case, punctuation or with other articles, are a duplicate.  Sorted, the same words in
    # another order: maybe the same fact, maybe its reverse ("Postgres over MySQL"), so the
    # person decides.
    near: dict[tuple[str, ...], str] = field(default_factory=dict)
    bags: dict[tuple[str, ...], str] = field(default_factory=dict)
    # Where each known text is -> its symbols and negations ("✅" is not "❌"): the same
    # words with other ones are no duplicate but the opposite.
    markers: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    # An entry's words without its negations, values and symbols -> (where, those): an add
    # with the same words and other ones says the opposite.
    cores: dict[tuple[str, ...], list[tuple[str, tuple[str, ...]]]] = field(
        default_factory=dict)
    questions: dict[str, tuple[str, ...]] = field(default_factory=dict)  # label -> its words
    claimed: set[str] = field(default_factory=set)
    adds: int = 0


def apply_ops(tool_input: object, *, layers: Sequence[Layer], exchanges: str | Sequence[Said],
              today: str, qualifying_exchanges: int, chain_texts: Sequence[str] = ()
              ) -> Outcome:
    """The documents after the valid ops of *tool_input*; never raises, whatever the input.
    *exchanges* are the new messages, each with who said it (the person or Claude); a plain
    string is one message whose speaker is not known."""
    ops = tool_input.get("ops") if isinstance(tool_input, dict) else None
    if not isinstance(ops, list):
        return Outcome({}, [], [Refusal(tool_input, 'The input must be an object with an '
                                                    '"ops" list, so nothing was applied.')])
    batch = _batch(layers, exchanges, today, qualifying_exchanges, chain_texts)
    changes: list[_Change] = []
    refused: list[tuple[int, Refusal]] = []
    elsewhere = _less_specific(ops)
    for position, op in enumerate(ops):
        if position in elsewhere:
            refused.append((position, Refusal(op, "It duplicates an add to the folder document "
                                                  "in this update, so it was dropped.")))
            continue
        checked = _check(batch, op, position)
        if isinstance(checked, Refusal):
            refused.append((position, checked))
        elif isinstance(checked, str):
            refused.append((position, Refusal(op, checked)))
        else:
            changes.append(checked)
    texts: dict[str, str] = {}
    kept: list[_Change] = []
    for key, d in batch.docs.items():
        text, ok, late = _render_layer(d, [c for c in changes if c.layer == key])
        kept += ok
        refused += late
        if text != d.layer.text:
            texts[key] = text
    kept.sort(key=lambda c: c.position)
    refused.sort(key=lambda r: r[0])
    return Outcome(texts, [c.applied for c in kept], [r for _, r in refused])


def _batch(layers: Sequence[Layer], exchanges: str | Sequence[Said], today: str, qualifying: int,
           chain_texts: Sequence[str]) -> _Batch:
    docs: dict[str, _Doc] = {}
    for layer in layers:
        docs.setdefault(layer.key, _Doc(layer, doc.parse(layer.text)))
    cap = ADDS_PER_EXCHANGE * max(qualifying, 0) if isinstance(qualifying, int) else 0
    batch = _Batch(docs, hear(exchanges), today, cap, {})
    for d in docs.values():
        for entry in d.parsed.entries:
            _remember(batch, d.parsed, entry, f"{d.layer.prefix}{entry.index + 1}")
    for text in chain_texts:
        parsed = doc.parse(text)
        for entry in parsed.entries:
            _remember(batch, parsed, entry, "an entry of another document of this chat")
    return batch


def _remember(batch: _Batch, parsed: Parsed, entry: Entry, where: str) -> None:
    """An entry is known by its whole text and by its leading paragraph alone, and by the
    content words of each."""
    head = "".join(parsed.lines[entry.start:entry.head_end]) or entry.text
    for text in (entry.text, head):
        _known(batch, text, where)
    if where[:1] in "PFU" and where[1:].isdigit() and (
            _section(entry) == doc.SECTIONS[5] or "?" in ac.text_of(head)):
        batch.questions[where] = _core(head)[0]


def _known(batch: _Batch, text: str, where: str) -> None:
    batch.seen.setdefault(doc.normalise(text), where)
    found = tuple(wd.keys(text))
    if found:
        batch.near.setdefault(found, where)
        batch.bags.setdefault(tuple(sorted(found)), where)
    core, marks = _core(text)
    batch.markers.setdefault(where, []).append(marks)
    if core:
        batch.cores.setdefault(core, []).append((where, marks))


@lru_cache(maxsize=8192)  # every entry of every document, at every rebuild
def _core(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """*text*'s words without its negations, values and symbols (sorted), and those (sorted):
    two texts with the same first and other second say opposite things."""
    core: list[str] = []
    marks: list[str] = []
    for t in ac.toks(text):
        if t.free:
            continue
        (marks if t.kind in _STATED or _MONEY.search(t.key) else core).append(t.key)
    return tuple(sorted(core)), tuple(sorted(marks))


# What an entry states of its subject (a negation, a symbol, a date, a sum …); other values
# (a number, an identifier: "Room 4", "S12") name the subject itself.
_STATED = frozenset(("negation", "symbol", "value:date", "value:time", "value:percent",
                     "value:url", "value:email"))
_MONEY = re.compile(r"[$€£¥₹₩₽¢₺₪₫฿]")


def _duplicate(batch: _Batch, text: str) -> str:
    """Why *text* adds nothing new, or says the same words as an entry in another order
    ('' when neither).  The same words with other symbols or negations are no duplicate."""
    marks = _core(text)[1]
    key = doc.normalise(text)
    if key in batch.seen and marks in batch.markers.get(batch.seen[key], [marks]):
        return f"It duplicates {batch.seen[key]}, so it was dropped."
    found = tuple(wd.keys(text))
    if found in batch.near and marks in batch.markers.get(batch.near[found], [marks]):
        return f"It duplicates {batch.near[found]} in other words, so it was dropped."
    if tuple(sorted(found)) in batch.bags:
        return (f"It has the same words as {batch.bags[tuple(sorted(found))]} in another "
                "order: the same fact or its reverse, so the person decides.")
    return ""


def _answer_or_opposite(batch: _Batch, text: str, section: str
                        ) -> tuple[str, dict[str, str]]:
    """Why an add waits for the person because of an entry it concerns, and what the
    refusal carries ('' and nothing when it concerns none): an answer to an open question
    (never a duplicate of it), or the opposite of an entry (the same words, another
    negation, value or symbol)."""
    core, marks = _core(text)
    if section != doc.SECTIONS[5] and "?" not in marks:
        words = set(core)
        for label, asked in batch.questions.items():
            wanted = {w for w in asked if w not in wd.QUESTIONS}
            if wanted and wanted <= words:
                return (f"It answers the open question {label}: proposed as {section}, with "
                        "the question's removal, for the person to accept."
                        ), {"question": label, "section": section}
    for where, other in batch.cores.get(core, []):
        if other != marks and where[:1] in "PFU" and where[1:].isdigit():
            shown = sorted(set(other) ^ set(marks))
            return (f"It says the opposite of {where} (the same words, but "
                    f"{ac.listing(shown)}), so it waits beside it for the person."
                    ), {"beside": where}
    return "", {}


def _less_specific(ops: Sequence[object]) -> set[int]:
    """Positions of project adds that say what a folder add of the same batch says: one fact
    lands once, in the more specific document."""
    def words_of(op: object, target: str) -> tuple[str, ...] | None:
        if not (isinstance(op, dict) and op.get("op") == "add" and op.get("target") == target
                and isinstance(op.get("text"), str)):
            return None
        return tuple(wd.keys(_clean(op["text"])[0])) or None

    folder = {w for op in ops if (w := words_of(op, "folder")) is not None}
    return {n for n, op in enumerate(ops) if (w := words_of(op, "project")) in folder}


# =============================================================================== checking


def _check(batch: _Batch, op: object, position: int) -> _Change | Refusal | str:
    if not isinstance(op, dict):
        return "An op must be an object."
    kind = op.get("op")
    if kind in ("delete", "remove"):
        return "There is no delete: only a person removes an entry."
    if kind == "add":
        return _check_add(batch, op, position)
    if kind == "update":
        return _check_update(batch, op, position)
    if kind == "merge":
        return _check_merge(batch, op, position)
    return 'The "op" field must be "add", "update" or "merge".'


def _check_add(batch: _Batch, op: dict, position: int) -> _Change | Refusal | str:
    fields = _strings(op, "target", "section", "text", "evidence")
    if fields is None:
        return "An add needs target, section, text and evidence, each a string."
    target, section, raw, evidence = fields
    if target not in TARGETS:
        return 'The target must be "project", "folder" or "personal".'
    if target not in batch.docs:
        return ("This chat is not in a folder, so nothing can be added to a folder document."
                if target == "folder" else
                "Personal memory is switched off, so nothing can be added to it."
                if target == "personal" else "There is no project document to add to.")
    canonical = doc.canonical_section(section)
    if canonical is None:
        return f"The section must be one of: {', '.join(doc.SECTIONS)}."
    section = canonical
    text, problem = _clean(raw)
    if problem:
        return problem
    found = quote(batch.heard, evidence, values_of(text))
    if isinstance(found, str):
        return found
    # before duplicates: an answer is never a duplicate of its question, nor "✅" of "❌"
    concern, carried = _answer_or_opposite(batch, text, section)
    if concern:
        return Refusal(op, concern, **carried)
    duplicate = _duplicate(batch, text)
    if duplicate:
        return duplicate
    problem = ac.add_problem(text, found)
    if problem:
        return problem
    if batch.adds >= batch.add_cap:  # checked last: an invalid add takes no one's place
        return (f"No more than {ADDS_PER_EXCHANGE} adds per qualifying exchange "
                f"({batch.add_cap} here).")
    batch.adds += 1
    _known(batch, text, "an earlier add of this update")
    applied = {"op": "add", "target": target, "section": section, "text": text,
               "evidence": evidence}
    return _Change(position, target, op, applied, add=(section, text))


def _check_update(batch: _Batch, op: dict, position: int) -> _Change | str:
    fields = _strings(op, "ref", "text", "evidence")
    if fields is None:
        return "An update needs ref, text and evidence, each a string."
    ref, raw, evidence = fields
    found = _resolve(batch, ref)
    if isinstance(found, str):
        return found
    label, d, entry = found
    if entry.head_end == entry.start:
        return (f"{label} does not open with a line of text (it is a block), so it cannot be "
                "updated; only a person edits it.")
    old = doc.head(d.parsed, entry)
    text, problem = _clean(raw, label=label, old=[old])
    if problem:
        return problem
    new_values = [v for kind, values in tk.gained_by_kind(old, text).items() if kind != "name"
                  for v in values]
    quoted = quote(batch.heard, evidence, new_values)
    if isinstance(quoted, str):
        return quoted
    problem = update_problem(label, old, text, quoted)
    if problem:
        return problem
    if doc.normalise(text) == doc.normalise(old) and _core(text) == _core(old):
        return f"The new text of {label} says the same as the entry, so nothing changes."
    marked = f"{text} (updated {batch.today})"
    moved, problem = _moved_to(op, entry, label)
    if problem:
        return problem
    problem = ac.update_problem(label, old, text, quoted)
    if problem:
        return problem
    batch.claimed.add(label)
    _known(batch, text, f"the updated {label}")
    applied = {"op": "update", "ref": label, "text": marked, "evidence": evidence}
    if moved:  # an answered open question: out of Open questions, into its section
        applied["section"] = moved
        return _Change(position, d.layer.key, op, applied,
                       edits=(_Edit(entry.index, None, True),), add=(moved, marked))
    return _Change(position, d.layer.key, op, applied, edits=(_Edit(entry.index, marked, False),))


def _moved_to(op: dict, entry: Entry, label: str) -> tuple[str, str]:
    """The section an update moves its entry to ('' to stay), and why it cannot ('' when it
    can).  Only an entry of Open questions moves: once answered, it belongs elsewhere."""
    section = op.get("section")
    if section is None:
        return "", ""
    where = doc.canonical_section(section) if isinstance(section, str) else None
    if where is None:
        return "", f"The section must be one of: {', '.join(doc.SECTIONS)}."
    here = doc.canonical_section(entry.section or "")
    if where == here:
        return "", ""
    if here != doc.SECTIONS[5]:
        return "", f"Only an open question moves to another section; {label} stays where it is."
    if entry.head_end != entry.end:
        return "", f"{label} has sub-items; merge it with an entry of {where} instead."
    return where, ""


def _check_merge(batch: _Batch, op: dict, position: int) -> _Change | str:
    refs, raw = op.get("refs"), op.get("text")
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs) \
            or not isinstance(raw, str):
        return "A merge needs refs, a list of labels, and text, a string."
    if len(refs) < 2:
        return "A merge needs at least two refs."
    found = [_resolve(batch, ref) for ref in refs]
    problems = [f for f in found if isinstance(f, str)]
    if problems:
        return problems[0]
    resolved = [f for f in found if not isinstance(f, str)]
    labels = [label for label, _, _ in resolved]
    if len(set(labels)) != len(labels):
        return "A merge must name each entry once."
    if len({d.layer.key for _, d, _ in resolved}) != 1:
        return "The refs of one merge must all belong to the same document."
    d = resolved[0][1]
    sections = {_section(e) for _, _, e in resolved}
    if len(sections) > 1:
        return ("A merge keeps to one section: " + ", ".join(
            f"{label} is in {_section(e) or 'no section'}" for label, _, e in resolved) + ".")
    bare = [label for label, _, e in resolved if e.head_end == e.start]
    if bare:
        return f"{bare[0]} does not open with a line of text, so it cannot be merged."
    heads = [(label, doc.head(d.parsed, e)) for label, _, e in resolved]
    text, problem = _clean(raw, label=labels, old=[h for _, h in heads])
    if problem:
        return problem
    problem = merge_problem(heads, text)
    if problem:
        return problem
    nested = [label for label, _, e in resolved if e.head_end != e.end]
    if nested:
        return (f"{ac.listing(nested)} has sub-items, so the merge waits for the person: "
                "under one merged entry, whose sub-item is whose would be lost.")
    join = ac.merge_join([h for _, h in heads], text)
    if isinstance(join, str):
        return join
    # Each entry keeps its own "(updated …)" mark, after its own words: another fact must
    # not look updated that day.
    marks = [max((m[0] for m in _MARK_DATE.finditer(h)), default="") for _, h in heads]
    final = ac.marked_merge(text, join, marks)
    batch.claimed.update(labels)
    _known(batch, text, "the merged " + "+".join(labels))
    # The merged entry takes the first ref's place (all are in one section); an answered
    # open question leaves Open questions by an update that names its section.
    entries = [e for _, _, e in resolved]
    place = entries[0]
    others = tuple(e.index for e in entries if e is not place)
    edits = (_Edit(place.index, final, False, others),) + tuple(
        _Edit(index, None, True) for index in others)
    applied = {"op": "merge", "refs": labels, "text": final}
    return _Change(position, d.layer.key, op, applied, edits=edits)


def _section(entry: Entry) -> str:
    return doc.canonical_section(entry.section or "") or entry.section or ""


def _strings(op: dict, *keys: str) -> list[str] | None:
    """The op's fields named, when every one is a string."""
    values = [op.get(key) for key in keys]
    return [v for v in values if isinstance(v, str)] if all(
        isinstance(v, str) for v in values) else None


def _resolve(batch: _Batch, ref: str) -> tuple[str, _Doc, Entry] | str:
    """A label to its document and entry, or why it names nothing available."""
    found = _REF.fullmatch(ref)
    if found:
        label = f"{found[1]}{int(found[2])}"
        for d in batch.docs.values():
            if d.layer.prefix == found[1] and 1 <= int(found[2]) <= len(d.parsed.entries):
                if label in batch.claimed:
                    return f"{label} is already changed by an earlier op."
                return label, d, d.parsed.entries[int(found[2]) - 1]
    return f"{ref[:40]!r} names no entry of the documents shown."


def clean_text(raw: str) -> tuple[str, str]:
    """An entry's text as one line, and why it cannot be one entry ('' when it can): what a
    suggestion the person accepts must also be."""
    return _clean(raw)


def _clean(raw: str, *, label: str | Collection[str] = (), old: Collection[str] = ()
           ) -> tuple[str, str]:
    """An op's text as one entry line, and why it cannot be one ('' when it can). Code owns
    the ``(updated …)`` marks, so any the model wrote go.  Labels are never stripped from a
    text (an entry may well start with "P1:"): the entries an op changes are named in its
    own fields, so an update or merge whose text opens with the label of an entry it
    changes (*label*), where that entry's own text (*old*) did not, is sent back."""
    if not encodable(raw):
        return raw, "The text holds characters that cannot be stored (a lone surrogate)."
    text = _BULLETS.sub("", _BREAKS.sub(" ", raw).strip())
    echoed = _LABEL.match(text)
    if echoed and echoed[1] in ({label} if isinstance(label, str) else set(label)) and not any(
            _LABEL.match(doc.item_text(o).lstrip()) for o in old):
        return text, (f"The text starts with the label {echoed[1]}; write the entry's text "
                      "alone (labels are not part of it).")
    text = _MARK.sub("", text).strip()
    if _HEADING.match(text):
        return text, "The text is a heading; an op adds entries, never sections."
    if not any(c.isalnum() for c in text):
        return text, "The text is empty."
    if len(text) > MAX_TEXT:
        return text, f"The text is over {MAX_TEXT:,} characters; one entry is one fact."
    if [t.type for t in doc.markdown().parse(doc.render_entry(text))] != _ONE_ENTRY:
        return text, ("The text would not stay one plain entry (it reads as a list, quote or "
                      "block).")
    return text, ""


# ============================================================================== rendering


def _render_layer(d: _Doc, changes: list[_Change]
                  ) -> tuple[str, list[_Change], list[tuple[int, Refusal]]]:
    """The document with its changes; if together they do not come out clean, one at a time,
    refusing each one that would disturb the rest."""
    if not changes:
        return d.layer.text, [], []
    together, problem = _render(d, changes)
    if not problem:
        return together, changes, []
    kept: list[_Change] = []
    refused: list[tuple[int, Refusal]] = []
    text = d.layer.text
    for change in changes:
        attempt, problem = _render(d, kept + [change])
        if problem:
            refused.append((change.position, Refusal(change.op, problem)))
        else:
            kept.append(change)
            text = attempt
    return text, kept, refused


def _render(d: _Doc, changes: list[_Change]) -> tuple[str, str]:
    """The new text, and why it must not be used ('' when it can): re-parsing shows it is
    not exactly what the ops alone should have made — an entry no op named changed, or a
    block outside the entries (heading, paragraph, rule, fence, front matter …) did: a
    removed entry must not turn a paragraph into a heading or join two paragraphs."""
    parsed = d.parsed
    expected = Counter((e.section, e.text) for e in parsed.entries)
    splices: list[Splice] = []
    adds: dict[str, list[str]] = {}
    for change in changes:
        for edit in change.edits:
            entry = parsed.entries[edit.entry]
            expected[(entry.section, entry.text)] -= 1
            if edit.text is None:
                splices.append(doc.removal(parsed, entry))
                continue
            if edit.carried:
                spliced, new_text = doc.merge_splice(
                    parsed, entry, [parsed.entries[i] for i in edit.carried], edit.text)
            else:
                spliced, new_text = doc.head_splice(parsed, entry, edit.text, whole=edit.whole)
            splices.append(spliced)
            expected[(entry.section, new_text)] += 1
        if change.add:
            adds.setdefault(change.add[0], []).append(change.add[1])
    created: list[str] = []
    for section, texts in adds.items():
        spliced, title, lines = doc.placement(parsed, section, texts)
        splices.append(spliced)
        expected.update((title, line) for line in lines)
        if not any(doc.canonical_section(h.title) == section for h in parsed.headings):
            created.append(f"## {section}")
    text = doc.splice(parsed, splices)
    after = doc.parse(text)
    if Counter((e.section, e.text) for e in after.entries) != +expected:
        return text, "Applying it would change the document's structure around it."
    if _without(after.blocks, created) != list(parsed.blocks):
        return text, "Applying it would change the document's structure around it."
    return text, ""


def _without(blocks: Sequence[tuple[str, str]], headings: list[str]) -> list[tuple[str, str]]:
    """*blocks* less the section headings code created (one each)."""
    left = list(headings)
    kept: list[tuple[str, str]] = []
    for kind, source in blocks:
        title = source.rstrip("\r\n")
        if kind == "heading_open h2" and title in left:
            left.remove(title)
            continue
        kept.append((kind, source))
    return kept
