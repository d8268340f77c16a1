"""Suggestions the person decides: what a rebuild would not apply by itself.

A refused op that still says something — an entry to add, an entry's new text, entries to
merge — becomes a :class:`~app.store.suggestions.Proposed` for the document it concerns,
with the reason it was not applied, the evidence it quoted and whose words the evidence
is.  Ops that say nothing new (a duplicate, an update that changes nothing) are moot and
dropped; ops that name no entry shown, or whose text cannot be one entry (a heading, an
empty text), cannot be shown as a change and are only reported.

Accepting one applies it to the document as it is *now*, as the person's own save: an
update or a merge finds its entries by the text they had when it was made, and is refused
in one sentence when they no longer read so (the person edited them since).  Used by the
window (``ops``) and the command line alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from app.errors import Refused
from app.knowledge import document as doc
from app.knowledge import placing
from app.knowledge.meaning import Heard, quote
from app.knowledge.validator import TARGETS, Layer, Refusal, clean_text
from app.store.documents import Conflict, Document, KnowledgeStore, Saved
from app.store.suggestions import Proposed, Suggestion

_REF = re.compile(r"\s*([PFU])([0-9]{1,9})\s*")
_MARK_DATE = re.compile(r"\(updated (\d{4}-\d{2}-\d{2})\)")


def proposals(refused: Sequence[Refusal], *, layers: Sequence[Layer], owners: dict[str, str],
              heard: Sequence[Heard]) -> list[Proposed]:
    """The refusals of one rebuild that the person is to decide, each for its document."""
    parsed = {layer.key: (layer, doc.parse(layer.text)) for layer in layers}
    found: list[Proposed] = []
    seen: set[tuple[object, ...]] = set()
    for refusal in refused:
        if refusal.moot:
            continue
        item = _proposal(refusal, parsed, owners, heard)
        if item is not None and item.key not in seen:
            seen.add(item.key)
            found.append(item)
    return found


def suggestible(refused: Sequence[Refusal], *, layers: Sequence[Layer]) -> list[Refusal]:
    """The refusals :func:`proposals` keeps as suggestions: only these are reported as
    "suggestions that could not be applied" (one that names no entry shown, or whose text
    cannot be one entry, is refused but nothing waits for the person)."""
    parsed = {layer.key: (layer, doc.parse(layer.text)) for layer in layers}
    owners = {layer.key: layer.key for layer in layers}
    return [r for r in refused if not r.moot and _proposal(r, parsed, owners, ()) is not None]


def _proposal(refusal: Refusal, parsed: dict[str, tuple[Layer, doc.Parsed]],
              owners: dict[str, str], heard: Sequence[Heard]) -> Proposed | None:
    op = refusal.op
    if not isinstance(op, dict):
        return None
    kind = op.get("op")
    raw = op.get("text")
    if kind not in ("add", "update", "merge") or not isinstance(raw, str):
        return None
    text, problem = clean_text(raw)
    if problem and not text.strip():
        return None
    if problem and "heading" in problem:
        return None  # an op never adds structure, not even as a suggestion
    evidence = op.get("evidence") if isinstance(op.get("evidence"), str) else ""
    said_by = _speaker(heard, evidence) if evidence else None
    if kind == "add" and refusal.question:
        # An answer to an open question: an add to the section the answer goes to
        # (Proposed.section) that removes the question it answers (Proposed.removes), so
        # accepting it moves the fact out of Open questions.
        place = _locate(parsed, refusal.question)
        if place is not None:
            _, document = parsed[place[0]]
            question = placing.place_of(document, document.entries[place[1]])
            return Proposed(owners[place[0]], "add", refusal.section, (), text,
                            refusal.reason, evidence or "", said_by, removes=(question,))
    if kind == "add":
        target, section = op.get("target"), op.get("section")
        if target not in TARGETS or not isinstance(section, str):
            return None
        if target not in parsed:  # sent where this chat cannot write (a folder it is not in,
            # personal memory while it is off): kept for the chat's own document instead,
            # so the fact is not lost; the person decides
            target = next((key for key in ("folder", "project") if key in parsed), None)
            if target is None:
                return None
        canonical = doc.canonical_section(section)
        if canonical is None:
            return None
        return Proposed(owners[target], "add", canonical, (), text, refusal.reason,
                        evidence or "", said_by)
    refs = [op.get("ref")] if kind == "update" else op.get("refs")
    if not isinstance(refs, list) or not refs or not all(isinstance(r, str) for r in refs):
        return None
    located = [place for ref in refs if (place := _locate(parsed, ref)) is not None]
    if len(located) != len(refs) or len({key for key, _ in located}) != 1:
        return None
    key = located[0][0]
    layer, document = parsed[key]
    entries = [document.entries[index] for _, index in located]
    targets = tuple(_head_text(document, entry) for entry in entries)
    if len(set(targets)) != len(targets):
        return None
    section = doc.canonical_section(entries[0].section or "") if entries[0].section else None
    return Proposed(owners[key], str(kind), section, targets, text, refusal.reason,
                    evidence or "", said_by)


def _locate(parsed: dict[str, tuple[Layer, doc.Parsed]], ref: str) -> tuple[str, int] | None:
    found = _REF.fullmatch(ref)
    if not found:
        return None
    for key, (layer, document) in parsed.items():
        if layer.prefix == found[1] and 1 <= int(found[2]) <= len(document.entries):
            return key, int(found[2]) - 1
    return None


def _speaker(heard: Sequence[Heard], evidence: str) -> str | None:
    found = quote(heard, evidence)
    return None if isinstance(found, str) else (found.role or None)


def _head_text(parsed: doc.Parsed, entry: doc.Entry) -> str:
    """An entry's leading lines without their list marker: how a suggestion names it."""
    return doc.item_text(doc.head(parsed, entry))


