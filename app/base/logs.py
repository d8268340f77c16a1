"""Logging to a rotating file in the log folder; never a secret, never a message body.

The Anthropic SDK and its HTTP stack log whole requests and responses (messages, knowledge,
memory) at DEBUG level, with ``ANTHROPIC_LOG=debug`` or when anyone lowers their loggers'
level.  Cairn's handler drops every record of theirs below INFO, whatever their level is set
to, so those bodies never reach ``cairn.log``.
"""

from __future__ import annotations

import logging
import logging.handlers

from app.base import locations

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Loggers that may write request or response bodies at DEBUG level.
HTTP_LOGGERS = frozenset({"anthropic", "httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2",
                          "hpack", "urllib3"})


class NoBodies(logging.Filter):
    """Lets through only INFO and above from the SDK and the HTTP stack: no bodies."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.INFO:
            return True
        return record.name.partition(".")[0] not in HTTP_LOGGERS


def setup_logging(*, level: int = logging.INFO) -> None:
    """Attach one rotating file handler to the root logger, replacing one for another folder."""
    root = logging.getLogger()
    folder = locations.log_dir()
    for old in [h for h in root.handlers if getattr(h, "_cairn", None) is not None]:
        if old._cairn == folder:  # type: ignore[attr-defined]
            return
        root.removeHandler(old)
        old.close()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.handlers.RotatingFileHandler(
            folder / "cairn.log", maxBytes=2_000_000, backupCount=3, encoding="utf-8"
        )
    except OSError:
        handler = logging.StreamHandler()  # an unwritable log folder must not stop Cairn
        handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter(_FORMAT))
    handler.addFilter(NoBodies())
    handler._cairn = folder  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(root.level or level, level))
