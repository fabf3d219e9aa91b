"""Erasure and retention on PostgreSQL: ``erase_user`` / ``ctxstore erase-user`` leave
nothing of the user in any table, nor in the table statistics or dead row versions once
the erasure's VACUUM ran (or the receipt says it did not, and what to run), and
``purge-expired --older-than-days`` applies an age policy.  (The same erasure on every
backend: tests/conformance/contract.py.)"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.encryption import Encryption, Keyring
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres.erasure import ERASED_TABLES, VACUUM_COMMAND
from tests.integration.test_deidentified_analytics import create_login, drop_login, read_roles
from tests.integration.test_faults import admin_sql
from tests.migrations.test_distribution_rules import connect
from tests.pg_harness import PgTestServer

KNEE = {"stage": "intake", "chief_complaint": "knee pain", "red_flags": ["numbness"]}
#: Every table that holds session data, and how its rows name their session.
SESSION_TABLES = ("messages", "summaries", "consultation_states", "consultation_state_history")


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


def cli(database_url: URL, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CTXSTORE_DATABASE_URL": database_url.render_as_string(False),
        **{f"CTXSTORE_{name.upper()}": value for name, value in variables.items()},
    }
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

    result = cli(database_url, "erase-user", "erase-me", backup_retention_days="30")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        "erased user 'erase-me': 3 sessions, 6 messages, 3 summaries, 3 states "
        "(6 state changes), the profile"
    )
    assert "\nvacuum: ANALYZE and VACUUM ran on sessions, messages" in result.stdout
    assert "follow-up:" not in result.stdout
    assert "\nbackups: Backups taken before " in result.stdout
    assert "with backups kept 30 days (CTXSTORE_BACKUP_RETENTION_DAYS)" in result.stdout
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


# -- after the erasure: statistics, dead row versions, backups (issue 24, item 4) ----------

COMPLAINT = "zq-rare-complaint"


async def seed_for_statistics(storage: PostgresStorage, user_id: str, sessions: int) -> None:
    """Enough rows of the user that ANALYZE records its id, its session ids and its
    complaint among the most common values and histogram bounds."""
    complaint = COMPLAINT if user_id == "erase-me" else "knee pain"
    for number in range(sessions):
        session_id = f"{user_id}-s{number}"
        await storage.save(session_id, msgs(complaint, complaint, "since when?"), user_id=user_id)
        await storage.save_state(session_id, {**KNEE, "chief_complaint": complaint})
        await storage.save_summary(session_id, complaint, covers_until=1)
    await storage.save_profile(user_id, {"age": 52})


async def sql_rows(url: URL, statement: str, *arguments: Any) -> list[Any]:
    """As the test server's superuser, outside a transaction (VACUUM may run)."""
    connection = await connect(url)
    try:
        return list(await connection.fetch(statement, *arguments))
    finally:
        await connection.close()


async def traces(url: URL, needle: str) -> set[str]:
    """The columns whose statistics (pg_stats) show a value containing ``needle``."""
    found = await sql_rows(
        url,
        "SELECT tablename || '.' || attname AS place FROM pg_stats "
        "WHERE schemaname = current_schema() AND tablename = ANY($1::text[]) "
        "AND concat_ws(' ', most_common_vals::text, histogram_bounds::text, "
        "most_common_elems::text) LIKE '%' || $2 || '%'",
        list(ERASED_TABLES),
        needle,
    )
    return {row["place"] for row in found}


async def dead_row_versions(url: URL) -> dict[str, int]:
    """Dead tuples in each erased table's heap, counted page by page (pgstattuple)."""
    await sql_rows(url, "CREATE EXTENSION IF NOT EXISTS pgstattuple")
    return {
        table: (await sql_rows(url, f"SELECT dead_tuple_count FROM pgstattuple('{table}')"))[0][0]
        for table in ERASED_TABLES
    }


async def without_autovacuum(url: URL) -> None:
    """So nothing but the erasure cleans up (or analyzes) while the test looks."""
    for table in ERASED_TABLES:
        await sql_rows(url, f"ALTER TABLE {table} SET (autovacuum_enabled = off)")


