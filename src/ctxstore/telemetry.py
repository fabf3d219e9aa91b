"""Telemetry (opt-in): OpenTelemetry spans and metrics for every storage call.

Off by default, and then nearly free: the Store facade reads ``active`` once per call
and, while it is None, awaits the backend's hook as before; OpenTelemetry is not even
imported.  ``enable()`` (or ``CTXSTORE_TELEMETRY=1`` at an entry point that calls
``from_settings``, such as the ``ctxstore`` command) turns it on with the
``telemetry`` extra (opentelemetry-api) installed.  docs/telemetry.md lists the spans,
metrics and attributes.

Ids are never exported in clear: a session or user id becomes a keyed hash (HMAC-SHA256
under a random per-process key, or ``CTXSTORE_TELEMETRY_KEY`` so that processes agree),
and an error is reported by its class name only (messages can quote ids).

This module knows nothing of storage: backends register what it observes (pools,
fallbacks) through the small protocols below, held weakly.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import secrets
import sys
import time
import weakref
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ctxstore.errors import ConfigurationError, ConflictError

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
    from opentelemetry.trace import TracerProvider

    from ctxstore.settings import Settings

ENV = "CTXSTORE_TELEMETRY"
KEY_ENV = "CTXSTORE_TELEMETRY_KEY"
SCOPE = "ctxstore"
#: The span attribute of an HTTP request's id (mark_request).
REQUEST_ID_ATTRIBUTE = "ctxstore.request_id"
#: Seconds: from a cached memory read to a slow PostgreSQL write.
DURATION_BUCKETS = (
    0.0001,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
)
#: A summary job's lag: an LLM call takes seconds, a backlog minutes.
LAG_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 900.0, 3600.0)
MODES = ("healthy", "degraded", "recovering")

T = TypeVar("T")


class Pool(Protocol):
    """A connection pool's gauges (storage/postgres/connection.py)."""

    pool_name: str
    in_use: int
    waiting: int


class Fallback(Protocol):
    """A FallbackStorage's state (storage/fallback.py)."""

    journal_name: str

    @property
    def mode(self) -> str: ...

    @property
    def journal_at_risk(self) -> bool: ...

    @property
    def lost(self) -> int: ...


_pools: weakref.WeakSet[Pool] = weakref.WeakSet()
_fallbacks: weakref.WeakSet[Fallback] = weakref.WeakSet()


class SummaryQueueCounts(Protocol):
    @property
    def queued(self) -> int: ...
    @property
    def running(self) -> int: ...
    @property
    def dead(self) -> int: ...
    @property
    def oldest(self) -> float: ...


class SummaryQueue(Protocol):
    """What a summary queue shows telemetry: its database and the job counts its
    workers last read."""

    pool_name: str

    @property
    def last_counts(self) -> SummaryQueueCounts: ...


_summary_queues: weakref.WeakSet[Any] = weakref.WeakSet()


def watch_summary_queue(queue: SummaryQueue) -> None:
    """Report ``queue``'s job counts in the summary gauges while it lives."""
    _summary_queues.add(queue)


def watch_pool(pool: Pool) -> None:
    """Report ``pool``'s connections in use and callers waiting while it lives."""
    _pools.add(pool)


def watch_fallback(fallback: Fallback) -> None:
    """Report ``fallback``'s mode while it lives."""
    _fallbacks.add(fallback)


@dataclass
class _Call:
    """The storage call in progress in this task (so a retry deep down is counted on it)."""

    attributes: dict[str, str]
    span: Any = None
    started: float = 0.0
    tokens: tuple[Any, Any] = (None, None)
    retries: int = 0
    reasons: list[str] = field(default_factory=list)


_call: ContextVar[_Call | None] = ContextVar("ctxstore_telemetry_call", default=None)


