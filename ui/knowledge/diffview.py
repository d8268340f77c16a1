"""A comparison of two versions as HTML for a QTextBrowser: inline (removed lines struck
through on red, added ones on green, a few lines of context around each change) or side by
side (the older version on the left)."""

from __future__ import annotations

import html
from dataclasses import dataclass

from PySide6.QtGui import QPalette

from app.knowledge.merge import EQUAL, Hunk

CONTEXT = 2  # unchanged lines shown around a change


@dataclass(frozen=True, slots=True)
class DiffColours:
    added: str
    removed: str
    quiet: str
    text: str

    @classmethod
    def of(cls, palette: QPalette) -> DiffColours:
        dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
        return cls(added="#1f3d2b" if dark else "#dcfce7",
                   removed="#4a2326" if dark else "#fee2e2",
                   quiet=palette.color(QPalette.ColorRole.PlaceholderText).name(),
                   text=palette.color(QPalette.ColorRole.Text).name())


def _cell(line: str) -> str:
    return html.escape(line) if line else "&nbsp;"


def inline_html(hunks: list[Hunk], colours: DiffColours) -> str:
    if all(h.tag == EQUAL for h in hunks):
        return f'<p style="color: {colours.quiet};">No differences.</p>'
    rows: list[str] = []
    for n, hunk in enumerate(hunks):
        if hunk.tag == EQUAL:
            lines = list(hunk.old)
            head = lines[:CONTEXT] if n > 0 else []
            tail = lines[-CONTEXT:] if n < len(hunks) - 1 else []
            shown: list[str | None] = list(lines)
            if len(lines) > len(head) + len(tail) + 1:
                shown = [*head, None, *tail]
            for line in shown:
                if line is None:
                    rows.append(f'<tr><td style="color: {colours.quiet};">⋯</td></tr>')
                else:
                    rows.append(f"<tr><td>{_cell(line)}</td></tr>")
            continue
        for line in hunk.old:
            rows.append(f'<tr><td bgcolor="{colours.removed}"><s>−&nbsp;{_cell(line)}</s>'
                        "</td></tr>")
        for line in hunk.new:
            rows.append(f'<tr><td bgcolor="{colours.added}">+&nbsp;{_cell(line)}</td></tr>')
    return ('<table width="100%" cellspacing="0" cellpadding="2">' + "".join(rows)
            + "</table>")


def side_by_side_html(hunks: list[Hunk], colours: DiffColours, *, old: str, new: str) -> str:
    if all(h.tag == EQUAL for h in hunks):
        return f'<p style="color: {colours.quiet};">No differences.</p>'
    rows = [f'<tr><th align="left" style="color: {colours.quiet};">{html.escape(old)}</th>'
            f'<th align="left" style="color: {colours.quiet};">{html.escape(new)}</th></tr>']
    for n, hunk in enumerate(hunks):
        if hunk.tag == EQUAL:
            lines = list(hunk.old)
            if len(lines) > 2 * CONTEXT + 1:
                head = lines[:CONTEXT] if n > 0 else []
                tail = lines[-CONTEXT:] if n < len(hunks) - 1 else []
                for line in head:
                    rows.append(f"<tr><td>{_cell(line)}</td><td>{_cell(line)}</td></tr>")
                rows.append(f'<tr><td style="color: {colours.quiet};">⋯</td>'
                            f'<td style="color: {colours.quiet};">⋯</td></tr>')
                for line in tail:
                    rows.append(f"<tr><td>{_cell(line)}</td><td>{_cell(line)}</td></tr>")
            else:
                for line in lines:
                    rows.append(f"<tr><td>{_cell(line)}</td><td>{_cell(line)}</td></tr>")
            continue
        for i in range(max(len(hunk.old), len(hunk.new))):
            left = hunk.old[i] if i < len(hunk.old) else None
            right = hunk.new[i] if i < len(hunk.new) else None
            lcell = (f'<td width="50%" bgcolor="{colours.removed}">{_cell(left)}</td>'
                     if left is not None else '<td width="50%"></td>')
            rcell = (f'<td width="50%" bgcolor="{colours.added}">{_cell(right)}</td>'
                     if right is not None else '<td width="50%"></td>')
            rows.append(f"<tr>{lcell}{rcell}</tr>")
    return ('<table width="100%" cellspacing="0" cellpadding="2">' + "".join(rows)
            + "</table>")


def summary(hunks: list[Hunk]) -> str:
    """"3 lines added, 1 removed"."""
    added = sum(len(h.new) for h in hunks if h.tag != EQUAL)
    removed = sum(len(h.old) for h in hunks if h.tag != EQUAL)
    if not added and not removed:
        return "No differences"
    parts = []
    if added:
        parts.append(f"{added} line{'' if added == 1 else 's'} added")
    if removed:
        parts.append(f"{removed} removed")
    return ", ".join(parts)
