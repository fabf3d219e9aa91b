"""Versioned writes and concurrent throughput, in one run (issue 3).

- per-turn save of 2 messages to a 100-message session: unversioned (last write wins)
  beside versioned (expected_version), round-robin;
- turns per second with 32 sessions appending concurrently through ContextManager,
  beside raw asyncpg running the same append statement from a pool of the same size.

Run: ``make bench`` (embedded PostgreSQL) or set CTXSTORE_BENCH_DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from sqlalchemy import URL

from benchmarks.common import (
    append_values,
    bench_database,
    interleaved_medians,
    raw_append,
    raw_pool,
    table,
)
from ctxstore import ContextManager, Message, PostgresStorage

TRIALS = 60
SESSIONS = 32
SECONDS = 5.0
POOL_SIZE = 10


def turn(index: int) -> list[Message]:
    return [
        Message(role="user", content=f"第{index}轮：膝盖走路时有下坠感。", turn_id=f"t{index}"),
        Message(role="assistant", content=f"第{index}轮：是否伴随疼痛？", turn_id=f"t{index}"),
    ]


async def versioned_vs_unversioned(storage: PostgresStorage) -> dict[str, float]:
    histories: dict[str, list[Message]] = {}
    versions: dict[str, int] = {}
    for name in ("plain", "versioned"):
        histories[name] = [m for i in range(50) for m in turn(i)]
        versions[name] = await storage.save(name, histories[name])
        histories[name] = await storage.load(name)

    async def plain() -> None:
        histories["plain"] = [*histories["plain"], *turn(len(histories["plain"]))]
        await storage.save("plain", histories["plain"])

    async def versioned() -> None:
        histories["versioned"] = [*histories["versioned"], *turn(len(histories["versioned"]))]
        versions["versioned"] = await storage.save(
            "versioned", histories["versioned"], expected_version=versions["versioned"]
        )

    async def manager_append() -> None:
        await manager.add_messages("appended", turn(0))

    manager = ContextManager(storage)
    return await interleaved_medians(
        {
            "save (last write wins)": plain,
            "save (expected_version)": versioned,
            "ContextManager.add_messages": manager_append,
        },
        trials=TRIALS,
    )


async def run_for(seconds: float, worker: Callable[[int], Awaitable[None]]) -> float:
    """Turns per second with SESSIONS workers, each looping on its own session."""
    deadline = time.perf_counter() + seconds
    counts = [0] * SESSIONS

    async def loop(index: int) -> None:
        while time.perf_counter() < deadline:
            await worker(index)
            counts[index] += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop(index) for index in range(SESSIONS)))
    return sum(counts) / (time.perf_counter() - started)


async def throughput(url: URL, storage: PostgresStorage) -> dict[str, float]:
    manager = ContextManager(storage)
    messages = turn(1)
    arrays = append_values(messages)
    digests = [m.digest() for m in messages]
    pool = await raw_pool(url, POOL_SIZE)
    versions = [0] * SESSIONS
    fresh = b"".join(digests)

    async def through_ctxstore(index: int) -> None:
        await manager.add_messages(f"tp-ctx-{index}", messages)

    async def through_raw(index: int) -> None:
        # the same statement ContextManager ends in (append at the expected version)
        session = f"tp-raw-{index}"
        async with pool.acquire() as conn:
            versions[index] = await raw_append(conn, session, arrays, fresh, versions[index])

    try:
        raw = await run_for(SECONDS, through_raw)
        ours = await run_for(SECONDS, through_ctxstore)
        raw_again = await run_for(SECONDS, through_raw)
    finally:
        await pool.close()
    return {"ctxstore": ours, "raw asyncpg": (raw + raw_again) / 2}


async def main(url: URL) -> None:
    settings_note = f"pool {POOL_SIZE}, {SESSIONS} sessions, {SECONDS:.0f} s per run"
    async with PostgresStorage.from_url(url) as storage:
        saves = await versioned_vs_unversioned(storage)
        rates = await throughput(url, storage)
    base = saves["save (last write wins)"]
    print(f"\nper-turn write of 2 messages (100-message session), median of {TRIALS}")
    print(
        table(
            [(name, f"{ms:.3f}", f"{ms / base:.2f}x") for name, ms in saves.items()],
            ("write", "ms", "vs last-write-wins save"),
        )
    )
    print(f"\nthroughput: turns (2 messages each) per second, {settings_note}")
    floor = rates["raw asyncpg"]
    print(
        table(
            [(name, f"{rate:,.0f}", f"{rate / floor:.2f}x") for name, rate in rates.items()],
            ("writer", "turns/s", "vs raw asyncpg"),
        )
    )


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
