"""Where a suggestion's entries stand: recorded when it is made, found again when accepted.

A suggestion names the entries it changes by their whole text, their section and their
position in that section (:class:`~app.store.suggestions.Place`).  Accepting finds each entry
again by all three: among the entries whose whole text still reads the same (ignoring case,
spacing and Cairn's "(updated …)" mark), the one in the recorded section nearest the
recorded position.  Two entries that merely open with the same line are never confused, and
an entry edited since is not found (the suggestion is refused in one sentence: the person
decides again).  A suggestion recorded before places were kept names its entries by their
first line only: it is found only when exactly one entry of its section opens so.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.errors import Refused
from app.knowledge import document as doc
from app.store.suggestions import Place, Proposed, Suggestion

GONE = ("cannot accept this suggestion: the entry it changes no longer reads as it did when "
        "it was suggested; edit the document instead, or dismiss the suggestion")
AMBIGUOUS = ("cannot accept this suggestion: {n} entries of the document read as the one it "
             "changes, and it was made before Cairn kept which one; edit the document instead, "
             "or dismiss the suggestion")


def _section(entry: doc.Entry) -> str | None:
    return doc.canonical_section(entry.section) if entry.section else None


def position_of(parsed: doc.Parsed, entry: doc.Entry) -> int:
    """*entry*'s position among the entries of its section, from 0."""
    return sum(1 for e in parsed.entries[:entry.index] if _section(e) == _section(entry))


def place_of(parsed: doc.Parsed, entry: doc.Entry) -> Place:
    """Where *entry* stands in *parsed*, as a suggestion records it."""
    return Place(_section(entry), position_of(parsed, entry), entry.text)


def _head(parsed: doc.Parsed, entry: doc.Entry) -> str:
    return doc.item_text(doc.head(parsed, entry))


def placed(item: Proposed, text: str) -> Proposed:
    """*item* with the places of the entries it names in *text* (the document the rebuild
    saw), when it has none yet: each target found by its first line, within the section the
    item names when it is there.  Left as it is when a target is not found once exactly (two
    entries opening alike: accepting then refuses rather than guess)."""
    if item.places or not item.targets:
        return item
    parsed = doc.parse(text)
    places: list[Place] = []
    for target in item.targets:
        key = doc.normalise(target)
        alike = [e for e in parsed.entries if doc.normalise(_head(parsed, e)) == key]
        if len(alike) > 1 and item.section is not None:
            alike = [e for e in alike if _section(e) == item.section] or alike
        if len(alike) != 1:
            return item
        places.append(place_of(parsed, alike[0]))
    return Proposed(item.owner, item.kind, item.section, item.targets, item.text, item.reason,
                    item.evidence, item.said_by, tuple(places), item.position, item.removes)


def find(parsed: doc.Parsed, place: Place, *, taken: Sequence[doc.Entry] = ()
         ) -> doc.Entry | None:
    """The entry *place* names in *parsed*: same whole text; of those, in its section if any
    is, nearest its position.  None when no entry reads so any more."""
    key = doc.normalise(place.text)
    alike = [e for e in parsed.entries if e not in taken and doc.normalise(e.text) == key]
    if not alike:
        return None
    same = [e for e in alike if _section(e) == place.section]
    pool = same or alike
    return min(pool, key=lambda e: (abs(position_of(parsed, e) - place.position), e.index))


def targets_of(parsed: doc.Parsed, suggestion: Suggestion) -> list[doc.Entry]:
    """The entries *suggestion* changes, each once; Refused when one is gone (or, for a
    suggestion without places, when its first line names more than one)."""
    found: list[doc.Entry] = []
    if suggestion.places:
        for place in suggestion.places:
            entry = find(parsed, place, taken=found)
            if entry is None:
                raise Refused(GONE)
            found.append(entry)
        return found
    for target in suggestion.targets:  # recorded before places were kept
        key = doc.normalise(target)
        alike = [e for e in parsed.entries if e not in found
                 and doc.normalise(_head(parsed, e)) == key]
        if suggestion.section is not None and len(alike) > 1:
            alike = [e for e in alike if _section(e) == suggestion.section]
        if not alike:
            raise Refused(GONE)
        if len(alike) > 1:
            raise Refused(AMBIGUOUS.format(n=len(alike)))
        found.append(alike[0])
    return found


def insertion(parsed: doc.Parsed, section: str, position: int | None, text: str,
              tail: Sequence[str] = (), *, skip: Sequence[doc.Entry] = ()) -> doc.Splice:
    """A new entry of one line of *text* (followed by its *tail*: sub-item lines, as they
    stood) in *section*, before the section's entry at *position* (entries in *skip*, about to
    be removed, not counted); after its last entry when there is none there."""
    under = [e for e in parsed.entries if _section(e) == section and e not in skip]
    if position is not None and 0 <= position < len(under):
        before = under[position]
        line = doc.render_entry(text, doc.bullet(before))
        return doc.Splice(before.start, before.start, (line, *tail))
    splice_, _, rendered = doc.placement(parsed, section, [text])
    if not tail:
        return splice_
    at = splice_.lines.index(rendered[0]) + 1
    lines = splice_.lines[:at] + tuple(tail) + splice_.lines[at:]
    return doc.Splice(splice_.start, splice_.end, lines, splice_.rank)


__all__ = ["find", "insertion", "place_of", "placed", "position_of", "targets_of"]
