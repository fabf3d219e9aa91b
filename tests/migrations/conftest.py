"""Fixtures of the migration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import URL

from tests.pg_harness import PgTestServer


@pytest.fixture
def second_empty_database(pg_server: PgTestServer) -> Iterator[URL]:
    name = pg_server.new_name("empty")
    url = pg_server.create(name)
    yield url
    pg_server.drop(name)