class Telemetry:
    """The tracer and instruments; exists only while telemetry is on."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, key: bytes) -> None:
        from opentelemetry import context, metrics, trace  # noqa: PLC0415  (optional)

        self._key = key
        self._attach, self._detach = context.attach, context.detach
        self._in_context = trace.set_span_in_context
        self._error_status = trace.Status(trace.StatusCode.ERROR)
        self._kinds = {"memory": trace.SpanKind.INTERNAL}
        self._client = trace.SpanKind.CLIENT
        # Ids repeat (a session's turns): their hash is computed once per few thousand.
        self.pseudonym = functools.lru_cache(maxsize=4096)(self._pseudonym)
        self.tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self.duration = meter.create_histogram(
            "ctxstore.operation.duration",
            unit="s",
            description="Time of a storage call in the backend (after validation)",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.conflicts = meter.create_counter(
            "ctxstore.conflicts", unit="{conflict}", description="Calls refused by ConflictError"
        )
        self.retries = meter.create_counter(
            "ctxstore.retries", unit="{retry}", description="Attempts made again within a call"
        )
        meter.create_observable_gauge(
            "ctxstore.fallback.state",
            callbacks=[_fallback_states],
            unit="{store}",
            description="FallbackStorage instances in each mode",
        )
        meter.create_observable_gauge(
            "ctxstore.fallback.journal_at_risk",
            callbacks=[_fallback_figure("journal_at_risk")],
            unit="{store}",
            description="FallbackStorage instances journaling where a crash loses entries "
            "(journal_loss='accept')",
        )
        meter.create_observable_counter(
            "ctxstore.fallback.lost",
            callbacks=[_fallback_figure("lost")],
            unit="{write}",
            description="Journaled writes that vanished before they were replayed",
        )
        meter.create_observable_up_down_counter(
            "ctxstore.pool.in_use",
            callbacks=[_pool_gauge("in_use")],
            unit="{connection}",
            description="Pooled connections held by a storage call",
        )
        meter.create_observable_up_down_counter(
            "ctxstore.pool.waiting",
            callbacks=[_pool_gauge("waiting")],
            unit="{call}",
            description="Storage calls waiting for a pooled connection",
        )

        self.summary_jobs = meter.create_counter(
            "ctxstore.summary.jobs",
            unit="{job}",
            description="Summary jobs a worker ended, by ctxstore.result: summarized, "
            "superseded (no LLM call needed), retry, dead",
        )
        self.summary_lag = meter.create_histogram(
            "ctxstore.summary.lag",
            unit="s",
            description="Time from a summary job's enqueue to its summary stored",
            explicit_bucket_boundaries_advisory=list(LAG_BUCKETS),
        )
        meter.create_observable_gauge(
            "ctxstore.summary.queue",
            callbacks=[_summary_queue_states],
            unit="{job}",
            description="Summary jobs by ctxstore.state (queued, running, dead), as this "
            "process's workers last read them",
        )
        meter.create_observable_gauge(
            "ctxstore.summary.oldest",
            callbacks=[_summary_oldest],
            unit="s",
            description="How long the oldest summary job still to run has waited",
        )

    def _pseudonym(self, value: str) -> str:
        """The id's keyed hash (64 bits, hex): stable under one key, not reversible."""
        digest = hmac.digest(self._key, value.encode("utf-8", "surrogatepass"), "sha256")
        return digest[:8].hex()

    async def observe(
        self,
        operation: str,
        system: str,
        hook: Awaitable[T],
        *,
        session: str | None,
        user: str | None,
    ) -> T:
        """A span around awaiting ``hook`` (a backend's coroutine)."""
        call = self._start(operation, system, session, user)
        try:
            result = await hook
        except BaseException as error:
            self._end(call, error)
            raise
        self._end(call, None)
        return result

    @asynccontextmanager
    async def observe_context(
        self,
        operation: str,
        system: str,
        context: AbstractAsyncContextManager[T],
        *,
        session: str | None,
        user: str | None,
    ) -> AsyncIterator[T]:
        """A span for the life of ``context`` (a reader's snapshot transaction).

        Not made the current span: a reader may be closed from another task (a stream the
        garbage collector finalizes), where this task's context can't be restored."""
        call = self._start(operation, system, session, user, current=False)
        try:
            async with context as value:
                yield value
        except BaseException as error:
            self._end(call, error)
            raise
        self._end(call, None)

    def _start(
        self,
        operation: str,
        system: str,
        session: str | None,
        user: str | None,
        *,
        current: bool = True,
    ) -> _Call:
        # Spans by hand, not start_as_current_span: a context manager less per call.
        measured = {"db.system.name": system, "db.operation.name": operation}
        attributes: dict[str, Any] = dict(measured)
        if session is not None:
            attributes["ctxstore.session.hash"] = self.pseudonym(session)
        if user is not None:
            attributes["ctxstore.user.hash"] = self.pseudonym(user)
        span = self.tracer.start_span(
            f"ctxstore.{operation}",
            kind=self._kinds.get(system, self._client),
            attributes=attributes,
            record_exception=False,  # an exception's message may quote an id
            set_status_on_exception=False,
        )
        call = _Call(measured, span, time.perf_counter())
        if current:  # the driver's spans nest under it; a retry is counted on it
            call.tokens = (self._attach(self._in_context(span)), _call.set(call))
        return call

    def _end(self, call: _Call, error: BaseException | None) -> None:
        elapsed = time.perf_counter() - call.started
        otel_token, call_token = call.tokens
        if call_token is not None:
            _call.reset(call_token)
            self._detach(otel_token)
        span, measured = call.span, {**call.attributes, "ctxstore.result": "ok"}
        ending: dict[str, Any] = {"ctxstore.retries": call.retries}
        if call.reasons:
            ending["ctxstore.retry.reasons"] = tuple(call.reasons)
        # GeneratorExit: a stream's consumer stopped early, not a failure.
        if error is not None and not isinstance(error, GeneratorExit):
            measured["error.type"] = type(error).__name__  # the class only: never a message
            if isinstance(error, ConflictError):  # expected under optimistic locking
                measured["ctxstore.result"] = "conflict"
                self.conflicts.add(1, call.attributes)
            elif isinstance(error, asyncio.CancelledError):
                measured["ctxstore.result"] = "cancelled"
            else:
                measured["ctxstore.result"] = "error"
                span.set_status(self._error_status)
            ending["error.type"] = measured["error.type"]
        ending["ctxstore.result"] = measured["ctxstore.result"]
        span.set_attributes(ending)
        span.end()
        self.duration.record(elapsed, measured)


