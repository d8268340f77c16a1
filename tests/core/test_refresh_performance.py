"""docs/performance.md's tables are what the benchmarks print: tests/benchmarks/
refresh_performance.py puts each one's output between its markers and leaves the prose."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.benchmarks.refresh_performance import (
    HEADING,
    HERE,
    PAGE,
    REGION,
    regions,
    replaced,
    report_of,
)

OUTPUT = """building 50,000 chats…
measure            result
add_workspace      0.675 ms

Markdown (for docs/performance.md):

`uv run python tests/benchmarks/registry_bench.py` — 1,000 workspaces.
Measured on Linux.

| measure | result |
| --- | ---: |
| add_workspace | 0.675 ms |
"""


def test_every_marked_table_names_a_benchmark_that_is_there():
    marked = regions(PAGE.read_text(encoding="utf-8"))
    assert {"registry_bench.py", "events_bench.py", "stall_bench.py"} <= set(marked)
    assert [name for name in marked if not (HERE / name).is_file()] == []


def test_the_report_is_what_follows_the_heading_or_the_first_table_row():
    assert report_of(OUTPUT).startswith("`uv run python tests/benchmarks/registry_bench.py`")
    assert report_of(OUTPUT).endswith("| add_workspace | 0.675 ms |\n")
    assert report_of("progress…\n| a | b |\n| --- | --- |\n") == "| a | b |\n| --- | --- |\n"


def test_only_the_named_region_changes():
    page = ("Prose before.\n\n<!-- refresh: a_bench.py --runs 5 -->\n\nold a\n\n<!-- /refresh -->\n"
            "Prose between.\n<!-- refresh: b_bench.py -->\nold b\n<!-- /refresh -->\nAfter.\n")
    assert regions(page) == {"a_bench.py": "--runs 5", "b_bench.py": ""}
    new = replaced(page, "a_bench.py", "| new |\n")
    assert new == page.replace("\nold a\n", "\n| new |\n")
    assert replaced(new, "a_bench.py", "| new |\n") == new  # refreshing twice: the same page


def page_regions() -> dict[str, str]:
    """Benchmark file name -> the table between its markers on the page today."""
    text = PAGE.read_text(encoding="utf-8")
    return {shlex.split(match.group("command"))[0]: match.group("body")
            for match in REGION.finditer(text)}


def header(table: str) -> str:
    """The first row of the first markdown table in *table*."""
    return next(line for line in table.splitlines() if line.startswith("|"))


def test_every_table_on_the_page_is_between_a_benchmarks_markers():
    text = PAGE.read_text(encoding="utf-8")
    outside = REGION.sub("", text)
    rows = [line for line in outside.splitlines() if line.startswith("| --- ")]
    # The one table no benchmark prints: what `python -X importtime` showed, read by hand.
    assert len(rows) == 1 and "| modules | cost |" in outside
    assert set(page_regions()) >= {
        "registry_bench.py", "conversation_bench.py", "messages_bench.py", "events_bench.py",
        "stall_bench.py", "chat_view_bench.py", "startup_bench.py", "read_bench.py",
        "search_bench.py", "mcp_call_bench.py", "mcp_startup_bench.py", "mcp_huge_bench.py",
        "history_import_bench.py", "knowledge_sim.py", "knowledge_rough_sim.py"}


@pytest.mark.parametrize("name", sorted(page_regions()))
def test_each_marked_benchmark_prints_markdown_for_the_page(name):
    source = (HERE / name).read_text(encoding="utf-8")
    assert HEADING in source  # what follows it is the table, and nothing else of the run
    assert "| --- " in page_regions()[name]
    page_header = header(page_regions()[name])
    # Its columns are the page's: its table() makes that header row, or its source prints it
    # (string literals joined across lines as Python joins them).
    if name in TABLES:
        module = importlib.import_module(f"tests.benchmarks.{name.removesuffix('.py')}")
        assert header(TABLES[name](module)) == page_header
    else:
        assert page_header in re.sub(r'"\s*\n\s*"', "", source)


TABLES: dict[str, Callable[[Any], str]] = {
    "read_bench.py": lambda m: m.table(
        {"memory idle": [0.005] * 100, "memory writing": [0.006] * 100,
         "page idle": [0.4] * 100, "page writing": [0.5] * 100}, 1_067),
    "mcp_call_bench.py": lambda m: m.table(200, 2.21, 1.79),
    "startup_bench.py": lambda m: m.table(
        0.1, 0.116, {50_000: 0.119, 250_000: 0.12}, {50_000: 0.264, 250_000: 0.29},
        {50_000: 0.365, 250_000: 0.389}, {50_000: 0.272, 250_000: 0.302},
        {(50_000, False): "137", (250_000, False): "240", (50_000, True): "190",
         (250_000, True): "289"}, (100.0, 18.0, 31.0)),
    "history_import_bench.py": lambda m: m.table(
        556_000_000, 94_000_000, {"seconds": 119.9, "peak_mb": 58.0}, {"seconds": 96.0},
        {"typical word": (5.2, 13.7, 60, 1.0, 2.0), "two typical words": (10.7, 38.4, 60, 1, 2),
         "rare word": (3.2, 6.6, 60, 1.0, 2.0), "prefix as typed": (4.9, 18.7, 60, 1, 2)}),
}


def test_the_tables_made_from_figures_read_as_the_page_does():
    """Given the page's own figures, the benchmarks' tables are the page's rows."""
    regions_now = page_regions()
    for name, make in TABLES.items():
        made = make(importlib.import_module(f"tests.benchmarks.{name.removesuffix('.py')}"))
        page_rows = [line for line in regions_now[name].splitlines() if line.startswith("|")]
        made_rows = [line for line in made.splitlines() if line.startswith("|")]
        assert made_rows[:2] == page_rows[:2], name
        assert [row.split(" | ")[0] for row in made_rows] \
            == [row.split(" | ")[0] for row in page_rows], name  # the same measures, in order
        assert [row.endswith("| |") for row in made_rows] \
            == [row.endswith("| |") for row in page_rows], name  # the same cells left empty


def test_a_cheap_benchmark_refreshed_gives_a_table_with_the_pages_columns():
    """knowledge_rough_sim.py at 20 exchanges a model: a second or two."""
    done = subprocess.run([sys.executable, str(HERE / "knowledge_rough_sim.py"), "20",
                           "--model", "all"], capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    report = report_of(done.stdout)
    page = page_regions()["knowledge_rough_sim.py"]
    def headers(text: str) -> list[str]:
        return [header(part) for part in text.split("\n\n") if part.strip().startswith("|")]

    assert len(headers(page)) == 2 and headers(report) == headers(page)
    assert "The adversarial run in detail:" in report and "## careful model" not in report
    assert "| careful |" in report and "| adversarial |" in report
