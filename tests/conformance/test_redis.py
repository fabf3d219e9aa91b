"""The storage contract on RedisStorage (a key prefix per test, its keys deleted after).

Skips, saying why, when no Redis answers at 127.0.0.1:6379 (CTXSTORE_TEST_REDIS_URL
overrides).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from ctxstore import Limits, RedisStorage
from tests.conformance.contract import DEFAULT_LIMITS, StorageFactory, VersionedContract


class TestRedis(VersionedContract):
    @pytest.fixture
    def make_storage(self, redis_url: str, redis_prefix: str) -> StorageFactory:
        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[RedisStorage]:
            async with RedisStorage.from_url(
                redis_url, prefix=redis_prefix, ttl=ttl, limits=limits
            ) as storage:
                yield storage

        return make