async def test_the_erasure_leaves_no_statistics_and_no_dead_rows(database_url: URL) -> None:
    async with PostgresStorage.from_url(
        database_url, backup_retention=timedelta(days=35)
    ) as storage:
        await without_autovacuum(database_url)
        await seed_for_statistics(storage, "erase-me", 12)
        await seed_for_statistics(storage, "keep", 12)
        await sql_rows(database_url, "ANALYZE")
        user_places = {"sessions.user_id", "user_profiles.user_id"}
        session_places = {f"{table}.session_id" for table in (*SESSION_TABLES, "sessions")}
        complaint_places = {
            "messages.content",
            "summaries.text",
            "consultation_states.chief_complaint",
            "consultation_state_history.chief_complaint",
        }
        before = await traces(database_url, "erase-me"), await traces(database_url, COMPLAINT)
        assert before[0] >= user_places | session_places, before
        assert before[1] >= complaint_places, before

        # Without the clean-up, the statistics and the dead row versions keep the user.
        deferred = await storage.erase_user("erase-me", vacuum=False)
        assert (deferred.sessions, deferred.messages, deferred.profile) == (12, 36, True)
        assert not deferred.vacuumed
        assert deferred.vacuum_note.startswith("not run (vacuum=False): until it runs, pg_stats")
        assert deferred.vacuum_follow_up is not None
        assert VACUUM_COMMAND in deferred.vacuum_follow_up
        assert (await traces(database_url, "erase-me"), await traces(database_url, COMPLAINT)) == (
            before
        )
        dead = await dead_row_versions(database_url)
        assert dead["messages"] >= 36 and dead["sessions"] >= 12, dead

        # An erasure that finds nothing more still cleans up: the operator's follow-up.
        receipt = await storage.erase_user("erase-me")
        assert (receipt.sessions, receipt.messages, receipt.profile) == (0, 0, False)
        assert receipt.vacuumed and receipt.vacuum_follow_up is None
        assert receipt.vacuum_note.startswith(
            "ANALYZE and VACUUM ran on sessions, messages, summaries, consultation_states, "
            "consultation_state_history, user_profiles, data_keys, graph_checkpoints, "
            "graph_channel_values, graph_writes: pg_stats and dead row versions no longer "
            "hold the erased rows"
        )
        assert await traces(database_url, "erase-me") == set()
        assert await traces(database_url, COMPLAINT) == set()
        assert await dead_row_versions(database_url) == dict.fromkeys(ERASED_TABLES, 0)
        assert "sessions.user_id" in await traces(database_url, "keep")  # fresh, not gone
        assert len(await storage.load("keep-s0")) == 3

        # Nothing was sealed: backups hold the user in plaintext until they expire.
        assert deferred.backups_readable_until == deferred.erased_at + timedelta(days=35)
        assert "still hold the user's rows in plaintext (no data key of the user" in (
            deferred.backups
        )
        expiry = deferred.backups_readable_until.date().isoformat()
        assert f"the last of them expires by {expiry}" in deferred.backups
        assert deferred.backups.endswith("only deleting those backups removes them")
        assert f"\nbackups: {deferred.backups}" in deferred.summary()
        assert receipt.backups.startswith("nothing of the user was left to erase")


async def test_statistics_of_tables_the_erasure_emptied_are_cleared(database_url: URL) -> None:
    """ANALYZE keeps the statistics of a table it finds empty: the last user's erasure
    clears them (as a superuser), or its receipt says it could not."""
    encryption = Encryption(Keyring({"k1": os.urandom(32)}))
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        await without_autovacuum(database_url)
        await seed_for_statistics(storage, "erase-me", 6)
        await sql_rows(database_url, "ANALYZE")
        emptied = {"sessions.user_id", "messages.session_id", "summaries.session_id"}
        assert emptied <= await traces(database_url, "erase-me")

        deferred = await storage.erase_user("erase-me", vacuum=False)
        assert deferred.sessions == 6
        await sql_rows(database_url, VACUUM_COMMAND)  # what an owner runs, as is
        assert emptied <= await traces(database_url, "erase-me")  # what ANALYZE left

        receipt = await storage.erase_user("erase-me")
        assert receipt.vacuumed, receipt.vacuum_note
        assert await traces(database_url, "erase-me") == set()
        assert await traces(database_url, COMPLAINT) == set()

        # Sealed: backups open the user's rows only while master key k1 exists.
        assert (
            "sealed rows and the 1 data key the erasure destroyed, wrapped under master key 'k1'"
            in (deferred.backups)
        )
        assert "while that master key exists" in deferred.backups
        assert "CTXSTORE_BACKUP_RETENTION_DAYS is not set" in deferred.backups
        assert deferred.backups_readable_until is None


