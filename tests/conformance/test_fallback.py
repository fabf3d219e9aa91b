"""The storage contract on FallbackStorage, healthy and degraded.

- healthy: the primary is PostgreSQL and answers, so every call is served by it;
- degraded: the primary is a PostgresStorage pointed at a port where nothing listens, so
  every call fails there with StorageUnavailableError and is served by the secondary.

Either way the caller sees one store keeping the whole contract.  The secondary is a
MemoryStorage in both.  What happens when the primary comes back (reconciliation) is
tested in tests/unit and tests/integration/test_faults.py.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta

import pytest
from sqlalchemy import URL

from ctxstore import (
    EngineSettings,
    FallbackStorage,
    Limits,
    MemoryStorage,
    PostgresStorage,
    RedisStorage,
)
from ctxstore.errors import SessionOwnerError, StorageUnavailableError
from ctxstore.storage.journal import Operation
from ctxstore.storage.store import Store
from tests.conformance.contract import (
    DEFAULT_LIMITS,
    StorageFactory,
    VersionedContract,
    turn,
)


def unused_port() -> int:
    """A local port nothing listens on (bound by the OS, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def unreachable_postgres(ttl: timedelta | None, limits: Limits) -> PostgresStorage:
    """A PostgresStorage whose every call fails fast with StorageUnavailableError."""
    return PostgresStorage.from_url(
        f"postgresql://ctxstore@127.0.0.1:{unused_port()}/nowhere",
        ttl=ttl,
        limits=limits,
        settings=EngineSettings(connect_timeout=1.0, pool_timeout=1.0),
        operation_timeout=2.0,
    )


class TestFallbackHealthy(VersionedContract):
    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[FallbackStorage]:
            primary = PostgresStorage.from_url(database_url, ttl=ttl, limits=limits)
            secondary = MemoryStorage(ttl=ttl, limits=limits)
            async with FallbackStorage(primary, secondary, probe_interval=0.5) as storage:
                yield storage
                # The suite ran on PostgreSQL: no call ever needed the secondary.
                assert storage.stats.failovers == 0
                assert not storage.degraded

        return make

    async def test_the_primary_serves(self, storage: FallbackStorage) -> None:
        await storage.save("p", turn(0))
        assert await storage.primary.load("p") == turn(0)
        assert not await storage.secondary.exists("p")


@asynccontextmanager
async def degraded(
    secondary: Store, ttl: timedelta | None, limits: Limits
) -> AsyncIterator[FallbackStorage]:
    primary = unreachable_postgres(ttl, limits)
    with pytest.raises(StorageUnavailableError):
        await primary.exists("probe")  # the setup is what these classes claim
    # Probe rarely: the primary never comes back, and each probe costs a refused connection.
    # The shared test Redis keeps nothing on disk and is never killed here: its journal is
    # accepted as it is (tests/integration/test_fallback_durability.py kills Redis).
    async with FallbackStorage(
        primary, secondary, probe_interval=60.0, journal_loss="accept"
    ) as storage:
        yield storage
        assert storage.stats.recoveries == 0
        # Nothing reached the primary: every write the secondary acknowledged is in the
        # journal, in order, for the primary.
        assert storage.degraded or storage.stats.degraded_calls == 0
        assert await storage.journal.size() == storage.stats.journaled


class TestFallbackDegraded(VersionedContract):
    @pytest.fixture
    def make_storage(self) -> StorageFactory:
        def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AbstractAsyncContextManager[FallbackStorage]:
            return degraded(MemoryStorage(ttl=ttl, limits=limits), ttl, limits)

        return make

    async def test_erase_user_removes_every_session_and_the_profile(
        self, storage: FallbackStorage
    ) -> None:
        """Overrides the contract's: degraded, an erasure waits for the store of record."""
        await storage.save("e1", turn(0), user_id="erase-me")
        with pytest.raises(StorageUnavailableError, match="erase_user needs the primary"):
            await storage.erase_user("erase-me")
        assert await storage.load("e1") == turn(0)

    async def test_erasure_finds_a_session_another_user_tried_to_take(
        self, storage: FallbackStorage
    ) -> None:
        """Overrides the contract's: the secondary refuses the other user; the erasure
        waits for the store of record."""
        await storage.save("taken", turn(0), user_id="erase-me")
        with pytest.raises(SessionOwnerError):
            await storage.append("taken", turn(1), user_id="taker")
        with pytest.raises(StorageUnavailableError, match="erase_user needs the primary"):
            await storage.erase_user("erase-me")
        assert await storage.load("taken") == turn(0)

    async def test_the_secondary_serves(self, storage: FallbackStorage) -> None:
        await storage.save("d", turn(0))
        assert storage.degraded
        assert storage.stats.failovers == 1
        assert await storage.secondary.load("d") == turn(0)
        assert await storage.load("d") == turn(0)
        [journaled] = [entry.operation for entry in await storage.journal.head(10)]
        assert len(journaled.write_id) == 32  # each write its own id
        assert journaled == Operation(
            "save", "d", messages=tuple(turn(0)), uncertain=True, write_id=journaled.write_id
        )


class TestFallbackDegradedOnRedis(TestFallbackDegraded):
    """The same, with the journal in Redis: every accepted input survives its encoding."""

    @pytest.fixture
    def make_storage(self, redis_url: str, redis_prefix: str) -> StorageFactory:
        def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AbstractAsyncContextManager[FallbackStorage]:
            secondary = RedisStorage.from_url(
                redis_url, prefix=redis_prefix, ttl=ttl, limits=limits
            )
            return degraded(secondary, ttl, limits)

        return make
