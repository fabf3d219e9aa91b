"""Retention by kind of data on PostgreSQL (revision 1007): the owner's periods, applied by
purge-expired to summaries, state history and profiles (sessions: by their last write),
each kind counted, a dry run counting what the run then removes, holds respected."""

from __future__ import annotations

from datetime import timedelta

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import ConsultationState, Message, PostgresStorage, UserProfile
from ctxstore.commands.expiry import purge_store
from ctxstore.commands.holds import place_hold
from ctxstore.commands.retention import periods, set_period, unset_period
from ctxstore.errors import ConfigurationError, InvalidInputError
from tests.integration.test_erasure import app_login, cli  # noqa: F401 - a fixture

pytestmark = pytest.mark.postgres

DAYS_30 = timedelta(days=30)
TURN = [Message(role="user", content="我膝盖疼"), Message(role="assistant", content="好的")]
OLD = "now() - interval '40 days'"


async def run(url: URL, *statements: str) -> list[int]:
    """Each statement as the test server's superuser; the rows each touched."""
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        return [int((await connection.execute(s)).split()[-1]) for s in statements]
    finally:
        await connection.close()


async def count(url: URL, query: str) -> int:
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        return int(await connection.fetchval(query))
    finally:
        await connection.close()


async def consultation(storage: PostgresStorage, session_id: str, user_id: str) -> None:
    """A session with 3 summary versions and 3 state changes, and its user's profile."""
    await storage.save(session_id, TURN, user_id=user_id)
    for version in range(3):
        await storage.save_summary(session_id, f"摘要 {version}", covers_until=1)
        await storage.save_state(session_id, ConsultationState(stage=f"stage-{version}"))
    await storage.save_profile(user_id, UserProfile(age=40))


async def seeded(storage: PostgresStorage, url: URL) -> None:
    """Four users: old (everything 40 days old), held (the same, under a hold), active
    (old profile, a session written today) and fresh (written today)."""
    for user in ("old", "held", "active", "fresh"):
        await consultation(storage, f"{user}-s", user)
    await run(
        url,
        f"UPDATE summaries SET created_at = {OLD} WHERE session_id <> 'fresh-s'",
        f"UPDATE consultation_state_history SET created_at = {OLD} WHERE session_id <> 'fresh-s'",
        f"UPDATE user_profiles SET updated_at = {OLD} WHERE user_id <> 'fresh'",
        f"UPDATE sessions SET updated_at = {OLD} WHERE user_id IN ('old', 'held')",
    )
    await place_hold(storage, "user", "held", reason="matter", placed_by="legal")


async def test_each_kind_goes_by_its_own_period_and_the_dry_run_counts_it(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await seeded(storage, database_url)
        for kind in ("summaries", "state_history", "profiles"):
            await set_period(storage, kind, DAYS_30, set_by="dpo")

        dry = await purge_store(storage, show=False, dry_run=True)
        counted = {kind: (found.removed, found.held) for kind, found in dry.kinds.items()}
        # Of each consultation's 3 versions the latest stays: 2 go from old and active.
        assert counted == {"summaries": (4, 2), "state_history": (4, 2), "profiles": (1, 1)}
        assert "summaries: would remove 4 older than 30 days (2 kept under a legal hold)" in (
            dry.summary()
        )

        done = await purge_store(storage, show=False)
        assert {kind: (f.removed, f.held) for kind, f in done.kinds.items()} == counted
        assert "profiles: removed 1 older than 30 days (1 kept under a legal hold)" in (
            done.summary()
        )
        assert await storage.load_profile("old") is None
        for user in ("held", "active", "fresh"):
            assert await storage.load_profile(user) is not None, user
        for user, left in (("old", 1), ("held", 3), ("active", 1), ("fresh", 3)):
            summaries = f"SELECT count(*) FROM summaries WHERE session_id = '{user}-s'"
            changes = (
                f"SELECT count(*) FROM consultation_state_history WHERE session_id = '{user}-s'"
            )
            assert (await count(database_url, summaries), await count(database_url, changes)) == (
                left,
                left,
            ), user
        latest = await storage.load_summary("old-s")
        assert latest is not None and latest.text == "摘要 2"  # the latest version stays
        assert [change.state.stage for change in await storage.state_history("old-s")] == [
            "stage-2"
        ]
        again = await purge_store(storage, show=False, dry_run=True)
        assert {kind: f.removed for kind, f in again.kinds.items()} == dict.fromkeys(
            ("summaries", "state_history", "profiles"), 0
        )


async def test_the_messages_period_purges_idle_sessions_whole(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await seeded(storage, database_url)
        await set_period(storage, "messages", DAYS_30, set_by="dpo")
        done = await purge_store(storage, show=False)
        assert (done.sessions, done.messages, done.held_sessions) == (1, 2, 1)
        assert done.retained_days == 30
        assert not await storage.exists("old-s") and await storage.exists("held-s")
        assert (
            await count(database_url, "SELECT count(*) FROM summaries WHERE session_id = 'old-s'")
            == 0
        )


async def test_periods_are_the_owners_recorded_and_checked(
    database_url: URL,
    app_login: URL,  # noqa: F811 - the fixture imported above
) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        first = await set_period(storage, "summaries", DAYS_30, set_by="dpo")
        assert (first.data_class, first.keep_for, first.set_by) == ("summaries", DAYS_30, "dpo")
        await set_period(storage, "summaries", timedelta(days=365), set_by="counsel")
        [period] = await periods(storage)
        assert (period.keep_for, period.set_by) == (timedelta(days=365), "counsel")
        with pytest.raises(InvalidInputError, match="a retention period is for"):
            await set_period(storage, "logs", DAYS_30, set_by="dpo")
        with pytest.raises(InvalidInputError, match="a day or more"):
            await set_period(storage, "profiles", timedelta(hours=2), set_by="dpo")
        assert len(await periods(storage)) == 1  # nothing half-written
        assert await unset_period(storage, "summaries") and await periods(storage) == []
    async with PostgresStorage.from_url(app_login) as app:
        assert (await purge_store(app, show=False)).sessions == 0  # the app role reads them
        with pytest.raises(ConfigurationError, match=r"permission denied"):
            await set_period(app, "summaries", DAYS_30, set_by="app")


def test_the_retention_command_and_the_dry_run_summary(database_url: URL) -> None:
    def ctxstore(*arguments: str) -> str:
        result = cli(database_url, *arguments)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert ctxstore("retention", "show").strip() == "no retention period set"
    assert ctxstore("retention", "set", "state_history", "90", "--by", "dpo").startswith(
        "set state_history: kept 90 days (set by dpo at "
    )
    assert "state_history: kept 90 days" in ctxstore("retention", "show")
    dry = ctxstore("purge-expired", "--dry-run")
    assert dry.startswith("dry run, nothing deleted: would purge 0 expired sessions")
    assert "state_history: would remove 0 older than 90 days (0 kept under a legal hold)" in dry
    assert ctxstore("retention", "unset", "state_history").strip() == "state_history: no period"
