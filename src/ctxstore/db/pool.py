"""The storage's connection pool: asyncpg connections lent first come, first served.

asyncpg's own pool costs about 21 µs a checkout and checkin with nothing to wait for
(coroutine layers, and a timer armed at every checkin for the idle lifetime), and is not
strictly first come, first served: a task that gives a connection back and asks again at
once can take it before the waiter it woke runs.  This one lends an idle connection
without awaiting anything, hands a returned connection straight to the oldest waiter
(so nobody is overtaken), and closes a connection found idle too long at checkout
instead of arming a timer per checkin.  Bounds, timeouts and error translation are the
caller's (storage/postgres/connection.py).

Its figures (``stats()``, and ``on_wait`` for each caller that had to wait) are plain
numbers: the service's /metrics reads them (ctxstore.http.metrics).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Connection = Any  # an asyncpg connection (asyncpg ships no type stubs)


class PoolClosedError(RuntimeError):
    """The pool was closed: it lends nothing any more."""


@dataclass(frozen=True)
class PoolStats:
    """A pool's figures at one moment."""

    #: Connections open or being opened: in use, idle, or being opened.
    size: int
    #: Lent (or being given back).
    in_use: int
    idle: int
    max_size: int
    #: Callers without a connection yet: waiting their turn, or for one being opened.
    waiting: int


