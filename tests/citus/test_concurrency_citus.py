"""The concurrency tests (tests/integration/test_concurrency.py, unchanged) on the cluster:
the fixtures of tests/citus/conftest.py give them the distributed database."""

from __future__ import annotations

from tests.integration.test_concurrency import (
    test_32_writers_in_one_process_lose_nothing,
    test_64_writers_across_8_processes_all_succeed_and_lose_nothing,
    test_a_manager_never_fails_because_others_wrote,
    test_a_stale_save_never_overwrites_newer_data,
    test_concurrent_summaries_never_share_a_version,
    test_delete_racing_saves_leaves_all_or_nothing,
    test_snapshot_is_consistent_while_writers_append,
    test_two_state_updates_from_one_version_one_wins,
)

__all__ = [
    "test_32_writers_in_one_process_lose_nothing",
    "test_64_writers_across_8_processes_all_succeed_and_lose_nothing",
    "test_a_manager_never_fails_because_others_wrote",
    "test_a_stale_save_never_overwrites_newer_data",
    "test_concurrent_summaries_never_share_a_version",
    "test_delete_racing_saves_leaves_all_or_nothing",
    "test_snapshot_is_consistent_while_writers_append",
    "test_two_state_updates_from_one_version_one_wins",
]