@pytest.fixture
def app_login(pg_server: PgTestServer, database_url: URL) -> Iterator[URL]:
    """A login granted the database's app role only: DML, no ownership."""
    login, password = asyncio.run(
        create_login(database_url, asyncio.run(read_roles(database_url)).app)
    )
    try:
        yield database_url.set(username=login, password=password)
    finally:
        asyncio.run(drop_login(pg_server.url, login))


async def test_an_app_login_erases_and_is_told_the_vacuum_did_not_run(
    database_url: URL, app_login: URL
) -> None:
    async with PostgresStorage.from_url(app_login) as storage:
        await without_autovacuum(database_url)
        await seed_for_statistics(storage, "erase-me", 6)
        await seed_for_statistics(storage, "keep", 6)
        await sql_rows(database_url, "ANALYZE")
        receipt = await storage.erase_user("erase-me")
    assert (receipt.sessions, receipt.profile) == (6, True)
    assert (await rows_of(database_url, "erase-me", [f"erase-me-s{n}" for n in range(6)])) == (
        dict.fromkeys(["sessions", "user_profiles", *SESSION_TABLES], 0)
    )
    assert not receipt.vacuumed
    assert receipt.vacuum_note.startswith(
        "not run: this login may not VACUUM or ANALYZE sessions, messages, summaries, "
        "consultation_states, consultation_state_history, user_profiles, data_keys, "
        "graph_checkpoints, graph_channel_values, graph_writes (only "
        "their owner, the database's owner, a superuser or, on PostgreSQL 17+, a role "
        "granted MAINTAIN may; the app role is none of these); until it runs, pg_stats and "
        "dead row versions"
    )
    assert receipt.vacuum_follow_up is not None
    assert receipt.vacuum_follow_up.startswith(
        f"as the tables' owner (a login granted the owner role), run: {VACUUM_COMMAND} "
    )
    assert f"\nfollow-up: {receipt.vacuum_follow_up}\n" in receipt.summary()
    # What the receipt says is left is left; the follow-up, run by the owner, clears it.
    assert "sessions.user_id" in await traces(database_url, "erase-me")
    assert (await dead_row_versions(database_url))["messages"] > 0
    await sql_rows(database_url, VACUUM_COMMAND)
    assert await traces(database_url, "erase-me") == set()
    assert (await dead_row_versions(database_url))["messages"] == 0


def test_the_command_as_an_app_login_succeeds_and_prints_the_follow_up(
    database_url: URL, app_login: URL
) -> None:
    async def seed() -> None:
        async with PostgresStorage.from_url(app_login) as storage:
            await seed_user(storage, "erase-me", 1)

    asyncio.run(seed())
    result = cli(app_login, "erase-user", "erase-me")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("erased user 'erase-me': 1 sessions, 2 messages")
    assert lines[1].startswith("vacuum: not run: this login may not VACUUM")
    assert lines[2].startswith("follow-up: as the tables' owner")
    assert lines[3].startswith("backups: Backups taken before")
    skipped = cli(database_url, "erase-user", "erase-me", "--no-vacuum")
    assert skipped.returncode == 0, skipped.stderr
    assert "\nvacuum: not run (vacuum=False)" in skipped.stdout


async def test_a_memory_store_says_there_is_nothing_to_vacuum_or_back_up() -> None:
    storage = MemoryStorage()
    await storage.save("s", msgs("hello"), user_id="u")
    receipt = await storage.erase_user("u")
    assert (receipt.sessions, receipt.vacuumed, receipt.vacuum_follow_up) == (1, False, None)
    assert receipt.vacuum_note == (
        "not applicable: a MemoryStorage keeps no table statistics or dead row versions"
    )
    assert receipt.backups.startswith("not applicable: a MemoryStorage keeps its data")
    assert receipt.backups_readable_until is None
