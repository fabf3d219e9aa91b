"""The storage's one driver and one pool: asyncpg only, statements prepared once."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import URL

from ctxstore import EngineSettings, Message, PostgresStorage


def turn(text: str) -> list[Message]:
    return [Message(role="user", content=text), Message(role="assistant", content="ok")]


async def test_the_storage_never_takes_a_connection_of_its_engine(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", turn("a"))
        await storage.append("s", turn("b"))
        assert len(await storage.load("s")) == 4
        await storage.delete("s")
        pool = storage.engine.sync_engine.pool
        assert pool.checkedin() + pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_statements_are_prepared_once_per_connection(database_url: URL) -> None:
    settings = EngineSettings(pool_size=1)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        for index in range(5):
            await storage.append("s", turn(f"{index}"))
            await storage.load("s")
        async with storage.driver() as driver:
            prepared = await driver.fetch(
                "SELECT statement FROM pg_prepared_statements WHERE NOT from_sql"
            )
    statements = [row["statement"] for row in prepared]
    assert statements  # asyncpg's statement cache holds them
    assert len(statements) == len(set(statements))  # each prepared once, then reused


async def test_the_settings_reach_the_storage_pool(database_url: URL) -> None:
    settings = EngineSettings(application_name="shared-app")
    storage = PostgresStorage(database_url, settings=settings)
    async with storage, storage.driver() as driver:
        assert await driver.fetchval("SHOW application_name") == "shared-app"
        assert await driver.fetchval("SHOW lock_timeout") == "10s"


async def test_a_call_cancelled_mid_statement_never_lends_its_connection_again(
    database_url: URL,
) -> None:
    settings = EngineSettings(pool_size=1)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        async with storage.driver() as driver:
            first = await driver.fetchval("SELECT pg_backend_pid()")

        async def sleeper() -> None:
            async with storage.driver() as driver:
                await driver.execute("SELECT pg_sleep(5)")

        task = asyncio.create_task(sleeper())
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with storage.driver() as driver:
            assert await driver.fetchval("SELECT pg_backend_pid()") != first
        assert storage.read_retries == 0


def test_ping_skip_window_is_deprecated() -> None:
    with pytest.warns(DeprecationWarning, match="ping_skip_window"):
        EngineSettings(ping_skip_window=1.0)