#: The telemetry in force; None (the default) means off.  Read once per storage call.
active: Telemetry | None = None


def enable(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    key: bytes | None = None,
) -> Telemetry:
    """Turn telemetry on, with the given providers (default: OpenTelemetry's global ones).

    ``key``: the HMAC key of exported ids (at least 16 bytes; default: random for this
    process; ``from_settings`` passes ``CTXSTORE_TELEMETRY_KEY``).
    """
    global active  # noqa: PLW0603  (the one switch every storage call reads)
    try:
        from opentelemetry import metrics, trace  # noqa: F401, PLC0415
    except ImportError as error:
        raise ConfigurationError(
            "telemetry needs OpenTelemetry: pip install 'ctxstore[telemetry]'"
        ) from error
    for provider, method in ((tracer_provider, "get_tracer"), (meter_provider, "get_meter")):
        if provider is not None and not callable(getattr(provider, method, None)):
            raise ConfigurationError(
                f"telemetry: a {method.removeprefix('get_')} provider must have {method}(), "
                f"not {type(provider).__name__}"
            )
    active = Telemetry(tracer_provider, meter_provider, _check_key(key))
    return active


def disable() -> None:
    global active  # noqa: PLW0603
    active = None


def retried(reason: str) -> None:
    """Count one more attempt of the current storage call (``reason``: why)."""
    telemetry = active
    if telemetry is None:
        return
    call = _call.get()
    attributes = {"ctxstore.retry.reason": reason}
    if call is not None:
        call.retries += 1
        if reason not in call.reasons:
            call.reasons.append(reason)
        attributes |= call.attributes
    telemetry.retries.add(1, attributes)


