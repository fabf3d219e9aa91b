from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import URL

from ctxstore.errors import EmbeddedServerUnavailableError
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.redis import RedisStorage
from tests.pg_harness import PgTestServer, build_template, planned_source, start_server


def pytest_report_header() -> list[str]:
    return [f"ctxstore PostgreSQL for tests: {planned_source()}"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that talks to PostgreSQL, so CI can rerun just those elsewhere."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        if callspec is not None and callspec.params.get("backend") == "redis":
            item.add_marker(pytest.mark.redis)
        if "pg_server" in fixtures or on_postgres:
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgTestServer]:
    try:
        server = start_server()
    except EmbeddedServerUnavailableError as error:
        pytest.skip(f"no PostgreSQL for the tests: {error}")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="session")
def template_database(pg_server: PgTestServer) -> str:
    return build_template(pg_server)


@pytest.fixture
def database_url(pg_server: PgTestServer, template_database: str) -> Iterator[URL]:
    """A fresh database at the head revision, dropped after the test."""
    name = pg_server.new_name("db")
    url = pg_server.create(name, template=template_database)
    try:
        yield url
    finally:
        pg_server.drop(name)


@pytest.fixture
def empty_database_url(pg_server: PgTestServer) -> Iterator[URL]:
    """A fresh database with no schema at all."""
    name = pg_server.new_name("empty")
    url = pg_server.create(name)
    try:
        yield url
    finally:
        pg_server.drop(name)


@pytest.fixture
async def pg_storage(database_url: URL) -> AsyncIterator[PostgresStorage]:
    storage = PostgresStorage.from_url(database_url)
    try:
        yield storage
    finally:
        await storage.close()


REDIS_URL_ENV = "CTXSTORE_TEST_REDIS_URL"


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis the tests may write under their own key prefixes; skips when none answers."""
    url = os.environ.get(REDIS_URL_ENV, "redis://127.0.0.1:6379/0")
    try:
        import redis  # noqa: PLC0415

        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        client.ping()
        client.close()
    except Exception as error:
        pytest.skip(f"no Redis answers at {url} ({type(error).__name__}); set {REDIS_URL_ENV}")
    return url


async def drop_prefix(storage: RedisStorage) -> None:
    """Delete the test's keys (and only those: the Redis may be shared)."""
    client = storage._client
    async for key in client.scan_iter(match=f"{storage.prefix}*", count=500):
        await client.delete(key)


@pytest.fixture
async def redis_storage(redis_url: str) -> AsyncIterator[RedisStorage]:
    """A RedisStorage under a prefix of its own; its keys are deleted afterwards."""
    prefix = f"ctxstore-test-{uuid.uuid4().hex[:10]}:session"
    storage = RedisStorage.from_url(redis_url, prefix=prefix, ttl_seconds=600)
    try:
        yield storage
    finally:
        await drop_prefix(storage)
        await storage.close()


@pytest.fixture(params=["memory", "postgres", "redis"])
def backend(request: pytest.FixtureRequest) -> tuple[str, object]:
    """Which backend a conformance test runs on, and what it needs."""
    if request.param == "postgres":
        return ("postgres", request.getfixturevalue("database_url"))
    if request.param == "redis":
        return ("redis", request.getfixturevalue("redis_url"))
    return ("memory", None)


@pytest.fixture
async def storage(
    backend: tuple[str, object],
) -> AsyncIterator[MemoryStorage | PostgresStorage | RedisStorage]:
    """Every backend, for the shared conformance suite."""
    kind, target = backend
    if kind == "postgres":
        assert isinstance(target, URL)
        async with PostgresStorage.from_url(target) as postgres:
            yield postgres
    elif kind == "redis":
        prefix = f"ctxstore-test-{uuid.uuid4().hex[:10]}:session"
        async with RedisStorage.from_url(str(target), prefix=prefix) as redis_store:
            try:
                yield redis_store
            finally:
                await drop_prefix(redis_store)
    else:
        async with MemoryStorage() as memory:
            yield memory
