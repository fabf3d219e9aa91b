"""Issue 24: the analytics role can't re-identify a consultation by differencing.

Before revision 0016, ``analytics_value_frequencies`` over two windows differing by 1 us
told which pseudonym had a complaint, and ``analytics_consultations.first_activity`` was
the first message's exact time.  Here, as a real login in the analytics role, with k = 5:
windows are whole days (anything else is refused, in SQL and in Python), a free-text count
is a sum of day cells each of which k consultations have and k don't, and the
per-consultation view holds no time below the day.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ctxstore import Message, PostgresStorage
from ctxstore.cli.options import whole_day
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import REPORTS, run_report
from ctxstore.db import migrations
from ctxstore.db.engine import create_engine
from ctxstore.errors import InvalidInputError
from tests.integration import test_deidentified_analytics as deidentified
from tests.integration.test_deidentified_analytics import create_login, drop_login, read_roles
from tests.pg_harness import PgTestServer

K = 5
D1 = date(2026, 11, 2)
D2 = D1 + timedelta(days=1)  # 3 consultations: fewer than k
D3 = D1 + timedelta(days=2)
DAYS = [D1, D2, D3, D3 + timedelta(days=1)]
BUCKETS = {"under 5 min", "5-15 min", "15-60 min", "1-24 h", "over 1 day"}


def midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


# day: [(chief complaint, body parts, minutes the consultation lasts)]
DATASET: dict[date, list[tuple[str, list[str], float]]] = {
    # 10 consultations: "sore throat" for all but 2 (shown neither day-wise nor in any
    # window holding only this day), "knee" for exactly 5 of 10 (shown)
    D1: [
        ("sore throat" if i < 8 else "fever", ["knee"] if i < 5 else [], i * 1.5) for i in range(10)
    ],
    # 3 consultations: every one with "sore throat", one with a rare complaint
    D2: [("sore throat", ["knee"], 20.0), ("sore throat", [], 90.0), ("sore throat", [], 3.0)],
    # 12 consultations: "sore throat" for 6 (shown)
    D3: [
        ("sore throat" if i < 6 else "headache", [], 60.0 * 30 if i == 0 else 2.0)
        for i in range(12)
    ],
}


@dataclass
class Seeded:
    url: URL
    login_url: URL


async def seed(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        for day, consultations in DATASET.items():
            for i, (complaint, parts, minutes) in enumerate(consultations):
                start = midnight(day) + timedelta(hours=1, minutes=7 * i, microseconds=i + 1)
                session_id = f"sess-{uuid.uuid4().hex}"
                messages = [
                    Message(role="user", content="hello", timestamp=start),
                    Message(
                        role="assistant",
                        content="tell me more",
                        timestamp=start + timedelta(minutes=minutes),
                    ),
                ]
                await storage.save(session_id, messages, user_id=f"user-{uuid.uuid4().hex}")
                state = {"stage": "assessing", "chief_complaint": complaint, "body_parts": parts}
                await storage.save_state(session_id, state)
        await refresh_aggregates(storage, show=False)


@pytest.fixture(scope="module")
def seeded(pg_server: PgTestServer) -> Iterator[Seeded]:
    name = pg_server.new_name("diff")
    url = pg_server.create(name)
    login = None
    try:
        migrations.upgrade(url)
        asyncio.run(seed(url))
        roles = asyncio.run(read_roles(url))
        login, password = asyncio.run(create_login(url, roles.analytics))
        yield Seeded(url, url.set(username=login, password=password))
    finally:
        pg_server.drop(name)
        if login is not None:
            asyncio.run(drop_login(pg_server.url, login))


# A connection of the analytics login (that module's fixture, over this module's database)
analyst = deidentified.analyst


async def frequencies(
    conn: AsyncConnection, kind: str, since: date | None, until: date | None
) -> dict[str, int]:
    rows = await conn.execute(
        text(
            "SELECT value, consultations FROM analytics_frequencies_v3("
            ":kind, CAST(:since AS timestamptz), CAST(:until AS timestamptz))"
        ),
        {
            "kind": kind,
            "since": None if since is None else midnight(since),
            "until": None if until is None else midnight(until),
        },
    )
    return {str(value): int(count) for value, count in rows}


async def test_windows_differing_by_a_microsecond_are_refused(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    """The attack of the issue: a window and the same one a microsecond shorter."""
    shorter = midnight(D1) + timedelta(microseconds=1)
    for function in (
        "analytics_frequencies_v3('chief_complaint', ",
        "analytics_overview_v3(",
    ):
        for window in (f"'{shorter.isoformat()}', NULL)", f"NULL, '{shorter.isoformat()}')"):
            with pytest.raises(DBAPIError, match=r"must be a whole day \(UTC midnight\)"):
                await analyst.execute(text(f"SELECT * FROM {function}{window}"))
            await analyst.rollback()
    # The pre-release reports that took any window are gone (the 1.0 baseline drops them).
    for previous in (
        "analytics_value_frequencies('chief_complaint', NULL, NULL)",
        "analytics_frequencies_v1('chief_complaint', NULL, NULL)",
        "analytics_overview_v1(NULL, NULL)",
    ):
        with pytest.raises(DBAPIError, match="does not exist"):
            await analyst.execute(text(f"SELECT * FROM {previous}"))
        await analyst.rollback()
    engine = create_engine(seeded.login_url, pooled=False)
    try:
        for name in REPORTS:
            for bad in (
                {"since": shorter},
                {"until": shorter},
                {"since": midnight(D1) + timedelta(hours=5)},
            ):
                with pytest.raises(InvalidInputError, match=r"whole day \(UTC midnight\)"):
                    await run_report(engine, name, **bad)
        with pytest.raises(InvalidInputError, match="since must be a date"):
            await run_report(engine, "overview", since="2026-11-02")  # type: ignore[arg-type]
        # A date, a UTC midnight and the same moment written at -05:00: the same window.
        elsewhere = midnight(D1).astimezone(timezone(timedelta(hours=-5)))
        answers = [
            (await run_report(engine, "overview", since=since, until=D3)).rows
            for since in (D1, midnight(D1), elsewhere)
        ]
        assert answers[0] == answers[1] == answers[2]
        assert answers[0][0][0] == 13  # D1 and D2
    finally:
        await engine.dispose()


def test_the_cli_takes_whole_days_only() -> None:
    assert whole_day("2026-11-02") == midnight(D1)
    assert whole_day("2026-11-02T00:00:00+00:00") == midnight(D1)
    for bad in ("2026-11-02T00:00:00.000001", "2026-11-02T00:00+01:00", "2026-11-02 05:00"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a whole day"):
            whole_day(bad)


async def test_a_value_all_but_a_few_have_is_suppressed(analyst: AsyncConnection) -> None:
    """D1: "sore throat" for 8 of 10 (2 without: fewer than k) is not shown; "knee" for
    5 of 10 (5 with, 5 without) is."""
    assert await frequencies(analyst, "chief_complaint", D1, D2) == {}
    assert await frequencies(analyst, "body_part", D1, D2) == {"knee": 5}
    # D3: "sore throat" for 6 of 12, "headache" for 6: both shown
    assert await frequencies(analyst, "chief_complaint", D3, None) == {
        "sore throat": 6,
        "headache": 6,
    }


async def test_no_two_whole_day_windows_difference_to_a_small_day(
    analyst: AsyncConnection,
) -> None:
    """D2 holds 3 consultations (fewer than k): every window answers as if it were not
    there, so no pair of windows tells anything of its consultations; and what two
    windows differ by is a sum of day cells that passed both tests themselves."""
    ends: list[date | None] = [None, *DAYS]
    for kind in ("chief_complaint", "body_part"):
        answers = {}
        for since, until in itertools.product(ends, ends):
            answers[since, until] = await frequencies(analyst, kind, since, until)
        assert answers[D2, D3] == {}
        for since in (None, D1):
            assert answers[since, D2] == answers[since, D3], kind
        assert answers[D2, None] == answers[D3, None], kind
        # all time: the view and the function agree, and D1's suppressed cell adds nothing
        assert answers[None, None] == answers[D3, None] or kind == "body_part"
    view = await analyst.execute(
        text("SELECT chief_complaint, consultations FROM analytics_complaint_frequencies")
    )
    assert {str(v): int(n) for v, n in view} == {"sore throat": 6, "headache": 6}
    for kind in ("chief_complaint", "body_part", "symptom", "red_flag", "symptom_duration"):
        # no value fewer than k consultations share, all time
        assert all(count >= K for count in (await frequencies(analyst, kind, None, None)).values())


async def test_the_consultations_view_holds_no_time_below_the_day(
    analyst: AsyncConnection,
) -> None:
    columns = await analyst.execute(
        text(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_name IN ('analytics_consultations', 'analytics_stage_history')"
        )
    )
    types = {(table, column): kind for table, column, kind in columns}
    assert types["analytics_consultations", "first_day"] == "date"
    assert types["analytics_consultations", "duration_bucket"] == "text"
    assert not {
        column
        for (table, column), kind in types.items()
        if table == "analytics_consultations"
        and (kind.startswith(("timestamp", "time ", "interval")) or "second" in column)
    }
    rows = list(
        await analyst.execute(
            text("SELECT first_day, duration_bucket FROM analytics_consultations")
        )
    )
    assert len(rows) == 25
    assert {day for day, _ in rows} == {D1, D2, D3}
    assert {bucket for _, bucket in rows} == BUCKETS
    moments = await analyst.execute(
        text("SELECT DISTINCT first_activity FROM analytics_stage_history")
    )
    assert sorted(moments.scalars()) == [midnight(D1), midnight(D2), midnight(D3)]
    # the exact view is the owner's only
    with pytest.raises(DBAPIError, match="permission denied"):
        await analyst.execute(text("SELECT * FROM analytics_consultation_details"))


def _plan_counts(plan: object) -> list[tuple[str, object, object]]:
    """Each node of an EXPLAIN (ANALYZE, FORMAT JSON) plan: its type, the rows it
    returned and the rows its filter removed (no timings: they differ run to run)."""
    found: list[tuple[str, object, object]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "Node Type" in node:
                found.append(
                    (
                        str(node["Node Type"]),
                        node.get("Actual Rows"),
                        node.get("Rows Removed by Filter"),
                    )
                )
            stack.extend(value for value in node.values() if isinstance(value, list | dict))
    return sorted(found, key=repr)


async def test_explain_analyze_tells_a_suppressed_value_from_none(
    analyst: AsyncConnection,
) -> None:
    """The issue's oracle: EXPLAIN (ANALYZE) of a frequency view filtered on a value
    showed "Rows Removed by Filter: 1" for a value 2 consultations hold (suppressed) and
    nothing for one no consultation holds.  The views now read a SECURITY DEFINER
    function whose rows are only the shown values: the two plans count the same rows."""
    plans = {}
    for value in ("fever", "HIV", "sore throat"):  # held by 2, by none, by 6 + 11
        explained = await analyst.execute(
            text(
                "EXPLAIN (ANALYZE, FORMAT JSON) SELECT * FROM analytics_complaint_frequencies "
                "WHERE chief_complaint = :value"
            ),
            {"value": value},
        )
        plans[value] = _plan_counts(explained.scalar_one())
    assert plans["fever"] == plans["HIV"]
    assert plans["sore throat"] != plans["HIV"]  # a shown value does show: the probe works
