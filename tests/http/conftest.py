from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.http.app import create_app
from ctxstore.http.auth import TokenRegistry
from ctxstore.http.settings import HttpSettings
from ctxstore.storage.postgres import PostgresStorage
from tests.http.live import Tokens


@pytest.fixture(scope="session")
def tokens() -> Tokens:
    return Tokens.make()


def settings_for(url: URL, tokens: Tokens, **options: object) -> HttpSettings:
    registry = TokenRegistry.parse(tokens.grants, source="test")
    return HttpSettings(database_url=url, tokens=registry, **options)  # type: ignore[arg-type]


@pytest.fixture
async def store(module_database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(module_database_url) as opened:
        yield opened


@pytest.fixture
async def client(
    module_database_url: URL, tokens: Tokens, store: PostgresStorage
) -> AsyncIterator[httpx.AsyncClient]:
    """The app in this process (ASGI, no socket) on the module's database, with the full
    token; the live tests run the real server."""
    app = create_app(settings_for(module_database_url, tokens, access_log=False), store=store)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://ctxstore.test", headers=tokens.header()
    ) as opened:
        yield opened


@pytest.fixture
def sid() -> str:
    """A session id of this test's own (the module shares one database)."""
    return f"s-{uuid.uuid4().hex[:12]}"