# ================================================================================ accepting


def applied(text: str, suggestion: Suggestion, *, edited: str | None, today: str) -> str:
    """The document *text* with *suggestion* applied (its text replaced by *edited* when the
    person edited it first); :class:`Refused` when it no longer fits the document.

    Its entries are found by their whole text, section and position
    (:mod:`app.knowledge.placing`); an update whose section is not its entry's moves the
    entry there; the entries it removes (an answered open question) go, when they still read
    as they did (one edited since stays: the person decides)."""
    new, problem = clean_text(edited if edited is not None else suggestion.text)
    if problem:
        raise Refused(f"cannot accept this suggestion: {_lower(problem)}")
    parsed = doc.parse(text)
    entries = placing.targets_of(parsed, suggestion) if suggestion.kind != "add" else []
    removed: list[doc.Entry] = []
    for place in suggestion.removes:
        found = placing.find(parsed, place, taken=removed + entries)
        if found is not None:
            removed.append(found)
    removals = [doc.removal(parsed, e) for e in removed]
    if suggestion.kind == "add":
        if any(doc.normalise(e.text) == doc.normalise(new) for e in parsed.entries
               if e not in removed):
            return doc.splice(parsed, removals) if removals else text  # already there
        section = suggestion.section or doc.SECTIONS[1]
        return doc.splice(parsed, [placing.insertion(parsed, section, suggestion.position, new,
                                                     skip=removed), *removals])
    if suggestion.kind == "update":
        entry = entries[0]
        if entry.head_end == entry.start:
            raise Refused("cannot accept this suggestion: the entry it changes does not open "
                          "with a line of text; edit the document instead")
        line = f"{new} (updated {today})"
        here = doc.canonical_section(entry.section) if entry.section else None
        if suggestion.section is not None and suggestion.section != here:
            # A move: the entry leaves its section, with its sub-items, for the one named.
            tail = [x.rstrip("\r\n") for x in parsed.lines[entry.head_end:entry.end]]
            moved = placing.insertion(parsed, suggestion.section, suggestion.position, line,
                                      tail, skip=[entry])
            return doc.splice(parsed, [doc.removal(parsed, entry), moved, *removals])
        spliced, _ = doc.head_splice(parsed, entry, line, whole=False)
        return doc.splice(parsed, [spliced, *removals])
    dates = [m for e in entries for m in _MARK_DATE.findall(e.text)]
    final = f"{new} (updated {max(dates)})" if dates else new
    merged, _ = doc.merge_splice(parsed, entries[0], entries[1:], final)
    return doc.splice(parsed, [merged, *(doc.removal(parsed, e) for e in entries[1:]),
                               *removals])


def _lower(sentence: str) -> str:
    sentence = sentence.rstrip(".")
    return sentence[:1].lower() + sentence[1:]


def waiting(store: KnowledgeStore, owners: Sequence[str]) -> list[Suggestion]:
    """The suggestions waiting for *owners*' documents, oldest first (storage thread)."""
    return store.suggestions(owners)


def accept(store: KnowledgeStore, suggestion_id: int, *, edited: str | None = None,
           today: date | None = None) -> Document:
    """Apply suggestion *suggestion_id* to its document as the person's save and drop it, in
    one transaction (storage thread).  The document as saved."""
    day = (today or date.today()).isoformat()
    for _attempt in range(3):  # a rebuild may land between the read and the save
        suggestion = store.suggestion(suggestion_id)
        current = store.get(suggestion.owner)
        new_text = applied(current.text, suggestion, edited=edited, today=day)
        result = store.save_accepting(suggestion, new_text, based_on=current.version)
        if isinstance(result, Saved):
            return result.document
        assert isinstance(result, Conflict)
    raise Refused("cannot accept this suggestion now: the document keeps changing; try again")


def dismiss(store: KnowledgeStore, suggestion_id: int) -> Suggestion:
    """The person decided against it: it goes, the document unchanged (storage thread)."""
    return store.dismiss_suggestion(suggestion_id)


def undo_dismiss(store: KnowledgeStore, suggestion: Suggestion) -> Suggestion:
    """Dismiss undone (the window's Undo): the suggestion waits again (storage thread)."""
    return store.undo_dismiss(suggestion)


__all__ = ["Proposed", "Suggestion", "accept", "applied", "dismiss", "proposals",
           "undo_dismiss", "waiting"]
