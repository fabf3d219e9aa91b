"""The event loop a storage's connections belong to, and how synchronous code reaches it.

asyncpg connections (and so a PostgresStorage's pool) work only on the event loop that
opened them.  Framework interfaces are both synchronous and asynchronous, so every
adapter call goes through here, keyed by the storage:

- the first asynchronous call makes the running loop the storage's home; later calls
  from that loop run directly;
- a call from any other thread or loop (a synchronous call, or another loop's) is never
  handed to a loop the application runs, which may end while the call is in flight and
  take it along: the storage moves to a portal, a loop of its own on a daemon thread
  that lives as long as the storage, and every call from then on is handed to it and
  awaited there (or waited for, from synchronous code);
- a home loop that has been closed or is not running is not waited for: the calling
  loop (or a new portal) becomes the home.

Whenever the home changes, a PostgresStorage's pooled connections, which belong to the old
loop, are dropped (so ``asyncio.run`` twice works); the new home opens its own.

A synchronous call made on the home loop's own thread while it runs (LangChain reading
``messages`` inside async code) cannot be served by that loop, which it blocks: the
storage moves to a portal, as for any other caller, and the call waits on the portal's
thread.  The old home's idle pooled connections are left to it.  Only when a call of the
storage is in flight on that loop (it may hold a row lock the portal's call would wait
for, and it cannot end while the thread is blocked) does the synchronous call raise
ConfigurationError instead, naming the asynchronous method to await.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from ctxstore.errors import ConfigurationError

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class _Home:
    loop: asyncio.AbstractEventLoop
    #: The portal thread running ``loop`` (None: a loop the application runs).
    thread: threading.Thread | None = None

    def usable(self) -> bool:
        return not self.loop.is_closed() and self.loop.is_running()


_homes: weakref.WeakKeyDictionary[object, _Home] = weakref.WeakKeyDictionary()
#: Calls of a storage running on a home loop the application runs (not a portal).
_in_flight: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()
_guard = threading.Lock()


def _open_portal(storage: object) -> _Home:
    loop = asyncio.new_event_loop()
    running = threading.Event()
    loop.call_soon(running.set)

    def serve() -> None:
        try:
            loop.run_forever()
        finally:
            loop.close()

    thread = threading.Thread(target=serve, name=f"ctxstore-portal-{id(storage):x}", daemon=True)
    thread.start()
    running.wait()
    # The loop stops (and its thread ends) with the storage.
    weakref.finalize(storage, loop.call_soon_threadsafe, loop.stop)
    return _Home(loop, thread)


async def on_home_loop(storage: object, call: Callable[[], Awaitable[T]]) -> T:
    """``await call()`` on the loop that serves ``storage`` (the running one if none does)."""
    running = asyncio.get_running_loop()
    with _guard:
        home = _homes.get(storage)
        if home is None or (home.loop is not running and not home.usable()):
            if home is not None:
                _forget_connections(storage)
            home = _homes[storage] = _Home(running)
        elif home.loop is not running and home.thread is None:
            home = _to_portal(storage)  # another loop's: it may end under the call
    if home.loop is not running:
        return await asyncio.wrap_future(_submit(home.loop, call))
    if home.thread is not None:  # a call made by a call running on the portal
        return await call()
    with _guard:
        _in_flight[storage] = _in_flight.get(storage, 0) + 1
    try:
        return await call()
    finally:
        with _guard:
            _in_flight[storage] -= 1


def call_blocking(
    storage: object,
    function: Callable[P, Awaitable[T]],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    """``await function(*args, **kwargs)`` from synchronous code, on the event loop that
    serves ``storage``; e.g. ``call_blocking(storage, storage.close)`` at the end of a
    synchronous program that used a synchronous adapter."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    with _guard:
        home = _homes.get(storage)
        if (
            home is not None
            and home.loop is running
            and (home.thread is not None or _in_flight.get(storage, 0))
        ):
            raise ConfigurationError(
                "a synchronous call on the event loop that serves the storage while "
                "another call of it is in flight there would wait for that call, which "
                "cannot finish while this thread waits: await the asynchronous method "
                "instead (e.g. aget_messages, aadd_messages, aclear)"
            )
        if home is None or home.thread is None or not home.usable():
            home = _to_portal(storage)  # an application's loop may end under the call
    return _submit(home.loop, lambda: function(*args, **kwargs)).result()


def _to_portal(storage: object) -> _Home:
    """Make a new portal the storage's home (call with ``_guard`` held)."""
    if storage in _homes:
        _forget_connections(storage)
    home = _homes[storage] = _open_portal(storage)
    return home


def _forget_connections(storage: object) -> None:
    """Drop the pooled connections the old home loop opened, without touching them
    (closing them would need that loop): the new home opens its own."""
    loaded = sys.modules.get("sqlalchemy.ext.asyncio")  # not loaded: no engine to forget
    engine = getattr(storage, "engine", None)
    if loaded is not None and isinstance(engine, loaded.AsyncEngine):
        engine.sync_engine.dispose(close=False)


def _submit(
    loop: asyncio.AbstractEventLoop, call: Callable[[], Awaitable[T]]
) -> concurrent.futures.Future[T]:
    async def run() -> T:
        return await call()

    return asyncio.run_coroutine_threadsafe(run(), loop)


async def settled(call: Awaitable[T]) -> T:
    """``await call``, which runs to its end even when the caller is cancelled meanwhile.

    For writes: a cancelled caller still gets CancelledError, but only once the write has
    landed or failed, so the session is never left with an outcome nobody waited for
    (the Agents SDK's own sessions behave the same way).
    """
    task = asyncio.ensure_future(call)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as error:
            cancelled = cancelled or error
    if cancelled is not None:
        if not task.cancelled():
            task.exception()  # retrieved: the caller hears of the cancellation instead
        raise cancelled
    return task.result()
