"""Helpers shared by tests of every level: running the command line in-process."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app import cli


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``cairn ARGV…`` in this process: its exit code, stdout and stderr."""
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """``cairn ARGV… --json``, which must succeed: its parsed output."""
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)