class FairPool:
    """At most ``max_size`` connections, opened on demand by ``connect`` (within
    ``open_timeout`` seconds), kept while idle for at most ``idle_lifetime`` seconds."""

    def __init__(
        self,
        connect: Callable[[], Awaitable[Connection]],
        *,
        max_size: int,
        idle_lifetime: float,
        open_timeout: float,
    ) -> None:
        self._connect = connect
        self.open_timeout = open_timeout
        self.max_size = max_size
        # SQLAlchemy's pool_recycle=-1 means "never": so does anything not positive here
        self.idle_lifetime = idle_lifetime if idle_lifetime > 0 else float("inf")
        #: Open connections, lent or idle, plus those being opened.
        self.size = 0
        # Idle connections with the time they came back, most recent last: the next
        # checkout takes the warmest, so the coldest can age out.
        self._idle: deque[tuple[Connection, float]] = deque()
        # Callers waiting for a connection, oldest first.  A waiter's future gets a
        # connection, or None: a slot is free, open a connection yourself.
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        # Connections opened before the latest expire() are closed when they come back.
        self._generation = 0
        self._generations: dict[int, int] = {}
        self._closed = False
        self._opening = 0
        #: Callers in acquire() that found no idle connection and have none yet.
        self.waiting = 0
        #: Called with the seconds each of those callers waited, once it has a connection
        #: or gave up (a metrics histogram).
        self.on_wait: Callable[[float], object] | None = None

    async def acquire(self) -> Connection:
        """A connection: an idle one, a new one while below max_size, else the next one
        given back (in the order the callers asked)."""
        if self._closed:
            raise PoolClosedError("the connection pool is closed")
        connection = self._take_idle()
        if connection is not None:
            return connection
        # Counted and timed past this point only: an idle connection's checkout costs
        # nothing more for the metrics.
        self.waiting += 1
        started = time.perf_counter()
        try:
            return await self._wait_or_open()
        finally:
            self.waiting -= 1
            if self.on_wait is not None:
                self.on_wait(time.perf_counter() - started)

    async def _wait_or_open(self) -> Connection:
        if self.size < self.max_size and not self._waiters:
            return await self._open()
        given = await self._wait_turn()
        if given is not None:
            return given
        if self._closed:
            self._free_slot()
            raise PoolClosedError("the connection pool was closed")
        return await self._open(reserved=True)

    def _take_idle(self) -> Connection | None:
        """The warmest idle connection still usable, closing those that are not."""
        now = time.monotonic()
        idle = self._idle
        while idle:
            connection, since = idle.pop()
            if connection.is_closed() or now - since > self.idle_lifetime:
                self._discard(connection)
                continue
            self._age_out(now)
            return connection
        return None

    async def _wait_turn(self) -> Connection | None:
        """A connection given back, or None: a slot is free for this caller to open one."""
        waiter: asyncio.Future[Connection | None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except asyncio.CancelledError:
            if not waiter.done():
                self._waiters.remove(waiter)
            elif not waiter.cancelled() and waiter.exception() is None:
                self._pass_on_abandoned(waiter.result())
            raise

    def _pass_on_abandoned(self, handed: Connection | None) -> None:
        """What a caller was handed as it gave up (a connection, or a free slot: None)."""
        if handed is None:
            self._free_slot()  # the slot reserved for this caller
        elif self._reusable(handed):
            self._pass_on(handed)
        else:
            self._discard(handed)

    async def release(self, connection: Connection) -> None:
        """Take a connection back: rolled back if a transaction was left open, then lent
        to the oldest waiter or kept idle; one that broke, or was opened before the
        latest expire(), is closed."""
        if not connection.is_closed() and connection.is_in_transaction():
            try:
                await connection.execute("ROLLBACK")
            except Exception:
                self._discard(connection)  # whatever broke it, it isn't lent again
                return
            except BaseException:
                self._discard(connection)
                raise
        if not self._reusable(connection):
            try:
                if not connection.is_closed():
                    await connection.close(timeout=1)
            finally:  # the slot is free once the connection is gone, not before
                self._discard(connection)
            return
        self._pass_on(connection)

    def expire(self) -> None:
        """Close every connection as soon as it is idle (new ones get new settings)."""
        self._generation += 1
        while self._idle:
            connection, _since = self._idle.pop()
            self._discard(connection)

    async def close(self) -> None:
        """Close the idle connections; those lent are closed when they come back.  Waiters
        get PoolClosedError."""
        self._closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(PoolClosedError("the connection pool was closed"))
        idle, self._idle = list(self._idle), deque()
        for connection, _since in idle:
            self._forget(connection)
        await asyncio.gather(
            *(connection.close(timeout=1) for connection, _ in idle), return_exceptions=True
        )

    @property
    def idle(self) -> int:
        return len(self._idle)

    def stats(self) -> PoolStats:
        idle = len(self._idle)
        return PoolStats(
            size=self.size,
            in_use=self.size - idle - self._opening,
            idle=idle,
            max_size=self.max_size,
            waiting=self.waiting,
        )

    # -- inside -------------------------------------------------------------------------

    async def _open(self, reserved: bool = False) -> Connection:
        if not reserved:
            self.size += 1
        generation = self._generation
        self._opening += 1
        try:
            async with asyncio.timeout(self.open_timeout):
                connection = await self._connect()
        except BaseException:
            self._free_slot()
            raise
        finally:
            self._opening -= 1
        if self._closed:  # closed while this connection was being opened
            connection.terminate()
            self._free_slot()
            raise PoolClosedError("the connection pool was closed")
        self._generations[id(connection)] = generation
        return connection

    def _reusable(self, connection: Connection) -> bool:
        """Open, in a pool still open, and made since the latest expire()."""
        return (
            not self._closed
            and not connection.is_closed()
            and self._generations.get(id(connection)) == self._generation
        )

    def _pass_on(self, connection: Connection) -> None:
        """Lend a connection to the oldest waiter still waiting, else keep it idle."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        self._idle.append((connection, time.monotonic()))

    def _discard(self, connection: Connection) -> None:
        """Close a connection at once (no round trip: it may be dead) and free its slot."""
        if not connection.is_closed():
            connection.terminate()
        self._forget(connection)

    def _forget(self, connection: Connection) -> None:
        self._generations.pop(id(connection), None)
        self._free_slot()

    def _free_slot(self) -> None:
        """A connection is gone: its slot passes to the oldest waiter (which opens one in
        its place; size unchanged), else it is free."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.size -= 1

    def _age_out(self, now: float) -> None:
        """Close the coldest idle connection if it has been idle too long (one per
        checkout: an amortized sweep, with no timer per connection)."""
        if self._idle and now - self._idle[0][1] > self.idle_lifetime:
            connection, _since = self._idle.popleft()
            self._discard(connection)
