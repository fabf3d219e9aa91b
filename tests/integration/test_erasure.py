"""Erasure and retention on PostgreSQL: ``erase_user`` / ``ctxstore erase-user`` leave
nothing of the user in any table, and ``purge-expired --older-than-days`` applies an age
policy.  (The same erasure on every backend: tests/conformance/contract.py.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from typing import Any

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from tests.integration.test_faults import admin_sql

KNEE = {"stage": "intake", "chief_complaint": "knee pain", "red_flags": ["numbness"]}
#: Every table that holds session data, and how its rows name their session.
SESSION_TABLES = ("messages", "summaries", "consultation_states", "consultation_state_history")


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


def cli(database_url: URL, *arguments: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}
    return subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", *arguments],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


async def seed_user(storage: PostgresStorage, user_id: str, sessions: int) -> list[str]:
    ids = [f"{user_id}-s{number}" for number in range(sessions)]
    for session_id in ids:
        await storage.save(session_id, msgs("my knee hurts", "since when?"), user_id=user_id)
        await storage.save_state(session_id, KNEE)
        await storage.save_state(session_id, {**KNEE, "stage": "triage"})
        await storage.save_summary(session_id, "knee pain", covers_until=1)
    await storage.save_profile(user_id, {"age": 52})
    return ids


async def rows_of(database_url: URL, user_id: str, session_ids: list[str]) -> dict[str, Any]:
    quoted = ", ".join(f"'{session_id}'" for session_id in session_ids)
    found = {
        "sessions": await admin_sql(
            database_url, f"SELECT count(*) FROM sessions WHERE user_id = '{user_id}'"
        ),
        "user_profiles": await admin_sql(
            database_url, f"SELECT count(*) FROM user_profiles WHERE user_id = '{user_id}'"
        ),
    }
    for table in SESSION_TABLES:
        found[table] = await admin_sql(
            database_url, f"SELECT count(*) FROM {table} WHERE session_id IN ({quoted})"
        )
    return found


def test_erase_user_command_leaves_nothing_of_the_user(database_url: URL) -> None:
    async def seed() -> tuple[list[str], list[str]]:
        async with PostgresStorage.from_url(database_url) as storage:
            return await seed_user(storage, "erase-me", 3), await seed_user(storage, "keep", 1)

    erased_ids, kept_ids = asyncio.run(seed())
    before = asyncio.run(rows_of(database_url, "erase-me", erased_ids))
    assert before["messages"] == 6 and before["consultation_state_history"] == 6

    result = cli(database_url, "erase-user", "erase-me")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "erased user 'erase-me': 3 sessions, 6 messages, 3 summaries, 3 states "
        "(6 state changes), the profile"
    )
    after = asyncio.run(rows_of(database_url, "erase-me", erased_ids))
    assert after == dict.fromkeys(after, 0)
    kept = asyncio.run(rows_of(database_url, "keep", kept_ids))
    assert kept["messages"] == 2 and kept["user_profiles"] == 1

    again = cli(database_url, "erase-user", "erase-me")
    assert "0 sessions, 0 messages" in again.stdout and "no profile" in again.stdout


def test_erase_user_refuses_a_bad_user_id_with_a_clear_error(database_url: URL) -> None:
    result = cli(database_url, "erase-user", "x" * 1000)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert "user id" in result.stderr


def test_retention_purges_sessions_idle_longer_than_the_policy(database_url: URL) -> None:
    async def seed() -> None:
        async with PostgresStorage.from_url(database_url) as storage:
            await storage.save("stale", msgs("a year ago"))
            await storage.save("recent", msgs("today"))
        await admin_sql(
            database_url,
            "UPDATE sessions SET updated_at = now() - interval '400 days' "
            "WHERE session_id = 'stale'",
        )

    asyncio.run(seed())
    result = cli(database_url, "purge-expired", "--older-than-days", "365")
    assert result.returncode == 0, result.stderr
    assert "purged 1 expired sessions and sessions idle over 365 days" in result.stdout
    remaining = asyncio.run(
        admin_sql(database_url, "SELECT string_agg(session_id, ',') FROM sessions")
    )
    assert remaining == "recent"
