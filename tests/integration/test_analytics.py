"""Analytics reports on a small known dataset, and the least-privilege roles.

The proof that the analytics role sees no id and no rare free text, as a real login, is in
test_deidentified_analytics.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError, ProgrammingError

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import (
    FREQUENCY_REPORTS,
    MAX_LIMIT,
    MONTHLY_REPORTS,
    min_group_size,
    run_report,
    set_min_group_size,
)
from ctxstore.commands.months import first_unpublished_month
from ctxstore.commands.sample import sample_consultation, seed_sample
from ctxstore.db.roles import RoleNames, recorded_role_names
from ctxstore.errors import InvalidInputError

DAY1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)  # a Monday
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=7)  # the next week
NOVEMBER = date(2026, 11, 1)  # DAY1 to DAY3's month
TODAY = date(2026, 12, 8)  # the first refresh that publishes November


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


async def write_dataset(storage: PostgresStorage, shift: timedelta = timedelta()) -> None:
    """DATASET, moved by ``shift``, and a summary of C."""
    for session_id, (start, turns, apart, states) in DATASET.items():
        messages = talk(start + shift, turns, apart)
        await storage.save(session_id, messages, user_id=f"user-{session_id}")
        for document in states:
            await storage.save_state(session_id, document)
    await storage.save_summary("C", "总结", covers_until=2)


@pytest.fixture
async def known(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        await write_dataset(storage)
        yield storage


async def add_headaches(storage: PostgresStorage, shift: timedelta = timedelta()) -> None:
    """F and G, on day 1 too: 头痛, 头, 麻木, no red flag (November: 7 consultations)."""
    for extra in ("F", "G"):
        messages = talk(DAY1 + shift + timedelta(hours=5), 1, 1.0)
        await storage.save(extra, messages, user_id=f"u-{extra}")
        await storage.save_state(extra, state("assessing", "头痛", ["头"], ["麻木"], []))


async def report(
    storage: PostgresStorage, name: str, *, refresh: bool = True, **options: Any
) -> list[dict[str, Any]]:
    if refresh and name in MONTHLY_REPORTS:  # published by the refresh (revision 1004)
        await refresh_aggregates(storage, today=TODAY, show=False)
    return (await run_report(storage.engine, name, today=TODAY, **options)).as_dicts()


def shown(rows: list[dict[str, Any]], column: str) -> set[tuple[str, str, int]]:
    return {(row["month"], row[column], row["consultations"]) for row in rows}


async def months_of(storage: PostgresStorage, name: str, **options: Any) -> list[tuple[Any, ...]]:
    """A frequency report's months: consultations, values shown and withheld."""
    found = await run_report(storage.engine, name, today=TODAY, **options)
    assert found.periods is not None
    return found.periods.rows


async def test_overview(known: PostgresStorage) -> None:
    (row,) = await report(known, "overview")
    assert row["consultations"] == 5
    assert row["messages"] == 4 + 2 + 6 + 2 + 2
    assert float(row["avg_turns"]) == (2 + 1 + 3 + 1 + 1) / 5
    # no red-flag rate: two windows a day apart would subtract to a day's red flags; the
    # red-flag share is per published month (the red-flags report)
    assert "red_flag_rate" not in row
    assert float(row["summarized_share"]) == 1 / 5
    # durations in minutes: A 3, B 5, C 10, D 1, E 4 -> median 4
    assert float(row["median_minutes"]) == 4.0
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


