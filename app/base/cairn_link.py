"""``cairn://`` links: a way for another app, a web page or a note to open a workspace or a
chat in Cairn's window (the desktop hands the link to ``cairn LINK``, which gives it to the
running window as a later ``cairn PATH`` does).

A link is hostile input: any page can make the browser open one.  So the grammar is small,
exact and names only what already exists, by its id:

    cairn://open?workspace=ws_xxxxxxxxxxxx   select that workspace
    cairn://chat/ch_xxxxxxxxxxxx             open that chat

(ids as ``app.base.ids.new_id`` makes them; the scheme in any case, an optional ``/`` before
``?`` and after the chat id, as browsers and desktops may add).  Nothing else is taken: no
path, no folder to add, no text to send, no other parameter, no percent-escape, no user,
port or fragment, nothing over 200 characters.  Anything else is refused in one sentence,
and nothing is opened.

Pure functions: the window and the command line both call :func:`parse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.errors import Refused

SCHEME = "cairn"
MAX_LENGTH = 200
_ID = r"[a-z0-9]{12}"
_GRAMMAR = re.compile(rf"//(?:open/?\?workspace=(ws_{_ID})|chat/(ch_{_ID})/?)")
REFUSAL = ("Cairn opens only links of the form cairn://open?workspace=ID or "
           "cairn://chat/ID, with an id Cairn gave; this one is not, so nothing was opened.")


@dataclass(frozen=True, slots=True)
class Link:
    """What a link opens: a workspace or a chat, by id."""

    kind: str  # "workspace" | "chat"
    id: str

    def __str__(self) -> str:
        if self.kind == "workspace":
            return f"{SCHEME}://open?workspace={self.id}"
        return f"{SCHEME}://chat/{self.id}"


def is_link(text: object) -> bool:
    """Whether *text* claims to be a ``cairn:`` link (then :func:`parse` decides)."""
    return isinstance(text, str) and text[:len(SCHEME) + 1].lower() == f"{SCHEME}:"


def parse(text: object) -> Link:
    """The link's target; :class:`Refused` (one sentence) for anything but the grammar."""
    if not isinstance(text, str) or len(text) > MAX_LENGTH or not is_link(text):
        raise Refused(REFUSAL)
    found = _GRAMMAR.fullmatch(text[len(SCHEME) + 1:])
    if found is None:
        raise Refused(REFUSAL)
    workspace, chat = found.groups()
    return Link("workspace", workspace) if workspace else Link("chat", chat)


def macos_url_types() -> list[dict[str, object]]:
    """Info.plist's ``CFBundleURLTypes``: macOS gives Cairn ``cairn:`` links (as a
    ``QFileOpenEvent`` with the URL)."""
    return [{"CFBundleURLName": "app.cairn.link", "CFBundleURLSchemes": [SCHEME]}]
