"""The storage contract on PostgresStorage (a fresh database per test)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest
from sqlalchemy import URL

from ctxstore import Limits, PostgresStorage
from ctxstore.encryption import Encryption, Keyring
from tests.conformance.contract import DEFAULT_LIMITS, StorageFactory, VersionedContract
from tests.pooler import PgBouncer


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


class TestPostgresEncrypted(TestPostgres):
    """The whole contract again with encryption at rest on (one keyring per test)."""

    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        encryption = Encryption(Keyring({"test": os.urandom(32)}))

        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[PostgresStorage]:
            async with PostgresStorage.from_url(
                database_url, ttl=ttl, limits=limits, encryption=encryption
            ) as storage:
                yield storage

        return make


class TestPostgresThroughPgBouncer(TestPostgres):
    """The whole contract through a real PgBouncer in transaction pooling mode, two server
    connections handed out round robin (tests/pooler.py)."""

    @pytest.fixture
    def make_storage(self, database_url: URL, pgbouncer: PgBouncer) -> StorageFactory:
        pooled = pgbouncer.url(database_url)

        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[PostgresStorage]:
            async with PostgresStorage.from_url(pooled, ttl=ttl, limits=limits) as storage:
                yield storage

        return make
