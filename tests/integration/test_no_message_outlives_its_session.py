"""No message outlives its session, without a foreign key to hold it (revision 1001).

The deletes remove a session's messages after its row, and the inserts hold the session
row, so a delete either waits for an insert and sees its rows, or the insert waits for the
delete and finds no session. The race below runs 10,000 rounds of an append (or a save)
against a delete (or an erasure of the user) of the same session, through ctxstore, and
after each round no message of that session may be left without it. The two tests after it
show the race can see what it looks for: a delete that leaves the messages is caught at
once, and an insert that does not hold the session row leaves one behind a delete it
raced, in a fixed order of steps (no timing).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage

ROUNDS = 10_000
ORPHANS = """
SELECT count(*) FROM messages AS m
 WHERE NOT EXISTS (SELECT FROM sessions AS s WHERE s.session_id = m.session_id)
"""
# The session's count and its rows agree, whoever won the round.
MISCOUNTED = """
SELECT count(*) FROM sessions AS s
 WHERE s.message_count <> (SELECT count(*) FROM messages AS m
                            WHERE m.session_id = s.session_id)
"""


def asyncpg_url(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
async def check(database_url: URL) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(asyncpg_url(database_url))
    try:
        yield connection
    finally:
        await connection.close()


def turn(round_number: int) -> list[Message]:
    return [
        Message(role="user", content=f"第{round_number}轮：膝盖还是疼"),
        Message(role="assistant", content="疼了多久？"),
    ]


async def one_round(storage: PostgresStorage, round_number: int, rng: random.Random) -> str:
    """A session of two messages, then a write and a removal of it at once."""
    session_id = f"race-{round_number}"
    user_id = f"user-{round_number % 7}"
    await storage.append(session_id, turn(round_number), user_id=user_id)
    if rng.random() < 0.5:
        write = storage.append(session_id, turn(round_number), user_id=user_id)
    else:
        write = storage.save(session_id, turn(round_number) * 2, user_id=user_id)
    remove = (
        storage.delete(session_id)
        if rng.random() < 0.9
        else storage.erase_user(user_id, vacuum=False)
    )
    writing, removing = (write, remove) if rng.random() < 0.5 else (remove, write)
    await asyncio.gather(writing, removing)
    return session_id


@pytest.mark.slow
async def test_ten_thousand_deletes_racing_appends_leave_no_message_behind(
    database_url: URL, check: asyncpg.Connection
) -> None:
    rng = random.Random(47)
    survived = 0
    async with PostgresStorage.from_url(database_url) as storage:
        for round_number in range(ROUNDS):
            session_id = await one_round(storage, round_number, rng)
            left = await check.fetchval(ORPHANS)
            assert left == 0, f"round {round_number}: {left} messages outlived {session_id}"
            survived += await check.fetchval(
                "SELECT count(*) FROM sessions WHERE session_id = $1", session_id
            )
    assert await check.fetchval(MISCOUNTED) == 0
    # Both outcomes happened: the race was run, not one side always first.
    print(f"{survived} of {ROUNDS} sessions written after their removal")
    assert 0 < survived < ROUNDS


async def test_a_delete_that_leaves_the_messages_is_caught(
    database_url: URL, check: asyncpg.Connection
) -> None:
    """The check above is not blind: the baseline's delete relied on the key's cascade."""
    await check.execute(
        "CREATE OR REPLACE FUNCTION ctxstore_delete_session_v1(p_session_id text, "
        "p_expired_only boolean) RETURNS boolean LANGUAGE sql AS "
        "$$ DELETE FROM sessions WHERE session_id = p_session_id RETURNING true $$"
    )
    async with PostgresStorage.from_url(database_url) as storage:
        await one_round(storage, 0, random.Random(0))
        await storage.append("kept", turn(1))
        await storage.delete("kept")
    assert await check.fetchval(ORPHANS) >= 2


async def waiting_on_a_lock(connection: asyncpg.Connection, pid: int) -> bool:
    for _ in range(3000):  # 30 s at most: a write that never waits fails the test
        await connection.execute("SELECT pg_stat_clear_snapshot()")
        if await connection.fetchval(
            "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
        ):
            return True
        await asyncio.sleep(0.01)
    return False


INSERT = """
SELECT ctxstore_insert_messages_v2('s', 0, '{0}', '{user}', '{膝盖疼}', '{NULL}', '{NULL}',
    '{NULL}', '{NULL}', '{NULL}', ARRAY[sha256('膝盖疼')], '{3}', '{2}', '{NULL}', '{NULL}',
    '{NULL}', '{NULL}')
"""


@pytest.mark.parametrize("holds_the_session", [True, False])
async def test_an_insert_racing_a_delete_waits_for_it_only_when_it_holds_the_row(
    database_url: URL, check: asyncpg.Connection, holds_the_session: bool
) -> None:
    """A delete of "s" is in flight, uncommitted, when a direct call of the insert
    function begins. Holding the session row, the insert waits and then finds no session:
    nothing is left. Without (the same function with its lock taken out), it inserts
    under the doomed row and its message outlives the session."""
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", [])
    if not holds_the_session:
        body = await check.fetchval(
            "SELECT pg_get_functiondef('ctxstore_insert_messages_v2'::regproc)"
        )
        unlocked = body.replace("FOR KEY SHARE;", ";")
        assert unlocked != body
        await check.execute(unlocked)
    deleting = await asyncpg.connect(asyncpg_url(database_url))
    inserting = await asyncpg.connect(asyncpg_url(database_url))
    try:
        transaction = deleting.transaction()
        await transaction.start()
        assert await deleting.fetchval("SELECT ctxstore_delete_session_v1('s', false)")
        insert = asyncio.create_task(inserting.execute(INSERT))
        if holds_the_session:
            assert await waiting_on_a_lock(check, inserting.get_server_pid())
        else:
            await insert
        await transaction.commit()
        await insert
    finally:
        await deleting.close()
        await inserting.close()
    assert await check.fetchval(ORPHANS) == (0 if holds_the_session else 1)
