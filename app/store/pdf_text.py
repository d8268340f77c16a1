"""A PDF's text for the search index, read with pypdf (pure Python, imported only when a PDF
is indexed: starting Cairn never loads it).

A PDF is hostile input: one added from anywhere may be damaged, encrypted, or made to hurt its
reader (a decompression bomb, a million pages, objects nested thousands deep).  The read is
bounded in pages, characters, bytes decoded and time, and whatever goes wrong gives '' (the
file is then found by its name and description only) and a line in the log, never an
exception.  A job that reads many PDFs (an import, a reindex, the pass after the migration)
shares one :class:`Budget`: all its PDFs together take at most ``JOB_SECONDS``, so a bundle
of a hundred hostile PDFs costs a minute, not a hundred times ten seconds.

Each read runs on a thread of its own (:func:`_on_own_thread`), so that a PDF nested past
Python's recursion limit reads the same wherever it is indexed from.
"""

from __future__ import annotations

import io
import logging
import re
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

MAX_PAGES = 2_000  # a longer PDF is indexed by its first 2,000 pages
SECONDS = 10.0  # reading one PDF's text stops after this, keeping what it read
JOB_SECONDS = 60.0  # reading the text of all the PDFs of one job stops after this
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


class Budget:
    """The time the PDFs of one job may take together: each read stops at its own bound or
    at the job's end, whichever comes first; once it is spent, the job's other PDFs are
    indexed by name and description only (counted in ``left_out``, said in the log by
    :meth:`report`)."""

    def __init__(self, seconds: float | None = None) -> None:
        self.seconds = JOB_SECONDS if seconds is None else seconds
        self.ends = _now() + self.seconds
        self.left_out = 0

    def spent(self) -> bool:
        return _now() >= self.ends

    def report(self, job: str) -> None:
        if self.left_out:
            log.warning("%s: %d PDF%s indexed by name and description only, because reading "
                        "the PDFs' text took more than %g s in all", job, self.left_out,
                        "s are" if self.left_out != 1 else " is", self.seconds)


def pdf_text(data: bytes, *, name: str, limit: int, budget: Budget | None = None) -> str:
    """The text of the PDF *data* (the file *name*, for the log), at most *limit* characters:
    its pages' text in order, with control characters but tab and newline made spaces; ''
    when it cannot be read (damaged, encrypted, not a PDF at all), or when the job's
    *budget* is spent."""
    if budget is not None and budget.spent():
        budget.left_out += 1
        return ""
    try:
        return _on_own_thread(data, name=name, limit=limit, budget=budget)
    except Exception as error:  # pypdf's errors, and any other: RecursionError, MemoryError…
        log.warning("cannot read the text of the PDF '%s' (%s: %r); it is found by its name "
                    "and description only", name, type(error).__name__, _said(error))
        return ""


def _on_own_thread(data: bytes, *, name: str, limit: int, budget: Budget | None) -> str:
    """:func:`_read` on a new thread, waited for: its result, or its error raised here.

    pypdf turns a RecursionError (objects nested thousands deep) into a damaged part and
    carries on from wherever its parser stopped, and where that is depends on how deep the
    stack already was: the same file then gave a page's text or a warning depending on the
    caller (the storage thread, an import, a test under pytest-xdist).  A new thread starts at
    the same depth every time, so a PDF's text depends only on its bytes (and pypdf's and
    Python's versions, and the recursion limit, which Cairn never changes)."""
    result: list[str] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(_read(data, name=name, limit=limit, budget=budget))
        except BaseException as error:  # handed to the caller, which logs it
            failure.append(error)

    reader = threading.Thread(target=run, name="cairn-pdf-text", daemon=True)
    reader.start()
    reader.join()
    if failure:
        raise failure[0]
    return result[0]


def _now() -> float:
    return time.monotonic()


def _read(data: bytes, *, name: str, limit: int, budget: Budget | None) -> str:
    import pypdf  # here, not at the top: only indexing a PDF loads it

    # pypdf logs a line for each oddity it works around, thousands for a hostile file.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    deadline = _now() + SECONDS
    seconds = SECONDS
    if budget is not None and budget.ends < deadline:
        deadline, seconds = budget.ends, max(0.0, budget.ends - _now())

    def in_time(*_: Any) -> None:  # before each operator pypdf reads, forms' too
        if _now() > deadline:
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
            stopped = (f"reading its text took more than {seconds:g} s" if seconds == SECONDS
                       else "the job's time for PDFs ran out")
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
