"""Cairn core: no Qt, ever.  The packages and their order: docs/ARCHITECTURE.md."""

from __future__ import annotations


def version() -> str:
    """Cairn's version as installed ("0+unknown" in a source tree that was never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("cairn")
    except PackageNotFoundError:
        return "0+unknown"
