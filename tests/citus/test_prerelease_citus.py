"""A distributed database where ctxstore 0.x left it (revision 0026) upgrades to the 1.0
baseline on Citus: the retired functions go from every node, the tables stay distributed
as they were, and 1.0 reads and writes what 0.x wrote."""

from __future__ import annotations

import asyncio
import uuid

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.encryption import Encryption, Keyring
from tests.citus.cluster import CitusCluster
from tests.citus.conftest import ctxstore, query
from tests.migrations import prerelease_data as data
from tests.migrations.prerelease import plain, restore_prerelease

_KINDS = """
SELECT logicalrelid::text, partmethod, repmodel, colocationid > 0 FROM pg_dist_partition
 WHERE logicalrelid::text NOT LIKE 'pg_%' ORDER BY 1"""
_RETIRED_ON_WORKERS = """
SELECT result FROM run_command_on_workers(
    $$SELECT count(*) FROM pg_proc WHERE proname = 'ctxstore_append_v5'$$)"""


async def test_a_distributed_prerelease_database_upgrades_to_the_baseline(
    citus_cluster: CitusCluster, citus_database_url: URL
) -> None:
    url = await citus_cluster.create_database(f"ctxstore_prerelease_{uuid.uuid4().hex[:8]}")
    try:
        await restore_prerelease(url)
        await asyncio.to_thread(ctxstore, "db", "distribute", "--database-url", plain(url))
        assert await query(url, _RETIRED_ON_WORKERS) != [("0",), ("0",)]
        await asyncio.to_thread(ctxstore, "db", "upgrade", "--database-url", plain(url))
        assert [tuple(row) for row in await query(url, _RETIRED_ON_WORKERS)] == [("0",), ("0",)]
        # Distributed as a database distributed at head: the tables it had as they were,
        # those later revisions made placed by their rules.
        assert await query(url, _KINDS) == await query(citus_database_url, _KINDS)
        sealing = Encryption(Keyring({data.MASTER_KEY_ID: data.MASTER_KEY}))
        turn = [Message(role="user", content="分布式的一问", turn_id="t7")]
        for sealed in (False, True):
            async with PostgresStorage.from_url(
                url, encryption=sealing if sealed else None
            ) as store:
                session_id = data.session_id(5, sealed=sealed)
                assert await store.load(session_id) == data.turn(5)
                await store.append(session_id, turn, user_id=data.user_id(5))
                assert await store.load(session_id) == [*data.turn(5), *turn]
    finally:
        await citus_cluster.drop_database(url.database or "")
        # Adding the workers to a new database makes Citus copy every role to them with
        # the coordinator's attributes: the shared database's owner loses its LOGIN there
        # until `db distribute` gives it back (docs/citus.md).
        shared = plain(citus_database_url)
        await asyncio.to_thread(ctxstore, "db", "distribute", "--database-url", shared)
