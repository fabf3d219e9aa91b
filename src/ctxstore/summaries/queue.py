"""The summary jobs table (revision 0023): enqueue, claim with a lease, finish or fail.

A claim is a compare-and-set on the job's row: ``UPDATE ... WHERE`` the job is queued and
due, or its lease ran out.  Two workers claiming the same job both try it; the row lock
makes the second wait for the first's commit, re-check the condition and find nothing to
update, so exactly one holds the lease.  Each claim names its row by ``session_id``, so
on Citus it is a single-shard statement (``SELECT ... FOR UPDATE SKIP LOCKED`` over all
jobs would span every shard).  While a summarizer runs, the worker renews the lease; a
worker that dies lets it run out and another claims the job again.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from ctxstore.storage.postgres import PostgresStorage, sql


@dataclass(frozen=True)
class Lease:
    """A job one worker holds: summarize the session through ``until``."""

    session_id: str
    until: int
    attempts: int
    token: uuid.UUID
    #: Seconds from the job's enqueue to this claim.
    waited: float
    claimed_at: float = field(default_factory=time.monotonic)

    @property
    def lag(self) -> float:
        """Seconds from the job's enqueue to now."""
        return self.waited + time.monotonic() - self.claimed_at


@dataclass(frozen=True)
class QueueCounts:
    queued: int
    running: int
    dead: int
    #: Seconds the oldest job still to run has waited (0: none).
    oldest: float


class SummaryQueue:
    """The summary jobs of one PostgreSQL database.

    ``wake`` is set whenever this process enqueues a job, so a runner in the same
    process starts at once instead of at its next poll.
    """

    def __init__(self, storage: PostgresStorage) -> None:
        self.storage = storage
        #: The database, as telemetry names it (``host:port/database``).
        self.pool_name = storage.pool_name
        self.wake = asyncio.Event()
        #: The last counts read (what telemetry's gauges report).
        self.last_counts = QueueCounts(0, 0, 0, 0.0)

    async def enqueue(self, session_id: str, until: int) -> None:
        """Ask for the session's summary through position ``until`` (once: a job already
        waiting only reaches further)."""
        async with self.storage.maintenance("enqueue a summary job") as driver:
            await sql.ENQUEUE_SUMMARY_JOB.execute(driver, sid=session_id, until_seq=until)
        self.wake.set()

    async def claim(self, lease_seconds: float, candidates: int = 8) -> Lease | None:
        """Lease one due job, or None when none is due."""
        token = uuid.uuid4()
        async with self.storage.maintenance("claim a summary job") as driver:
            due = [
                row["session_id"]
                for row in await sql.DUE_SUMMARY_JOBS.fetch(driver, limit=candidates)
            ]
            random.shuffle(due)  # workers polling together try different jobs first
            for session_id in due:
                row = await sql.CLAIM_SUMMARY_JOB.fetchrow(
                    driver, sid=session_id, token=token, lease_seconds=lease_seconds
                )
                if row is not None:
                    # The database's clock on both sides (Citus allows no now() in RETURNING):
                    # the lease ends lease_seconds after the claim.
                    claimed = row["lease_until"] - timedelta(seconds=lease_seconds)
                    waited = (claimed - row["enqueued_at"]).total_seconds()
                    return Lease(
                        row["session_id"], row["until_seq"], row["attempts"], token, waited
                    )
        return None

    async def renew(self, lease: Lease, lease_seconds: float) -> bool:
        """Keep the lease; False when it was lost (it ran out and another worker has it)."""
        async with self.storage.maintenance("renew a summary lease") as driver:
            row = await sql.RENEW_SUMMARY_LEASE.fetchrow(
                driver, sid=lease.session_id, token=lease.token, lease_seconds=lease_seconds
            )
        return row is not None

    async def finish(self, lease: Lease, done_until: int) -> None:
        """The summary is stored through ``done_until``: the job goes, or is queued again
        when a trigger since asked for more."""
        async with self.storage.maintenance("finish a summary job") as driver:
            await sql.FINISH_SUMMARY_JOB.execute(
                driver, sid=lease.session_id, token=lease.token, done_until=done_until
            )

    async def fail(
        self, lease: Lease, error: BaseException, backoff: float, max_attempts: int
    ) -> str | None:
        """Record a failed attempt: ``queued`` again after ``backoff`` seconds, or ``dead``
        once ``max_attempts`` are used (None: the lease was lost meanwhile)."""
        async with self.storage.maintenance("fail a summary job") as driver:
            row = await sql.FAIL_SUMMARY_JOB.fetchrow(
                driver,
                sid=lease.session_id,
                token=lease.token,
                backoff_seconds=backoff,
                max_attempts=max_attempts,
                error=type(error).__name__,  # the class only: a message can quote the text
            )
        return None if row is None else str(row["state"])

    async def counts(self) -> QueueCounts:
        async with self.storage.maintenance("count summary jobs") as driver:
            row = await sql.SUMMARY_JOB_COUNTS.fetchrow(driver)
        self.last_counts = QueueCounts(
            int(row["queued"]), int(row["running"]), int(row["dead"]), float(row["oldest"])
        )
        return self.last_counts

    async def requeue_dead(self) -> int:
        """Give every dead job its attempts back; how many."""
        async with self.storage.maintenance("requeue dead summary jobs") as driver:
            status = await sql.REQUEUE_DEAD_SUMMARY_JOBS.execute(driver)
        return int(status.split()[-1])
