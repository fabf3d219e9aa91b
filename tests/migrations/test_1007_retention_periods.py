"""Revision 1007 up and down with sessions seeded before it: the retention periods.

Up: every row is as it was, the owner sets a period and the app role reads it and may
not set one.  Down: the table gone, the rows as they were and the catalog a fresh
1006's; up again works, with no period.
"""

from __future__ import annotations

import pytest
from sqlalchemy import URL
from sqlalchemy.exc import DBAPIError

from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

ROWS = """
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY session_id)) FROM sessions AS s),
       (SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM messages AS m)
"""
SET = """
INSERT INTO ctxstore_retention_periods (data_class, keep_for, set_by)
VALUES ('summaries', interval '30 days', 'dpo')
"""


def test_1007_up_and_down_keeps_every_row(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1006")
    seed_messages(url, 2_000)
    before = run_sql(url, ROWS)[0][0]
    migrations.upgrade(second_empty_database, "1006")

    migrations.upgrade(url, "1007")
    assert run_sql(url, ROWS)[0][0] == before
    run_sql(url, SET)
    with pytest.raises(DBAPIError, match="ck_ctxstore_retention_periods_data_class_known"):
        run_sql(url, "INSERT INTO ctxstore_retention_periods VALUES ('logs', '1 day', 'x')")
    with pytest.raises(DBAPIError, match="ck_ctxstore_retention_periods_keep_for_a_day_or_more"):
        run_sql(url, "INSERT INTO ctxstore_retention_periods VALUES ('profiles', '1 hour', 'x')")

    migrations.downgrade(url, "1006")
    assert run_sql(url, ROWS)[0][0] == before
    assert databases_differ(url, second_empty_database) == []

    migrations.upgrade(url, "1007")
    assert run_sql(url, "SELECT count(*) FROM ctxstore_retention_periods")[0] == [(0,)]
