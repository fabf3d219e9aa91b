from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import URL

from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage
from tests.pg_harness import PgTestServer, build_template, planned_source, start_server


def pytest_report_header() -> list[str]:
    return [f"ctxstore PostgreSQL for tests: {planned_source()}"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that talks to PostgreSQL, so CI can rerun just those elsewhere."""
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("backend") == "postgres"
        if "pg_server" in fixtures or on_postgres:
            item.add_marker(pytest.mark.postgres)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgTestServer]:
    server = start_server()
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


@pytest.fixture(params=["memory", "postgres"])
def backend(request: pytest.FixtureRequest) -> URL | None:
    """Which backend the conformance suite runs on: None for memory, else a database URL."""
    if request.param == "memory":
        return None
    url: URL = request.getfixturevalue("database_url")
    return url


@pytest.fixture
async def storage(backend: URL | None) -> AsyncIterator[MemoryStorage | PostgresStorage]:
    """Every backend, for the shared conformance suite."""
    chosen: MemoryStorage | PostgresStorage = (
        MemoryStorage() if backend is None else PostgresStorage.from_url(backend)
    )
    async with chosen:
        yield chosen
