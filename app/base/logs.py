"""Logging to a rotating file in the log folder; never a secret, never a message body.

The Anthropic SDK and its HTTP stack log whole requests and responses (messages, knowledge,
memory) at DEBUG level, with ``ANTHROPIC_LOG=debug`` or when anyone lowers their loggers'
level.  Cairn's handler drops every record of theirs below INFO, whatever their level is set
to, so those bodies never reach ``cairn.log``.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
from pathlib import Path

from app.base import locations

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# Loggers that may write request or response bodies at DEBUG level.
HTTP_LOGGERS = frozenset({"anthropic", "httpx", "httpx2", "httpcore", "httpcore2", "h11", "h2",
                          "hpack", "urllib3"})


_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")


def without_credentials(text: str) -> str:
    """*text* with the user and password of every URL in it replaced (a proxy's
    ``http://user:pass@host`` as a base URL), for a log line, a sentence or a cache."""
    return _CREDENTIALS.sub(r"\1***@", text) if "@" in text else text


class NoBodies(logging.Filter):
    """Lets through only INFO and above from the SDK and the HTTP stack (no bodies), and
    never a URL's credentials (the HTTP library logs every request's URL at INFO)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO and record.name.partition(".")[0] in HTTP_LOGGERS:
            return False
        message = record.getMessage()
        if "@" in message:
            record.msg, record.args = without_credentials(message), None
        return True


class PrivateLog(logging.handlers.RotatingFileHandler):
    """The rotating log, readable by this user only (each new file as it is opened)."""

    def _open(self):  # type: ignore[no-untyped-def]  # (typeshed leaves it private)
        stream = super()._open()
        locations.make_private(Path(self.baseFilename))
        return stream


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
        locations.make_private(folder, folder=True)
        handler: logging.Handler = PrivateLog(
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
