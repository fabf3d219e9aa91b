"""Reads from a real streaming replica (tests/replica.py: a primary and a replica started
from the embedded server's programs).  Context reads go to the replica unless it is behind
what this process wrote; replay is paused to make it lag on purpose."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.db import migrations
from ctxstore.db.admin import create_database
from tests.replica import Replicated

DATABASE = "ctx"


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


async def on(url: URL, query: str) -> object:
    connection = await asyncpg.connect(
        host=url.host, port=url.port, user=url.username, database=url.database
    )
    try:
        return await connection.fetchval(query)
    finally:
        await connection.close()


async def caught_up(pair: Replicated) -> None:
    """Wait until the replica has replayed everything the primary wrote so far."""
    target = await on(pair.url(), "SELECT pg_current_wal_insert_lsn()::text")
    for _ in range(400):
        if await on(
            pair.url(replica=True),
            f"SELECT pg_last_wal_replay_lsn() >= '{target}'::pg_lsn",
        ):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the replica did not catch up")


@pytest.fixture(scope="module")
def pair() -> Iterator[Replicated]:
    replicated = Replicated()
    try:
        asyncio.run(create_database(replicated.url(), DATABASE))
        migrations.upgrade(replicated.url(database=DATABASE))
        asyncio.run(caught_up(replicated))
        yield replicated
    finally:
        replicated.stop()


@pytest.fixture
async def paused(pair: Replicated) -> AsyncIterator[None]:
    """The replica stops replaying for the test's body: it lags from here on."""
    await caught_up(pair)
    await on(pair.url(replica=True), "SELECT pg_wal_replay_pause()")
    try:
        yield
    finally:
        await on(pair.url(replica=True), "SELECT pg_wal_replay_resume()")
        await caught_up(pair)


def storages(pair: Replicated) -> tuple[PostgresStorage, PostgresStorage]:
    """A writer and a reader, each its own process's store, both reading from the replica."""
    primary, replica = pair.url(database=DATABASE), pair.url(replica=True, database=DATABASE)
    return (
        PostgresStorage.from_url(primary, read_url=replica),
        PostgresStorage.from_url(primary, read_url=replica),
    )


async def window_of(storage: PostgresStorage, session_id: str) -> list[str]:
    window = await ContextManager(storage, strategy=TokenBudget(4000)).get_context(session_id)
    return [message.content for message in window.messages]


async def test_a_writer_reads_its_own_writes_while_others_read_the_lagging_replica(
    pair: Replicated,
) -> None:
    writer, other = storages(pair)
    async with writer, other:
        await writer.save("rw", msgs("first"), user_id="u1")
        await caught_up(pair)
        assert await window_of(other, "rw") == ["first"]
        assert other.written.behind == 0  # served by the replica
        await on(pair.url(replica=True), "SELECT pg_wal_replay_pause()")
        try:
            await writer.append("rw", msgs("second"))
            # the writer sees its append at once: the replica is behind it, so the primary
            assert await window_of(writer, "rw") == ["first", "second"]
            assert writer.written.behind == 1
            # another process tolerates the lag: the replica's older view
            assert await window_of(other, "rw") == ["first"]
            assert other.written.behind == 0
        finally:
            await on(pair.url(replica=True), "SELECT pg_wal_replay_resume()")
        await caught_up(pair)
        assert await window_of(other, "rw") == ["first", "second"]
        assert await window_of(writer, "rw") == ["first", "second"]
        assert writer.written.behind == 1  # caught up: the replica again


async def test_own_summaries_states_profiles_and_deletes_are_read_back(pair: Replicated) -> None:
    writer, _ = storages(pair)
    async with writer:
        await writer.save("docs", msgs("a", "b", "c"), user_id="u2")
        await caught_up(pair)
        await on(pair.url(replica=True), "SELECT pg_wal_replay_pause()")
        try:
            async with writer.reader("docs") as reader:
                assert (await reader.head()).version == 1
            assert writer.written.behind == 0  # the replica holds the save
            await writer.save_summary("docs", "a and b", covers_until=1)
            async with writer.reader("docs") as reader:
                summary = await reader.latest_summary()
                assert summary is not None and summary.text == "a and b"
            await writer.save_state("docs", {"stage": "triage"})
            async with writer.reader("docs") as reader:
                state = await reader.state()
                assert state is not None and state.value.stage == "triage"
            await writer.save_profile("u2", {"age": 33})
            async with writer.reader("docs") as reader:
                profile = await reader.profile("u2")
                assert profile is not None and profile.value.age == 33
            await writer.delete("docs")  # the paused replica still has the session
            async with writer.reader("docs") as reader:
                assert not (await reader.head()).exists
            assert writer.written.behind == 4  # each read after a write: the primary
        finally:
            await on(pair.url(replica=True), "SELECT pg_wal_replay_resume()")
        await caught_up(pair)


async def test_an_unreachable_replica_leaves_reads_to_the_primary(pair: Replicated) -> None:
    dead = URL.create(
        "postgresql+asyncpg", username="postgres", host="127.0.0.1", port=1, database=DATABASE
    )
    async with PostgresStorage.from_url(pair.url(database=DATABASE), read_url=dead) as storage:
        storage.operation_timeout = 5
        await storage.save("up", msgs("still served"))
        assert await window_of(storage, "up") == ["still served"]
        assert await window_of(storage, "up") == ["still served"]
        assert storage.written.unavailable == 1  # tried once, then left alone for a while


@pytest.mark.usefixtures("paused")
def test_analytics_reads_the_replica_when_named(pair: Replicated) -> None:
    primary = pair.url(database=DATABASE).render_as_string(hide_password=False)
    replica = pair.url(replica=True, database=DATABASE).render_as_string(hide_password=False)

    def consultations(*extra: str) -> int:
        done = subprocess.run(
            [sys.executable, "-m", "ctxstore.cli", "analytics", "overview", "--format", "csv",
             "--database-url", primary, *extra],
            env={k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_")},
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        header, row = done.stdout.strip().splitlines()[:2]
        return int(row.split(",")[header.split(",").index("consultations")])

    before = consultations("--replica-url", replica)

    async def write() -> None:
        async with PostgresStorage.from_url(pair.url(database=DATABASE)) as storage:
            await storage.save("analytics-new", msgs("knee"), user_id="u3")

    asyncio.run(write())
    assert consultations() == before + 1  # the primary has it
    assert consultations("--replica-url", replica) == before  # the paused replica not yet
