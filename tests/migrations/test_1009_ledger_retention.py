"""Revision 1009 up and down with a ledger recorded before it: the ledger's retention.

Up: every entry is as it was and still verifies, each chain beginning at its first
entry; the owner sets the ledger's period.  Down: the period deleted, the catalog a
fresh 1008's, the entries as they were; up again works.
"""

from __future__ import annotations

import pytest
from sqlalchemy import URL
from sqlalchemy.exc import DBAPIError

from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

ENTRIES = """
SELECT md5(string_agg(e::text, '|' ORDER BY session_id, entry_seq)) FROM contract_entries AS e
"""
RECORD = """
SELECT ctxstore_record_contract_v1('s' || n, 'u', 't', NULL, 'cl100k_base', 1, 1, 0, 0, NULL,
       ARRAY[sha256('a'::bytea)], ARRAY[false], ARRAY[sha256('a'::bytea)], ARRAY['a'],
       ARRAY[NULL::bigint], ARRAY[NULL::bytea], sha256(n::text::bytea))
  FROM generate_series(1, 50) AS n
"""


def test_1009_up_and_down_keeps_every_entry(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1008")
    seed_messages(url, 1_000)
    run_sql(url, RECORD)
    before = run_sql(url, ENTRIES)[0][0]
    migrations.upgrade(second_empty_database, "1008")

    migrations.upgrade(url, "1009")
    assert run_sql(url, ENTRIES)[0][0] == before
    assert run_sql(url, "SELECT DISTINCT first_entry FROM contract_chains")[0] == [(1,)]
    run_sql(url, "INSERT INTO ctxstore_retention_periods VALUES ('ledger', '365 days', 'dpo')")
    with pytest.raises(DBAPIError, match="ck_ctxstore_retention_periods_data_class_known"):
        run_sql(url, "INSERT INTO ctxstore_retention_periods VALUES ('logs', '1 day', 'x')")
    purged = "SELECT (ctxstore_purge_ledger_v1('s1', '1 day', false)).entries"
    assert run_sql(url, purged)[0] == [(0,)]  # nothing is older than a day

    migrations.downgrade(url, "1008")
    assert run_sql(url, ENTRIES)[0][0] == before
    assert run_sql(url, "SELECT count(*) FROM ctxstore_retention_periods")[0] == [(0,)]
    assert databases_differ(url, second_empty_database) == []

    migrations.upgrade(url, "1009")
    assert run_sql(url, ENTRIES)[0][0] == before