async def test_a_month_shows_the_values_k_of_its_consultations_have_and_k_do_not(
    known: PostgresStorage,
) -> None:
    assert await set_min_group_size(known.engine, 2) == 5  # the default
    await add_headaches(known)
    # November: A-G, 7 consultations.  A value shows when k or more of them have it and k
    # or more don't; 脚踝扭伤 (C) and 腰痛 (D) are one consultation's each: withheld.
    complaints = await report(known, "complaints")
    assert shown(complaints, "chief_complaint") == {
        ("2026-11", "头痛", 2),
        ("2026-11", "膝盖下坠感", 2),
    }
    assert {float(row["share"]) for row in complaints} == {round(2 / 7, 4)}
    # month, consultations, shown values, withheld values, consultations holding them
    assert await months_of(known, "complaints") == [("2026-11", 7, 2, 2, 2)]
    assert shown(await report(known, "body-parts"), "body_part") == {
        ("2026-11", "头", 2),
        ("2026-11", "膝盖", 2),
    }
    # Symptoms: 下坠感 (A, B), 疼痛 (A, C), 麻木 (F, G) pass k, 肿胀 (C) doesn't.  Shown,
    # the three would leave C alone holding a withheld symptom (symptom_count tells the
    # consultations with any): the smallest, 下坠感, is withheld too; then B alone holds
    # only withheld ones (5 with a symptom, less F and G, less A and C counted under
    # 疼痛), so 疼痛 goes too, and A, B and C hold the three withheld.
    assert shown(await report(known, "symptoms"), "symptom") == {("2026-11", "麻木", 2)}
    assert await months_of(known, "symptoms") == [("2026-11", 7, 1, 3, 3)]
    assert await report(known, "red-flag-types") == []  # 无法负重 and 发热: once each
    assert await months_of(known, "red-flag-types") == [("2026-11", 7, 0, 2, 2)]
    assert await report(known, "symptom-durations") == []
    assert await months_of(known, "symptom-durations") == [("2026-11", 7, 0, 0, 0)]


async def test_the_limit_lists_the_most_frequent_values_of_each_month(
    known: PostgresStorage,
) -> None:
    await set_min_group_size(known.engine, 2)
    await add_headaches(known)
    complaints = await report(known, "complaints", limit=1)
    (top,) = complaints  # of two tied at 2
    assert (top["chief_complaint"] in {"头痛", "膝盖下坠感"}, top["consultations"]) == (True, 2)
    # the months still count every value shown
    assert await months_of(known, "complaints", limit=1) == [("2026-11", 7, 2, 2, 2)]
    for bad in (0, -1, 2.5, MAX_LIMIT + 1):
        with pytest.raises(InvalidInputError, match="limit must be an integer"):
            await report(known, "symptoms", limit=bad)


async def test_a_monthly_report_takes_whole_months_only(known: PostgresStorage) -> None:
    await set_min_group_size(known.engine, 2)
    await add_headaches(known)
    december = date(2026, 12, 1)
    november = await report(known, "complaints", since=NOVEMBER, until=december)
    assert november == await report(known, "complaints")
    assert await report(known, "complaints", since=december) == []
    assert await report(known, "complaints", until=NOVEMBER) == []
    assert await report(known, "red-flags", since=NOVEMBER, until=december) != []
    for name in MONTHLY_REPORTS:
        for window in ({"since": midnight(DAY1)}, {"until": date(2026, 12, 2)}):
            with pytest.raises(InvalidInputError, match="must be the first day of a month"):
                await report(known, name, refresh=False, **window)
    # the functions refuse them too, for a BI tool that calls them directly
    async with known.engine.connect() as conn:
        with pytest.raises(DBAPIError, match="must be the first day of a month"):
            await conn.execute(text("SELECT * FROM analytics_month_values_v1('2026-11-02')"))


async def test_raising_k_hides_every_month_until_the_next_refresh(
    known: PostgresStorage,
) -> None:
    await set_min_group_size(known.engine, 2)
    await add_headaches(known)
    assert len(await report(known, "complaints")) == 2
    await set_min_group_size(known.engine, 3)
    # published with k = 2: hidden, its withheld counts and red flags too
    assert await report(known, "complaints", refresh=False) == []
    assert await months_of(known, "complaints") == []
    assert await report(known, "red-flags", refresh=False) == []
    # republished with k = 3 from the consultations held: 2 of 7 is fewer than k
    assert await report(known, "complaints") == []
    assert await months_of(known, "complaints") == [("2026-11", 7, 0, 4, 6)]  # E: no state


async def test_by_default_a_value_needs_five_consultations(known: PostgresStorage) -> None:
    assert await min_group_size(known.engine) == 5
    for name in FREQUENCY_REPORTS:
        assert await report(known, name) == [], name
    day = datetime(2026, 12, 10, tzinfo=UTC)
    async with known.engine.begin() as conn:
        # ten consultations in December: five with 膝盖下坠感, five with 头痛
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
    assert await report(known, "complaints") == []  # December is published on January 8
    refreshed = await refresh_aggregates(known, today=date(2027, 1, 8), show=False)
    assert (refreshed.months_published, refreshed.months_unchanged) == (1, 1)
    complaints = await report(known, "complaints", refresh=False)
    assert shown(complaints, "chief_complaint") == {
        ("2026-12", "头痛", 5),
        ("2026-12", "膝盖下坠感", 5),
    }