def mark_request(request_id: str) -> None:
    """Put an HTTP request's id (the ``X-Request-ID`` its response carries) on the current
    span as ``ctxstore.request_id``: the server span of an instrumented application.
    Nothing when OpenTelemetry was never imported (no span can exist) or no span records.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute(REQUEST_ID_ATTRIBUTE, request_id)


def from_settings(settings: Settings) -> None:
    """Enable telemetry if ``CTXSTORE_TELEMETRY`` asks for it (an entry point calls this:
    the ``ctxstore`` command, each ``ctxstore serve`` worker), under
    ``CTXSTORE_TELEMETRY_KEY`` when set."""
    if settings.telemetry and active is None:
        enable(key=settings.telemetry_key_bytes)


def _check_key(key: bytes | None) -> bytes:
    if key is None:
        return secrets.token_bytes(32)
    if not isinstance(key, bytes) or len(key) < 16:
        raise ConfigurationError("the telemetry key must be at least 16 bytes (32 hex digits)")
    return key


# -- observable instruments: read the registered objects when a reader collects --------------


def summary_job_ended(result: str, lag: float | None = None) -> None:
    """A worker ended a summary job (``lag``: enqueue to stored, when summarized)."""
    current = active
    if current is None:
        return
    current.summary_jobs.add(1, {"ctxstore.result": result})
    if lag is not None:
        current.summary_lag.record(lag)


async def observed(operation: str, hook: Awaitable[T], *, session: str | None) -> T:
    """A span around ``hook`` when telemetry is on (work outside a storage call)."""
    current = active
    if current is None:
        return await hook
    return await current.observe(operation, "postgresql", hook, session=session, user=None)


def _latest_counts() -> dict[str, SummaryQueueCounts]:
    """Per database, the counts of its queues with the most jobs (queues on one database
    read the same table; each read is as fresh as its worker's last poll)."""
    latest: dict[str, SummaryQueueCounts] = {}
    for queue in list(_summary_queues):
        counts, seen = queue.last_counts, latest.get(queue.pool_name)
        if seen is None or counts.queued + counts.running > seen.queued + seen.running:
            latest[queue.pool_name] = counts
    return latest


def _summary_queue_states(options: CallbackOptions) -> Iterable[Observation]:
    from opentelemetry.metrics import Observation  # noqa: PLC0415  (optional)

    return [
        Observation(
            getattr(counts, state),
            {"db.client.connection.pool.name": name, "ctxstore.state": state},
        )
        for name, counts in sorted(_latest_counts().items())
        for state in ("queued", "running", "dead")
    ]


def _summary_oldest(options: CallbackOptions) -> Iterable[Observation]:
    from opentelemetry.metrics import Observation  # noqa: PLC0415  (optional)

    return [
        Observation(counts.oldest, {"db.client.connection.pool.name": name})
        for name, counts in sorted(_latest_counts().items())
    ]


def _fallback_states(options: CallbackOptions) -> Iterable[Observation]:
    from opentelemetry.metrics import Observation  # noqa: PLC0415

    if active is None:
        return []
    counts: Counter[tuple[str, str]] = Counter()
    journals = set()
    for fallback in list(_fallbacks):
        counts[fallback.journal_name, fallback.mode] += 1
        journals.add(fallback.journal_name)
    return [
        Observation(
            counts[journal, mode],
            {"ctxstore.fallback.journal": journal, "ctxstore.fallback.mode": mode},
        )
        for journal in sorted(journals)
        for mode in MODES
    ]


def _fallback_figure(figure: str) -> Any:
    """Per journal: how many of its stores journal at risk, or the entries they lost."""
    return _summed(_fallbacks, "journal_name", "ctxstore.fallback.journal", figure)


def _pool_gauge(figure: str) -> Any:
    """Per pool: its connections in use, or the calls waiting for one.  Storages sharing
    an engine each have their own turns: one figure per pool."""
    return _summed(_pools, "pool_name", "db.client.connection.pool.name", figure)


def _summed(watched: weakref.WeakSet[Any], by: str, label: str, figure: str) -> Any:
    """A callback observing ``figure`` summed over the ``watched`` objects of each value
    of their ``by`` attribute, that value as its ``label``."""

    def observe(options: CallbackOptions) -> Iterable[Observation]:
        from opentelemetry.metrics import Observation  # noqa: PLC0415

        if active is None:
            return []
        totals: Counter[str] = Counter()
        for each in list(watched):
            totals[getattr(each, by)] += int(getattr(each, figure))
        return [Observation(total, {label: name}) for name, total in sorted(totals.items())]

    return observe
