"""Cairn's entry point: a subcommand runs the core's command line, anything else opens the window.

Qt is imported only on the window path, so ``cairn workspace list`` never pays for it, and
the command line only on its own, so the window's first paint never pays for that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from app.commands import SUBCOMMANDS

WINDOW_USAGE = """usage: cairn [open] [PATH] [--data-dir DATA_DIR] [--exit-after-first-paint]

Opens Cairn's window (one per data folder). With PATH (relative to the current folder), the
folder is added as a workspace and selected, or handed to the window already running on this
data folder. --exit-after-first-paint quits once the window has painted (for timing
start-up). The commands that work without a window: cairn --help.
"""


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
            return word in SUBCOMMANDS
    return False


def _looks_like_a_path(word: str) -> bool:
    """A word names a folder when it exists, or when it is written as a path."""
    separators = [os.sep] + ([os.altsep] if os.altsep else [])
    return (os.path.exists(word) or any(s in word for s in separators)
            or word in (".", "..") or word.startswith("~"))


def _is_link(word: str) -> bool:
    from app.base.cairn_link import is_link

    return is_link(word)


def _link_or_file_url(word: str) -> str | None:
    """What the desktop hands over for ``%u``: a ``cairn://`` link (checked: its one
    normal spelling, or "cairn: <the refusal>"), a ``file://`` URL (its local path), or None
    for anything else (a path, as typed)."""
    from app.base.cairn_link import is_link, parse
    from app.errors import Refused

    if is_link(word):
        try:
            return str(parse(word))
        except Refused as refused:
            from app.base.paths import shown

            return f"cairn: {shown(str(refused))}"
    if word[:7].lower() == "file://":
        from urllib.parse import unquote, urlsplit
        from urllib.request import url2pathname

        parts = urlsplit(word)
        if parts.netloc in ("", "localhost") and not parts.query and not parts.fragment:
            return url2pathname(unquote(parts.path))
    return None


def _window_args(argv: Sequence[str]) -> tuple[Path | None, bool, list[str]] | str:
    """The window's few arguments, read by hand: argparse is the command line's, and the
    window's first paint should not wait for it.  (data folder, exit after first paint,
    words), or the usage sentence."""
    data_dir: Path | None = None
    exit_after_first_paint = False
    words: list[str] = []
    items = iter(argv)
    for word in items:
        if word == "--data-dir":
            value = next(items, None)
            if value is None:
                return "cairn: --data-dir needs a folder"
            data_dir = Path(value)
        elif word.startswith("--data-dir="):
            data_dir = Path(word.split("=", 1)[1])
        elif word == "--exit-after-first-paint":
            exit_after_first_paint = True
        elif word == "--":
            words.extend(items)
        elif word.startswith("-") and len(word) > 1:
            return f"cairn: unknown option {word} (cairn --help)"
        else:
            words.append(word)
    return data_dir, exit_after_first_paint, words


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if _wants_cli(argv):
        from app import (
            cli,  # the command line loads only now (the window never needs it)
        )

        return cli.main(argv)
    if "-h" in argv or "--help" in argv:  # `cairn open --help`, `cairn PATH --help`
        sys.stdout.write(WINDOW_USAGE)
        return 0
    parsed = _window_args(argv)
    if isinstance(parsed, str):
        sys.stderr.write(parsed + "\n")
        return 2
    data_dir, exit_after_first_paint, words = parsed
    if words and words[0] == "open":
        words = words[1:]
    target = _link_or_file_url(words[0]) if len(words) == 1 else None
    if isinstance(target, str) and target.startswith("cairn: "):
        sys.stderr.write(target + "\n")  # a cairn:// link outside the grammar: refused
        return 2
    if target is not None:
        words = [target]
    if words and not _looks_like_a_path(words[0]) and target is None:
        # `cairn wokspace`, `cairn worksapce list`: a typo, not a folder to open.
        import difflib

        close = difflib.get_close_matches(words[0], SUBCOMMANDS, n=1, cutoff=0.6)
        hint = (f"did you mean '{close[0]}'?" if close else
                f"the commands are {', '.join(SUBCOMMANDS)}")
        sys.stderr.write(f"cairn: '{words[0]}' is not a command, and there is no folder of that "
                         f"name here; {hint} (cairn --help)\n")
        return 2
    if len(words) > 1:
        sys.stderr.write("usage: cairn [open] [PATH]  (or: cairn COMMAND --help)\n")
        return 2
    # `cairn PATH` / `cairn open PATH`: a path typed in a shell means "relative to here".
    # (a cairn:// link goes to the window as it is, checked again there)
    open_path = (words[0] if words and _is_link(words[0]) else
                 os.path.abspath(os.path.expanduser(words[0])) if words else None)
    import gc

    gc.disable()  # start-up's imports collected nothing: held until the filled paint (ui.app)
    from ui.app import exit_now, run  # Qt loads only now

    exit_now(run(data_dir=data_dir, open_path=open_path,
                 exit_after_first_paint=exit_after_first_paint))


if __name__ == "__main__":
    raise SystemExit(main())
