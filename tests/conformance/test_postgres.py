"""The storage contract on PostgresStorage (a fresh database per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest
from sqlalchemy import URL

from ctxstore import Limits, PostgresStorage
from tests.conformance.contract import DEFAULT_LIMITS, StorageFactory, VersionedContract


class TestPostgres(VersionedContract):
    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[PostgresStorage]:
            async with PostgresStorage.from_url(database_url, ttl=ttl, limits=limits) as storage:
                yield storage

        return make
