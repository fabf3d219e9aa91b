"""PostgreSQL-specific behaviour: delta writes, atomicity, corrupt rows, engine ownership."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import EngineSettings, Message, PostgresStorage
from ctxstore.db.engine import create_engine
from ctxstore.errors import CorruptDataError, StorageError, UnsupportedFormatError
from ctxstore.storage.postgres import sql as sql_statements


def history(count: int, prefix: str = "m") -> list[Message]:
    return [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"{prefix} {i} 膝盖")
        for i in range(count)
    ]


@asynccontextmanager
async def captured_sql(
    storage: PostgresStorage,
) -> AsyncIterator[tuple[list[tuple[str, Any]], list[bool]]]:
    """Every statement the storage's connections send, with arguments, while the block runs
    (asyncpg's query logger, on each connection the storage opens)."""
    statements: list[tuple[str, Any]] = []
    recording = [False]

    def log(query: Any) -> None:
        if recording[0]:
            statements.append((" ".join(query.query.split()), query.args))

    await storage.watch_connections(lambda connection: connection.add_query_logger(log))
    yield statements, recording


async def row_versions(storage: PostgresStorage, session_id: str) -> dict[int, str]:
    """seq -> xmin: a row rewritten by a later transaction gets a new xmin."""
    async with storage.engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT seq, xmin::text FROM messages WHERE session_id = :s"), {"s": session_id}
        )
        return {seq: xmin for seq, xmin in rows}


