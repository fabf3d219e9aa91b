"""Every named query of storage/postgres/queries/*.sql: used, prepared against a database
at head, and writing and reading the columns db/tables.py describes.

The .sql files are the pinned text of every statement: a change to one shows in review as
a change to SQL, and this module fails when a query no longer parses against the schema,
is no longer used, or its column lists drift from the tables.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlalchemy import URL

from ctxstore.db.tables import messages, summaries
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.storage.postgres import sql
from tests.migrations.test_distribution_rules import connect

SOURCES = Path(sql.__file__).parents[2]  # src/ctxstore
_USED = re.compile(r"\bsql\.([A-Z][A-Z0-9_]*)\b")
_BY_TABLE = {
    f"{kind}_{table}"
    for table in sql.STATE_TABLES
    for kind in ("legacy_states", "rewrite_state", "count_legacy_states", "reencrypt", "reseal")
}


def test_every_query_is_used_and_every_use_is_a_query() -> None:
    used = {
        name.lower()
        for path in SOURCES.rglob("*.py")
        for name in _USED.findall(path.read_text("utf-8"))
    }
    constants = {name.lower() for name in vars(sql) if name.isupper()}
    assert used - constants - set(sql.QUERIES) == set()
    assert set(sql.QUERIES) - used - _BY_TABLE == set()


def test_every_query_has_a_description_and_keyword_parameters() -> None:
    for name, statement in sql.QUERIES.items():
        assert statement.description, name
        assert "$" not in statement.text.replace("$$", ""), name


async def test_every_query_prepares_against_the_schema_at_head(database_url: URL) -> None:
    connection = await connect(database_url)
    try:
        for name, statement in sql.QUERIES.items():
            prepared = await connection.prepare(statement.sql)
            assert len(prepared.get_parameters()) == len(statement.parameters), name
    finally:
        await connection.close()


# -- the column lists, against the tables ---------------------------------------------------

_MESSAGE_READS = ("load_session", "newest", "newest_of_session", "newest_within", "span")
_READ = (*MESSAGE_COLUMN_ORDER, "key_id", "sealed")


async def _function_arguments(connection: object, function: str) -> list[str]:
    names = await connection.fetchval(  # type: ignore[attr-defined]
        "SELECT proargnames FROM pg_proc WHERE proname = $1", function
    )
    return [str(name) for name in names]


async def test_the_column_lists_match_the_tables(database_url: URL) -> None:
    connection = await connect(database_url)
    try:
        for name in _MESSAGE_READS:
            prepared = await connection.prepare(sql.QUERIES[name].sql)
            columns = [attribute.name for attribute in prepared.get_attributes()]
            assert tuple(columns[: len(_READ)]) == _READ, name
        # every column of messages but the key, as an array ``p_<column>``, in table order
        written = await _function_arguments(connection, "ctxstore_insert_messages_v2")
        assert written[2:] == [f"p_{c.name}" for c in messages.c if c.name != "session_id"]
        for function in ("ctxstore_append_v6", "ctxstore_append_if_unchanged_v3"):
            arguments = await _function_arguments(connection, function)
            assert [a for a in arguments if a in written[2:]] == written[2:], function
        # the append's one array of rows (revision 0025): seq, then the same columns
        fields = await connection.fetch(
            "SELECT attname FROM pg_attribute WHERE attnum > 0 AND attrelid = "
            "'ctxstore_message_row_v1'::regclass ORDER BY attnum"
        )
        assert [row["attname"] for row in fields] == ["seq", *sql.MESSAGE_WRITE_COLUMNS]
        state = await _function_arguments(connection, "ctxstore_write_state_v2")
        assert state[2:-2] == [f"p_{c}" for c in sql.STATE_COLUMNS]
        profile = await _function_arguments(connection, "ctxstore_write_profile_v1")
        assert profile[2:] == [f"p_{c}" for c in sql.PROFILE_COLUMNS]
        summary = await _function_arguments(connection, "ctxstore_insert_summary_v1")
        returned = [c.name for c in summaries.c if c.name != "session_id"]
        assert summary[-len(returned) :] == returned == list(sql.SUMMARY_COLUMNS)
        for name, statement in sql.QUERIES.items():
            arrays = {p.removeprefix("new_") for p in statement.parameters if p.startswith("new_")}
            columns = {"seq", *sql.MESSAGE_WRITE_COLUMNS}
            assert arrays - {"count", "hash"} in (set(), columns, {"rows"}), name
    finally:
        await connection.close()
