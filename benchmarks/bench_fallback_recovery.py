"""How fast FallbackStorage returns to PostgreSQL after an outage, under full write load.

8 writers append turns to 32 sessions as fast as they can through a FallbackStorage
(PostgreSQL behind a local TCP proxy, Redis as the secondary).  The proxy refuses
connections for ``--outage`` seconds; then it forwards again.  Reported: the journal's
size when the primary came back, the time until every key is served by the primary again
(the store is healthy), and each writer's call times before, during and after recovery
(mean, p99, max): a write to a key with pending entries replays that key first.

Run: python -m benchmarks.bench_fallback_recovery [--outage 5] [--writers 8]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server;
      Redis: $CTXSTORE_BENCH_REDIS_URL, else redis://127.0.0.1:6379/0)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
import uuid

import redis.asyncio as redis_asyncio
from sqlalchemy import URL
from tests.faults import TcpProxy, socket_target, through

from benchmarks.common import bench_database, table
from ctxstore import EngineSettings, Message, PostgresStorage, RedisStorage
from ctxstore.progress import Progress
from ctxstore.storage.fallback import FallbackStorage

REDIS_URL_ENV = "CTXSTORE_BENCH_REDIS_URL"
SESSIONS = 32


def summary(times: list[float]) -> str:
    if not times:
        return "-"
    ordered = sorted(times)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{len(times):,} calls, mean {statistics.fmean(times) * 1000:.1f} ms, "
        f"p99 {p99 * 1000:.1f} ms, max {ordered[-1] * 1000:.0f} ms"
    )


async def run(url: URL, redis_url: str, args: argparse.Namespace) -> list[tuple[str, str]]:
    proxy = TcpProxy(**socket_target(url))
    port = await proxy.start()
    prefix = f"ctxstore-bench-{uuid.uuid4().hex[:10]}:session"
    primary = PostgresStorage.from_url(
        through(port, url),
        operation_timeout=3,
        settings=EngineSettings(connect_timeout=1.0, pool_timeout=2.0),
    )
    secondary = RedisStorage.from_url(redis_url, prefix=prefix)
    # Timing only: the Redis isn't killed, so its journal is accepted whatever it persists.
    fallback = FallbackStorage(primary, secondary, probe_interval=0.2, journal_loss="accept")
    phase = "before"
    times: dict[str, list[float]] = {"before": [], "outage": [], "recovering": [], "after": []}
    stop = asyncio.Event()

    async def writer(number: int) -> None:
        turn = 0
        while not stop.is_set():
            session = f"s{(number + turn * 8) % SESSIONS}"
            started = time.perf_counter()
            await fallback.append(session, [Message(role="user", content=f"w{number} t{turn}")])
            times[phase].append(time.perf_counter() - started)
            turn += 1

    figures: list[tuple[str, str]] = []
    try:
        tasks = [asyncio.create_task(writer(number)) for number in range(args.writers)]
        await asyncio.sleep(3)
        phase = "outage"
        proxy.refuse()
        progress = Progress("outage (s)", int(args.outage))
        for _ in range(int(args.outage)):
            await asyncio.sleep(1)
            progress.advance()
        progress.finish()
        proxy.forward()
        backlog = await fallback.journal.size()
        phase = "recovering"
        restored = time.perf_counter()
        while fallback.degraded and time.perf_counter() - restored < 120:  # noqa: ASYNC110 - polling a property
            await asyncio.sleep(0.01)
        recovery = time.perf_counter() - restored
        phase = "after"
        await asyncio.sleep(3)
        stop.set()
        await asyncio.gather(*tasks)
        figures = [
            ("writers, sessions", f"{args.writers}, {SESSIONS}"),
            ("outage", f"{args.outage:.0f} s"),
            ("journal when the primary came back", f"{backlog:,} writes"),
            ("back to healthy after", f"{recovery:.2f} s ({backlog / recovery:,.0f} writes/s)"),
            ("replayed / quarantined", f"{fallback.stats.replayed} / {fallback.stats.quarantined}"),
            *((f"calls {name}", summary(values)) for name, values in times.items()),
        ]
    finally:
        await fallback.close()
        await proxy.stop()
        client = redis_asyncio.from_url(redis_url)
        async for key in client.scan_iter(match=f"{prefix}*", count=500):
            await client.delete(key)
        await client.aclose()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outage", type=float, default=5.0)
    parser.add_argument("--writers", type=int, default=8)
    args = parser.parse_args()
    redis_url = os.environ.get(REDIS_URL_ENV, "redis://127.0.0.1:6379/0")
    with bench_database() as url:
        figures = asyncio.run(run(url, redis_url, args))
    print(table(figures, ("figure", "value")))


if __name__ == "__main__":
    main()
