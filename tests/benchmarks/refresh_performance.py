"""Write docs/performance.md's tables again from the benchmarks themselves.

Each table there that a benchmark prints stands between two markers:

    <!-- refresh: conversation_bench.py -->
    ...what the benchmark printed last time...
    <!-- /refresh -->

(the first marker may carry the benchmark's arguments: ``<!-- refresh: startup_bench.py --runs
5 -->``).  This script runs the benchmarks named (all of those with markers when none is),
one after the other, and puts what each printed for the page between its markers: the lines
after its ``Markdown (for docs/performance.md):`` line, or else everything from its first
``uv run`` line or table row on.  The prose around them is left as it is.  Run it on a quiet
machine; a benchmark that misses a target still has its table written (it says "MISSED"), and
the script then exits 1.

    uv run python tests/benchmarks/refresh_performance.py                # every marked one
    uv run python tests/benchmarks/refresh_performance.py events_bench.py
    uv run python tests/benchmarks/refresh_performance.py --list
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "performance.md"
HERE = Path(__file__).resolve().parent
REGION = re.compile(r"(<!-- refresh: (?P<command>[^>]*?) -->\n)(?P<body>.*?)(<!-- /refresh -->)",
                    re.DOTALL)
HEADING = "Markdown (for docs/performance.md):"


def report_of(output: str) -> str:
    """The part of a benchmark's output meant for the page."""
    lines = output.splitlines()
    if HEADING in (line.strip() for line in lines):
        start = [line.strip() for line in lines].index(HEADING) + 1
    else:
        start = next((i for i, line in enumerate(lines)
                      if line.startswith(("`uv run", "|"))), len(lines))
    return "\n".join(lines[start:]).strip("\n") + "\n"


def regions(text: str) -> dict[str, str]:
    """Benchmark file name -> its arguments, for every marked region of *text*."""
    found = {}
    for match in REGION.finditer(text):
        name, *args = shlex.split(match.group("command"))
        found[name] = shlex.join(args)
    return found


def replaced(text: str, name: str, report: str) -> str:
    """*text* with the region of benchmark *name* holding *report*."""
    def put(match: re.Match[str]) -> str:
        if shlex.split(match.group("command"))[0] != name:
            return match.group(0)
        return match.group(1) + "\n" + report + "\n" + match.group(4)

    return REGION.sub(put, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmarks", nargs="*", help="file names under tests/benchmarks/")
    parser.add_argument("--list", action="store_true", help="list the marked benchmarks")
    options = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    marked = regions(text)
    if options.list:
        for name, args in marked.items():
            print(f"{name} {args}".strip())
        return 0
    unknown = [name for name in options.benchmarks if name not in marked]
    if unknown:
        parser.error(f"no marked table in {PAGE.name} for: {', '.join(unknown)}")
    status = 0
    for name in options.benchmarks or list(marked):
        command = [sys.executable, str(HERE / name), *shlex.split(marked[name])]
        print(f"running {shlex.join(command[1:])} …", flush=True)
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode not in (0, 1):  # 1: a target missed, which the table says
            print(done.stdout + done.stderr, file=sys.stderr)
            print(f"{name} failed (exit {done.returncode}); its table is left as it was",
                  file=sys.stderr)
            status = 2
            continue
        status = max(status, done.returncode)
        text = replaced(text, name, report_of(done.stdout))
        PAGE.write_text(text, encoding="utf-8")  # after each: a later failure keeps this one
        print(f"  wrote its table ({'a target missed' if done.returncode else 'targets met'})")
    return status


if __name__ == "__main__":
    sys.exit(main())
