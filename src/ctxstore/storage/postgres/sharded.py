"""Writes that run as their parts on a distributed (Citus) database.

One statement whose CTEs write two tables (a session row and its messages, a state and
its history) is one round trip on PostgreSQL.  Citus routes a statement to a single shard
only when its CTEs insert nothing; otherwise it runs the CTEs as separate steps, ships
their results to every worker and commits with two-phase commit.  On a distributed
database such a write runs instead as its parts, each routed to the session's shard, in
one transaction: one worker, a plain commit.  A :class:`Split` is used like the Statement
it wraps; each connection's database is asked once which way it runs.  A connection opened
before ``ctxstore db distribute`` keeps sending whole statements (slower, and correct)
until Citus refuses one; then every connection of the process asks again and sends the
parts from then on (the one write that met the refusal inside a transaction fails, with
nothing kept).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Callable
from typing import Any
from weakref import WeakKeyDictionary

from ctxstore.errors import DataKeyDestroyedError
from ctxstore.storage.postgres.statement import Driver, Statement

_DISTRIBUTED: WeakKeyDictionary[Any, bool] = WeakKeyDictionary()

#: For parts that write several shards and then data_keys (a reference table): one
#: connection per worker, so each worker's foreign-key checks see the transaction's rows.
SEQUENTIAL = "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"

# Citus's catalog exists only where the extension is installed: asked in two steps.
_HAS_CITUS = "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')"
_MISSING_KEYS = """
SELECT EXISTS (SELECT FROM unnest($1::bigint[]) AS k(key_id)
                WHERE NOT EXISTS (SELECT FROM data_keys AS d WHERE d.key_id = k.key_id))"""
_SESSIONS_DISTRIBUTED = """
SELECT EXISTS (SELECT FROM pg_dist_partition
                WHERE logicalrelid = to_regclass('sessions') AND partmethod = 'h')"""


async def distributed(driver: Driver) -> bool:
    """Whether ``sessions`` is sharded in the database of this connection (asked once)."""
    key = _cache_key(driver)
    known = _DISTRIBUTED.get(key) if key is not None else None
    if known is None:
        known = bool(await driver.fetchval(_HAS_CITUS)) and bool(
            await driver.fetchval(_SESSIONS_DISTRIBUTED)
        )
        if key is not None:
            _DISTRIBUTED[key] = known
    return known


def _cache_key(driver: Driver) -> Any:
    """The connection itself, or the one behind an asyncpg pool's proxy (which can't be
    weakly referenced); None: not cached."""
    for candidate in (driver, getattr(driver, "_con", None)):
        try:
            weakref.ref(candidate)
        except TypeError:
            continue
        return candidate
    return None


def pick(statement: Statement | Split, values: dict[str, Any]) -> dict[str, Any]:
    """The values ``statement`` takes, out of those of the whole write."""
    return {name: values[name] for name in statement.parameters}


#: The parts of a write: given the connection and the whole write's values, the row the
#: whole statement would return (None: it would return none).
Steps = Callable[[Driver, dict[str, Any]], Awaitable[Any]]


_NOT_SUPPORTED = "0A000"  # feature_not_supported: what Citus answers a statement it won't run


class _Parts:
    """What the parts returned (told apart from the whole statement's result)."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


class Split:
    """``whole`` on PostgreSQL; on a distributed database, ``steps`` in one transaction
    (the caller's, when it is in one).  Same parameters, same result."""

    __slots__ = ("name", "parameters", "steps", "whole")

    def __init__(self, whole: Statement, steps: Steps) -> None:
        self.whole = whole
        self.name = whole.name
        self.parameters = whole.parameters
        self.steps = steps

    async def _parts(self, driver: Driver, values: dict[str, Any]) -> Any:
        self.whole.arguments(values)  # the same check of the names as the whole's
        if driver.is_in_transaction():
            return await self._checked(driver, values)
        async with driver.transaction():
            return await self._checked(driver, values)

    async def _checked(self, driver: Driver, values: dict[str, Any]) -> Any:
        result = await self.steps(driver, values)
        # Sealed rows reference their data key, checked at commit (revision 0010); a worker
        # reports that check failing only as "could not commit", so it is made here first,
        # with the session's rows locked (rows, then keys: the lock order of every writer).
        keys = {values.get("key_id"), *(values.get("new_key_id") or ())} - {None}
        if keys and await driver.fetchval(_MISSING_KEYS, list(keys)):
            raise DataKeyDestroyedError(
                f"{self.name}: a data key this write was sealed under was destroyed (its "
                "user was erased) before the write committed; nothing of it was kept"
            )
        return result

    async def _run(self, driver: Driver, method: str, values: dict[str, Any]) -> Any:
        """The whole statement, or the parts (their result, or None: none)."""
        if await distributed(driver):
            return _Parts(await self._parts(driver, values))
        try:
            return await getattr(self.whole, method)(driver, **values)
        except Exception as error:
            # A connection opened before the database was distributed: Citus refuses some
            # whole statements outright (nothing ran).  Every connection of the process asks
            # again: this one at once outside a transaction (and the parts run), else when
            # next used (the caller's transaction has failed: that one write fails, with
            # nothing kept), the others before their next write.
            if getattr(error, "sqlstate", None) != _NOT_SUPPORTED:
                raise
            _DISTRIBUTED.clear()
            if driver.is_in_transaction() or not await distributed(driver):
                raise
            return _Parts(await self._parts(driver, values))

    async def fetchrow(self, driver: Driver, **values: Any) -> Any:
        found = await self._run(driver, "fetchrow", values)
        return found.result if isinstance(found, _Parts) else found

    async def fetchval(self, driver: Driver, **values: Any) -> Any:
        found = await self._run(driver, "fetchval", values)
        if isinstance(found, _Parts):
            return found.result[0] if found.result is not None else None
        return found

    async def fetch(self, driver: Driver, **values: Any) -> list[Any]:
        found = await self._run(driver, "fetch", values)
        return list(found.result or []) if isinstance(found, _Parts) else list(found)

    async def execute(self, driver: Driver, **values: Any) -> str:
        found = await self._run(driver, "execute", values)
        return "SPLIT" if isinstance(found, _Parts) else str(found)

    def __repr__(self) -> str:
        return f"Split({self.name!r})"
