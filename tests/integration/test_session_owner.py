"""A session keeps the user it was first written for, on PostgreSQL, under races, and
erasure of that user always completes (issue 24).  The rule on every backend:
tests/conformance/contract.py."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import DataKeyDestroyedError, SessionOwnerError
from tests.integration.test_faults import admin_sql

pytestmark = pytest.mark.asyncio


def words(user: str, count: int = 2) -> list[Message]:
    return [Message(role="user", content=f"{user} 的膝盖 #{i}") for i in range(count)]


@pytest.fixture
def encryption() -> Encryption:
    return Encryption(Keyring({"k1": os.urandom(32)}))


@pytest.fixture
async def sealed(database_url: URL, encryption: Encryption) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        yield storage


async def write(storage: PostgresStorage, how: str, session_id: str, user: str) -> int:
    if how == "append":
        return await storage.append(session_id, words(user), user_id=user)
    return await storage.save(session_id, words(user), user_id=user)


async def test_users_racing_to_create_a_session_leave_it_to_one(database_url: URL) -> None:
    """Two processes create the same new session for two users, by every pair of write
    paths (the append function's and the locked save's): one claims it, the other is
    refused, and the session holds only the winner's words."""
    async with (
        PostgresStorage.from_url(database_url) as first,
        PostgresStorage.from_url(database_url) as second,
    ):
        rng = random.Random(24)
        outcomes: dict[str, int] = {}
        for number in range(60):
            hows = (rng.choice(("append", "save")), rng.choice(("append", "save")))
            sid = f"race-{number}"
            results = await asyncio.gather(
                write(first, hows[0], sid, "ann"),
                write(second, hows[1], sid, "ben"),
                return_exceptions=True,
            )
            won = [user for user, r in zip(("ann", "ben"), results, strict=True) if r == 1]
            refused = [r for r in results if isinstance(r, SessionOwnerError)]
            assert (len(won), len(refused)) == (1, 1), (hows, results)
            owner = await admin_sql(
                database_url, f"SELECT user_id FROM sessions WHERE session_id = '{sid}'"
            )
            assert owner == won[0]
            assert await first.load(sid) == words(won[0])
            key = f"{hows[0]}/{hows[1]}"
            outcomes[key] = outcomes.get(key, 0) + 1
        assert len(outcomes) == 4, outcomes  # every pair of paths raced


@pytest.mark.slow
async def test_erasure_completes_while_the_user_keeps_opening_sessions(
    sealed: PostgresStorage, database_url: URL, encryption: Encryption
) -> None:
    """The user keeps opening sessions from another storage, three at a time, while it is
    erased, again and again: every erasure completes, and whatever the writer kept after
    the last one opens."""
    stop = asyncio.Event()
    written: list[str] = []

    async def keep_writing(writer: PostgresStorage, lane: int) -> None:
        number = 0
        while not stop.is_set():
            number += 1
            try:
                await writer.save(f"busy-{lane}-{number}", words("busy"), user_id="busy")
                written.append(f"busy-{lane}-{number}")
            except DataKeyDestroyedError:  # erased on every try: nothing of it kept
                pass

    async with PostgresStorage.from_url(database_url, encryption=encryption) as writer:
        tasks = [asyncio.create_task(keep_writing(writer, lane)) for lane in range(3)]
        try:
            erased = 0
            for _ in range(8):
                await asyncio.sleep(0.02)
                receipt = await sealed.erase_user("busy")  # never gives up
                erased += receipt.sessions
        finally:
            stop.set()
            await asyncio.gather(*tasks)
        assert written and erased > 0
        final = await sealed.erase_user("busy")
        assert final.sessions >= 0
    left = await admin_sql(database_url, "SELECT count(*) FROM sessions WHERE user_id = 'busy'")
    assert left == 0
    orphans = await admin_sql(
        database_url,
        "SELECT count(*) FROM messages AS m WHERE key_id IS NOT NULL AND NOT EXISTS "
        "(SELECT FROM data_keys AS d WHERE d.key_id = m.key_id)",
    )
    assert orphans == 0


async def test_erasure_finds_the_users_rows_in_a_session_taken_before_the_rule(
    sealed: PostgresStorage, database_url: URL
) -> None:
    """A session re-assigned before revision 0015 (as an append naming another user did
    then) still holds rows sealed under the first user's key: erasing that user erases the
    session, instead of failing on the key those rows reference."""
    await sealed.save("taken", words("alice"), user_id="alice")
    await sealed.save("alices-own", words("alice"), user_id="alice")
    await admin_sql(database_url, "UPDATE sessions SET user_id = 'bob' WHERE session_id = 'taken'")
    if sealed.data_keys is not None:
        sealed.data_keys.clear()  # this process saw the session as alice's
    await sealed.append("taken", words("bob"), user_id="bob")  # sealed under bob's key
    await sealed.save("bobs-own", words("bob"), user_id="bob")
    receipt = await sealed.erase_user("alice")
    assert (receipt.sessions, receipt.messages) == (2, 6)
    for gone in ("taken", "alices-own"):
        assert not await sealed.exists(gone)
    assert await sealed.load("bobs-own") == words("bob")
    keys: Any = await admin_sql(
        database_url, "SELECT count(*) FROM data_keys WHERE owner = 'u:alice'"
    )
    assert keys == 0
