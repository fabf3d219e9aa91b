"""The summarize worker: claims summary jobs and runs your summarizer, once per job.

``ctxstore summarize-worker`` runs it as a process of its own; a one-process service runs
it beside its requests (``async with SummaryWorker(...).running(): ...``).  Any number of
workers, in any number of processes, share one queue: a job is leased to one of them at a
time (ctxstore/summaries/queue.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from ctxstore import telemetry
from ctxstore.context.compression import Summarizer, summarize_span
from ctxstore.errors import ConflictError, CtxStoreError, InvalidInputError
from ctxstore.summaries.queue import Lease, SummaryQueue

log = logging.getLogger("ctxstore.summaries")
#: Seconds between two reads of the queue's counts (telemetry's gauges).
COUNT_EVERY = 5.0


@dataclass(frozen=True)
class Backoff:
    """The wait before a failed job is tried again: ``base`` doubling per attempt, at most
    ``cap``, each wait drawn from its upper half so failing workers don't retry in step."""

    base: float = 2.0
    cap: float = 300.0

    def delay(self, attempt: int) -> float:
        ceiling = min(self.cap, self.base * 2 ** max(0, attempt - 1))
        return random.uniform(ceiling / 2, ceiling)


@dataclass
class WorkerStats:
    """What a worker did since it started."""

    #: Summaries stored (one LLM call each).
    summarized: int = 0
    #: Jobs ended with no call: the session was gone or already summarized that far.
    superseded: int = 0
    #: Attempts that failed and were queued again.
    retried: int = 0
    #: Jobs that used up their attempts.
    dead: int = 0
    lags: list[float] = field(default_factory=list)


class SummaryWorker:
    """Runs ``summarizer`` for the jobs of ``queue``, ``concurrency`` at a time."""

    def __init__(
        self,
        queue: SummaryQueue,
        summarizer: Summarizer,
        *,
        concurrency: int = 1,
        lease_seconds: float = 60.0,
        max_attempts: int = 5,
        backoff: Backoff | None = None,
        poll_seconds: float = 1.0,
    ) -> None:
        if concurrency < 1 or max_attempts < 1 or lease_seconds <= 0 or poll_seconds <= 0:
            raise InvalidInputError(
                "concurrency and max_attempts must be >= 1, lease and poll times > 0"
            )
        self.queue = queue
        self.summarizer = summarizer
        self.concurrency = concurrency
        self.lease_seconds = lease_seconds
        self.max_attempts = max_attempts
        self.backoff = backoff or Backoff()
        self.poll_seconds = poll_seconds
        self.stats = WorkerStats()
        self._counted_at = -COUNT_EVERY
        telemetry.watch_summary_queue(queue)

    async def run_once(self) -> bool:
        """Claim one due job and run it; False when none was due."""
        lease = await self.queue.claim(self.lease_seconds)
        if lease is None:
            return False
        await self._work(lease)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and run jobs until ``stop`` is set; then claim nothing more and let the
        jobs in flight finish (SIGTERM in ``ctxstore summarize-worker``)."""
        slots = asyncio.Semaphore(self.concurrency)
        in_flight: set[asyncio.Task[None]] = set()
        try:
            while not stop.is_set():
                await slots.acquire()
                lease = await self._claim(stop)
                if lease is None:
                    slots.release()
                    continue
                task = asyncio.create_task(self._work(lease))
                in_flight.add(task)
                task.add_done_callback(in_flight.discard)
                task.add_done_callback(lambda _: slots.release())
        finally:
            if in_flight:
                await asyncio.gather(*in_flight, return_exceptions=True)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[SummaryWorker]:
        """Run in this process for the life of the block (a one-process service)."""
        stop = asyncio.Event()
        runner = asyncio.create_task(self.run(stop))
        try:
            yield self
        finally:
            stop.set()
            self.queue.wake.set()
            await runner

    async def _claim(self, stop: asyncio.Event) -> Lease | None:
        """A due job, or None after waiting for one (a poll, a wake-up or ``stop``)."""
        self.queue.wake.clear()  # before the claim: an enqueue after it wakes the wait
        if not stop.is_set():
            try:
                lease = await self.queue.claim(self.lease_seconds)
                if time.monotonic() - self._counted_at >= COUNT_EVERY:
                    self._counted_at = time.monotonic()
                    await self.queue.counts()  # what telemetry's queue gauges report
            except CtxStoreError as error:  # the database is away: try again at the next poll
                log.warning("summary jobs unreachable: %s", error)
                lease = None
            if lease is not None:
                return lease
        stopping = asyncio.ensure_future(stop.wait())
        woken = asyncio.ensure_future(self.queue.wake.wait())
        await asyncio.wait(
            {stopping, woken}, timeout=self.poll_seconds, return_when=asyncio.FIRST_COMPLETED
        )
        stopping.cancel()
        woken.cancel()
        return None

    async def _work(self, lease: Lease) -> None:
        keeping = asyncio.create_task(self._keep(lease))
        try:
            outcome = await self._attempt(lease)
        finally:
            keeping.cancel()
        try:
            if isinstance(outcome, Exception):
                await self._failed(lease, outcome)
            else:
                await self.queue.finish(lease, outcome)
        except CtxStoreError as error:  # the lease runs out and another worker retries
            log.warning("could not record the end of a summary job: %s", error)

    async def _attempt(self, lease: Lease) -> int | Exception:
        """The position the session's summary covers after this attempt, or its error."""
        try:
            return await telemetry.observed(
                "summarize", self._summarize(lease), session=lease.session_id
            )
        except Exception as error:  # the summarizer's, or the database's: tried again
            return error

    async def _summarize(self, lease: Lease) -> int:
        """Store the next summary through the job's position; the position the session's
        summary covers when done."""
        storage = self.queue.storage
        async with storage.reader(lease.session_id) as reader:
            head = await reader.head()
            previous = await reader.latest_summary()
        covered = previous.covers_until if previous else -1
        until = min(lease.until, head.message_count - 1)
        if not head.exists or until <= covered:
            self._ended("superseded", lease)
            return lease.until if not head.exists else covered
        try:
            await summarize_span(storage, lease.session_id, self.summarizer, previous, until)
        except ConflictError:  # a summary was stored meanwhile (an inline strategy)
            async with storage.reader(lease.session_id) as reader:
                latest = await reader.latest_summary()
            self._ended("superseded", lease)
            return latest.covers_until if latest else -1
        self._ended("summarized", lease)
        return until

    async def _keep(self, lease: Lease) -> None:
        """Renew the lease while the summarizer runs."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                if not await self.queue.renew(lease, self.lease_seconds):
                    log.warning("a summary lease ran out while its summarizer ran")
                    return
            except CtxStoreError as error:
                log.warning("could not renew a summary lease: %s", error)

    async def _failed(self, lease: Lease, error: BaseException) -> None:
        # The class only: a summarizer's message can quote the conversation.
        log.warning("summarizer failed (attempt %d): %s", lease.attempts, type(error).__name__)
        state = await self.queue.fail(
            lease, error, self.backoff.delay(lease.attempts), self.max_attempts
        )
        if state == "dead":
            self.stats.dead += 1
            telemetry.summary_job_ended("dead")
        else:
            self.stats.retried += 1
            telemetry.summary_job_ended("retry")

    def _ended(self, result: str, lease: Lease) -> None:
        lag = lease.lag if result == "summarized" else None
        if lag is not None:
            self.stats.summarized += 1
            self.stats.lags.append(lag)
        else:
            self.stats.superseded += 1
        telemetry.summary_job_ended(result, lag)
