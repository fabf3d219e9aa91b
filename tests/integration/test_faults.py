"""Faults on a real server: every one ends in a typed error or a transparent read retry,
no partial write, and a healthy pool afterwards."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import EngineSettings, MemoryStorage, Message, PostgresStorage
from ctxstore.db.engine import create_engine
from ctxstore.errors import StorageError, StorageTimeoutError, StorageUnavailableError
from ctxstore.storage.fallback import FallbackStorage
from tests.faults import TcpProxy


def msgs(count: int, tag: str = "m") -> list[Message]:
    return [Message(role="user", content=f"{tag} {i}") for i in range(count)]


async def admin_sql(url: URL, sql: str) -> Any:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            result = await conn.execute(text(sql))
            value = result.scalar() if result.returns_rows else None
            await conn.commit()
            return value
    finally:
        await engine.dispose()


async def test_a_connection_killed_mid_transaction_writes_nothing(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", msgs(3))
        async with storage.engine.begin() as conn:  # make the save slow enough to hit
            await conn.execute(
                text(
                    "CREATE FUNCTION slow() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN PERFORM pg_sleep(0.01); RETURN NEW; END $$"
                )
            )
            await conn.execute(
                text(
                    "CREATE TRIGGER slow BEFORE INSERT ON messages "
                    "FOR EACH ROW EXECUTE FUNCTION slow()"
                )
            )

        async def kill_soon() -> int:
            await asyncio.sleep(0.4)
            return int(
                await admin_sql(
                    database_url,
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = 'ctxstore' AND state <> 'idle' "
                    "AND pid <> pg_backend_pid() AND datname = current_database()",
                )
            )

        bigger = [*msgs(3), *msgs(400, "new")]
        outcome, killed = await asyncio.gather(
            storage.save("s", bigger), kill_soon(), return_exceptions=True
        )
        assert killed == 1
        assert isinstance(outcome, StorageUnavailableError), outcome
        assert await storage.load("s") == msgs(3)  # nothing of the killed save
        await storage.save("s", [*msgs(3), *msgs(2, "after")])  # the pool is healthy
        assert len(await storage.load("s")) == 5


async def test_a_black_holed_connection_times_out_and_the_pool_recovers(
    proxied: tuple[TcpProxy, URL],
) -> None:
    proxy, url = proxied
    settings = EngineSettings(connect_timeout=1.0, command_timeout=5.0)
    async with PostgresStorage.from_url(url, settings=settings, operation_timeout=1.5) as storage:
        await storage.save("s", msgs(2))
        proxy.blackhole()
        started = time.monotonic()
        with pytest.raises(StorageTimeoutError):
            await storage.load("s")
        with pytest.raises(StorageTimeoutError):
            await storage.save("s", msgs(5))
        assert time.monotonic() - started < 5  # bounded by operation_timeout, twice
        proxy.forward()
        assert await storage.load("s") == msgs(2)  # the timed-out save wrote nothing
        await storage.save("s", msgs(4))
        assert await storage.load("s") == msgs(4)


async def test_an_unreachable_server_is_unavailable_fast(proxied: tuple[TcpProxy, URL]) -> None:
    proxy, url = proxied
    async with PostgresStorage.from_url(url, operation_timeout=5) as storage:
        await storage.save("s", msgs(1))
        proxy.refuse()
        started = time.monotonic()
        with pytest.raises(StorageUnavailableError):
            await storage.load("s")
        assert time.monotonic() - started < 2
        proxy.forward()
        assert await storage.load("s") == msgs(1)


async def test_a_read_on_a_connection_that_died_is_retried(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", msgs(2))
        await admin_sql(
            database_url,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'ctxstore' AND pid <> pg_backend_pid() "
            "AND datname = current_database()",
        )
        assert await storage.load("s") == msgs(2)  # no error reaches the caller
        assert storage.read_retries <= 1


async def test_statement_timeout_is_a_typed_error_and_writes_nothing(database_url: URL) -> None:
    settings = EngineSettings(statement_timeout_ms=300)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        await storage.save("s", msgs(2))
        await admin_sql(
            database_url,
            "CREATE FUNCTION snooze() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN IF NEW.content = 'slow' THEN PERFORM pg_sleep(2); END IF; RETURN NEW; END $$",
        )
        await admin_sql(
            database_url,
            "CREATE TRIGGER snooze BEFORE INSERT ON messages "
            "FOR EACH ROW EXECUTE FUNCTION snooze()",
        )
        with pytest.raises(StorageTimeoutError, match="statement_timeout"):
            await storage.save("s", [*msgs(2), Message(role="user", content="slow")])
        assert await storage.load("s") == msgs(2)
        await storage.save("s", msgs(3))
        assert await storage.load("s") == msgs(3)


async def test_a_schema_change_under_a_running_pool(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", msgs(3))
        for _ in range(3):  # warm the prepared-statement caches
            assert await storage.load("s") == msgs(3)
            await storage.snapshot("s")
        await admin_sql(database_url, "ALTER TABLE messages ALTER COLUMN name TYPE varchar(500)")
        await admin_sql(database_url, "ALTER TABLE sessions ADD COLUMN deploy_marker int")
        failures = 0
        for _ in range(3):
            try:
                assert await storage.load("s") in (msgs(3), msgs(4))
                assert (await storage.snapshot("s")).messages in (msgs(3), msgs(4))
                await storage.save("s", msgs(4))
            except StorageError as error:
                failures += 1  # a stale cached statement: typed, and only once
                print(f"after the schema change: {error}")
        assert failures <= 1
        assert await storage.load("s") == msgs(4)


async def test_fallback_serves_the_outage_and_replays_it(
    proxied: tuple[TcpProxy, URL], database_url: URL
) -> None:
    proxy, url = proxied
    primary = PostgresStorage.from_url(url, operation_timeout=3)
    direct = PostgresStorage.from_url(database_url)  # another worker that still reaches it
    fallback = FallbackStorage(primary, MemoryStorage(), probe_interval=0)
    async with fallback, direct:
        await fallback.save("a", msgs(2, "a"))
        await fallback.save("b", msgs(2, "b"))
        await fallback.save("gone", msgs(1))
        proxy.refuse()
        # During the outage: acknowledged writes land in the secondary and the journal.
        await fallback.append("a", msgs(2, "a-outage"))
        await fallback.save("new", msgs(1, "born in the outage"))
        await fallback.append("b", msgs(1, "b-outage"))
        await fallback.delete("gone")
        assert fallback.degraded and fallback.stats.failovers == 1
        assert fallback.stats.journaled == await fallback.journal.size() == 4
        # Meanwhile the other worker adds newer data to the primary for session b.
        await direct.append("b", msgs(1, "b-primary"))
        proxy.forward()
        await fallback.reconcile()
        assert not fallback.degraded and fallback.stats.recoveries == 1
        assert await direct.load("a") == [*msgs(2, "a"), *msgs(2, "a-outage")]
        assert await direct.load("new") == msgs(1, "born in the outage")
        assert await direct.load("b") == [
            *msgs(2, "b"),
            *msgs(1, "b-primary"),
            *msgs(1, "b-outage"),
        ]
        assert not await direct.exists("gone")
        assert fallback.stats.moved_on == 1  # b, merged: the outage's append after
        assert await fallback.journal.size() == 0
        assert not await fallback.secondary.exists("a")  # replayed copies removed


@pytest.fixture
def own_server() -> Any:
    """A PostgreSQL this test starts and stops itself (never the machine's shared one)."""
    from ctxstore.embedded import EmbeddedPostgres, bin_dir  # noqa: PLC0415
    from ctxstore.errors import EmbeddedServerUnavailableError  # noqa: PLC0415

    try:
        bin_dir()
    except EmbeddedServerUnavailableError as error:
        pytest.skip(f"restart test skipped: {error}")

    folder = tempfile.mkdtemp(prefix="ctxstore-restart-")
    server = EmbeddedPostgres(os.path.join(folder, "pgdata"))
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def test_server_stop_and_restart(own_server: Any) -> None:
    from ctxstore.db import migrations  # noqa: PLC0415

    url = await asyncio.to_thread(own_server.start)
    await asyncio.to_thread(migrations.upgrade, url)
    async with PostgresStorage.from_url(url, operation_timeout=5) as storage:
        await storage.save("s", msgs(2))
        await asyncio.to_thread(own_server.stop)
        with pytest.raises(StorageUnavailableError):
            await storage.load("s")
        with pytest.raises(StorageUnavailableError):
            await storage.save("s", msgs(3))
        await asyncio.to_thread(own_server.start)
        assert await storage.load("s") == msgs(2)
        await storage.save("s", msgs(3))
        assert await storage.load("s") == msgs(3)
