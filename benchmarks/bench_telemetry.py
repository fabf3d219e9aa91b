"""The cost of telemetry (issue 16 item 4): off, on without an SDK, on with the SDK.

Four variants of the same calls, timed round-robin in one run:

- *baseline*: the facade as it was before telemetry (a subclass whose ``append`` and
  ``load`` call the hooks directly): what "OpenTelemetry not installed" amounted to;
- *off*: the default (telemetry never enabled: one flag read per call);
- *on, API only*: enabled with OpenTelemetry's no-op providers (the extra installed, no
  SDK configured);
- *on, SDK*: enabled with the SDK: spans to a BatchSpanProcessor whose exporter drops
  them, metrics aggregated for a reader (what an application pays before the network).

On PostgreSQL: appending one turn and loading a 20-message session.  On the memory
backend, where a call costs microseconds, the same load and ``exists`` show the overhead
in absolute terms.  Target: off within 1% of the baseline on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import timeit
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import NoOpTracerProvider
from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import MemoryStorage, Message, PostgresStorage, telemetry
from ctxstore.db.engine import create_engine
from ctxstore.storage import rules
from ctxstore.storage.base import MessageInput
from ctxstore.storage.store import Store

PG_TRIALS = 800
MEMORY_TRIALS = 8_000
LOADED = 20
TARGET = 1.01
VARIANTS = ("baseline", "off", "on, API only", "on, SDK")


class _Before:
    """``append``, ``load`` and ``exists`` exactly as the facade had them before telemetry."""

    async def append(
        self: Any,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        expected = rules.check_write(session_id, expected_version, user_id, self.limits)
        checked = rules.coerce_messages(messages, self.limits)
        async with self._forgetting_on_conflict(session_id):
            version = await self._append(session_id, checked, expected, user_id)
        return version

    async def load(self: Any, session_id: str) -> list[Message]:
        rules.check_session_id(session_id, self.limits)
        return await self._load(session_id)

    async def exists(self: Any, session_id: str) -> bool:
        rules.check_session_id(session_id, self.limits)
        return await self._exists(session_id)


class PostgresBefore(_Before, PostgresStorage):
    pass


class MemoryBefore(_Before, MemoryStorage):
    pass


class _Dropped(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def switches() -> tuple[dict[str, telemetry.Telemetry | None], Callable[[], None]]:
    """The telemetry each variant runs under, and a shutdown for the SDK's providers."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_Dropped()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    api_only = telemetry.enable(
        tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider()
    )
    sdk = telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    telemetry.disable()

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return {"baseline": None, "off": None, "on, API only": api_only, "on, SDK": sdk}, shutdown


def under(
    state: telemetry.Telemetry | None, call: Callable[[], Awaitable[object]]
) -> Callable[[], Awaitable[object]]:
    async def action() -> object:
        telemetry.active = state  # one assignment: the switch every call reads
        return await call()

    return action


def switch_ns() -> float:
    """What "off" adds to a call, exactly: the facade's ``_traced`` handing the hook back
    (timeit, best of 5, minus an empty call)."""
    store, hook, number = MemoryStorage(), object(), 1_000_000
    telemetry.disable()
    traced = min(timeit.repeat(lambda: store._traced("load", hook, "s"), number=number, repeat=5))
    empty = min(timeit.repeat(lambda: hook, number=number, repeat=5))
    return (traced - empty) / number * 1e9


async def rotated_medians(
    actions: dict[str, Callable[[], Awaitable[object]]], trials: int
) -> dict[str, float]:
    """interleaved_medians once per starting variant, averaged: no variant always runs
    first in a round (the first call after another's pays for the switch)."""
    names = list(actions)
    found: dict[str, list[float]] = {name: [] for name in names}
    for shift in range(len(names)):
        order = names[shift:] + names[:shift]
        medians = await interleaved_medians(
            {name: actions[name] for name in order}, trials=trials // len(names)
        )
        for name, value in medians.items():
            found[name].append(value)
    return {name: sum(values) / len(values) for name, values in found.items()}


def turn(index: int) -> list[Message]:
    return [
        Message(role="user", content=f"膝盖上下楼梯时疼 #{index}"),
        Message(role="assistant", content="先减少爬楼，冰敷十五分钟，观察是否肿胀。"),
    ]


async def main(url: URL) -> None:
    states, shutdown = switches()
    engine = create_engine(url)
    stores: dict[str, Store] = {
        name: (PostgresBefore if name == "baseline" else PostgresStorage)(engine)
        for name in VARIANTS
    }
    memory: dict[str, Store] = {
        name: (MemoryBefore if name == "baseline" else MemoryStorage)() for name in VARIANTS
    }
    history = [m for i in range(LOADED // 2) for m in turn(i)]
    for name in VARIANTS:
        await stores[name].save(f"load-{name}", history)
        await memory[name].save(f"load-{name}", history)

    def append(name: str) -> Callable[[], Awaitable[object]]:
        storage, message = stores[name], turn(0)
        return under(states[name], lambda: storage.append(f"grow-{name}", message))

    def load(name: str, where: dict[str, Store]) -> Callable[[], Awaitable[object]]:
        storage = where[name]
        return under(states[name], lambda: storage.load(f"load-{name}"))

    def exists(name: str) -> Callable[[], Awaitable[object]]:
        storage = memory[name]
        return under(states[name], lambda: storage.exists(f"load-{name}"))

    results: dict[str, dict[str, float]] = {}
    try:
        results["PostgreSQL: append one turn"] = await rotated_medians(
            {name: append(name) for name in VARIANTS}, trials=PG_TRIALS
        )
        results[f"PostgreSQL: load {LOADED} messages"] = await rotated_medians(
            {name: load(name, stores) for name in VARIANTS}, trials=PG_TRIALS
        )
        results[f"memory: load {LOADED} messages"] = await rotated_medians(
            {name: load(name, memory) for name in VARIANTS}, trials=MEMORY_TRIALS
        )
        results["memory: exists (the cheapest call)"] = await rotated_medians(
            {name: exists(name) for name in VARIANTS}, trials=MEMORY_TRIALS
        )
    finally:
        telemetry.disable()
        await engine.dispose()
        shutdown()
    rows = []
    for label, medians in results.items():
        base = medians["baseline"]
        rows.append(
            (
                label,
                *(f"{medians[name] * 1000:.2f}" for name in VARIANTS),
                *(f"{medians[name] / base:.3f}x" for name in VARIANTS[1:]),
            )
        )
    print(
        f"\nTelemetry: median microseconds per call, interleaved and rotated "
        f"({PG_TRIALS} calls each on PostgreSQL, {MEMORY_TRIALS} on memory)"
    )
    header = ("operation", *(f"{name} us" for name in VARIANTS), "off", "API only", "SDK")
    print(table(rows, header))
    print(f"\noff: the switch itself costs {switch_ns():.0f} ns per call (timeit)")
    pg_off = max(results[label]["off"] / results[label]["baseline"] for label in list(results)[:2])
    verdict = "met" if pg_off <= TARGET else "MISSED"
    print(f"off vs baseline on PostgreSQL: worst {pg_off:.3f}x (target <= {TARGET}x: {verdict})")


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
