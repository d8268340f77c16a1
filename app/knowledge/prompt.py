"""What the knowledge model reads, and the shape its answer must take (docs/knowledge.md).

The system prompt is the stable part — the instructions, the same for every rebuild with the
Memory switch in the same position — so that it can be cached; everything that changes (the
documents with their sizes, the exchanges with their budgets, today's date) is in the message.
The schema spells out each op as its own typed variant, with the targets this chat can
write, the six sections and the shape of a label, so a small model has nothing to guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.knowledge.document import SECTIONS, labelled
from app.knowledge.validator import ADDS_PER_EXCHANGE, MAX_TEXT, Layer

SOFT_CAP = 20_000  # characters: past it, merge related entries rather than add
HARD_CAP = 30_000  # past it, merge aggressively (still validated: nothing is dropped)
_NAMES = {"project": "PROJECT DOCUMENT", "folder": "FOLDER DOCUMENT",
          "personal": "PERSONAL MEMORY"}
_REF = {"type": "string", "pattern": "^[PFU][1-9][0-9]*$"}
_TEXT: dict[str, Any] = {"type": "string"}


def length_guidance(size: int) -> str:
    if size < SOFT_CAP:
        return ("short: favour completeness and add every new, concrete item that will "
                "matter later.")
    if size <= HARD_CAP:
        return ("getting long: favour brevity. Merge related entries instead of adding "
                "near-duplicates; add only what is clearly new.")
    return ("over its size cap: merge aggressively, combining related entries into fewer, "
            "denser ones, while keeping every distinct fact, number, date and name.")


def _variant(op: str, **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"op": {"type": "string", "enum": [op]}, **properties},
            "required": ["op", *properties], "additionalProperties": False}


def ops_schema(targets: Sequence[str] = ("project", "folder", "personal")) -> dict[str, Any]:
    """The answer's JSON schema: an ``ops`` list of typed variants.  Structured outputs
    refuse length and count bounds, so those are in the prompt in numbers, and the
    validator (ops.apply_ops) enforces them."""
    sections = {"type": "string", "enum": list(SECTIONS)}
    return {
        "type": "object",
        "properties": {"ops": {"type": "array", "items": {"anyOf": [
            _variant("add", target={"type": "string", "enum": list(targets) or ["project"]},
                     section=sections, text=_TEXT, evidence=_TEXT),
            _variant("update", ref=_REF, text=_TEXT, evidence=_TEXT),
            _variant("update", ref=_REF, text=_TEXT, evidence=_TEXT, section=sections),
            _variant("merge", refs={"type": "array", "items": _REF}, text=_TEXT),
        ]}}},
        "required": ["ops"],
        "additionalProperties": False,
    }


OPS_SCHEMA = ops_schema()


def update_tool(targets: Sequence[str]) -> dict[str, Any]:
    """The same schema as a tool, for models without structured outputs (forced by
    ``tool_choice``)."""
    return {"name": "update_knowledge",
            "description": "Record what the new exchanges taught, as operations on the "
                           "labelled entries.",
            "input_schema": ops_schema(targets)}


def system_prompt(template: str, *, personal: bool) -> str:
    """The instructions: stable, so the call's system part can be cached."""
    parts = template.split("<!-- personal -->")
    # Lines between the personal markers describe personal memory: only when it is on.
    kept = [part for n, part in enumerate(parts) if n % 2 == 0 or personal]
    text = "".join(kept)
    return (text.replace("{adds}", str(ADDS_PER_EXCHANGE)).replace("{max_text}", f"{MAX_TEXT:,}")
            .replace("{soft_cap}", f"{SOFT_CAP:,}").replace("{hard_cap}", f"{HARD_CAP:,}"))


@dataclass(frozen=True, slots=True)
class Turn:
    user: str
    reply: str
    qualifies: bool


def message(*, layers: Sequence[Layer], project: str | None, folder: str | None,
            middle: Sequence[tuple[str, str]], turns: Sequence[Turn], today: str) -> str:
    """The part that changes: where the chat is, the documents with their sizes and what the
    size asks for, the read-only middle folders, the numbered exchanges with their add
    budgets, and today's date."""
    parts = [_where(project, folder, [title for title, _ in middle])]
    for layer in layers:
        size = len(layer.text)
        body = labelled(layer.text, layer.prefix) if layer.text.strip() else "(empty)"
        parts.append(f"{_NAMES[layer.key]} — entries {layer.prefix}1, {layer.prefix}2, …; "
                     f"{size:,} characters, {length_guidance(size)}\n{body}")
    for title, text in middle:
        parts.append(f'FOLDER "{title}" DOCUMENT (a folder between the project and this '
                     "chat's folder; read-only: no ops name it, and anything it already says "
                     f"must not be added again):\n{text.strip() or '(empty)'}")
    budget = ADDS_PER_EXCHANGE * sum(t.qualifies for t in turns)
    numbered = "\n\n".join(
        f"[{n}] ({f'up to {ADDS_PER_EXCHANGE} additions' if t.qualifies else 'short reply: no additions of its own'})"
        f"\nThe person: {t.user}\nClaude: {t.reply}" for n, t in enumerate(turns, 1))
    parts.append(f"NEW EXCHANGES (at most {budget} additions in all):\n{numbered}")
    parts.append(f"Today is {today}.")
    return "\n\n".join(parts)


def _where(project: str | None, folder: str | None, middle: list[str]) -> str:
    if project is None:
        return "This chat belongs to no project: only personal memory can change."
    if folder is None:
        return f'The project is "{project}". This chat is not in a folder.'
    path = " / ".join(f'"{title}"' for title in [project, *middle, folder])
    return f'The project is "{project}". This chat is in its "{folder}" folder ({path}).'