async def test_the_min_group_size_is_at_least_two(known: PostgresStorage) -> None:
    for bad in (1, 0, -3, 2.5, True, 10**7):
        with pytest.raises(InvalidInputError, match="min group size must be a whole number"):
            await set_min_group_size(known.engine, bad)  # type: ignore[arg-type]
    assert await min_group_size(known.engine) == 5


async def test_red_flags_per_month(known: PostgresStorage) -> None:
    # November: 5 consultations, 2 with red flags (B, D): fewer than k = 5
    rows = await report(known, "red-flags")
    flagged = [(r["month"], r["consultations"], r["with_red_flags"], r["share"]) for r in rows]
    assert flagged == [("2026-11", 5, None, None)]
    # k = 2: 2 with, 3 without, both at least k; shown from the refresh that republishes it
    await set_min_group_size(known.engine, 2)
    assert await report(known, "red-flags", refresh=False) == []
    (november,) = await report(known, "red-flags")
    assert (november["with_red_flags"], float(november["share"])) == (2, 0.4)
    # the view a BI tool reads is the same month
    async with known.engine.connect() as conn:
        view = await conn.execute(
            text("SELECT month, consultations, with_red_flags FROM analytics_monthly_red_flags")
        )
        assert [tuple(row) for row in view] == [(NOVEMBER, 5, 2)]
    await set_min_group_size(known.engine, 3)  # 2 with: fewer than k
    (november,) = await report(known, "red-flags")
    assert (november["consultations"], november["with_red_flags"]) == (5, None)


async def test_since_and_until_select_by_first_activity(known: PostgresStorage) -> None:
    (row,) = await report(known, "overview", since=midnight(DAY2), until=midnight(DAY3))
    assert row["consultations"] == 2  # C and D
    funnel = await report(known, "funnel", since=midnight(DAY2))
    assert [(r["stage"], r["reached"]) for r in funnel][:2] == [
        ("greeting", 2),
        ("collecting_details", 1),
    ]
    await set_min_group_size(known.engine, 2)
    assert await report(known, "complaints", until=NOVEMBER) == []
    assert await report(known, "complaints", since=NOVEMBER) != []


async def test_durations_by_final_stage(known: PostgresStorage) -> None:
    await set_min_group_size(known.engine, 2)
    rows = {r["final_stage"]: r for r in await report(known, "durations")}
    assert rows["advising"]["consultations"] == 1
    assert rows["advising"]["median_minutes"] is None  # one consultation: its exact time
    assert rows[None]["consultations"] == 1  # E has no state
    await set_min_group_size(known.engine, 5)
    (everyone,) = await report(known, "overview")
    assert float(everyone["median_minutes"]) == 4.0  # five: shown


def last_published_month() -> date:
    """The last month a refresh today publishes (the command has no --today)."""
    return (first_unpublished_month(datetime.now(UTC).date()) - timedelta(days=1)).replace(day=1)


