"""``recount`` on Citus: every countable message of every shard stored in the new encoding."""

from __future__ import annotations

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.recount import recount_store
from ctxstore.tokens import TokenCounter
from tests.citus.conftest import query


async def test_recount_reaches_every_shard(database_url: URL) -> None:
    o200k = TokenCounter("o200k_base")
    async with PostgresStorage.from_url(database_url) as storage:
        for n in range(8):  # sessions spread over the shards
            await storage.save(
                f"rc{n}",
                [
                    Message(role="user", content=f"膝盖疼 {n}.{k}", turn_id=f"t{k}",
                            timestamp="2026-12-04T09:00:00+08:00")
                    for k in range(5)
                ],
            )  # fmt: skip
        report = await recount_store(storage, o200k, batch_size=3, show=False)
    assert (report.recounted, report.sessions) == (40, 8)
    labels = await query(database_url, "SELECT DISTINCT token_encoding FROM messages")
    assert [row[0] for row in labels] == [o200k.count_label]
