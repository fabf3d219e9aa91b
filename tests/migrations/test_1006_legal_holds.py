"""Revision 1006 up and down with sessions seeded before it: legal holds.

Up: every row is as it was, and the functions the previous release calls (by their
unchanged names and signatures) respect a hold: its purge keeps a held expired session,
its erasure of a held user raises SQLSTATE CX002 naming the hold, its deletion of a held
session likewise.  What they do for a session under no hold is what they did.  Down: the
functions as revision 1001 left them, the holds gone, the rows as they were and the
catalog a fresh 1005's; up again works.
"""

from __future__ import annotations

import pytest
from sqlalchemy import URL
from sqlalchemy.exc import DBAPIError

from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

#: Two users' sessions, each with a message, all expired: one held by its user's hold.
SEED = """
INSERT INTO sessions (session_id, user_id, message_count, expires_at)
SELECT u || '-' || g, u, 1, now() - interval '1 hour'
  FROM unnest(ARRAY['kept', 'gone']) AS u, generate_series(1, 3) AS g
"""
MESSAGES = """
INSERT INTO messages (session_id, seq, role, content, digest, format_version)
SELECT session_id, 0, 'user', '膝盖疼', '\\x00', 2 FROM sessions WHERE user_id IN ('kept', 'gone')
"""
HOLD = "INSERT INTO legal_holds (user_id, reason, placed_by) VALUES ('kept', 'matter 1', 'legal')"
ROWS = """
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY session_id)) FROM sessions AS s),
       (SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM messages AS m)
"""
LEFT = "SELECT user_id, count(*) FROM sessions WHERE user_id IN ('kept', 'gone') GROUP BY 1"


def stored(url: URL) -> tuple[object, ...]:
    return run_sql(url, ROWS)[0][0]


def left(url: URL) -> dict[str, int]:
    return dict(run_sql(url, LEFT)[0])


def test_1006_up_and_down_keeps_every_row_and_binds_the_previous_releases_calls(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1005")
    seed_messages(url, 2_000)
    run_sql(url, SEED, MESSAGES)
    before = stored(url)
    migrations.upgrade(second_empty_database, "1005")

    migrations.upgrade(url, "1006")
    assert stored(url) == before
    run_sql(url, HOLD)
    with pytest.raises(DBAPIError, match=r"user kept is under a legal hold: .*matter 1") as held:
        run_sql(url, "SELECT * FROM ctxstore_erase_user_sessions_v2('kept')")
    assert getattr(held.value.orig, "sqlstate", None) == "CX002"
    with pytest.raises(DBAPIError, match="session kept-1 is under a legal hold"):
        run_sql(url, "SELECT ctxstore_delete_session_v1('kept-1', false)")
    assert run_sql(url, "SELECT ctxstore_delete_session_v1('kept-1', true)")[0] == [(False,)]
    purged = run_sql(url, "SELECT count(*) FROM ctxstore_purge_batch_v1(100, NULL)")[0]
    assert purged == [(3,)] and left(url) == {"kept": 3}
    assert run_sql(url, "SELECT count(*) FROM messages WHERE session_id LIKE 'gone-%'")[0] == [(0,)]

    migrations.downgrade(url, "1005")
    assert migrations.current(url) == "1005"
    assert databases_differ(url, second_empty_database) == []
    # The holds went with the revision: 1001's purge takes the expired sessions again.
    assert run_sql(url, "SELECT count(*) FROM ctxstore_purge_batch_v1(100, NULL)")[0] == [(3,)]
    assert left(url) == {}

    migrations.upgrade(url, "1006")
    assert run_sql(url, "SELECT count(*) FROM legal_holds")[0] == [(0,)]
