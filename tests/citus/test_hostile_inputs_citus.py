"""The hostile-input catalogue (tests/integration/test_hostile_inputs.py) on the cluster,
through PostgresStorage: the same outcome for every case as on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import Limits, PostgresStorage
from tests.integration.test_hostile_inputs import Opener, test_hostile_input

__all__ = ["open_store", "test_hostile_input"]


@pytest.fixture
def open_store(module_database_url: URL) -> Opener:
    @asynccontextmanager
    async def open_(limits: Limits) -> AsyncIterator[Any]:
        async with PostgresStorage.from_url(module_database_url, limits=limits) as store:
            yield store

    return open_
