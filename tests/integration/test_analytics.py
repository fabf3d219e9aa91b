"""Analytics reports on a small known dataset, and the least-privilege roles.

The proof that the analytics role sees no id and no rare free text, as a real login, is in
test_deidentified_analytics.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import ProgrammingError

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import (
    FREQUENCY_REPORTS,
    min_group_size,
    run_report,
    set_min_group_size,
)
from ctxstore.commands.sample import sample_consultation, seed_sample
from ctxstore.db.roles import RoleNames, recorded_role_names
from ctxstore.errors import InvalidInputError

DAY1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)  # a Monday
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=7)  # the next week


def midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0)


def talk(start: datetime, turns: int, minutes_apart: float) -> list[Message]:
    messages = []
    for turn in range(turns):
        for offset, role in enumerate(("user", "assistant")):
            messages.append(
                Message(
                    role=role,
                    content=f"{role} {turn}",
                    turn_id=f"t{turn}",
                    timestamp=start + timedelta(minutes=minutes_apart * (2 * turn + offset)),
                )
            )
    return messages


def state(
    stage: str, complaint: str | None, parts: list[str], symptoms: list[str], flags: list[str]
) -> dict[str, Any]:
    return {
        "stage": stage,
        "chief_complaint": complaint,
        "body_parts": parts,
        "symptoms": symptoms,
        "red_flags": flags,
    }


# session: (first activity, turns, minutes between messages, state versions in order)
DATASET: dict[str, tuple[datetime, int, float, list[dict[str, Any]]]] = {
    "A": (
        DAY1,
        2,
        1.0,
        [  # 4 messages over 3 minutes; collecting twice = one transition
            state("greeting", None, [], [], []),
            state("collecting_details", "膝盖下坠感", ["膝盖"], ["下坠感"], []),
            state("collecting_details", "膝盖下坠感", ["膝盖"], ["下坠感", "疼痛"], []),
            state("assessing", "膝盖下坠感", ["膝盖"], ["下坠感", "疼痛"], []),
        ],
    ),
    "B": (
        DAY1 + timedelta(hours=3),
        1,
        5.0,
        [
            state("greeting", None, [], [], []),
            state("collecting_details", "膝盖下坠感", ["膝盖"], ["下坠感"], ["无法负重"]),
        ],
    ),
    "C": (
        DAY2,
        3,
        2.0,
        [  # 6 messages over 10 minutes
            state("greeting", None, [], [], []),
            state("collecting_details", "脚踝扭伤", ["脚踝"], ["肿胀", "疼痛"], []),
            state("assessing", "脚踝扭伤", ["脚踝"], ["肿胀", "疼痛"], []),
            state("advising", "脚踝扭伤", ["脚踝"], ["肿胀", "疼痛"], []),
        ],
    ),
    "D": (
        DAY2 + timedelta(hours=5),
        1,
        1.0,
        [
            state("greeting", "腰痛", ["腰部"], [], ["发热"]),
        ],
    ),
    "E": (DAY3, 1, 4.0, []),  # no state yet
}


@pytest.fixture
async def known(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        for session_id, (start, turns, apart, states) in DATASET.items():
            await storage.save(session_id, talk(start, turns, apart), user_id=f"user-{session_id}")
            for document in states:
                await storage.save_state(session_id, document)
        await storage.save_summary("C", "总结", covers_until=2)
        yield storage


async def report(storage: PostgresStorage, name: str, **options: Any) -> list[dict[str, Any]]:
    if name in FREQUENCY_REPORTS:  # free text is counted by the refresh (revision 0018)
        await refresh_aggregates(storage, show=False)
    return (await run_report(storage.engine, name, **options)).as_dicts()


async def test_overview(known: PostgresStorage) -> None:
    (row,) = await report(known, "overview")
    assert row["consultations"] == 5
    assert row["messages"] == 4 + 2 + 6 + 2 + 2
    assert float(row["avg_turns"]) == (2 + 1 + 3 + 1 + 1) / 5
    assert row["red_flag_rate"] is None  # 2 with red flags, fewer than k = 5 (0019)
    assert float(row["summarized_share"]) == 1 / 5
    # durations in minutes: A 3, B 5, C 10, D 1, E 4 -> median 4
    assert float(row["median_minutes"]) == 4.0
    await set_min_group_size(known.engine, 2)  # 2 with, 3 without: both at least k
    (row,) = await report(known, "overview")
    assert float(row["red_flag_rate"]) == 2 / 5
    # one day's two consultations: averages and medians over fewer than k are hidden
    await set_min_group_size(known.engine, 3)
    (day,) = await report(known, "overview", since=midnight(DAY1), until=midnight(DAY2))
    assert day["consultations"] == 2 and day["messages"] == 6
    assert (day["avg_turns"], day["median_minutes"], day["p90_minutes"]) == (None, None, None)


async def test_funnel_and_drop_off(known: PostgresStorage) -> None:
    rows = await report(known, "funnel")
    assert [(r["stage"], r["reached"], r["ended_here"]) for r in rows] == [
        ("greeting", 4, 1),
        ("collecting_details", 3, 1),
        ("assessing", 2, 1),
        ("advising", 1, 1),
    ]
    assert [float(r["share_of_first"]) for r in rows] == [1.0, 0.75, 0.5, 0.25]
    assert float(rows[1]["drop_off_rate"]) == round(1 / 3, 4)


async def test_transitions(known: PostgresStorage) -> None:
    rows = await report(known, "transitions")
    assert {(r["from_stage"], r["to_stage"]): r["transitions"] for r in rows} == {
        (None, "greeting"): 4,
        ("greeting", "collecting_details"): 3,
        ("collecting_details", "assessing"): 2,
        ("assessing", "advising"): 1,
    }


async def test_frequencies_show_values_at_least_min_group_size_consultations_share(
    known: PostgresStorage,
) -> None:
    assert await set_min_group_size(known.engine, 2) == 5  # the default
    # Counted per UTC day (revision 0016): a day's value shows when k or more of the day's
    # consultations have it and k or more don't.  Day 1: A and B both 膝盖下坠感 (none
    # without it: hidden); day 2: C and D, no value twice; day 3: E alone.
    assert await report(known, "complaints") == []
    for extra in ("F", "G"):  # two more on day 1, with other values
        await known.save(extra, talk(DAY1 + timedelta(hours=5), 1, 1.0), user_id=f"u-{extra}")
        await known.save_state(extra, state("assessing", "头痛", ["头"], ["麻木"], []))
    complaints = await report(known, "complaints")
    # 脚踝扭伤 and 腰痛 are one consultation's each: suppressed
    assert [(r["chief_complaint"], r["consultations"]) for r in complaints] == [
        ("头痛", 2),
        ("膝盖下坠感", 2),
    ]
    parts = await report(known, "body-parts")
    assert [(r["body_part"], r["consultations"]) for r in parts] == [("头", 2), ("膝盖", 2)]
    symptoms = await report(known, "symptoms")
    # 疼痛: A on day 1, C on day 2, once each day: suppressed
    assert [(r["symptom"], r["consultations"]) for r in symptoms] == [("下坠感", 2), ("麻木", 2)]
    assert await report(known, "red-flag-types") == []  # 无法负重 and 发热: once each
    assert await report(known, "symptom-durations") == []
    # A window counts its own days, suppressed the same way
    day1 = await report(known, "complaints", since=midnight(DAY1), until=midnight(DAY2))
    assert [(r["chief_complaint"], r["consultations"]) for r in day1] == [
        ("头痛", 2),
        ("膝盖下坠感", 2),
    ]
    assert await report(known, "symptoms", since=midnight(DAY2)) == []
    await set_min_group_size(known.engine, 3)
    assert await report(known, "complaints") == []


async def test_by_default_a_value_needs_five_consultations(known: PostgresStorage) -> None:
    assert await min_group_size(known.engine) == 5
    for name in ("complaints", "body-parts", "symptoms", "red-flag-types", "symptom-durations"):
        assert await report(known, name) == [], name
    day = midnight(DAY3) + timedelta(days=1)
    async with known.engine.begin() as conn:
        # ten more consultations on one day: five with 膝盖下坠感, five with 头痛
        for extra in range(10):
            await conn.execute(
                text(
                    "INSERT INTO sessions (session_id, user_id, first_activity_at, "
                    "last_activity_at) VALUES (:s, 'u', :t, :t)"
                ).bindparams(s=f"extra-{extra}", t=day + timedelta(minutes=extra))
            )
    for extra in range(10):
        complaint = "膝盖下坠感" if extra < 5 else "头痛"
        await known.save_state(f"extra-{extra}", state("assessing", complaint, [], [], []))
    complaints = await report(known, "complaints")
    assert [(r["chief_complaint"], r["consultations"]) for r in complaints] == [
        ("头痛", 5),
        ("膝盖下坠感", 5),
    ]


async def test_the_min_group_size_is_at_least_two(known: PostgresStorage) -> None:
    for bad in (1, 0, -3, 2.5, True, 10**7):
        with pytest.raises(InvalidInputError, match="min group size must be a whole number"):
            await set_min_group_size(known.engine, bad)  # type: ignore[arg-type]
    assert await min_group_size(known.engine) == 5


async def test_red_flags_per_day_and_week(known: PostgresStorage) -> None:
    # Shown only where k have red flags and k don't (0019): with k = 2, no day qualifies
    # (1 of 2, 1 of 2, 0 of 1), the first week does (2 of 4).
    await set_min_group_size(known.engine, 2)
    daily = await report(known, "red-flags", per="day")
    assert [(r["day"], r["consultations"], r["with_red_flags"], r["rate"]) for r in daily] == [
        (midnight(DAY1), 2, None, None),
        (midnight(DAY2), 2, None, None),
        (midnight(DAY3), 1, None, None),
    ]
    weekly = await report(known, "red-flags", per="week")
    assert [(r["week"], r["consultations"], r["with_red_flags"]) for r in weekly] == [
        (midnight(DAY1), 4, 2),
        (midnight(DAY3), 1, None),
    ]
    assert float(weekly[0]["rate"]) == 0.5
    # the all-time views the analytics role reads suppress the same way
    async with known.engine.connect() as conn:
        views = await conn.execute(
            text("SELECT week, with_red_flags FROM analytics_red_flags_weekly ORDER BY 1")
        )
        assert [tuple(row) for row in views] == [(midnight(DAY1), 2), (midnight(DAY3), None)]


async def test_since_and_until_select_by_first_activity(known: PostgresStorage) -> None:
    (row,) = await report(known, "overview", since=midnight(DAY2), until=midnight(DAY3))
    assert row["consultations"] == 2  # C and D
    funnel = await report(known, "funnel", since=midnight(DAY2))
    assert [(r["stage"], r["reached"]) for r in funnel][:2] == [
        ("greeting", 2),
        ("collecting_details", 1),
    ]
    assert await report(known, "complaints", until=midnight(DAY1)) == []


async def test_durations_by_final_stage(known: PostgresStorage) -> None:
    await set_min_group_size(known.engine, 2)
    rows = {r["final_stage"]: r for r in await report(known, "durations")}
    assert rows["advising"]["consultations"] == 1
    assert rows["advising"]["median_minutes"] is None  # one consultation: its exact time
    assert rows[None]["consultations"] == 1  # E has no state
    await set_min_group_size(known.engine, 5)
    (everyone,) = await report(known, "overview")
    assert float(everyone["median_minutes"]) == 4.0  # five: shown


@pytest.mark.slow
async def test_analytics_command_renders_table_json_and_csv(
    known: PostgresStorage, database_url: URL
) -> None:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}

    def ctxstore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxstore.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    for extra in ("F", "G"):  # day 1: A and B with 膝盖下坠感, F and G without (see above)
        await known.save(extra, talk(DAY1 + timedelta(hours=5), 1, 1.0), user_id=f"u-{extra}")
        await known.save_state(extra, state("assessing", "头痛", ["头"], ["麻木"], []))
    changed = ctxstore("db", "min-group-size", "2")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "min group size 5 -> 2"
    assert ctxstore("db", "min-group-size").stdout.strip() == "2"
    before = ctxstore("analytics", "complaints")
    assert "膝盖下坠感" not in before.stdout  # counted under k = 5: refreshed days only
    refreshed = ctxstore("analytics", "refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.startswith("refreshed 3 days (7 consultations"), refreshed.stdout
    again = ctxstore("analytics", "refresh")
    assert again.stdout.startswith("refreshed 0 days"), again.stdout
    assert "3 days unchanged" in again.stdout
    outputs = {}
    for output in ("table", "json", "csv"):
        result = ctxstore("analytics", "complaints", "--format", output)
        assert result.returncode == 0, result.stderr
        assert "fewer than 2 consultations" in result.stderr
        outputs[output] = result.stdout
    assert outputs["table"].splitlines()[0].split() == ["chief_complaint", "consultations"]
    assert "膝盖下坠感" in outputs["table"]
    assert '"consultations": 2' in outputs["json"]
    assert "膝盖下坠感,2" in outputs["csv"].splitlines()[1:]
    # windows of whole days only (revision 0016)
    day = ctxstore("analytics", "complaints", "--since", "2026-11-02", "--until", "2026-11-03")
    assert day.returncode == 0, day.stderr
    assert "膝盖下坠感" in day.stdout
    refused = ctxstore("analytics", "complaints", "--since", "2026-11-02T09:00")
    assert refused.returncode == 2 and "--since" in refused.stderr
    assert "not a whole day (UTC midnight)" in refused.stderr
    for output in outputs.values():
        assert "脚踝扭伤" not in output and "腰痛" not in output  # one consultation each
    refused = ctxstore("db", "min-group-size", "1")
    assert refused.returncode == 1
    assert "min group size must be a whole number from 2" in refused.stderr


# -- roles -----------------------------------------------------------------------------


async def roles_of(storage: PostgresStorage) -> RoleNames:
    """The roles recorded in the database (a copy of the template keeps the template's)."""
    async with storage.engine.connect() as conn:
        names = await conn.run_sync(recorded_role_names)
    assert names is not None
    return names


async def as_role(storage: PostgresStorage, role: str, sql: str) -> list[tuple[Any, ...]]:
    """Run ``sql`` with only ``role``'s privileges (SET ROLE on a superuser connection)."""
    async with storage.engine.connect() as conn:
        await conn.execute(text(f"SET ROLE {role}"))
        try:
            result = await conn.execute(text(sql))
            return [tuple(row) for row in result] if result.returns_rows else []
        finally:
            await conn.rollback()


@pytest.mark.parametrize(
    "table",
    [
        "messages",
        "summaries",
        "user_profiles",
        "sessions",
        "consultation_states",
        "consultation_state_history",
        "ctxstore_pseudonym_key",
        "ctxstore_analytics_settings",
        "ctxstore_roles",
    ],
)
async def test_the_analytics_role_cannot_read_tables(known: PostgresStorage, table: str) -> None:
    analytics = (await roles_of(known)).analytics
    with pytest.raises(ProgrammingError, match="permission denied"):
        await as_role(known, analytics, f"SELECT * FROM {table} LIMIT 1")


async def test_the_analytics_role_reads_the_views(known: PostgresStorage) -> None:
    analytics = (await roles_of(known)).analytics
    rows = await as_role(known, analytics, "SELECT count(*) FROM analytics_consultations")
    assert rows == [(5,)]
    funnel = await as_role(known, analytics, "SELECT stage, reached FROM analytics_stage_funnel")
    assert ("greeting", 4) in funnel
    columns = await as_role(
        known,
        analytics,
        "SELECT string_agg(column_name, ',') FROM information_schema.columns "
        "WHERE table_name LIKE 'analytics_%'",
    )
    names = set(columns[0][0].split(","))
    assert {"consultation", "first_day", "duration_bucket"} <= names
    assert not {"duration_seconds", "first_activity_at"} & names  # revision 0016
    assert (
        not {
            "content",
            "text",
            "document",
            "age",
            "gender",
            "session_id",
            "user_id",
            "symptoms",
            "body_parts",
            "red_flags",
        }
        & names
    )


async def test_the_app_role_has_dml_but_no_ddl(known: PostgresStorage) -> None:
    app = (await roles_of(known)).app
    assert await as_role(known, app, "SELECT count(*) FROM messages") == [(16,)]
    await as_role(known, app, "UPDATE sessions SET user_id = user_id WHERE session_id = 'A'")
    for ddl in (
        "CREATE TABLE intruder (x int)",
        "ALTER TABLE messages ADD COLUMN intruder int",
        "DROP TABLE summaries",
        "TRUNCATE messages",
        "CREATE INDEX intruder ON messages (content)",
    ):
        with pytest.raises(ProgrammingError, match=r"permission denied|must be owner"):
            await as_role(known, app, ddl)
    for private in ("ctxstore_pseudonym_key", "ctxstore_analytics_settings"):
        with pytest.raises(ProgrammingError, match="permission denied"):
            await as_role(known, app, f"SELECT * FROM {private}")


async def test_only_the_owner_sets_the_min_group_size(known: PostgresStorage) -> None:
    roles = await roles_of(known)
    for role in (roles.app, roles.analytics):
        with pytest.raises(ProgrammingError, match="permission denied"):
            await as_role(known, role, "UPDATE ctxstore_analytics_settings SET min_group_size = 2")
    await as_role(known, roles.owner, "UPDATE ctxstore_analytics_settings SET min_group_size = 2")
    assert await as_role(known, roles.analytics, "SELECT * FROM analytics_suppression") == [(5,)]


async def test_seed_sample_writes_varied_consultations_through_the_api(
    pg_storage: PostgresStorage,
) -> None:
    seeded = await seed_sample(pg_storage, 60, seed=3, concurrency=4, show=False)
    assert seeded.sessions == 60
    assert sum(seeded.stages.values()) == 60 and len([s for s in seeded.stages.values() if s]) >= 4
    (row,) = await report(pg_storage, "overview")
    assert row["consultations"] == 60 and row["messages"] == seeded.messages
    funnel = await report(pg_storage, "funnel")
    assert funnel[0]["stage"] == "greeting" and funnel[0]["reached"] == 60
    first = sample_consultation(0, seed=3)
    assert [m.content for m in await pg_storage.load(first.session_id)] == [
        m.content for m in first.messages
    ]
    again = sample_consultation(5, seed=3, now=DAY1)
    assert again == sample_consultation(5, seed=3, now=DAY1)  # deterministic


async def test_seeding_the_same_seed_again_leaves_its_consultations_as_they_are(
    pg_storage: PostgresStorage,
) -> None:
    """Issue 28: a second seed-sample re-applied every state to the same sessions, so
    the transitions report showed moves that never happened (completed -> greeting)."""
    first = await seed_sample(pg_storage, 12, seed=11, concurrency=4, show=False)
    assert (first.already, first.sessions) == (0, 12)
    transitions = await report(pg_storage, "transitions")
    half_written = sample_consultation(3, seed=11)
    await pg_storage.delete(half_written.session_id)  # a run stopped mid-consultation...
    await pg_storage.save(half_written.session_id, half_written.messages[:2])
    await pg_storage.save_state(half_written.session_id, half_written.states[0])
    again = await seed_sample(pg_storage, 12, seed=11, concurrency=4, show=False)
    assert (again.already, again.sessions) == (11, 1)
    assert "11 consultations of this seed were there already" in again.summary()
    assert await report(pg_storage, "transitions") == transitions
    state = await pg_storage.load_state(half_written.session_id)
    assert state is not None and state.version == len(half_written.states)
    assert [m.content for m in await pg_storage.load(half_written.session_id)] == [
        m.content for m in half_written.messages
    ]
