"""docs/performance.md's tables are what the benchmarks print: tests/benchmarks/
refresh_performance.py puts each one's output between its markers and leaves the prose."""

from __future__ import annotations

from tests.benchmarks.refresh_performance import HERE, PAGE, regions, replaced, report_of

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
