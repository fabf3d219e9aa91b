"""Connections of the PostgreSQL backend: an asyncpg pool served in turn, every call
bounded in time and translated to ctxstore errors, a read retried on a dead connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import asyncpg
from sqlalchemy import URL

from ctxstore import telemetry
from ctxstore.db.engine import EngineSettings, create_pool, normalize_url
from ctxstore.db.errors import translated
from ctxstore.errors import StorageTimeoutError, StorageUnavailableError
from ctxstore.retry import Retry
from ctxstore.storage.postgres.statement import Driver, Statement

T = TypeVar("T")

#: A read whose connection turned out dead runs once more, on another connection.  Reads
#: change nothing, so a second try is safe; a timeout is not retried (the caller's time
#: is spent), and writes are never replayed.
DEAD_CONNECTION = Retry(
    StorageUnavailableError,
    attempts=2,
    when=lambda error: not isinstance(error, StorageTimeoutError),
)


class Connections:
    """The storage's own asyncpg pool, lent first come, first served.

    asyncpg's pool queue is not strictly first come, first served: a task that releases
    a connection and asks again at once takes it before the waiter it woke runs, so under
    load one caller could be overtaken again and again.  asyncio's semaphore is (a
    newcomer never overtakes a waiter): callers beyond the pool's size queue in front of
    it, in order, bounded only by operation_timeout; the pool itself then never makes
    anyone wait.
    """

    def __init__(self, url: URL, settings: EngineSettings, operation_timeout: float) -> None:
        self.url = normalize_url(url)
        self.settings = settings
        #: No call takes longer than this (seconds): StorageTimeoutError instead.
        self.operation_timeout = operation_timeout
        #: Reads that were retried after their connection died (observable).
        self.read_retries = 0
        #: Calls holding a turn (a pooled connection), and calls queued for one (telemetry).
        self.in_use = 0
        self.waiting = 0
        url = self.url  # no user, password or options in a metric's attributes
        self.pool_name = f"{url.host or 'local'}:{url.port or 5432}/{url.database or ''}"
        # Opened in the event loop of the first call: asyncpg's pool and the semaphore
        # belong to one loop.
        self._pool: asyncpg.Pool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._turns = asyncio.Semaphore(1)
        self._watchers: list[Callable[[Driver], None]] = []
        self._checkout_watchers: list[Callable[[Driver], None]] = []
        telemetry.watch_pool(self)

    async def watch(
        self, watcher: Callable[[Driver], None], *, at_every_checkout: bool = False
    ) -> None:
        """Call ``watcher`` with every connection opened from now on (a query logger, for
        diagnostics); the connections already open are replaced as they come back.  With
        ``at_every_checkout``, with every connection lent instead: asyncpg's pool removes
        a connection's log and notification listeners each time it comes back."""
        if at_every_checkout:
            self._checkout_watchers.append(watcher)
            return
        self._watchers.append(watcher)
        if self._pool is not None:
            await self._pool.expire_connections()

    async def _opened(self, connection: Driver) -> None:
        for watcher in self._watchers:
            watcher(connection)

    async def _open(self) -> asyncpg.Pool:
        """The pool of the running loop.  Called on first use, or from another loop than
        the pool's (an adapter's loop replaced after the old one died): the old loop's
        connections are left to it, as its transports can't be closed from here."""
        loop = asyncio.get_running_loop()
        pool = create_pool(self.url, self.settings, init=self._opened)
        await pool  # min_size is 0: nothing connects yet, nothing suspends
        if self._loop is loop and self._pool is not None:  # opened meanwhile
            await pool.close()
            return self._pool
        self._pool, self._loop = pool, loop
        self._turns = asyncio.Semaphore(pool.get_max_size())
        return pool

    @asynccontextmanager
    async def driver(self) -> AsyncIterator[Driver]:
        """A pooled asyncpg connection.  One that broke, timed out or was cancelled
        mid-call is terminated, so the pool never hands it out again (it opens another)."""
        pool = self._pool
        if pool is None or self._loop is not asyncio.get_running_loop():
            pool = await self._open()
        turns = self._turns
        self.waiting += 1
        try:
            await turns.acquire()
        finally:
            self.waiting -= 1
        self.in_use += 1
        try:
            async with asyncio.timeout(self.settings.pool_timeout):
                connection = await pool.acquire()
        except BaseException:
            self._give_back(turns)
            raise
        try:
            try:
                for watcher in self._checkout_watchers:
                    watcher(connection)
                yield connection
            except BaseException as error:
                if connection.is_closed() or isinstance(
                    error, asyncio.CancelledError | TimeoutError
                ):
                    connection.terminate()
                raise
        finally:
            try:
                await pool.release(connection)
            finally:
                self._give_back(turns)

    def _give_back(self, turns: asyncio.Semaphore) -> None:
        self.in_use -= 1
        turns.release()

    async def close(self) -> None:
        """Close the pool's connections (those of another loop are left to it)."""
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

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

    async def retried_read(self, read: Callable[[], Awaitable[T]]) -> T:
        """``read`` (which takes its own connection), again if its connection was dead."""
        return await DEAD_CONNECTION.run(read, retrying=self._count_retry)

    def _count_retry(self, _error: StorageUnavailableError) -> None:
        self.read_retries += 1
        telemetry.retried("connection")

    async def read(self, action: str, method: str, statement: Statement, **values: Any) -> Any:
        """A one-statement read (see DEAD_CONNECTION)."""

        async def once() -> Any:
            async with self.call(action) as driver:
                return await getattr(statement, method)(driver, **values)

        return await self.retried_read(once)
