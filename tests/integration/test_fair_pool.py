"""More callers than pooled connections: served first come, first served, none refused."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import URL

from ctxstore import EngineSettings, Message, PostgresStorage
from ctxstore.errors import StorageUnavailableError

TASKS, POOL, SECONDS = 64, 4, 4.0


async def test_callers_beyond_the_pool_wait_their_turn(database_url: URL) -> None:
    # A pool timeout far below the test's length: a caller overtaken again and again
    # would hit it; one served in turn waits for a few calls of the others only.
    settings = EngineSettings(pool_size=POOL, pool_timeout=1.0)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        waits: list[float] = []
        failures: list[BaseException] = []
        # The pool's connections opened first: pool_timeout bounds the wait for a pooled
        # connection, and this test is about that wait, not about connecting.
        await asyncio.gather(*(storage.exists("warm") for _ in range(POOL)))
        deadline = time.monotonic() + SECONDS

        async def caller(index: int) -> None:
            turn = 0
            while time.monotonic() < deadline:
                started = time.monotonic()
                try:
                    await storage.append(f"s{index % 8}", [Message(role="user", content=f"{turn}")])
                except StorageUnavailableError as error:
                    failures.append(error)
                waits.append(time.monotonic() - started)
                turn += 1

        await asyncio.gather(*(caller(index) for index in range(TASKS)))
    waits.sort()
    p99, worst = waits[int(len(waits) * 0.99)], waits[-1]
    mean = sum(waits) / len(waits)
    print(
        f"{len(waits)} appends, mean {mean * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
        f"max {worst * 1000:.1f} ms"
    )
    assert failures == []
    assert worst < 1.0  # never near the pool timeout: nobody is overtaken for long
