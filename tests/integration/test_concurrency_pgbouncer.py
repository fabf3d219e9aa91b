"""The concurrency tests again, every connection through a real PgBouncer in transaction
pooling mode (tests/pooler.py): two server connections shared by every writer, processes
included."""

from __future__ import annotations

import pytest
from sqlalchemy import URL

from tests.integration.test_concurrency import (  # collected here a second time
    test_32_writers_in_one_process_lose_nothing,
    test_64_writers_across_8_processes_all_succeed_and_lose_nothing,
    test_a_manager_never_fails_because_others_wrote,
    test_a_stale_save_never_overwrites_newer_data,
    test_concurrent_summaries_never_share_a_version,
    test_delete_racing_saves_leaves_all_or_nothing,
    test_snapshot_is_consistent_while_writers_append,
    test_two_state_updates_from_one_version_one_wins,
)
from tests.pooler import PgBouncer

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


@pytest.fixture
def database_url(database_url: URL, pgbouncer: PgBouncer) -> URL:
    """The test's fresh database, reached through the pooler."""
    return pgbouncer.url(database_url)
