"""More callers than pooled connections: how long does the unluckiest one wait?

64 tasks append to 8 sessions through one PostgresStorage with the default pool of 10
for 60 s (CTXSTORE_BENCH_FAIR_SECONDS).  Callers beyond the pool's size queue first
come, first served, so the worst wait stays a small multiple of the mean and nobody
reaches the pool timeout.  Prints mean, p50, p99 and max per call, and failures.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import CtxStoreError, Message, PostgresStorage

TASKS = 64
SESSIONS = 8
SECONDS = float(os.environ.get("CTXSTORE_BENCH_FAIR_SECONDS", "60"))


async def run(url: URL) -> None:
    waits: list[float] = []
    failures: list[str] = []
    async with PostgresStorage.from_url(url) as storage:
        deadline = time.monotonic() + SECONDS

        async def caller(index: int) -> None:
            turn = 0
            while time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    await storage.append(
                        f"fair-{index % SESSIONS}", [Message(role="user", content=f"{turn}")]
                    )
                except CtxStoreError as error:
                    failures.append(str(error))
                waits.append(time.perf_counter() - started)
                turn += 1

        await asyncio.gather(*(caller(index) for index in range(TASKS)))
    waits.sort()
    mean = statistics.fmean(waits)
    p50, p99 = waits[len(waits) // 2], waits[int(len(waits) * 0.99)]
    print(f"\n{TASKS} tasks on a pool of 10, {SECONDS:.0f} s: {len(waits):,} appends")
    print(
        table(
            [
                ("mean", f"{mean * 1000:.1f}", "1.00x"),
                ("p50", f"{p50 * 1000:.1f}", f"{p50 / mean:.2f}x"),
                ("p99", f"{p99 * 1000:.1f}", f"{p99 / mean:.2f}x"),
                ("max", f"{waits[-1] * 1000:.1f}", f"{waits[-1] / mean:.2f}x"),
            ],
            ("call time", "ms", "vs mean"),
        )
    )
    print(f"failures: {len(failures)}" + (f" (first: {failures[0]})" if failures else ""))


def main() -> None:
    with bench_database() as url:
        asyncio.run(run(url))


if __name__ == "__main__":
    main()
