"""Revision 1008 up and down with sessions seeded before it: the ledger of contracts.

Up: every row is as it was; contracts are recorded and read back exactly and verify; an
erasure through the replaced function erases the user's pieces and keeps the entries.
Down: the ledger gone, the rows as they were and the catalog a fresh 1007's (the two
replaced functions as they were); up again works, with an empty ledger.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.ledger import verify_ledger
from ctxstore.context.builder import ContextBuilder
from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

ROWS = """
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY session_id)) FROM sessions AS s),
       (SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM messages AS m)
"""


async def record_and_erase(url: URL) -> tuple[list[str], list[str | None], int, bool]:
    async with PostgresStorage.from_url(url) as storage:
        texts = []
        for user in ("kept", "erased"):
            await storage.save(f"{user}-s", [Message(role="user", content="膝盖疼")], user_id=user)
            builder = ContextBuilder(storage, record=True)
            texts.append(await builder.build_json(f"{user}-s", "t1", "还疼吗"))
        await storage.erase_user("erased")
        read = [await storage.read_contract("kept-s", "t1")]
        entries = len(await storage.list_contracts("erased-s"))
        report = await verify_ledger(storage)
    return texts, [found.text if found else None for found in read], entries, report.intact


def test_1008_up_and_down_keeps_every_row(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1007")
    seed_messages(url, 2_000)
    before = run_sql(url, ROWS)[0][0]
    migrations.upgrade(second_empty_database, "1007")

    migrations.upgrade(url, "1008")
    assert run_sql(url, ROWS)[0][0] == before
    texts, read, erased_entries, intact = asyncio.run(record_and_erase(url))
    assert read == texts[:1] and erased_entries == 1 and intact
    pieces = "SELECT count(*) FROM contract_pieces WHERE session_id = 'erased-s'"
    assert run_sql(url, pieces)[0] == [(0,)]

    run_sql(url, "DELETE FROM sessions WHERE session_id IN ('kept-s')")
    run_sql(url, "DELETE FROM messages WHERE session_id IN ('kept-s')")
    assert run_sql(url, ROWS)[0][0] == before
    migrations.downgrade(url, "1007")
    assert run_sql(url, ROWS)[0][0] == before
    assert databases_differ(url, second_empty_database) == []

    migrations.upgrade(url, "1008")
    assert run_sql(url, "SELECT count(*) FROM contract_entries")[0] == [(0,)]
