"""Revision 1005 up and down with sessions seeded before it: the listing's index.

Up: ``ix_sessions_user_id_created_at`` is there, valid, on (user_id, created_at DESC,
session_id DESC), ``ix_sessions_user_id`` is gone, every row is as it was, and the seeded
user's sessions list newest first (at head) through the new index.  Down: the old index
is back, the new one gone, the rows as they were and the catalog a fresh 1004's; up
again works.  An upgrade that failed half way, leaving an INVALID index of the new one's
name, builds it again, valid.
"""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

LISTING = "ix_sessions_user_id_created_at"
BY_USER = "ix_sessions_user_id"
#: The seeded user's 300 sessions (rows only: the listing reads no message), created a
#: minute apart, two of them in the same second to exercise the tie-break.
PATIENT = """
INSERT INTO sessions (session_id, user_id, message_count, created_at, updated_at)
SELECT 'patient-' || lpad(g::text, 3, '0'), 'patient', g % 7,
       timestamptz '2026-03-01' + least(g, 299) * interval '1 minute',
       timestamptz '2026-03-01' + g * interval '1 minute' + interval '3 minutes'
  FROM generate_series(1, 300) AS g
"""
INDEXES = f"""
SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid), i.indisvalid
  FROM pg_index AS i
 WHERE i.indrelid = 'sessions'::regclass
   AND i.indexrelid::regclass::text IN ('{LISTING}', '{BY_USER}')
"""
ROWS = """
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY session_id)) FROM sessions AS s),
       (SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM messages AS m)
"""
NEWEST_FIRST = """
SELECT session_id FROM sessions WHERE user_id = 'patient'
 ORDER BY created_at DESC, session_id DESC
"""


def indexes(url: URL) -> dict[str, tuple[str, bool]]:
    return {name: (definition, valid) for name, definition, valid in run_sql(url, INDEXES)[0]}


def stored(url: URL) -> tuple[object, ...]:
    return run_sql(url, ROWS)[0][0]


async def listed(url: URL) -> list[str]:
    async with PostgresStorage.from_url(url) as storage:
        return [item.session_id async for item in storage.iter_sessions("patient", page_size=40)]


def check_at_1005(url: URL, before: tuple[object, ...]) -> None:
    assert migrations.current(url) == "1005"
    assert indexes(url) == {
        LISTING: (
            f"CREATE INDEX {LISTING} ON public.sessions USING btree "
            "(user_id, created_at DESC, session_id DESC)",
            True,
        )
    }
    assert stored(url) == before


def check_at_1004(url: URL, before: tuple[object, ...], fresh: URL) -> None:
    assert migrations.current(url) == "1004"
    assert indexes(url) == {
        BY_USER: (f"CREATE INDEX {BY_USER} ON public.sessions USING btree (user_id)", True)
    }
    assert stored(url) == before
    assert databases_differ(url, fresh) == []


def test_1005_up_and_down_keeps_every_row(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1004")
    seed_messages(url, 2_000)
    run_sql(url, PATIENT, "ANALYZE sessions")
    before = stored(url)
    migrations.upgrade(second_empty_database, "1004")

    migrations.upgrade(url, "1005")
    check_at_1005(url, before)
    order = [session_id for (session_id,) in run_sql(url, NEWEST_FIRST)[0]]
    assert len(order) == 300 and order[:2] == ["patient-300", "patient-299"]  # the tie

    migrations.downgrade(url, "1004")
    check_at_1004(url, before, second_empty_database)

    migrations.upgrade(url, "1005")
    check_at_1005(url, before)
    migrations.upgrade(url, "head")  # the store is this code's: it needs the head
    assert asyncio.run(listed(url)) == order


def test_an_upgrade_that_failed_half_way_builds_the_index_again(empty_database_url: URL) -> None:
    """A concurrent build that fails leaves its index INVALID, and IF NOT EXISTS would keep
    it: the revision drops it and builds the right one."""
    url = empty_database_url
    migrations.upgrade(url, "1004")
    run_sql(url, PATIENT)
    with pytest.raises(Exception, match="could not create unique index"):
        run_sql(url, f"CREATE UNIQUE INDEX CONCURRENTLY {LISTING} ON sessions (user_id)")
    assert indexes(url)[LISTING][1] is False
    before = stored(url)

    migrations.upgrade(url, "1005")
    check_at_1005(url, before)
