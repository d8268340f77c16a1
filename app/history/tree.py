"""A chat's messages as a tree, whatever the export gave: parents before children, nodes that
are not shown (hidden, empty, system) left out with their children moved up to the nearest
shown ancestor, a reply that the other service split over several nodes (a tool call, its
output, the answer) joined into one message where the tree does not branch between them, and
anything that does not hang from a root (a loop of parents) left out and said.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.history.model import File, Message


@dataclass(slots=True)
class Node:
    source_id: str
    parent: str | None
    role: str | None  # user | assistant; None: not shown (its children move up)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    created_at: str = ""
    model: str | None = None
    files: list[File] = field(default_factory=list)


def build(nodes: list[Node], leaf: str | None) -> tuple[list[Message], str | None, list[str]]:
    """The chat's messages (parents first), the source id of its shown leaf, and why parts
    were left out.  *leaf*: the node the export shows last (None: the last node given)."""
    skipped: list[str] = []
    by_id: dict[str, Node] = {}
    order: list[str] = []
    for node in nodes:
        if node.source_id in by_id:
            skipped.append("a message listed twice was kept once")
            continue
        by_id[node.source_id] = node
        order.append(node.source_id)
    children: dict[str | None, list[str]] = {}
    for sid in order:
        parent = by_id[sid].parent
        if parent is not None and parent not in by_id:
            parent = None  # a parent the export does not hold: a first message
        if parent == sid:
            parent = None
        by_id[sid].parent = parent
        children.setdefault(parent, []).append(sid)
    # Walk from the roots, iteratively: what is never reached hangs in a loop of parents.
    reached: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(children.get(None, [])))
    while stack:
        sid = stack.pop()
        if sid in seen:
            continue
        seen.add(sid)
        reached.append(sid)
        stack.extend(reversed(children.get(sid, [])))
    lost = len(order) - len(reached)
    if lost:
        skipped.append(f"{lost} message(s) whose parents form a loop")
    # Shown parent of each node: the nearest shown ancestor (reached order: parents first).
    shown_parent: dict[str, str | None] = {}
    for sid in reached:
        node = by_id[sid]
        up = node.parent
        if up is not None and by_id[up].role is None:
            up = shown_parent[up]  # already the nearest shown one (parents come first)
        shown_parent[sid] = up
    kept = [sid for sid in reached if by_id[sid].role is not None
            and (by_id[sid].blocks or by_id[sid].files)]
    # Empty shown nodes also move their children up.
    empty = {sid for sid in reached if by_id[sid].role is not None} - set(kept)
    if empty:
        for sid in reached:
            up = shown_parent[sid]
            if up is not None and up in empty:
                up = shown_parent[up]  # (moved up already: parents come first)
            shown_parent[sid] = up
    kept_children: dict[str | None, int] = {}
    for sid in kept:
        kept_children[shown_parent[sid]] = kept_children.get(shown_parent[sid], 0) + 1
    # Join a node into its parent when both speak for the same side and nothing branches.
    into: dict[str, str] = {}
    messages: dict[str, Message] = {}
    result: list[Message] = []
    for sid in kept:
        node = by_id[sid]
        parent = shown_parent[sid]
        target = into.get(parent, parent) if parent is not None else None
        if target is not None and messages[target].role == node.role == "assistant" \
                and kept_children.get(parent, 0) == 1:
            host = messages[target]
            host.blocks.extend(node.blocks)
            host.files.extend(node.files)
            host.model = host.model or node.model
            into[sid] = target
            continue
        message = Message(source_id=sid, parent=target, role=node.role or "user",
                          blocks=list(node.blocks), created_at=node.created_at,
                          model=node.model, files=list(node.files))
        messages[sid] = message
        result.append(message)
    # The shown leaf: the export's, moved to what it became; else the last message given.
    shown: str | None = None
    if leaf is not None and leaf in by_id and leaf in seen:
        walk: str | None = leaf
        while walk is not None and walk not in messages and walk not in into:
            walk = shown_parent.get(walk)
        shown = into.get(walk, walk) if walk is not None else None
    if shown is None and result:
        last = next((sid for sid in reversed(order) if sid in messages or sid in into), None)
        shown = into.get(last, last) if last is not None else None
    # A shown leaf has no children on its path: walk down the newest child to a real leaf.
    if shown is not None:
        below: dict[str, list[str]] = {}
        for m in result:
            if m.parent is not None:
                below.setdefault(m.parent, []).append(m.source_id)
        while below.get(shown):
            shown = below[shown][-1]
    return result, shown, skipped