@pytest.mark.slow
async def test_analytics_command_renders_table_json_and_csv(database_url: URL) -> None:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}

    def ctxstore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxstore.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    # DATASET and F, G in a month the command's refresh publishes: 7 consultations
    month = last_published_month()
    shift = datetime(month.year, month.month, 2, 9, tzinfo=UTC) - DAY1
    async with PostgresStorage.from_url(database_url) as storage:
        await write_dataset(storage, shift)
        await add_headaches(storage, shift)
    changed = ctxstore("db", "min-group-size", "2")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "min group size 5 -> 2"
    assert ctxstore("db", "min-group-size").stdout.strip() == "2"
    before = ctxstore("analytics", "complaints")
    assert "膝盖下坠感" not in before.stdout  # not published yet
    assert "(no month published in this window yet)" in before.stdout
    refreshed = ctxstore("analytics", "refresh")
    assert refreshed.returncode == 0, refreshed.stderr
    assert refreshed.stdout.startswith("published 1 month"), refreshed.stdout
    assert "(7 consultations" in refreshed.stdout
    assert "appears with the first refresh on or after" in refreshed.stdout
    again = ctxstore("analytics", "refresh")
    assert again.stdout.startswith("published 0 months"), again.stdout
    assert re.search(r"\b1 months? already published", again.stdout), again.stdout
    outputs = {}
    for output in ("table", "json", "csv"):
        result = ctxstore("analytics", "complaints", "--format", output)
        assert result.returncode == 0, result.stderr
        # the k rule and when this month appears: beside a CSV, else in it
        notes = result.stderr if output == "csv" else result.stdout
        assert "fewer than 2" in notes and "appear from" in notes
        outputs[output] = result.stdout
    columns = ["month", "chief_complaint", "consultations", "share"]
    assert outputs["table"].splitlines()[0].split() == columns
    assert "膝盖下坠感" in outputs["table"]
    data = json.loads(outputs["json"])
    assert set(data) == {"rows", "periods", "notes"}
    knee = {"month": f"{month:%Y-%m}", "chief_complaint": "膝盖下坠感", "consultations": 2}
    assert knee | {"share": 0.2857} in data["rows"]
    assert data["periods"] == [
        {
            "month": f"{month:%Y-%m}",
            "consultations": 7,
            "shown_values": 2,
            "withheld_values": 2,
            "withheld_consultations": 2,
        }
    ]
    assert f"{month:%Y-%m},膝盖下坠感,2,0.2857" in outputs["csv"].splitlines()[1:]
    # whole months only (revision 1004)
    next_one = (month + timedelta(days=31)).replace(day=1)
    window = ctxstore(
        "analytics", "complaints", "--since", f"{month:%Y-%m}", "--until", f"{next_one:%Y-%m}"
    )
    assert window.returncode == 0, window.stderr
    assert "膝盖下坠感" in window.stdout
    refused = ctxstore("analytics", "complaints", "--since", f"{month:%Y-%m}-02")
    assert refused.returncode == 2 and "must be the first day of a month" in refused.stderr
    refused = ctxstore("analytics", "complaints", "--since", f"{month:%Y-%m}-01T09:00")
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
            # per consultation, a GROUP BY would count any day's red flags (revision 1004)
            "has_red_flags",
            "red_flag_count",
        }
        & names
    )


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM analytics_red_flags_daily",
        "SELECT * FROM analytics_red_flags_weekly",
        "SELECT * FROM analytics_red_flags_v3('day', NULL, NULL)",
        "SELECT * FROM analytics_frequencies_v3('chief_complaint', NULL, NULL)",
        "SELECT * FROM analytics_overview_v3(NULL, NULL)",
    ],
)
async def test_the_analytics_role_reads_no_figure_of_a_day_window(
    known: PostgresStorage, query: str
) -> None:
    """Revision 1004: any whole-day window's red flags or values would subtract from a
    month's into a smaller group; the owner keeps them for the previous release only."""
    analytics = (await roles_of(known)).analytics
    with pytest.raises(ProgrammingError, match="permission denied"):
        await as_role(known, analytics, query)


async def test_the_analytics_role_reads_the_published_months(known: PostgresStorage) -> None:
    await set_min_group_size(known.engine, 2)
    await refresh_aggregates(known, today=TODAY, show=False)
    analytics = (await roles_of(known)).analytics
    values = await as_role(
        known,
        analytics,
        "SELECT kind, value, consultations FROM analytics_monthly_values ORDER BY 1, 2",
    )
    assert ("chief_complaint", "膝盖下坠感", 2) in values
    assert all(count >= 2 for _, _, count in values)
    withheld = await as_role(
        known,
        analytics,
        "SELECT consultations, withheld_values FROM analytics_month_withheld_v1('2026-11-01') "
        "WHERE kind = 'chief_complaint'",
    )
    assert withheld == [(5, 2)]  # 脚踝扭伤 and 腰痛
    flags = await as_role(
        known, analytics, "SELECT with_red_flags FROM analytics_monthly_red_flags"
    )
    assert flags == [(2,)]
    totals = await as_role(known, analytics, "SELECT * FROM analytics_complaint_frequencies")
    assert totals == [("膝盖下坠感", 2)]


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
