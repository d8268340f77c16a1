"""The errors the core raises, each carrying one sentence a person can read."""

from __future__ import annotations


class CairnError(Exception):
    """Base of every error Cairn reports to a person; ``str(error)`` is the sentence."""


class Refused(CairnError):
    """An operation was refused; nothing stored was changed (the CLI exits 1)."""


class StartupError(CairnError):
    """Stored data cannot be opened safely; Cairn stops instead of guessing."""


class StorageError(CairnError):
    """A write could not be stored (busy database, full disk); it was rolled back whole."""
