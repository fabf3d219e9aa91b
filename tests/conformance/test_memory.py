"""The storage contract on MemoryStorage, the reference every other backend is held to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from ctxstore import Limits, MemoryStorage
from tests.conformance.contract import DEFAULT_LIMITS, StorageFactory, VersionedContract


class TestMemory(VersionedContract):
    @pytest.fixture
    def make_storage(self) -> StorageFactory:
        @asynccontextmanager
        async def make(
            *, ttl: timedelta | None = None, limits: Limits = DEFAULT_LIMITS
        ) -> AsyncIterator[MemoryStorage]:
            async with MemoryStorage(ttl=ttl, limits=limits) as storage:
                yield storage

        return make
