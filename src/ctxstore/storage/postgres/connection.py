"""Connections of the PostgreSQL backend: a pool served in turn (db/pool.py), every call
bounded in time and translated to ctxstore errors, a read retried on a dead connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from sqlalchemy import URL

from ctxstore import telemetry
from ctxstore.db.engine import EngineSettings, create_pool, learn_types, normalize_url
from ctxstore.db.errors import translation
from ctxstore.db.pool import FairPool, PoolStats
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


#: The composite types the storage's statements take (the append's rows, revision 0025).
ROW_TYPES = ("ctxstore_message_row_v1",)

#: What a checkout watcher may return: called when the connection comes back.
Undo = Callable[[], None]


class Connections:
    """The storage's own pool, lent first come, first served (db/pool.py): callers beyond
    the pool's size wait in order (for at most operation_timeout, as every call), and
    opening a connection once a caller's turn has come takes at most pool_timeout."""

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
        # Opened in the event loop of the first call: the pool's connections and waiters
        # belong to one loop.
        self._pool: FairPool | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watchers: list[Callable[[Driver], object]] = []
        self._checkout_watchers: list[Callable[[Driver], Undo | None]] = []
        self._on_wait: Callable[[float], object] | None = None
        telemetry.watch_pool(self)

    async def watch(
        self, watcher: Callable[[Driver], Undo | None], *, at_every_checkout: bool = False
    ) -> None:
        """Call ``watcher`` with every connection opened from now on (a query logger, for
        diagnostics); the connections already open are replaced as they come back.  With
        ``at_every_checkout``, with every connection lent instead; what it returns, if
        anything, is called when the connection comes back (to remove a log listener)."""
        if at_every_checkout:
            self._checkout_watchers.append(watcher)
            return
        self._watchers.append(watcher)
        if self._pool is not None:
            self._pool.expire()

    async def _opened(self, connection: Driver) -> None:
        await learn_types(connection, ROW_TYPES)
        for watcher in self._watchers:
            watcher(connection)

    def _open(self) -> FairPool:
        """The pool of the running loop.  Made on first use, or from another loop than the
        pool's (an adapter's loop replaced after the old one died): the old loop's
        connections are left to it, as its transports can't be closed from here."""
        self._pool = create_pool(self.url, self.settings, init=self._opened)
        self._pool.on_wait = self._on_wait
        self._loop = asyncio.get_running_loop()
        return self._pool

    def time_waits(self, observe: Callable[[float], object]) -> None:
        """Call ``observe`` with the seconds each call that found no idle connection
        waited for one (the service's metrics)."""
        self._on_wait = observe
        if self._pool is not None:
            self._pool.on_wait = observe

    def stats(self) -> PoolStats | None:
        """The pool's figures now (None: not opened yet, which its first call does)."""
        return self._pool.stats() if self._pool is not None else None

    @asynccontextmanager
    async def driver(self) -> AsyncIterator[Driver]:
        """A pooled asyncpg connection.  One that broke, timed out or was cancelled
        mid-call is terminated, so the pool never hands it out again (it opens another)."""
        pool = self._pool
        if pool is None or self._loop is not asyncio.get_running_loop():
            pool = self._open()
        self.waiting += 1
        try:
            connection = await pool.acquire()  # without a wait when one is idle
        finally:
            self.waiting -= 1
        self.in_use += 1
        undo: list[Undo] = []
        try:
            for watch in self._checkout_watchers:
                if (done := watch(connection)) is not None:
                    undo.append(done)
            yield connection
        except BaseException as error:
            if connection.is_closed() or isinstance(error, asyncio.CancelledError | TimeoutError):
                connection.terminate()
            raise
        finally:
            self.in_use -= 1
            try:
                for done in undo:
                    done()
            finally:
                await pool.release(connection)

    async def close(self) -> None:
        """Close the pool's connections (those of another loop are left to it)."""
        pool, self._pool = self._pool, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    @asynccontextmanager
    async def call(
        self, action: str, *, conflict_on_duplicate: bool = False
    ) -> AsyncIterator[Driver]:
        """A guarded connection for one call (never replayed): the call, its wait for a
        connection included, ends within ``operation_timeout`` and raises only ctxstore
        errors.  (``translated``, spelled out: every statement runs through this, and
        each generator-based context manager costs a few µs.)"""
        try:
            async with asyncio.timeout(self.operation_timeout), self.driver() as driver:
                yield driver
        except Exception as error:
            found = translation(
                error, action, conflict_on_duplicate=conflict_on_duplicate, role=self.url.username
            )
            if found is None:
                raise
            raise found from error

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
