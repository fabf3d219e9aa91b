"""The tests of tests/citus run on a throwaway Citus cluster (tests/citus/cluster.py).

One coordinator and two workers for the whole run; one database on it, migrated with
``ctxstore db upgrade`` and distributed with ``ctxstore db distribute``.  The fixtures the
shared suites take (``database_url``, ``module_database_url``) are overridden here: they
yield that database, emptied before each test, so the conformance suite, the concurrency
tests and the hostile-input catalogue run unchanged against the cluster.

They run once per CI run, in its PostgreSQL step: ``CTXSTORE_CITUS_TESTS=0`` (set by .ci/run
for the embedded-server runs) leaves them out, and so does a machine without Citus; either
way the run ends with one line saying how many were left out and why.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import URL

from tests.citus.cluster import CitusCluster, unavailable_reason
from tests.conftest import add_summary_line

SWITCH_ENV = "CTXSTORE_CITUS_TESTS"
REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def _why_not_run() -> str | None:
    if os.environ.get(SWITCH_ENV) == "0":
        return f"{SWITCH_ENV}=0 (.ci/run runs them once, in its PostgreSQL step)"
    reason = unavailable_reason()
    return f"{reason} (they are optional; docs/testing.md)" if reason else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    citus = [item for item in items if HERE in Path(str(item.fspath)).parents]
    for item in citus:
        item.add_marker(pytest.mark.citus)
    reason = _why_not_run() if citus else None
    if reason is not None:  # one line in the summary, not one SKIPPED line per test
        config.hook.pytest_deselected(items=citus)
        left_out = set(citus)
        items[:] = [item for item in items if item not in left_out]
        add_summary_line(config, f"{len(citus)} Citus tests not run: {reason}")


def ctxstore(*args: str, env: dict[str, str] | None = None) -> str:
    """Run the ctxstore command as a user would; its output (fails the test on an error)."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def query(url: URL, sql: str, *args: object) -> list[asyncpg.Record]:
    """Rows of one statement on the coordinator, over a connection of its own."""
    connection = await asyncpg.connect(
        host=url.host, port=url.port, user=url.username, database=url.database
    )
    try:
        return list(await connection.fetch(sql, *args))
    finally:
        await connection.close()


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    reason = _why_not_run()  # their items were left out at collection; this is a fixture's
    if reason is not None:  # use from elsewhere
        pytest.skip(f"no Citus cluster for the tests: {reason}")
    cluster = CitusCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def new_distributed_database(cluster: CitusCluster) -> URL:
    """A database on every node, migrated and distributed through the CLI."""
    name = f"ctxstore_citus_{uuid.uuid4().hex[:8]}"
    url = asyncio.run(cluster.create_database(name))
    plain = url.render_as_string(hide_password=False)
    ctxstore("db", "upgrade", "--database-url", plain)
    ctxstore("db", "distribute", "--database-url", plain)
    return url


@pytest.fixture(scope="session")
def citus_database_url(citus_cluster: CitusCluster) -> URL:
    return new_distributed_database(citus_cluster)


# Everything a test may write; data_keys last (every sealed table references it).
_TABLES = (
    "sessions, messages, summaries, consultation_states, consultation_state_history, "
    "user_profiles, summary_jobs, graph_writes, graph_channel_values, graph_checkpoints, "
    "data_keys, analytics_months, analytics_month_kinds, analytics_month_cells, legal_holds, "
    "ctxstore_retention_periods, contract_chains, contract_pieces, contract_entries, "
    "contract_responses"
)


async def empty(url: URL) -> None:
    await query(url, f"TRUNCATE {_TABLES}")


@pytest.fixture
def database_url(citus_database_url: URL) -> URL:
    """The distributed database, empty (the shared suites' fresh database per test)."""
    asyncio.run(empty(citus_database_url))
    return citus_database_url


@pytest.fixture(scope="module")
def module_database_url(citus_database_url: URL) -> URL:
    """The distributed database, for a module whose tests keep to their own ids."""
    asyncio.run(empty(citus_database_url))
    return citus_database_url
