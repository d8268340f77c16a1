"""What every command prints: JSON with ``--json``, else text, with stored text shown so that
it cannot drive the terminal (escape sequences and bidi overrides come out escaped)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, TextIO

from app.base.paths import shown
from app.base.titles import one_line, visible
from app.errors import Refused

JsonFlag = Callable[[argparse.ArgumentParser], argparse.ArgumentParser]
Emit = Callable[[Any, Callable[[], str]], None]
Commands = argparse._SubParsersAction  # the group every command's parser is added to


class Out:
    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json

    def emit(self, data: Any, text: Callable[[], str]) -> None:
        if self.as_json:
            self.stream.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        else:
            body = text()
            if body:
                self.stream.write(body + "\n")


def text_of(value: str) -> str:
    """Text for a terminal: line breaks and tabs kept, every other control character (an
    escape sequence, a bidi override) shown escaped, so stored text cannot recolour or
    reorder the terminal."""
    return "\n".join("\t".join(shown(part) for part in line.split("\t"))
                     for line in value.replace("\r\n", "\n").split("\n"))


# Letters that draw nothing (Hangul fillers, the blank Braille pattern).
def check_title(title: str, refusal: str) -> None:
    if title.strip() and not visible(one_line(title)):  # as the store will keep it
        raise Refused(f"{refusal}: the title has only invisible characters")


def say(stderr: TextIO, sentence: str) -> None:
    """One line on stderr: the sentence verbatim, control characters shown escaped."""
    stderr.write(shown(sentence.rstrip("\n")) + "\n")
