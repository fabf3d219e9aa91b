"""The storage's pool (db/pool.py) on real connections: served in order, no slot lost to a
caller that gives up or a connection that fails, idle and stale connections closed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore.db.pool import FairPool, PoolClosedError
from tests.migrations.test_distribution_rules import connect as connect_to


def pool_on(url: URL, max_size: int, **options: Any) -> tuple[FairPool, list[Any]]:
    opened: list[Any] = []

    async def connect() -> Any:
        connection = await connect_to(url)
        opened.append(connection)
        return connection

    settings = {"idle_lifetime": 60.0, "open_timeout": 10.0, **options}
    return FairPool(connect, max_size=max_size, **settings), opened


async def test_waiters_are_served_in_the_order_they_asked(database_url: URL) -> None:
    pool, opened = pool_on(database_url, 1)
    held = await pool.acquire()
    served: list[int] = []

    async def waiter(number: int) -> None:
        connection = await pool.acquire()
        served.append(number)
        await pool.release(connection)

    waiters = [asyncio.create_task(waiter(number)) for number in range(5)]
    await asyncio.sleep(0.05)
    await pool.release(held)
    # the releasing task asks again at once: it queues behind those already waiting
    again = asyncio.create_task(waiter(99))
    await asyncio.gather(*waiters, again)
    assert served == [0, 1, 2, 3, 4, 99]
    assert len(opened) == 1 and pool.size == 1
    await pool.close()


async def test_a_waiter_that_gives_up_leaves_the_connection_to_the_next(
    database_url: URL,
) -> None:
    pool, _opened = pool_on(database_url, 1)
    held = await pool.acquire()
    quitter = asyncio.create_task(pool.acquire())
    patient = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    await pool.release(held)  # handed to the quitter, which is cancelled before it runs
    quitter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await quitter
    connection = await asyncio.wait_for(patient, 2)
    assert connection is held
    await pool.release(connection)
    assert pool.size == 1 and pool.idle == 1
    await pool.close()


async def test_a_connect_that_fails_frees_its_slot_for_the_next_caller(
    database_url: URL,
) -> None:
    failures = iter([True, False])

    async def connect() -> Any:
        if next(failures):
            raise OSError("refused")
        return await connect_to(database_url)

    pool = FairPool(connect, max_size=1, idle_lifetime=60.0, open_timeout=10.0)
    with pytest.raises(OSError, match="refused"):
        await pool.acquire()
    assert pool.size == 0
    connection = await pool.acquire()
    assert await connection.fetchval("SELECT 1") == 1
    await pool.release(connection)
    await pool.close()


async def test_a_broken_or_stale_connection_is_not_lent_again(database_url: URL) -> None:
    pool, opened = pool_on(database_url, 2)
    first = await pool.acquire()
    first.terminate()
    await pool.release(first)
    assert pool.size == 0
    second = await pool.acquire()
    pool.expire()  # new settings: what is lent now is closed when it comes back
    await pool.release(second)
    assert second.is_closed() and pool.size == 0
    third = await pool.acquire()
    assert third is not first and third is not second and len(opened) == 3
    await pool.release(third)
    await pool.close()


async def test_a_connection_idle_too_long_is_closed_at_the_next_checkout(
    database_url: URL,
) -> None:
    pool, opened = pool_on(database_url, 2, idle_lifetime=0.05)
    connection = await pool.acquire()
    await pool.release(connection)
    await asyncio.sleep(0.1)
    fresh = await pool.acquire()
    assert connection.is_closed() and fresh is not connection and len(opened) == 2
    await pool.release(fresh)
    await pool.close()


async def test_a_transaction_left_open_is_rolled_back_at_checkin(database_url: URL) -> None:
    pool, _opened = pool_on(database_url, 1)
    connection = await pool.acquire()
    await connection.execute("BEGIN; CREATE TEMP TABLE left_open (x int)")
    await pool.release(connection)
    again = await pool.acquire()
    assert again is connection and not again.is_in_transaction()
    assert await again.fetchval("SELECT to_regclass('pg_temp.left_open')") is None
    await pool.release(again)
    await pool.close()


async def test_closing_refuses_waiters_and_later_callers(database_url: URL) -> None:
    pool, _opened = pool_on(database_url, 1)
    held = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    await pool.close()
    with pytest.raises(PoolClosedError):
        await waiter
    with pytest.raises(PoolClosedError):
        await pool.acquire()
    await pool.release(held)  # a connection lent before the close is closed as it returns
    assert held.is_closed() and pool.size == 0


async def test_no_slot_is_lost_to_callers_that_give_up_or_break_connections(
    database_url: URL,
) -> None:
    """64 callers on 3 connections until each kind of caller has been seen often enough
    (at least 2 s): some give up waiting, some are cancelled mid-statement, some break their
    connection.  Afterwards every slot is accounted for and the pool still lends.  The run
    ends on counts, not on a clock alone, so a loaded machine only makes it slower."""
    pool, opened = pool_on(database_url, 3)
    stats = {"served": 0, "gave_up": 0, "cancelled": 0, "broken": 0}
    clock = asyncio.get_running_loop().time
    at_least_until, at_most_until = clock() + 2.0, clock() + 120.0

    def keep_going() -> bool:
        if clock() >= at_most_until:
            return False
        enough = stats["served"] > 100 and stats["gave_up"] > 0 and stats["broken"] > 0
        return clock() < at_least_until or not enough

    async def caller(number: int) -> None:
        turn = 0
        while keep_going():
            turn += 1
            try:
                connection = await asyncio.wait_for(pool.acquire(), 0.002 * (number % 7 + 1))
            except TimeoutError:
                stats["gave_up"] += 1
                continue
            try:
                if (number + turn) % 11 == 0:
                    connection.terminate()
                    stats["broken"] += 1
                elif (number + turn) % 13 == 0:
                    try:
                        await asyncio.wait_for(connection.execute("SELECT pg_sleep(0.05)"), 0.001)
                    except TimeoutError:
                        connection.terminate()  # as the storage does after a cancelled call
                        stats["cancelled"] += 1
                else:
                    assert await connection.fetchval("SELECT $1::int", turn) == turn
                    stats["served"] += 1
            finally:
                await pool.release(connection)

    await asyncio.gather(*(caller(number) for number in range(64)))
    print(stats, f"{len(opened)} connections opened")
    assert stats["served"] > 100 and stats["gave_up"] > 0 and stats["broken"] > 0
    assert pool.size == pool.idle <= 3
    lent = [await asyncio.wait_for(pool.acquire(), 2) for _ in range(3)]
    assert len({id(connection) for connection in lent}) == 3
    for connection in lent:
        await pool.release(connection)
    await pool.close()
    assert pool.size == 0


async def test_a_freed_slot_goes_to_the_waiter_not_to_a_newcomer(database_url: URL) -> None:
    """A broken connection's slot passes to the oldest waiter: a caller asking after it
    waits its turn, and the pool never holds more than max_size connections."""
    pool, opened = pool_on(database_url, 1)
    held = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    held.terminate()
    await pool.release(held)
    newcomer = asyncio.create_task(pool.acquire())
    served = await asyncio.wait_for(waiter, 2)
    await asyncio.sleep(0.05)
    assert not newcomer.done() and pool.size == 1
    await pool.release(served)
    assert await asyncio.wait_for(newcomer, 2) is served and len(opened) == 2
    await pool.release(served)
    await pool.close()


async def test_a_connection_handed_to_a_waiter_cancelled_after_close_is_closed(
    database_url: URL,
) -> None:
    pool, _opened = pool_on(database_url, 1)
    held = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0.05)
    await pool.release(held)  # handed to the waiter, which has not run yet
    await pool.close()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert held.is_closed() and pool.size == 0 and pool.idle == 0
