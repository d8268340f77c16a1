"""Logging to a rotating file in the log folder; never a secret, never a message body."""

from __future__ import annotations

import logging
import logging.handlers

from app import locations

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
    handler._cairn = folder  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(root.level or level, level))
