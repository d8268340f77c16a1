"""Standard input as the command line reads it: ``-`` for a file or a message, and a message
piped in with no text argument (as ``llm`` does: ``git diff | cairn ask --folder . ``).

Read as bytes, never more than a cap (``yes | cairn ask …`` must not fill the memory), and
decoded as UTF-8 with a sentence for text that is not.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from app.errors import Refused

STDIN = "-"  # the conventional name of standard input where a file or a text is expected

# A message is sent whole, with the chat's history, to a model whose context is at most a
# few million characters: more than this from a pipe is a mistake (``cat big.log``), said.
MAX_MESSAGE_BYTES = 4_000_000


def _binary() -> BinaryIO | None:
    stream = sys.stdin
    if stream is None:  # started with no standard input at all (pythonw, some services)
        return None
    return getattr(stream, "buffer", None)


def piped() -> bool:
    """True when standard input is a pipe or a file, not a person at a terminal."""
    stream = sys.stdin
    if stream is None:
        return False
    try:
        return not stream.isatty()
    except (ValueError, OSError):  # closed
        return False


def read(limit: int, *, what: str) -> bytes:
    """At most *limit* + 1 bytes of standard input (one more, so that the caller can tell a
    text that is too long); *what* names the text in a refusal ("the message")."""
    stream = _binary()
    if stream is None:
        raise Refused(f"cannot read {what} from standard input: there is none")
    try:
        return stream.read(limit + 1)
    except OSError as error:
        raise Refused(f"cannot read {what} from standard input: "
                      f"{error.strerror or type(error).__name__}") from None


def text(data: bytes, *, what: str) -> str:
    """*data* read from standard input, as text; a refusal names the first wrong byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Refused(f"cannot read {what} from standard input: it is not UTF-8 text (byte "
                      f"{error.start + 1:,} is not part of any character)") from None


def message() -> str:
    """The message of ``cairn ask``, from standard input."""
    data = read(MAX_MESSAGE_BYTES, what="the message")
    if len(data) > MAX_MESSAGE_BYTES:
        raise Refused("cannot send the message from standard input: it is over 4 MB "
                      f"({MAX_MESSAGE_BYTES:,} bytes), more than a model reads at once; "
                      "attach the file with --attach instead")
    return text(data, what="the message")
