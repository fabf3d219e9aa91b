from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore.errors import EmbeddedServerUnavailableError
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.redis import RedisStorage
from tests.faults import TcpProxy, socket_target, through
from tests.pg_harness import PgTestServer, build_template, planned_source, start_server
from tests.pooler import PgBouncer


def pytest_report_header() -> list[str]:
    return [
        f"ctxstore PostgreSQL for tests: {planned_source()}",
        f"ctxstore Redis for tests: {planned_redis()} (the Redis cases skip, saying why, "
        f"when it does not answer; {REDIS_URL_ENV} overrides)",
    ]


#: Lines for the end of the run's summary, from this process or its pytest-xdist workers.
SUMMARY_LINES: list[str] = []


def add_summary_line(config: pytest.Config, line: str) -> None:
    """Say ``line`` once at the end of the run (a worker hands it to its controller)."""
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput.setdefault("summary_lines", []).append(line)
    elif line not in SUMMARY_LINES:  # every worker collects the same tests: said once
        SUMMARY_LINES.append(line)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    for line in getattr(node, "workeroutput", {}).get("summary_lines", []):
        add_summary_line(node.config, line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in SUMMARY_LINES:
        terminalreporter.write_line(line)


#: ``CTXSTORE_SLOW_TESTS=0`` (``make test``) leaves the tests marked slow out, in one line.
SLOW_ENV = "CTXSTORE_SLOW_TESTS"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that talks to PostgreSQL or Redis, so CI can select or rerun them;
    leave the slow ones out when told, else run them first, so parallel processes share
    them and finish together."""
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow and os.environ.get(SLOW_ENV) == "0":
        config.hook.pytest_deselected(items=slow)
        left_out = set(slow)
        items[:] = [item for item in items if item not in left_out]
        add_summary_line(
            config,
            f"{len(slow)} slow tests not run ({SLOW_ENV}=0, as make test sets): "
            "`make test-slow` runs them, .ci/run runs both",
        )
    else:
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else {}
        if "redis_url" in fixtures or params.get("backend") == "redis":
            item.add_marker(pytest.mark.redis)
        if "pg_server" in fixtures or params.get("backend") in {"postgres", "fallback"}:
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
def pgbouncer(pg_server: PgTestServer) -> Iterator[PgBouncer]:
    """A real PgBouncer (pool_mode=transaction, two server connections) in front of the
    test server, for the whole run."""
    pooler = PgBouncer(pg_server.url)
    try:
        yield pooler
    finally:
        pooler.stop()


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


@pytest.fixture(scope="module")
def module_database_url(pg_server: PgTestServer, template_database: str) -> Iterator[URL]:
    """One database at the head revision for a whole module, whose tests keep to their
    own session ids (dropped after the module)."""
    name = pg_server.new_name("mod")
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
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"


def planned_redis() -> str:
    return os.environ.get(REDIS_URL_ENV, DEFAULT_REDIS_URL)


@pytest.fixture(scope="session")
def redis_url() -> str:
    """A Redis the tests may write under their own key prefixes; skips when none answers."""
    url = planned_redis()
    try:
        import redis  # noqa: PLC0415

        client = redis.Redis.from_url(url, socket_connect_timeout=2)
        client.ping()
        client.close()
    except Exception as error:
        pytest.skip(
            f"no Redis answers at {url} ({type(error).__name__}: {error}); "
            f"start one or set {REDIS_URL_ENV}"
        )
    return url


async def drop_keys(url: str, prefix: str) -> None:
    """Delete every key starting with ``prefix`` (and only those: the Redis may be shared)."""
    import redis.asyncio as redis_asyncio  # noqa: PLC0415

    client = redis_asyncio.from_url(url)
    try:
        async for key in client.scan_iter(match=f"{prefix}*", count=500):
            await client.delete(key)
    finally:
        await client.aclose()


def new_redis_prefix() -> str:
    # Hex and punctuation only: nothing a SCAN pattern would read as a wildcard.
    return f"ctxstore-test-{uuid.uuid4().hex[:12]}:session"


@pytest.fixture
async def redis_prefix(redis_url: str) -> AsyncIterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    prefix = new_redis_prefix()
    try:
        yield prefix
    finally:
        await drop_keys(redis_url, prefix)


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[Any]:
    """A plain redis.asyncio client, for writing and inspecting raw keys."""
    import redis.asyncio as redis_asyncio  # noqa: PLC0415

    client = redis_asyncio.from_url(redis_url)
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def redis_storage(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStorage]:
    """A RedisStorage under a prefix of its own; its keys are deleted afterwards."""
    async with RedisStorage.from_url(
        redis_url, prefix=redis_prefix, ttl=timedelta(minutes=10)
    ) as storage:
        yield storage


# -- the parametrized matrix of tests/conformance/test_context_assembly.py -------------------
# The storage suites are classes, one subclass per backend (tests/conformance/contract.py);
# these two fixtures remain for the context-assembly module, which narrows ``backend``.


@pytest.fixture(params=["memory", "postgres"])
def backend(request: pytest.FixtureRequest) -> tuple[str, object]:
    """Which backend a test runs on, and what it needs."""
    if request.param == "postgres":
        return ("postgres", request.getfixturevalue("database_url"))
    return ("memory", None)


@pytest.fixture
async def storage(backend: tuple[str, object]) -> AsyncIterator[MemoryStorage | PostgresStorage]:
    kind, target = backend
    if kind == "postgres":
        assert isinstance(target, URL)
        async with PostgresStorage.from_url(target) as postgres:
            yield postgres
    else:
        async with MemoryStorage() as memory:
            yield memory


@pytest.fixture
async def proxied(database_url: URL) -> AsyncIterator[tuple[TcpProxy, URL]]:
    """A TcpProxy in front of the test database, and the URL that goes through it."""
    proxy = TcpProxy(**socket_target(database_url))
    port = await proxy.start()
    try:
        yield proxy, through(port, database_url)
    finally:
        await proxy.stop()
