"""Which tests are ``slow``: left out of the quick loop ``uv run pytest -m "not slow"``; CI and
a plain ``uv run pytest`` run everything.  tests/conftest.py marks them from this module.

Slow: every test marked ``process`` (it starts, kills or times other processes: tests/process/
and the window's start-up under load), every test that opens the whole window (a fixture named
``opened``, tests/ui/) or builds a database at scale, and the tests named below, each of which
took more than about three seconds on two cores (measured with ``--durations``).  One list, so
that marking them touches no test module; tests/core/test_slow_marks.py checks that each name
still names a test.
"""

from __future__ import annotations

SLOW_FIXTURES = ("opened", "offline_window", "scale", "ops_for_scale")
SLOW_TESTS = {
    # thousands of versions, interleavings or generated cases
    "tests/core/store/test_knowledge_history.py":
        ("test_a_thousand_versions_of_a_30_kb_document_all_read_back_byte_for_byte",),
    "tests/core/test_events.py": ("test_a_mirror_of_the_events_stays_equal_to_a_fresh_listing",),
    "tests/core/knowledge/test_editing.py":
        ("test_a_thousand_interleavings_of_hand_saves_and_rebuilds_lose_nothing",),
    "tests/core/knowledge/test_cairn_file.py":
        ("test_outside_edits_hand_saves_and_rebuilds_interleaved_lose_nothing",),
    "tests/core/knowledge/test_safety.py": (
        "test_an_op_that_applies_never_removes_a_word_the_evidence_does_not_replace",
        "test_the_property_is_not_vacuous",
        "test_nothing_refused_is_lost_from_the_suggestions",
        "test_refusals_are_kept_over_fixed_seeds",
    ),
    "tests/core/knowledge/test_ops.py": ("test_adversarial_ops_never_lose_an_entry_or_a_hard_token",
                                         "test_faithful_updates_merges_and_adds_apply"),
    "tests/core/knowledge/test_truth.py":
        ("test_outside_the_named_entries_the_blocks_stay_byte_identical",),
    "tests/core/knowledge/test_merge.py": ("test_one_sided_merges_give_that_side_back_byte_for_byte",),
    "tests/core/knowledge/test_rebuild.py":
        ("test_pending_counts_from_the_watermark_equal_the_whole_chat_computation",),
    # other processes, or waits for a deadline to pass
    "tests/core/cli/test_cli_hostile.py": ("test_endless_and_blocking_files_are_refused_at_once",),
    "tests/core/base/test_logs.py": ("test_anthropic_log_debug_writes_no_body_into_cairn_log",),
    "tests/core/cli/test_mcp.py": ("test_ask_declines_without_a_terminal_and_allow_tool_allows_one",
                                   "test_tools_starts_it_and_lists_them"),
    "tests/core/tools/test_mcp_turn.py": ("test_a_huge_answer_is_cut_at_the_turns_bound",
                                    "test_a_slow_call_is_one_sentence_as_the_result"),
    "tests/core/llm/test_misbehaving_server.py": ("test_a_server_that_never_answers",
                                              "test_a_server_that_takes_no_connection"),
}
