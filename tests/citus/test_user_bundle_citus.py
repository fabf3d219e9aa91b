"""A user's bundle on a distributed database: exported (sessions on every shard, read in
the bundle's order), erased, imported back in one transaction across the nodes, exported
again byte for byte; a second import is refused, a damaged one writes nothing."""

from __future__ import annotations

import pytest
from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.errors import BundleError, ConflictError
from tests.integration.test_user_bundle import USER, export, fill, sealed_store


async def test_export_erase_import_gives_the_same_bundle(database_url: URL) -> None:
    async with sealed_store(database_url) as storage:
        await fill(storage)
        bundle = await export(storage)
        assert (await storage.erase_user(USER)).sessions > 1
        with pytest.raises(BundleError):
            await storage.import_user([bundle[:-40]])  # cut: nothing written
        assert await export(storage) != bundle
        receipt = await storage.import_user([bundle])
        assert receipt.sessions > 1
        assert await export(storage) == bundle
        with pytest.raises(ConflictError):
            await storage.import_user([bundle])
    async with PostgresStorage.from_url(database_url) as plain:
        assert await plain.list_sessions(USER)  # listed on every shard
