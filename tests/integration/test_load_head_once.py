"""A load reads the session's head once, not on every message row (issue 47, item 6).

load_session is one statement, one snapshot: a first row at position -1 holding the head
(version, message count and user in its metadata, the content hash in its digest), then
the messages with only their own columns, each format_version NULL where it is the
current format.  These tests pin that shape, what a load still refuses, the lock order
it keeps, and that a write-back on load rewrites the legacy rows only.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import EngineSettings, Message, PostgresStorage
from ctxstore.errors import CorruptDataError
from ctxstore.models import MESSAGE_FORMAT
from ctxstore.storage.base import WindowHint
from ctxstore.storage.postgres import rows, sql
from tests.migrations.test_distribution_rules import connect


def history(count: int) -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"第{i}条：膝盖走路时有下坠感",
            turn_id=f"turn_{i // 2}",
            timestamp=f"2026-11-29T08:15:{i:02d}.123456789+08:00",
        )
        for i in range(count)
    ]


async def _raw(storage: PostgresStorage, statement: str, **params: Any) -> None:
    async with storage.engine.begin() as conn:
        await conn.execute(text(statement), params)


async def _rows(storage: PostgresStorage, session_id: str) -> list[Any]:
    async with storage.driver() as driver:
        return await sql.LOAD_SESSION.fetch(driver, sid=session_id, current=MESSAGE_FORMAT)


async def test_the_head_comes_once_before_the_messages(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("head", history(4), user_id="u1")
    await pg_storage.save("head", [*history(4), *history(6)[4:]])  # version 2
    await _raw(
        pg_storage,
        "UPDATE messages SET format_version = 1 WHERE session_id = 'head' AND seq = 3",
    )
    found = await _rows(pg_storage, "head")
    head, messages = found[0], found[1:]
    assert head["seq"] == rows.HEAD_POSITION
    assert head["metadata"] == {"version": 2, "message_count": 6, "user_id": "u1"}
    async with pg_storage.engine.connect() as conn:
        stored_hash = (
            await conn.execute(text("SELECT content_hash FROM sessions WHERE session_id = 'head'"))
        ).scalar_one()
    assert head["digest"] == stored_hash
    assert [row["seq"] for row in messages] == list(range(6))
    # the format only where it is not the current one
    assert [row["format_version"] for row in messages] == [None, None, None, 1, None, None]
    stored = rows.stored_session(found)
    assert stored is not None
    assert (stored.version, stored.message_count, stored.user_id) == (2, 6, "u1")
    assert stored.content_hash == stored_hash and stored.rows == messages


async def test_empty_missing_and_expired_sessions(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("empty", [])
    (head,) = await _rows(pg_storage, "empty")
    assert head["seq"] == rows.HEAD_POSITION and head["metadata"]["message_count"] == 0
    assert await pg_storage.load("empty") == []
    version = await pg_storage.version("empty")
    assert await pg_storage.save("empty", history(2), expected_version=version) == version + 1

    assert await _rows(pg_storage, "missing") == []
    assert await pg_storage.load("missing") == []

    await pg_storage.save("expired", history(3))
    await _raw(
        pg_storage,
        "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE session_id = 'expired'",
    )
    found = await _rows(pg_storage, "expired")  # no head: its messages are no session's
    assert [row["seq"] for row in found] == [0, 1, 2] and rows.stored_session(found) is None
    assert await pg_storage.load("expired") == []
    assert not await pg_storage.exists("expired")


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("UPDATE sessions SET message_count = 7 WHERE session_id = 'counted'", "7 messages but 5"),
        ("UPDATE sessions SET message_count = 4 WHERE session_id = 'counted'", "4 messages but 5"),
        ("DELETE FROM messages WHERE session_id = 'counted' AND seq = 0", "5 messages but 4"),
        ("DELETE FROM messages WHERE session_id = 'counted'", "5 messages but none"),
    ],
    ids=["more counted", "fewer counted", "first missing", "all missing"],
)
async def test_a_count_that_does_not_match_is_corrupt(
    pg_storage: PostgresStorage, change: str, says: str
) -> None:
    await pg_storage.save("counted", history(5))
    await _raw(pg_storage, change)
    with pytest.raises(CorruptDataError) as caught:
        await pg_storage.load("counted")
    assert caught.value.session_id == "counted"
    assert says in str(caught.value)


async def test_the_loaded_list_extends_without_reading_it_again(
    pg_storage: PostgresStorage,
) -> None:
    """The head's content hash checks the rows' digests: the next save is an append."""
    await pg_storage.save("extend", history(6))
    loaded = await pg_storage.load("extend")
    known = pg_storage.knowledge.get("extend")
    assert known is not None and known.hasher is not None and known.count == 6
    loaded.extend(history(8)[6:])
    await pg_storage.save("extend", loaded)
    assert await pg_storage.load("extend") == history(8)


async def test_a_load_locks_sessions_before_messages(database_url: URL) -> None:
    """As every statement does, and `ctxstore db distribute` relies on (it locks sessions,
    then messages): a load run again from the statement cache must not hold messages
    while it waits for sessions, or the two deadlock."""
    async with PostgresStorage.from_url(
        database_url, settings=EngineSettings(pool_size=1)
    ) as storage:
        await storage.save("locks", history(3))
        for _ in range(8):  # prepared, then run from asyncpg's cache (a generic plan too)
            assert len(await storage.load("locks")) == 3
        locker = await connect(database_url)
        try:
            await locker.execute(
                "BEGIN; SET LOCAL lock_timeout = '10s'; SET LOCAL deadlock_timeout = '100ms';"
                " LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE"
            )
            loading = asyncio.create_task(storage.load("locks"))
            for _ in range(500):  # until the load waits for sessions
                waiting = await locker.fetchval(
                    "SELECT count(*) FROM pg_locks WHERE NOT granted"
                    " AND relation = 'sessions'::regclass"
                )
                if waiting:
                    break
                await asyncio.sleep(0.01)
            assert waiting, "the load never waited for sessions"
            await locker.execute("LOCK TABLE messages IN ACCESS EXCLUSIVE MODE")  # no deadlock
            await locker.execute("COMMIT")
            assert len(await loading) == 3
        finally:
            await locker.close()


async def test_a_write_back_on_load_rewrites_only_the_legacy_rows(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, upgrade_on_load=True) as storage:
        await storage.save("mixed", [Message(role="user", content=f"m {i}") for i in range(6)])
        await _raw(
            storage,
            "UPDATE messages SET format_version = 1 WHERE session_id = 'mixed' AND seq IN (2, 4)",
        )
        async with storage.engine.connect() as conn:
            before = dict(
                (
                    await conn.execute(
                        text("SELECT seq, xmin::text FROM messages WHERE session_id = 'mixed'")
                    )
                ).all()
            )
        loaded = await storage.load("mixed")
        assert [m.content for m in loaded] == [f"m {i}" for i in range(6)]
        async with storage.engine.connect() as conn:
            after = dict(
                (
                    await conn.execute(
                        text(
                            "SELECT seq, xmin::text FROM messages WHERE session_id = 'mixed'"
                            " AND format_version = :current"
                        ),
                        {"current": MESSAGE_FORMAT},
                    )
                ).all()
            )
        assert sorted(after) == list(range(6))  # every row in the current format now
        assert {seq for seq in after if after[seq] != before[seq]} == {2, 4}
        assert await storage.load("mixed") == loaded


async def test_a_context_read_sends_the_head_and_documents_once(
    pg_storage: PostgresStorage,
) -> None:
    """The same for a context's first read: the head, summary, state and profile in a
    first row, then the window's messages with their own columns only."""
    await pg_storage.save("window", history(8), user_id="u2")
    await pg_storage.save_summary("window", "早前：膝盖下坠感", covers_until=3)
    await pg_storage.save_state("window", {"stage": "collecting_details"})
    await pg_storage.save_profile("u2", {"age": 46})
    async with pg_storage.driver() as driver:
        found = await sql.SESSION_HEAD_AND_DOCUMENTS.fetch(
            driver, sid="window", limit=5, budget=10**6, encoding="x", untimed="y"
        )
    head, messages = found[0], found[1:]
    assert head["seq"] is None and head["role"] is None
    assert (head["version"], head["message_count"], head["user_id"]) == (1, 8, "u2")
    assert head["m_text"] == "早前：膝盖下坠感" and head["st_version"] == 1
    assert head["p_version"] == 1
    assert [row["seq"] for row in messages] == [7, 6, 5, 4, 3]
    own = {*rows.MESSAGE_COLUMN_ORDER, "key_id", "sealed", "token_count", "token_encoding"}
    documents = [name for name in list(head.keys()) if name not in own]
    assert (
        len(documents) == 24
    )  # the head's 4 columns, the summary's 8, the state's and profile's 6
    for row in messages:
        assert all(row[name] is None for name in documents)
    async with pg_storage.reader("window") as reader:
        read = await reader.head(WindowHint(5, 10**6))
        assert (read.version, read.message_count, read.user_id) == (1, 8, "u2")
        assert [stored.position for stored in await reader.newest(8, 5)] == [7, 6, 5, 4, 3]
        summary = await reader.latest_summary()
        assert summary is not None and summary.covers_until == 3
