"""Connections of the PostgreSQL backend: checkout, time bound, error translation, retry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

from ctxstore import telemetry
from ctxstore.db.errors import translated
from ctxstore.errors import StorageTimeoutError, StorageUnavailableError
from ctxstore.storage.postgres.statement import Driver, Statement


class Connections:
    """asyncpg connections from an engine's pool, every call bounded and translated."""

    def __init__(self, engine: AsyncEngine, operation_timeout: float) -> None:
        self.engine = engine
        #: No call takes longer than this (seconds): StorageTimeoutError instead.
        self.operation_timeout = operation_timeout
        #: Reads that were retried after their connection died (observable).
        self.read_retries = 0
        # The pool's own queue is not first come, first served: a task returning a
        # connection takes it back before the waiter it woke runs, so under load one
        # caller can wait past pool_timeout while others go round again and again.
        # asyncio's semaphore is (a newcomer never overtakes a waiter): callers beyond
        # the pool's size queue here in order, bounded only by operation_timeout.
        size = _pool_size(engine)
        self._turns = asyncio.Semaphore(size) if size else None
        #: Calls holding a turn (a pooled connection), and calls queued for one (telemetry).
        self.in_use = 0
        self.waiting = 0
        url = engine.url  # no user, password or options in a metric's attributes
        self.pool_name = f"{url.host or 'local'}:{url.port or 5432}/{url.database or ''}"
        telemetry.watch_pool(self)

    @asynccontextmanager
    async def driver(self) -> AsyncIterator[Driver]:
        """The asyncpg connection of a pooled connection (checked out with pre-ping).

        Taken from the pool directly rather than through an AsyncConnection: half the
        overhead on every one-statement call.  A connection that broke, timed out or was
        cancelled mid-call is invalidated, so the pool never hands it out again.
        """
        self.waiting += 1
        try:
            if self._turns is not None:
                await self._turns.acquire()
        finally:
            self.waiting -= 1
        self.in_use += 1
        try:
            fairy = await greenlet_spawn(self.engine.sync_engine.raw_connection)
        except BaseException:
            self._give_back()
            raise
        try:
            driver = fairy.driver_connection
            try:
                yield driver
            except BaseException as error:
                if (
                    driver is None
                    or driver.is_closed()
                    or isinstance(error, asyncio.CancelledError | TimeoutError)
                ):
                    await greenlet_spawn(fairy.invalidate)
                raise
        finally:
            try:
                await greenlet_spawn(fairy.close)
            finally:
                self._give_back()

    def _give_back(self) -> None:
        self.in_use -= 1
        if self._turns is not None:
            self._turns.release()

    @asynccontextmanager
    async def guard(
        self, action: str, *, conflict_on_duplicate: bool = False
    ) -> AsyncIterator[None]:
        """Every call ends within ``operation_timeout`` and raises only ctxstore errors."""
        with translated(action, conflict_on_duplicate=conflict_on_duplicate):
            async with asyncio.timeout(self.operation_timeout):
                yield

    @asynccontextmanager
    async def call(
        self, action: str, *, conflict_on_duplicate: bool = False
    ) -> AsyncIterator[Driver]:
        """A guarded connection for one write (never replayed)."""
        async with (
            self.guard(action, conflict_on_duplicate=conflict_on_duplicate),
            self.driver() as driver,
        ):
            yield driver

    async def read(self, action: str, method: str, statement: Statement, **values: Any) -> Any:
        """A one-statement read, retried once when its connection turned out dead.

        Reads change nothing, so a second try is safe; a timeout is not retried (the
        caller's time is spent), and writes are never replayed.
        """
        for attempt in (1, 2):
            try:
                async with self.call(action) as driver:
                    return await getattr(statement, method)(driver, **values)
            except StorageTimeoutError:
                raise
            except StorageUnavailableError:
                if attempt == 2:
                    raise
                self.read_retries += 1
                telemetry.retried("connection")
        raise AssertionError("unreachable")


def _pool_size(engine: AsyncEngine) -> int:
    """How many connections the engine's pool lends at once (0: unbounded, no pool)."""
    pool = engine.sync_engine.pool
    size = getattr(pool, "size", None)
    if not callable(size):
        return 0  # NullPool and friends: every checkout opens a connection
    overflow = getattr(pool, "_max_overflow", 0)
    return int(size()) + max(int(overflow), 0)
