"""Revision 1008 up and down with sessions seeded before it: the ledger of contracts.

Up: every row is as it was; contracts are recorded through the function the app role
writes with, and an erasure's part deletes the user's pieces and keeps the entries.
Down: the ledger gone, the rows as they were and the catalog a fresh 1007's (the replaced
function as it was); up again works, with an empty ledger.  (tests/integration's ledger
tests record, read back and verify through the store, at the head.)
"""

from __future__ import annotations

from sqlalchemy import URL

from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.seed import seed_messages
from tests.migrations.test_database_roles import run_sql

ROWS = """
SELECT (SELECT md5(string_agg(s::text, '|' ORDER BY session_id)) FROM sessions AS s),
       (SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM messages AS m)
"""


RECORD = """
SELECT (ctxstore_record_contract_v1('{user}-s', '{user}', 't1', NULL, 'cl100k_base', 1, 1, 0,
        0, NULL, ARRAY[sha256('{user}'::bytea)], ARRAY[false], ARRAY[sha256('{user}'::bytea)],
        ARRAY['{user}'], ARRAY[NULL::bigint], ARRAY[NULL::bytea], sha256('b'::bytea))).entry_seq
"""
COUNTS = """
SELECT (SELECT count(*) FROM contract_entries), (SELECT count(*) FROM contract_pieces),
       (SELECT count(*) FROM contract_chains WHERE erased_at IS NOT NULL)
"""


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
    for user in ("kept", "erased"):
        assert run_sql(url, RECORD.format(user=user))[0] == [(1,)]
    erased = "SELECT ctxstore_erase_ledger_v1('erased-s', 'erased')"
    assert run_sql(url, erased)[0] == [(True,)]
    assert run_sql(url, COUNTS)[0] == [(2, 1, 1)]  # the entries stay, the words go

    assert run_sql(url, ROWS)[0][0] == before
    migrations.downgrade(url, "1007")
    assert run_sql(url, ROWS)[0][0] == before
    assert databases_differ(url, second_empty_database) == []

    migrations.upgrade(url, "1008")
    assert run_sql(url, "SELECT count(*) FROM contract_entries")[0] == [(0,)]
