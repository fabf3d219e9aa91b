"""Revision 1001 up and down with data seeded before it: what each direction leaves.

Up, the key is gone and the seeded sessions read back as they were; down, the database is
the baseline again catalog for catalog (the key back and validated, the functions the
baseline's), after the messages a direct write left without a session are deleted.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql, scalar
from tests.pg_harness import rows

KEY = "SELECT count(*) FROM pg_constraint WHERE conname = 'fk_messages_session_id_sessions'"


# Each session's count against its rows, and the rows' own columns.
STORED = """
SELECT s.session_id, s.message_count, count(m.seq), md5(string_agg(m.content, '' ORDER BY m.seq))
  FROM sessions AS s LEFT JOIN messages AS m USING (session_id)
 GROUP BY s.session_id, s.message_count ORDER BY s.session_id
"""


def stored(url: URL) -> list[tuple[object, ...]]:
    return asyncio.run(rows(url, STORED))


async def read_back(url: URL, session_ids: list[str]) -> int:
    """The messages ctxstore (at head) loads from these sessions."""
    async with PostgresStorage.from_url(url) as storage:
        return sum([len(await storage.load(session_id)) for session_id in session_ids])


def test_up_drops_the_key_and_keeps_every_message(empty_database_url: URL) -> None:
    migrations.upgrade(empty_database_url, "1000")
    seeded = seed_messages(empty_database_url, 2_000)
    before = stored(empty_database_url)

    migrations.upgrade(empty_database_url, "1001")

    assert scalar(empty_database_url, KEY) == 0
    assert stored(empty_database_url) == before
    migrations.upgrade(empty_database_url, "head")
    assert asyncio.run(read_back(empty_database_url, seeded.session_ids)) == 2_000


def test_down_deletes_what_a_direct_write_left_and_is_the_baseline_again(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    migrations.upgrade(empty_database_url, "1001")
    seed_messages(empty_database_url, 500)
    before = stored(empty_database_url)
    # What only a direct write does now that no key refuses it: a message of no session.
    run_sql(
        empty_database_url,
        "INSERT INTO messages (session_id, seq, role, content, digest, token_count, "
        "format_version) VALUES ('gone', 0, 'user', '膝盖疼', sha256('x'), 3, 2)",
    )

    migrations.downgrade(empty_database_url, "1000")

    assert scalar(empty_database_url, "SELECT count(*) FROM messages") == 500
    assert stored(empty_database_url) == before
    migrations.upgrade(second_empty_database, "1000")
    assert databases_differ(empty_database_url, second_empty_database) == []
