"""Generated identities: a prefix and random letters, never derived from a path."""

from __future__ import annotations

import secrets
import string

_ALPHABET = string.ascii_lowercase + string.digits


def new_id(prefix: str, length: int = 12) -> str:
    """``ws_…`` for workspaces, ``ch_…`` for chats, ``wf_…`` for knowledge files."""
    return f"{prefix}_" + "".join(secrets.choice(_ALPHABET) for _ in range(length))
