"""Prometheus metrics of the service (prometheus-client, the reference Python client).

Requests are counted and timed by route template (``/v1/sessions/{session_id}/messages``,
never the path with its ids), method and status; conflicts and storage failures by
problem type.  The storage's connection pools (db/pool.py) give their figures as plain
numbers, written to gauges at each scrape, and call a histogram for each caller that
had to wait for a connection.  The summary queue is read from the database at scrape
time, at most every QUEUE_CACHE_SECONDS per worker.

With several worker processes ``ctxstore serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` and
every worker's samples are summed at scrape time (prometheus-client's multiprocess mode),
whichever worker answers.  That mode reads only what workers write to its files, so each
worker also writes its pools' figures and its process and GC figures (one series per
worker, with a ``pid`` label) every WORKER_SAMPLES_SECONDS; the queue, the same for every
worker, comes from the worker that answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.gc_collector import GCCollector
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.registry import Collector

from ctxstore.storage.postgres import sql

if TYPE_CHECKING:
    from ctxstore.storage.postgres import PostgresStorage
    from ctxstore.storage.postgres.connection import Connections

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
#: Seconds: a turn's append takes milliseconds, a context build of a long session tens.
#: A wait for a pooled connection, part of a request's time, spans the same range.
BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: A scrape within this many seconds of the previous read of the summary queue reports
#: that read: scrapes (several Prometheus servers, several workers) never hammer the
#: database.
QUEUE_CACHE_SECONDS = 2.0
#: The summary queue's read (its wait for a connection included) takes at most this long:
#: past it the scrape answers without the queue's gauges.
QUEUE_READ_TIMEOUT = 2.0
#: Multiprocess mode: how often each worker writes its own figures (pools, process, GC)
#: for whichever worker answers a scrape.
WORKER_SAMPLES_SECONDS = 1.0
#: A storage pool's figures (db/pool.py PoolStats), each a gauge ctxstore_db_pool_<name>.
POOL_FIGURES = {
    "size": "Connections open or being opened",
    "in_use": "Connections lent to a storage call",
    "idle": "Connections open and idle",
    "max_size": "The most connections the pool opens",
    "waiting": "Storage calls waiting for a connection (their turn, or one being opened)",
}
#: Counted as conflicts, by problem type: every 409 (a version conflict, another user's
#: session, a write of a user erased meanwhile, an idempotency key in use) and 412 (a
#: precondition that did not hold).
CONFLICT_STATUSES = frozenset({409, 412})
PRECONDITION_FAILED = 412

log = logging.getLogger("ctxstore.http")


class Metrics:
    def __init__(self) -> None:
        self._multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        # Multiprocess mode: samples go to files, read back by the collector at scrape.
        registry = None if self._multiprocess else CollectorRegistry(auto_describe=True)
        self._registry = registry
        labels = ("route", "method", "status")
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self.requests = Counter(
            "ctxstore_http_requests",
            "HTTP requests answered, by route template, method and status",
            labels,
            registry=registry,
        )
        self.duration = Histogram(
            "ctxstore_http_request_duration_seconds",
            "Time from a request's arrival to its response's last byte",
            labels,
            buckets=BUCKETS,
            registry=registry,
        )
        self.conflicts = Counter(
            "ctxstore_http_conflicts",
            "Requests refused with 409 or 412, by route template and problem type "
            "(precondition-failed for a 412)",
            ("route", "type"),
            registry=registry,
        )
        self.storage_errors = Counter(
            "ctxstore_http_storage_errors",
            "Requests the storage failed (5xx), by problem type",
            ("type",),
            registry=registry,
        )
        self.pool_wait = Histogram(
            "ctxstore_db_pool_wait_seconds",
            "Time a storage call waited for a pooled connection, when none was idle",
            ("pool",),
            buckets=BUCKETS,
            registry=registry,
        )
        self._pool_gauges = {
            figure: Gauge(
                f"ctxstore_db_pool_{figure}",
                meaning,
                ("pool",),
                multiprocess_mode="livesum",  # the service's total: every worker's pool
                registry=registry,
            )
            for figure, meaning in POOL_FIGURES.items()
        }
        self.queue_read_errors = Counter(
            "ctxstore_summary_queue_read_errors",
            "Scrapes whose read of the summary queue failed or timed out",
            registry=registry,
        )
        self._pools: dict[str, Connections] = {}
        self._queue: SummaryQueueGauges | None = None
        self._platform = PlatformCollector(registry=registry)
        self._worker = _WorkerSamples() if self._multiprocess else None
        if registry is not None:
            ProcessCollector(registry=registry)
            GCCollector(registry=registry)

    def watch(self, store: PostgresStorage) -> None:
        """Report ``store``'s pools and its database's summary queue."""
        self._pools = store.pools
        for role, pool in self._pools.items():
            pool.time_waits(self.pool_wait.labels(role).observe)
        self._queue = SummaryQueueGauges(store, self.queue_read_errors)
        if self._registry is not None:
            self._registry.register(self._queue)

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        found = self._children.get(key)
        if found is None:
            # A label set's samples, looked up once: labels() takes a lock and builds its
            # key on every call.  Routes, methods and statuses are few.
            code = str(status)
            found = self._children[key] = (
                self.requests.labels(route, method, code),
                self.duration.labels(route, method, code),
            )
        requests, duration = found
        requests.inc()
        duration.observe(seconds)

    def count_problem(self, route: str, kind: str, status: int) -> None:
        """A problem answered for a ctxstore error or a route's Problem: a conflict counted
        by its type, a 5xx of the storage by its problem type (``kind``, its slug)."""
        if status in CONFLICT_STATUSES:
            conflict = "precondition-failed" if status == PRECONDITION_FAILED else kind
            self.conflicts.labels(route, conflict).inc()
        elif status >= 500:
            self.storage_errors.labels(kind).inc()

    async def render(self) -> bytes:
        # The pools first: their figures are the requests', not this scrape's own read.
        self._write_pools()
        if self._queue is not None:
            await self._queue.refresh()
        if self._registry is not None:
            return generate_latest(self._registry)
        assert self._worker is not None
        self._worker.write()
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        registry.register(self._platform)
        if self._queue is not None:
            registry.register(self._queue)
        return generate_latest(registry)

    @contextlib.asynccontextmanager
    async def publishing(self) -> AsyncIterator[None]:
        """While the worker serves: in multiprocess mode, its own figures written now and
        every WORKER_SAMPLES_SECONDS, and removed when it stops."""
        worker = self._worker
        if worker is None:
            yield
            return
        self._write_pools()
        worker.write()
        task = asyncio.create_task(self._publish_every(worker, WORKER_SAMPLES_SECONDS))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # Its live gauges (pools, process) go; its counters stay in the sums.
            mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]

    async def _publish_every(self, worker: _WorkerSamples, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self._write_pools()
            worker.write()

    def _write_pools(self) -> None:
        for role, pool in self._pools.items():
            stats = pool.stats()
            if stats is None:
                continue  # not opened yet: no figures to give
            for figure, gauge in self._pool_gauges.items():
                gauge.labels(role).set(getattr(stats, figure))


class SummaryQueueGauges(Collector):
    """The summary jobs by state and the age of the oldest still to run, read by one
    statement (the one ``ctxstore summarize-worker --status`` prints), at most every
    QUEUE_CACHE_SECONDS.  Absent after a read that failed; the failure is counted."""

    def __init__(
        self,
        store: PostgresStorage,
        errors: Counter,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._errors = errors
        self._clock = clock
        self._lock = asyncio.Lock()  # concurrent scrapes: one read, the others wait for it
        self._read_at = float("-inf")
        self._counts: Any = None  # the statement's row; None: the last read failed

    async def refresh(self) -> None:
        async with self._lock:
            if self._clock() - self._read_at < QUEUE_CACHE_SECONDS:
                return
            try:
                async with (
                    asyncio.timeout(QUEUE_READ_TIMEOUT),
                    self._store.maintenance("count summary jobs") as driver,
                ):
                    self._counts = await sql.SUMMARY_JOB_COUNTS.fetchrow(driver)
            except Exception as error:  # the scrape answers all the same, without them
                self._counts = None
                self._errors.inc()
                # The class only: the message may quote the driver or an address.
                log.warning("/metrics: the summary queue was not read (%s)", type(error).__name__)
            self._read_at = self._clock()

    def collect(self) -> Iterator[Metric]:
        counts = self._counts
        if counts is None:
            return
        jobs = GaugeMetricFamily(
            "ctxstore_summary_queue_jobs",
            "Summary jobs by state: queued (waiting), running, dead",
            labels=("state",),
        )
        for state in ("queued", "running", "dead"):
            jobs.add_metric((state,), counts[state])
        yield jobs
        yield GaugeMetricFamily(
            "ctxstore_summary_queue_oldest_seconds",
            "How long the oldest summary job still to run (queued or running) has waited, "
            "by the database's clock (0: none)",
            value=counts["oldest"],
        )


class _WorkerSamples:
    """This worker's process and GC figures, which multiprocess mode can't collect from
    another process: copied into gauges it writes for itself (``pid`` label added)."""

    def __init__(self) -> None:
        self._collected = CollectorRegistry()
        ProcessCollector(registry=self._collected)
        GCCollector(registry=self._collected)
        self._gauges: dict[str, Gauge] = {}

    def write(self) -> None:
        for family in self._collected.collect():
            for sample in family.samples:
                gauge = self._gauges.get(sample.name)
                if gauge is None:
                    gauge = self._gauges[sample.name] = Gauge(
                        sample.name,
                        family.documentation,
                        tuple(sample.labels),
                        multiprocess_mode="liveall",  # one series per live worker
                        registry=None,
                    )
                child = gauge.labels(**sample.labels) if sample.labels else gauge
                child.set(sample.value)
