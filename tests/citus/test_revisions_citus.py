"""Every revision after the baseline goes up and down on a distributed database (issue 47).

For each checked revision: a database at its parent is distributed with ``ctxstore db
distribute`` and seeded, then the revision is applied, taken back and applied again, and
the database is brought to head. Its tables are distributed as those of a database
distributed at head (those it had as they were), the seeded
messages stay on their sessions, and ctxstore reads them and writes a turn after them.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from tests.citus.cluster import CitusCluster
from tests.citus.conftest import ctxstore, query
from tests.migrations.checked_revisions import checked_revisions, migrate, parent_of
from tests.migrations.prerelease import plain
from tests.migrations.seed import seed_messages

_KINDS = """
SELECT logicalrelid::text, partmethod, repmodel, colocationid > 0 FROM pg_dist_partition
 WHERE logicalrelid::text NOT LIKE 'pg_%' ORDER BY 1"""
_STORED = """
SELECT s.session_id, s.message_count, count(m.seq) FROM sessions AS s
  LEFT JOIN messages AS m USING (session_id) GROUP BY 1, 2 ORDER BY 1"""


@pytest.mark.parametrize("revision", checked_revisions())
async def test_each_checked_revision_goes_up_and_down_on_a_distributed_database(
    citus_cluster: CitusCluster, citus_database_url: URL, revision: str
) -> None:
    url = await citus_cluster.create_database(f"ctxstore_rev_{uuid.uuid4().hex[:8]}")
    try:
        parent = parent_of(revision)
        assert parent is not None
        await asyncio.to_thread(migrate, url, "upgrade", parent)
        await asyncio.to_thread(ctxstore, "db", "distribute", "--database-url", plain(url))
        seeded = await asyncio.to_thread(seed_messages, url, 1_000)
        stored = await query(url, _STORED)
        for direction, target in [("upgrade", revision), ("downgrade", parent)] * 2:
            await asyncio.to_thread(migrate, url, direction, target)
        await asyncio.to_thread(migrate, url, "upgrade", "head")
        # Distributed as a database distributed at head: what the parent had, unchanged,
        # and what later revisions made, placed by their rules (a reference table, say).
        assert await query(url, _KINDS) == await query(citus_database_url, _KINDS)
        assert await query(url, _STORED) == stored
        turn = [Message(role="user", content="分片上的一问", turn_id="t1")]
        session_id = seeded.session_ids[0]
        async with PostgresStorage.from_url(url) as store:
            before = await store.load(session_id)
            await store.append(session_id, turn)
            assert await store.load(session_id) == [*before, *turn]
    finally:
        await citus_cluster.drop_database(url.database or "")
        # A new database on Citus gives every role the coordinator's attributes on the
        # workers: the shared database's owner gets its LOGIN back (docs/citus.md).
        shared = plain(citus_database_url)
        await asyncio.to_thread(ctxstore, "db", "distribute", "--database-url", shared)
