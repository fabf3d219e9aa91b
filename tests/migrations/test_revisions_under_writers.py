"""Every checked revision goes up and down under eight writers, losing and failing nothing.

The checked revisions are those scripts/lint-migrations lints (checked_revisions.py: all
but the pre-release ones and the 1.0 baseline; none in the tree today, so the
parametrized test reports an empty set until the first lands).  Each one is applied up
and back down on a seeded database (tests/migrations/seed.py) while eight writers append
through ctxstore (tests/migrations/writers.py).

The harness itself is proven on example revisions in a copy of alembic/ on top of its
head: an additive one passes, one that holds its ACCESS EXCLUSIVE lock until a writer's
statement has been cancelled by the writers' statement_timeout is reported as failed
writes, and a step that deletes acknowledged rows is reported as lost writes.  None
depends on a timing window: the lock is held until PostgreSQL shows the cancellation, and
the rows are deleted after every writer has acknowledged writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import URL, text

from ctxstore.db.engine import EngineSettings, create_engine
from tests.migrations.checked_revisions import (
    checked_revisions,
    head_of,
    migrate,
    parent_of,
    revision_source,
    scripts_with,
)
from tests.migrations.seed import seed_messages, seed_states
from tests.migrations.writers import WRITERS, WritesReport, writes_during

SEEDED_MESSAGES = 20_000
SEEDED_STATES = 40


def seeded_at_parent_of(url: URL, revision: str, location: Path | None = None) -> str:
    """The empty database at ``revision``'s parent, seeded; the parent."""
    parent = parent_of(revision, location)
    assert parent is not None, f"{revision} creates the schema: it has no writers to stop"
    migrate(url, "upgrade", parent, location)
    seeded = seed_messages(url, SEEDED_MESSAGES)
    seed_states(url, seeded.session_ids[:SEEDED_STATES])
    return parent


def up_and_down(url: URL, revision: str, parent: str, location: Path | None) -> Callable[[], None]:
    def step() -> None:
        migrate(url, "upgrade", revision, location)
        migrate(url, "downgrade", parent, location)

    return step


def under_writers(
    url: URL,
    revision: str,
    location: Path | None = None,
    settings: EngineSettings | None = None,
) -> WritesReport:
    """``revision`` up and back down on a seeded database, under the writers."""
    parent = seeded_at_parent_of(url, revision, location)
    return writes_during(url, up_and_down(url, revision, parent, location), settings=settings)


@pytest.mark.parametrize("revision", checked_revisions())
def test_each_checked_revision_goes_up_and_down_under_eight_writers(
    empty_database_url: URL, revision: str
) -> None:
    report = under_writers(empty_database_url, revision)
    report.assert_no_failed_or_lost()


def test_every_checked_revision_upgrades_a_database_with_writers() -> None:
    """The set the test above runs on (printed: empty today): none of them creates the
    schema, so each has a parent to seed at."""
    checked = checked_revisions()
    print(f"checked revisions: {checked or 'none'}")
    assert all(parent_of(revision) is not None for revision in checked)


# -- the harness, on example revisions ---------------------------------------------------

# Up and down, its locks in the order an append takes them, sessions then messages: the
# other order deadlocks with an append that has updated its session and waits to insert
# its rows (this harness found it so).
ADDITIVE_UP = """
    op.execute(
        "CREATE TABLE example_notes (session_id text NOT NULL REFERENCES sessions "
        "ON DELETE CASCADE, note text NOT NULL, PRIMARY KEY (session_id))"
    )
    op.execute("ALTER TABLE messages ADD COLUMN example_note text")
"""
ADDITIVE_DOWN = """
    op.execute("DROP TABLE example_notes")
    op.execute("ALTER TABLE messages DROP COLUMN example_note")
"""

# Adding the column takes messages' ACCESS EXCLUSIVE lock; the revision then keeps it
# until a writer's statement it blocked has gone from pg_stat_activity while still
# blocked (pid and start time), which only a cancellation does: the writers'
# statement_timeout, far shorter than the migration's run, has fired.
HOLDING_UP = """
    op.execute("ALTER TABLE messages ADD COLUMN example_note text")
    held_until_a_blocked_statement_is_cancelled()
"""
HOLDING_DOWN = """
    op.execute("ALTER TABLE messages DROP COLUMN example_note")
"""
HOLDING_PREAMBLE = """
import time

from sqlalchemy import text

BLOCKED = text(
    "SELECT pid, query_start FROM pg_stat_activity "
    "WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
)


def held_until_a_blocked_statement_is_cancelled() -> None:
    bind = op.get_bind()
    seen = set()
    for _ in range(6000):  # a minute at most: a writer that never comes fails the test
        bind.execute(text("SELECT pg_stat_clear_snapshot()"))
        blocked = set(bind.execute(BLOCKED).all())
        if seen - blocked:
            return
        seen |= blocked
        time.sleep(0.01)
    raise RuntimeError("no statement this revision blocked was cancelled")
"""
#: The writers' bound on a statement: a lock held past it fails their writes.
SHORT_STATEMENTS = EngineSettings(statement_timeout_ms=300, lock_timeout_ms=10_000)


def example_scripts(tmp_path: Path, up: str, down: str, preamble: str = "") -> Path:
    """A copy of alembic/ with revision "example" on top of its head."""
    source = revision_source("example", head_of(), up, down, preamble)
    return scripts_with(tmp_path, {"example": source})


def test_an_additive_revision_passes_with_every_write_read_back(
    empty_database_url: URL, tmp_path: Path
) -> None:
    location = example_scripts(tmp_path, ADDITIVE_UP, ADDITIVE_DOWN)

    report = under_writers(empty_database_url, "example", location)

    report.assert_no_failed_or_lost()
    assert len(report.writers) == WRITERS
    assert {log.sealed for log in report.writers} == {True, False}
    assert all(log.acknowledged and log.stored == log.acknowledged for log in report.writers)
    assert report.stored_messages() == report.acknowledged_messages() > 0


def test_writes_failed_behind_a_lock_held_past_their_statement_timeout_are_reported(
    empty_database_url: URL, tmp_path: Path
) -> None:
    location = example_scripts(tmp_path, HOLDING_UP, HOLDING_DOWN, HOLDING_PREAMBLE)

    report = under_writers(empty_database_url, "example", location, SHORT_STATEMENTS)

    assert report.failed
    assert all("StorageTimeoutError" in failure for failure in report.failed)
    assert report.lost == [] and report.unacknowledged == []  # rolled back, as they said
    with pytest.raises(AssertionError, match="failed writes"):
        report.assert_no_failed_or_lost()


async def _execute(url: URL, sql: str) -> None:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
            await conn.commit()
    finally:
        await engine.dispose()


def test_acknowledged_writes_a_step_deletes_are_reported_lost(empty_database_url: URL) -> None:
    """Writer 0's first session (all its writes so far acknowledged) deleted mid-run."""
    url = empty_database_url
    migrate(url, "upgrade", head_of())

    def lose() -> None:
        asyncio.run(_execute(url, "DELETE FROM sessions WHERE session_id = 'lose-w0-s0'"))

    report = writes_during(url, lose, prefix="lose")

    first = report.writers[0].acknowledged["lose-w0-s0"][0]
    assert first in report.lost
    with pytest.raises(AssertionError, match="acknowledged messages lost"):
        report.assert_no_failed_or_lost()
