"""Cairn's entry point: a subcommand runs the core's command line, anything else opens the window.

Qt is imported only on the window path, so ``cairn workspace list`` never pays for it.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from app import cli


def _wants_cli(argv: Sequence[str]) -> bool:
    """True when the first word that is not an option (or its value) is a core subcommand."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word == "--data-dir":
            skip = True
        elif word.startswith("--data-dir="):
            continue
        elif word in ("-h", "--help", "--version"):
            return True
        elif not word.startswith("-"):
            return word in cli.SUBCOMMANDS
    return False


def _looks_like_a_path(word: str) -> bool:
    """A word names a folder when it exists, or when it is written as a path."""
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    return (os.path.exists(word) or any(s in word for s in separators)
            or word in (".", "..") or word.startswith("~"))


def _window_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cairn", add_help=False)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--exit-after-first-paint", action="store_true")
    parser.add_argument("words", nargs="*")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _wants_cli(argv):
        return cli.main(argv)
    args = _window_parser().parse_args(argv)
    words = list(args.words)
    if words and words[0] == "open":
        words = words[1:]
    if len(words) > 1:
        sys.stderr.write("usage: cairn [open] [PATH]  (or: cairn COMMAND --help)\n")
        return 2
    if words and not _looks_like_a_path(words[0]):
        # `cairn wokspace`: a typo, not a folder to open.
        sys.stderr.write(f"cairn: '{words[0]}' is not a command, and there is no folder of that "
                         f"name here; the commands are {', '.join(cli.SUBCOMMANDS)} "
                         "(cairn --help)\n")
        return 2
    # `cairn PATH` / `cairn open PATH`: a path typed in a shell means "relative to here".
    open_path = os.path.abspath(os.path.expanduser(words[0])) if words else None
    from ui.app import run  # Qt loads only now

    return run(data_dir=args.data_dir, open_path=open_path,
               exit_after_first_paint=args.exit_after_first_paint)


if __name__ == "__main__":
    raise SystemExit(main())
