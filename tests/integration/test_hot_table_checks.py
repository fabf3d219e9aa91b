"""The CHECK constraints of ``messages`` stay (issue 47, item 6): the app role may write the
table directly and through the append function, and each refusal below is the database's
alone: nothing in the app role's reach writes a row that would make a session unreadable.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage

#: constraint -> the columns of a direct INSERT that break it (the rest valid).
BREAKING = {
    "ck_messages_seq_non_negative": {"seq": -1},
    "ck_messages_role_known": {"role": "robot"},
    "ck_messages_metadata_object": {"metadata": "[1, 2]"},
    "ck_messages_sealed_with_key": {"sealed": b"\x00"},
    "ck_messages_ts_nanos_below_a_microsecond": {"ts_nanos": 1000},
}
#: constraint -> the ctxstore_message_row_v1 fields of an append that break it.
BREAKING_ROWS = {
    "ck_messages_role_known": {"role": "robot"},
    "ck_messages_metadata_object": {"metadata": "[1, 2]"},
    "ck_messages_sealed_with_key": {"sealed": b"\x00"},
    "ck_messages_ts_nanos_below_a_microsecond": {"ts_nanos": 1000},
}
#: Columns given as text in a direct INSERT, as the append's rows carry them.
CASTS = {"metadata": "jsonb", "ts": "timestamptz"}
VALID = {
    "seq": 9,
    "role": "user",
    "content": "膝盖疼",
    "turn_id": None,
    "ts": "2026-12-05T08:00:00.123456+08:00",
    "ts_offset": 28800,
    "name": None,
    "metadata": None,
    "digest": b"\x01" * 32,
    "token_count": 3,
    "format_version": 2,
    "token_encoding": None,
    "key_id": None,
    "sealed": None,
    "ts_nanos": 789,
}


@pytest.fixture
async def as_app(database_url: URL) -> AsyncIterator[asyncpg.Connection]:
    """A connection acting as the database's app role, beside a session of two messages."""
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save(
            "s", [Message(role="user", content="一"), Message(role="assistant", content="二")]
        )
    url = database_url.set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(url)
    app = await connection.fetchval(
        "SELECT quote_ident(role_name) FROM ctxstore_roles WHERE kind = 'app'"
    )
    await connection.execute(f"SET ROLE {app}")
    try:
        yield connection
    finally:
        await connection.close()


async def stored(connection: asyncpg.Connection) -> tuple[int, int]:
    count = await connection.fetchval("SELECT count(*) FROM messages WHERE session_id = 's'")
    version = await connection.fetchval("SELECT version FROM sessions WHERE session_id = 's'")
    return count, version


@pytest.mark.parametrize("constraint", sorted(BREAKING))
async def test_a_direct_insert_by_the_app_role_is_refused(
    as_app: asyncpg.Connection, constraint: str
) -> None:
    before = await stored(as_app)
    row = {**VALID, "seq": 2, **BREAKING[constraint]}
    columns = ", ".join(row)
    values = ", ".join(
        f"${n}::text::{CASTS[name]}" if name in CASTS else f"${n}"
        for n, name in enumerate(row, start=2)
    )
    with pytest.raises(asyncpg.CheckViolationError) as refused:
        await as_app.execute(
            f"INSERT INTO messages (session_id, {columns}) VALUES ($1, {values})",
            "s",
            *row.values(),
        )
    assert refused.value.constraint_name == constraint
    assert await stored(as_app) == before


@pytest.mark.parametrize("constraint", sorted(BREAKING_ROWS))
async def test_an_append_through_the_function_is_refused_and_writes_nothing(
    as_app: asyncpg.Connection, constraint: str
) -> None:
    before = await stored(as_app)
    fields = {**VALID, "seq": 0, **BREAKING_ROWS[constraint]}
    placeholders = ", ".join(f"${n}" for n in range(2, 2 + len(fields)))
    with pytest.raises(asyncpg.CheckViolationError) as refused:
        await as_app.fetchrow(
            "SELECT * FROM ctxstore_append_v7($1, NULL, NULL, NULL, 100000, NULL, NULL, "
            "NULL, NULL, 1, NULL, NULL, "
            f"ARRAY[ROW({placeholders})::ctxstore_message_row_v1], ARRAY[]::text[])",
            "s",
            *fields.values(),
        )
    assert refused.value.constraint_name == constraint
    assert await stored(as_app) == before