async def test_appending_a_turn_writes_only_the_new_messages(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        async with captured_sql(storage) as (statements, recording):
            stored = history(1000)
            await storage.save("long", stored)
            before = await row_versions(storage, "long")
            loaded = await storage.load("long")  # what a service does before a turn
            turn = [
                *loaded,
                Message(role="user", content="q"),
                Message(role="assistant", content="a"),
            ]
            await asyncio.sleep(0.05)  # asyncpg reports queries to loggers a moment later
            recording[0] = True
            await storage.save("long", turn)
            await asyncio.sleep(0.05)
            recording[0] = False
        assert statements, "the query logger saw nothing"
        writes = [(s, a) for s, a in statements if "messages" in s or "ctxstore_" in s]
        assert len(writes) == 1, statements
        sql, args = writes[0]
        assert sql.startswith("SELECT ctxstore_append_if_unchanged_v4(")
        named = dict(zip(sql_statements.APPEND_IF_UNCHANGED.parameters, args, strict=True))
        assert named["known_count"] == 1000  # positions 1000 + offsets:
        assert [row[0] for row in named["new_rows"]] == [0, 1]  # the two new rows' seq only
        after = await row_versions(storage, "long")
        assert {seq: after[seq] for seq in before} == before  # old rows untouched
        assert len(after) == 1002
        assert await storage.load("long") == turn


async def test_a_cold_append_reads_no_stored_messages(database_url: URL) -> None:
    """Without a prior load in this process, the locked path still reads no messages."""
    async with PostgresStorage.from_url(database_url) as writer:
        await writer.save("cold", history(1000))
    async with PostgresStorage.from_url(database_url) as storage:
        async with captured_sql(storage) as (statements, recording):
            await asyncio.sleep(0.05)  # asyncpg reports queries to loggers a moment later
            recording[0] = True
            await storage.save("cold", [*history(1000), Message(role="user", content="new")])
            await asyncio.sleep(0.05)
            recording[0] = False
        insert = " ".join(sql_statements.INSERT_MESSAGES.sql.split())  # as logged
        reads = [s for s, _ in statements if s.startswith("SELECT") and "messages" in s]
        assert [s for s in reads if s != insert] == [], statements
        inserts = [a for s, a in statements if s == insert]
        assert len(inserts) == 1
        (params,) = inserts
        named = dict(zip(sql_statements.INSERT_MESSAGES.parameters, params, strict=True))
        # one row, position 1000: only the new message is written
        assert named["start"] == 1000 and [row[0] for row in named["new_rows"]] == [0]
        assert len(await storage.load("cold")) == 1001


async def test_edit_in_the_middle_rewrites_from_the_edit_on(pg_storage: PostgresStorage) -> None:
    stored = history(200)
    await pg_storage.save("edit", stored)
    before = await row_versions(pg_storage, "edit")
    edited = [*stored[:120], Message(role="assistant", content="corrected"), *stored[121:]]
    await pg_storage.save("edit", edited)
    after = await row_versions(pg_storage, "edit")
    assert all(after[seq] == before[seq] for seq in range(120))
    assert all(after[seq] != before[seq] for seq in range(120, 200))
    assert await pg_storage.load("edit") == edited


async def test_truncation_deletes_the_tail_only(pg_storage: PostgresStorage) -> None:
    stored = history(50)
    await pg_storage.save("cut", stored)
    before = await row_versions(pg_storage, "cut")
    await pg_storage.save("cut", stored[:20])
    after = await row_versions(pg_storage, "cut")
    assert after == {seq: before[seq] for seq in range(20)}
    assert await pg_storage.load("cut") == stored[:20]


async def test_a_database_failure_mid_save_leaves_previous_content(
    pg_storage: PostgresStorage,
) -> None:
    async with pg_storage.engine.begin() as conn:
        await conn.execute(
            text(
                """
                CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                  IF NEW.content = 'FAIL' THEN RAISE EXCEPTION 'refused by test trigger'; END IF;
                  RETURN NEW;
                END $$
                """
            )
        )
        await conn.execute(
            text(
                "CREATE TRIGGER refuse BEFORE INSERT ON messages "
                "FOR EACH ROW EXECUTE FUNCTION refuse()"
            )
        )
    previous = history(10)
    await pg_storage.save("atomic", previous)
    attempt = [*previous[:5], *history(3, "replacement"), Message(role="user", content="FAIL")]
    with pytest.raises(StorageError) as caught:
        await pg_storage.save("atomic", attempt)
    assert type(caught.value).__module__.startswith("ctxstore")
    assert await pg_storage.load("atomic") == previous


async def test_concurrent_first_saves_of_one_session_all_succeed(
    pg_storage: PostgresStorage,
) -> None:
    lists = [history(i + 1, f"writer{i}") for i in range(12)]
    await asyncio.gather(*(pg_storage.save("race", messages) for messages in lists))
    assert await pg_storage.load("race") in lists


async def _raw(storage: PostgresStorage, sql: str, **params: Any) -> None:
    async with storage.engine.begin() as conn:
        await conn.execute(text(sql), params)


async def test_a_newer_format_raises_unsupported_with_session_and_position(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("future", history(5))
    await pg_storage.save("fine", history(3))
    await _raw(
        pg_storage,
        "UPDATE messages SET format_version = 99 WHERE session_id = 'future' AND seq = 3",
    )
    with pytest.raises(UnsupportedFormatError) as caught:
        await pg_storage.load("future")
    assert caught.value.session_id == "future"
    assert caught.value.position == 3
    assert "future" in str(caught.value) and "position 3" in str(caught.value)
    assert await pg_storage.load("fine") == history(3)


async def test_missing_rows_raise_corrupt_data_not_a_partial_list(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("holes", history(6))
    await _raw(pg_storage, "DELETE FROM messages WHERE session_id = 'holes' AND seq = 2")
    with pytest.raises(CorruptDataError) as caught:
        await pg_storage.load("holes")
    assert caught.value.session_id == "holes"


async def test_a_corrupt_timestamp_offset_raises_corrupt_data(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("tz", [Message(role="user", content="x", timestamp="2026-01-01T00:00Z")])
    await _raw(pg_storage, "UPDATE messages SET ts_offset = 999999 WHERE session_id = 'tz'")
    with pytest.raises(CorruptDataError) as caught:
        await pg_storage.load("tz")
    assert caught.value.position == 0


async def test_a_format_1_row_loads_without_turn_id_or_timestamp(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("old", history(2))
    await _raw(
        pg_storage,
        "UPDATE messages SET format_version = 1, turn_id = NULL, ts = NULL "
        "WHERE session_id = 'old'",
    )
    loaded = await pg_storage.load("old")
    assert [m.content for m in loaded] == [m.content for m in history(2)]
    assert all(m.turn_id is None and m.timestamp is None for m in loaded)


async def test_one_pool_and_an_engine_only_when_asked(database_url: URL) -> None:
    """The storage's calls use its one pool; ``storage.engine`` (reports, admin code) is
    made on first use, on the same database, and closed with the storage."""
    async with PostgresStorage(database_url) as storage:
        await storage.save("shared", history(1))
        assert storage._engine is None
        async with storage.engine.connect() as conn:
            assert await conn.scalar(text("SELECT count(*) FROM sessions")) == 1
        engine = storage.engine
    assert storage._engine is None
    assert engine.pool.checkedout() == 0


async def test_engine_defaults_reach_the_server(pg_storage: PostgresStorage) -> None:
    async with pg_storage.engine.connect() as conn:
        name = await conn.scalar(text("SHOW application_name"))
        timeout = await conn.scalar(text("SHOW statement_timeout"))
        idle = await conn.scalar(text("SHOW idle_in_transaction_session_timeout"))
    assert name == "ctxstore"
    assert timeout == "30s"
    assert idle == "1min"


async def test_pooled_connections_killed_while_idle_are_replaced(database_url: URL) -> None:
    """pool_pre_ping: a server-side kill of idle pooled connections costs no request."""
    async with PostgresStorage.from_url(database_url) as storage:
        await asyncio.gather(*(storage.save(f"s{i}", history(3)) for i in range(5)))
        killer = create_engine(database_url, pooled=False)
        try:
            async with killer.connect() as conn:
                killed = await conn.scalar(
                    text(
                        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = 'ctxstore' AND pid <> pg_backend_pid() "
                        "AND datname = current_database()"
                    )
                )
        finally:
            await killer.dispose()
        assert killed >= 1
        await asyncio.sleep(0.2)  # the client sees the sockets close
        loaded = await asyncio.gather(*(storage.load(f"s{i}") for i in range(5)))
        assert loaded == [history(3)] * 5


async def test_a_checkout_watcher_sees_every_lent_connection(database_url: URL) -> None:
    """A log listener added at every checkout hears each call's notices once: what the
    watcher returns removes it when the connection comes back."""
    notices: list[str] = []
    undone: list[int] = []

    def watch(connection: Any) -> Callable[[], None]:
        def listener(_connection: Any, message: Any) -> None:
            notices.append(message.message)

        connection.add_log_listener(listener)

        def undo() -> None:
            connection.remove_log_listener(listener)
            undone.append(1)

        return undo

    settings = EngineSettings(pool_size=1)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        await storage.watch_connections(watch, at_every_checkout=True)
        for number in range(3):
            async with storage.driver() as driver:
                await driver.execute(f"DO $$ BEGIN RAISE NOTICE 'call {number}'; END $$")
    assert notices == ["call 0", "call 1", "call 2"]
    assert len(undone) == 3


async def test_a_checkout_watcher_that_fails_costs_no_connection(database_url: URL) -> None:
    """A watcher raising at checkout fails that call only: the connection goes back."""
    failures = iter([True, False, False])

    def watch(_connection: Any) -> None:
        if next(failures, False):
            raise RuntimeError("watcher failed")

    settings = EngineSettings(pool_size=1, pool_timeout=1.0)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        storage.operation_timeout = 2.0
        await storage.watch_connections(watch, at_every_checkout=True)
        with pytest.raises(RuntimeError, match="watcher failed"):
            await storage.exists("s")
        assert await storage.exists("s") is False
        assert await storage.exists("s") is False
