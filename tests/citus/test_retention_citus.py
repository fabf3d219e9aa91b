"""Retention by kind of data on a distributed database (tests/integration/test_retention.py,
unchanged but for the app login, which needs the single server's role fixtures): the
periods live on the coordinator, the summaries and state history are thinned shard by
shard, the profiles (a reference table) on every node."""

from __future__ import annotations

from tests.integration.test_retention import (
    test_each_kind_goes_by_its_own_period_and_the_dry_run_counts_it,
    test_the_messages_period_purges_idle_sessions_whole,
    test_the_retention_command_and_the_dry_run_summary,
)

__all__ = [
    "test_each_kind_goes_by_its_own_period_and_the_dry_run_counts_it",
    "test_the_messages_period_purges_idle_sessions_whole",
    "test_the_retention_command_and_the_dry_run_summary",
]
