"""TTL on PostgreSQL: refreshed on write, expired behaves as missing, purge-expired."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import datetime, timedelta

import pytest
from sqlalchemy import URL, text

from ctxstore import Message, PostgresStorage
from ctxstore.commands.expiry import purge_expired

DAY = timedelta(days=1)


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


async def expire(storage: PostgresStorage, *session_ids: str) -> None:
    async with storage.engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE sessions SET expires_at = now() - interval '1 second' "
                "WHERE session_id = ANY(:s)"
            ),
            {"s": list(session_ids)},
        )


async def expires_in(storage: PostgresStorage, session_id: str) -> timedelta | None:
    async with storage.engine.connect() as conn:
        return await conn.scalar(
            text("SELECT expires_at - now() FROM sessions WHERE session_id = :s"), {"s": session_id}
        )


async def expires_at(storage: PostgresStorage, session_id: str) -> datetime | None:
    async with storage.engine.connect() as conn:
        return await conn.scalar(
            text("SELECT expires_at FROM sessions WHERE session_id = :s"), {"s": session_id}
        )


async def test_writes_set_and_refresh_the_expiry(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        await storage.save("s", msgs("a"))
        first = await expires_in(storage, "s")
        assert first is not None and timedelta(hours=23) < first <= DAY
        saved = await expires_at(storage, "s")
        await asyncio.sleep(0.05)
        await storage.append("s", msgs("b"))
        # the instant itself, not its distance from a later now(): how long the check
        # takes on a busy machine doesn't move it
        appended = await expires_at(storage, "s")
        assert saved is not None and appended is not None
        assert appended >= saved + timedelta(seconds=0.05)
    async with PostgresStorage.from_url(database_url) as forever:
        await forever.save("f", msgs("a"))
        assert await expires_in(forever, "f") is None


async def test_expired_sessions_behave_as_missing(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        await storage.save("gone", msgs("a", "b"), user_id="u")
        await storage.save_summary("gone", "s", covers_until=1)
        await storage.save_state("gone", {"stage": "greeting"})
        await storage.load("gone")  # this process now "knows" the session
        await expire(storage, "gone")
        assert await storage.load("gone") == []
        assert not await storage.exists("gone")
        assert await storage.version("gone") == 0
        assert await storage.load_summary("gone") is None
        assert await storage.load_state("gone") is None
        assert await storage.state_history("gone") == []
        assert not (await storage.snapshot("gone")).exists
        async with storage.reader("gone") as reader:
            assert not (await reader.head()).exists


async def test_writing_to_an_expired_session_starts_it_afresh(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        await storage.save("s", msgs("old 1", "old 2"))
        await storage.save_state("s", {"stage": "assessing"})
        await storage.save("a", msgs("old"))
        await expire(storage, "s", "a")
        assert await storage.save("s", [*msgs("old 1", "old 2"), *msgs("new")]) == 1
        assert [m.content for m in await storage.load("s")] == ["old 1", "old 2", "new"]
        assert await storage.load_state("s") is None  # the expired state went with it
        assert await storage.append("a", msgs("fresh")) == 1
        assert [m.content for m in await storage.load("a")] == ["fresh"]


async def test_purge_expired_deletes_in_batches(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        for index in range(8):
            await storage.save(f"s{index}", msgs("x", "y"))
        await expire(storage, *(f"s{index}" for index in range(5)))
        async with storage.driver() as driver:
            report = await purge_expired(driver, batch_size=2, show=False)
            assert (report.sessions, report.messages, report.batches) == (5, 10, 3)
            remaining = await driver.fetchval("SELECT count(*) FROM sessions")
            orphans = await driver.fetchval("SELECT count(*) FROM messages WHERE session_id < 's5'")
        assert (remaining, orphans) == (3, 0)


def test_purge_expired_command(database_url: URL) -> None:
    async def seed() -> None:
        async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
            await storage.save("old", msgs("x"))
            await expire(storage, "old")

    asyncio.run(seed())
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}
    result = subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", "purge-expired"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "purged 1 expired sessions (1 messages" in result.stdout
    assert "purging sessions [" in result.stderr


@pytest.mark.slow
async def test_writes_with_a_ttl_update_the_session_row_in_place(database_url: URL) -> None:
    """Each write moves expires_at; no index holds it, so the row update stays HOT (no new
    index entries): the sessions indexes don't grow with every turn."""
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        await storage.save("hot", msgs("first"))
        history = await storage.load("hot")
        for turn in range(30):
            history.extend(msgs(f"q{turn}", f"a{turn}"))
            await storage.save("hot", history)
        updates = hot = 0
        for _ in range(50):  # other pooled backends report their counts when idle (~1 s)
            await asyncio.sleep(0.2)
            async with storage.engine.connect() as conn:
                updates, hot = (
                    await conn.execute(
                        text(
                            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables "
                            "WHERE relname = 'sessions'"
                        )
                    )
                ).one()
            if updates >= 30:
                break
        async with storage.engine.connect() as conn:
            hour = await conn.scalar(
                text("SELECT expires_hour <= expires_at FROM sessions WHERE session_id = 'hot'")
            )
    assert updates >= 30
    assert hot >= updates - 2, f"{hot} of {updates} updates were HOT"
    assert hour is True
