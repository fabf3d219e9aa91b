"""Storages for the adapter tests: one database per module, a session id per test."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import URL

from ctxstore.storage.postgres import PostgresStorage


@pytest.fixture
async def pg(module_database_url: URL) -> AsyncIterator[PostgresStorage]:
    """A PostgresStorage used from the test's own event loop."""
    async with PostgresStorage.from_url(module_database_url) as storage:
        yield storage


@pytest.fixture
def sync_pg(module_database_url: URL) -> Iterator[PostgresStorage]:
    """A PostgresStorage used from synchronous code only (it gets a portal loop)."""
    from ctxstore.adapters import call_blocking  # noqa: PLC0415

    storage = PostgresStorage.from_url(module_database_url)
    try:
        yield storage
    finally:
        call_blocking(storage, storage.close)


@pytest.fixture
def sid() -> str:
    """A session id of this test's own (the module's tests share one database)."""
    return f"adapter-{uuid.uuid4().hex[:12]}"
