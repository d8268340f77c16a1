"""A PDF's text for the search index, read with pypdf (pure Python, imported only when a PDF
is indexed: starting Cairn never loads it).

A PDF is hostile input: one added from anywhere may be damaged, encrypted, or made to hurt its
reader (a decompression bomb, a million pages, objects nested thousands deep).  The read is
bounded in pages, characters, bytes decoded and time, and whatever goes wrong gives '' (the
file is then found by its name and description only) and a line in the log, never an
exception.
"""

from __future__ import annotations

import io
import logging
import re
import time
from typing import Any

log = logging.getLogger(__name__)

MAX_PAGES = 2_000  # a longer PDF is indexed by its first 2,000 pages
SECONDS = 10.0  # reading one PDF's text stops after this, keeping what it read
# pypdf's own limits (pypdf.Configuration), tightened for text: a page's text never needs a
# 75 MB stream, and nothing here may start a program (pypdf runs jbig2dec for JBIG2 images).
_LIMIT_BYTES = 16_000_000
LIMITS: dict[str, Any] = {
    "maximum_declared_stream_length": 32_000_000,  # a knowledge file's own limit
    "array_based_stream_maximum_output_length": _LIMIT_BYTES,
    "jbig2_maximum_output_length": _LIMIT_BYTES,
    "lzw_maximum_output_length": _LIMIT_BYTES,
    "run_length_maximum_output_length": _LIMIT_BYTES,
    "zlib_maximum_output_length": _LIMIT_BYTES,
    "brotli_maximum_output_length": _LIMIT_BYTES,
    "image_maximum_buffer_size": _LIMIT_BYTES,
    "stream_decoding_work_maximum_length": 4 * _LIMIT_BYTES,
    "stream_parsing_work_maximum_count": 500_000,
    "jbig2dec_binary": None,
}
# Control characters but tab and newline, and lone surrogates (which SQLite cannot store).
_UNWANTED = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


class _OutOfTime(BaseException):
    """Raised from inside pypdf when the time is up: a BaseException, so that none of
    pypdf's own ``except Exception`` (around a form it cannot read, say) takes it for a
    damaged part and carries on."""


def pdf_text(data: bytes, *, name: str, limit: int) -> str:
    """The text of the PDF *data* (the file *name*, for the log), at most *limit* characters:
    its pages' text in order, with control characters but tab and newline made spaces; ''
    when it cannot be read (damaged, encrypted, not a PDF at all)."""
    try:
        return _read(data, name=name, limit=limit)
    except Exception as error:  # pypdf's errors, and any other: RecursionError, MemoryError…
        log.warning("cannot read the text of the PDF '%s' (%s: %r); it is found by its name "
                    "and description only", name, type(error).__name__, _said(error))
        return ""


def _read(data: bytes, *, name: str, limit: int) -> str:
    import pypdf  # here, not at the top: only indexing a PDF loads it

    # pypdf logs a line for each oddity it works around, thousands for a hostile file.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    deadline = time.monotonic() + SECONDS

    def in_time(*_: Any) -> None:  # before each operator pypdf reads, forms' too
        if time.monotonic() > deadline:
            raise _OutOfTime

    parts: list[str] = []
    size = failed = 0
    stopped = ""  # why the pages after those read were left out
    with pypdf.apply_configuration(**LIMITS):
        reader = pypdf.PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):  # most open without a password
            log.warning("the PDF '%s' is encrypted; it is found by its name and description "
                        "only", name)
            return ""
        count = len(reader.pages)
        try:
            for number in range(count):
                if number == MAX_PAGES:
                    stopped = f"a PDF is indexed up to {MAX_PAGES:,} pages"
                    break
                if size >= limit:
                    stopped = f"a file is indexed up to {limit:,} characters"
                    break
                in_time()
                try:
                    text = reader.pages[number].extract_text(visitor_operand_before=in_time)
                except Exception as error:  # a damaged page: the others are still worth finding
                    if not failed:
                        log.warning("cannot read page %d of the PDF '%s' (%s: %r)", number + 1,
                                    name, type(error).__name__, _said(error))
                    failed += 1
                    continue
                parts.append(text)
                size += len(text) + 1
        except _OutOfTime:
            stopped = f"reading its text took more than {SECONDS:g} s"
    if failed > 1:
        log.warning("%d pages of the PDF '%s' could not be read", failed, name)
    if stopped:
        log.warning("the text of the first %d of the %d pages of the PDF '%s' is indexed: %s",
                    len(parts) + failed, count, name, stopped)
    return _UNWANTED.sub(" ", "\n".join(parts)[:limit])


def _said(error: BaseException) -> str:
    """What an error says, for the log: its first 200 characters (logged with repr, so that
    a message made of the PDF's own bytes cannot forge a line)."""
    return str(error)[:200]
