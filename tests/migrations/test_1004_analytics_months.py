"""Revision 1004 up and down with consultations seeded before it, as a login of the
analytics role sees it.

At 1003 the login reads the 1.0 day cells and red-flag counts.  Up: the three month tables
are new and empty, the day reports are denied to the role, the five frequency views read
the months (nothing until a refresh publishes one), the per-consultation view has no
red-flag column, and every row of data is as it was; a refresh publishes.  Down: the
month objects are gone, the role's grants and red-flag columns are back, the frequency
views read the day cells again, the data is as it was and the catalog is a fresh 1003's;
up again works.
"""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError

from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.months import publication_day
from ctxstore.db import migrations
from ctxstore.db.engine import create_engine
from tests.integration.test_analytics_differencing import Consultation, at, consult, round_share
from tests.integration.test_deidentified_analytics import create_login, drop_login, read_roles
from tests.migrations.catalog import databases_differ
from tests.migrations.test_database_roles import run_sql
from tests.pg_harness import PgTestServer

OCT = date(2026, 10, 1)
DAY = date(2026, 10, 14)


def october(i: int) -> Consultation:
    """12 consultations on one day: headache 6, sore throat 6; knee and a red flag for 5
    (7 without): every figure passes k = 5 by the day and by the month."""
    return Consultation(
        at(DAY, i),
        complaint="headache" if i < 6 else "sore throat",
        body_parts=("knee",) if i < 5 else (),
        red_flags=("cannot bear weight",) if i < 5 else (),
    )


# The rows the 1.0 refresh wrote for that day (its cells pass k both ways).
DAY_CELLS = (
    f"""INSERT INTO analytics_value_cells (kind, day, value, consultations) VALUES
        ('chief_complaint', '{DAY}', 'headache', 6),
        ('chief_complaint', '{DAY}', 'sore throat', 6),
        ('body_part', '{DAY}', 'knee', 5),
        ('red_flag', '{DAY}', 'cannot bear weight', 5)""",
    f"""INSERT INTO analytics_refreshed_days (day, sessions, fingerprint, min_group_size)
        VALUES ('{DAY}', 12, 0, 5)""",
)
TABLES = (
    "sessions",
    "messages",
    "summaries",
    "consultation_states",
    "consultation_state_history",
    "user_profiles",
    "analytics_value_cells",
    "analytics_refreshed_days",
)
MONTH_TABLES = ("analytics_months", "analytics_month_kinds", "analytics_month_cells")
MONTH_VIEWS = (
    "analytics_monthly_values",
    "analytics_monthly_withheld",
    "analytics_monthly_red_flags",
)
MONTH_FUNCTIONS = (
    "analytics_check_months_v1(text,date,date)",
    "analytics_month_values_v1(date,date)",
    "analytics_month_withheld_v1(date,date)",
    "analytics_red_flag_months_v1(date,date)",
    "analytics_overview_v4(timestamptz,timestamptz)",
)
FREQUENCY_VIEWS = {
    "analytics_complaint_frequencies": "chief_complaint",
    "analytics_body_part_frequencies": "body_part",
    "analytics_symptom_frequencies": "symptom",
    "analytics_red_flag_frequencies": "red_flag",
    "analytics_symptom_duration_frequencies": "symptom_duration",
}
#: What 1004 takes from the analytics role and the downgrade gives back.
DAY_REPORTS = (
    "SELECT value, consultations FROM analytics_frequencies_v3('body_part', NULL, NULL)",
    "SELECT with_red_flags FROM analytics_red_flags_v3('day', NULL, NULL)",
    "SELECT red_flag_rate FROM analytics_overview_v3(NULL, NULL)",
    "SELECT with_red_flags FROM analytics_red_flags_daily",
    "SELECT with_red_flags FROM analytics_red_flags_weekly",
)
RED_FLAG_COLUMNS = ("has_red_flags", "red_flag_count")


async def seed_at_1003(url: URL) -> None:
    # Not ``async with``: that refuses a schema behind the code.
    storage = PostgresStorage.from_url(url)
    try:
        for i in range(12):
            await consult(storage, october(i))
    finally:
        await storage.close()


def stored(url: URL) -> dict[str, Any]:
    """Each table's rows, as a count and a digest."""
    query = " UNION ALL ".join(
        f"SELECT '{table}', count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
        f"FROM {table} AS t"
        for table in TABLES
    )
    return {table: (n, digest) for table, n, digest in run_sql(url, query)[0]}


def login_reads(login_url: URL, *queries: str) -> list[Any]:
    """Each query's rows as the login, or the SQLSTATE it fails with."""

    async def go() -> list[Any]:
        engine = create_engine(login_url, pooled=False)
        answers: list[Any] = []
        try:
            async with engine.connect() as conn:
                for query in queries:
                    try:
                        answers.append(
                            sorted(tuple(row) for row in await conn.execute(text(query)))
                        )
                    except DBAPIError as error:
                        answers.append(getattr(error.orig, "sqlstate", "?"))
                        await conn.rollback()
        finally:
            await engine.dispose()
        return answers

    return asyncio.run(go())


def consultation_columns(login_url: URL) -> set[str]:
    (rows,) = login_reads(
        login_url,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'analytics_consultations'",
    )
    return {column for (column,) in rows}


def view_bodies(url: URL) -> dict[str, str]:
    names = ", ".join(f"'{view}'" for view in FREQUENCY_VIEWS)
    (rows,) = run_sql(url, f"SELECT viewname, definition FROM pg_views WHERE viewname IN ({names})")
    return dict(rows)


def existing(url: URL) -> list[str]:
    """The month objects (tables, views, functions) the database has."""
    checks = [f"to_regclass('{name}')::text" for name in (*MONTH_TABLES, *MONTH_VIEWS)]
    checks += [f"to_regprocedure('{signature}')::text" for signature in MONTH_FUNCTIONS]
    (rows,) = run_sql(url, f"SELECT x FROM unnest(ARRAY[{', '.join(checks)}]) AS x")
    return [name for (name,) in rows if name is not None]


def publish(url: URL) -> int:
    async def go() -> int:
        async with PostgresStorage.from_url(url) as storage:
            report = await refresh_aggregates(storage, today=publication_day(OCT), show=False)
        return report.months_published

    return asyncio.run(go())


PUBLISHED = [
    ("body_part", OCT, "knee", 5),
    ("chief_complaint", OCT, "headache", 6),
    ("chief_complaint", OCT, "sore throat", 6),
    ("red_flag", OCT, "cannot bear weight", 5),
]


def check_at_1003(url: URL, login_url: URL, before: dict[str, Any]) -> None:
    """The 1.0 analytics as the login had them, and the data as seeded."""
    assert migrations.current(url) == "1003"
    assert login_reads(login_url, *DAY_REPORTS) == [
        [("knee", 5)],
        [(5,)],
        [(round_share(5, 12),)],
        [(5,)],
        [(5,)],
    ]
    assert set(RED_FLAG_COLUMNS) <= consultation_columns(login_url)
    (flagged,) = login_reads(
        login_url, "SELECT count(*) FILTER (WHERE has_red_flags) FROM analytics_consultations"
    )
    assert flagged == [(5,)]
    for view, kind in FREQUENCY_VIEWS.items():
        assert "analytics_frequencies_v3" in view_bodies(url)[view], view
        (rows,) = login_reads(login_url, f"SELECT * FROM {view}")
        assert rows == sorted((v, n) for k, _, v, n in PUBLISHED if k == kind), view
    assert existing(url) == []
    assert stored(url) == before


def check_at_1004(url: URL, login_url: URL, before: dict[str, Any]) -> None:
    """Nothing published yet, the day reports denied, the data as seeded."""
    assert migrations.current(url) == "1004"
    assert len(existing(url)) == len(MONTH_TABLES) + len(MONTH_VIEWS) + len(MONTH_FUNCTIONS)
    for table in MONTH_TABLES:
        assert run_sql(url, f"SELECT count(*) FROM {table}")[0] == [(0,)], table
    assert login_reads(login_url, *DAY_REPORTS) == ["42501"] * len(DAY_REPORTS)
    assert not set(RED_FLAG_COLUMNS) & consultation_columns(login_url)
    (consultations,) = login_reads(login_url, "SELECT count(*) FROM analytics_consultations")
    assert consultations == [(12,)]
    bodies = view_bodies(url)
    for view in FREQUENCY_VIEWS:
        assert "analytics_month_values_v1" in bodies[view], view
        assert "analytics_frequencies_v3" not in bodies[view], view
        # The day cells are still there; the views read the months, none published yet.
        assert login_reads(login_url, f"SELECT * FROM {view}") == [[]], view
    assert stored(url) == before


def check_published(login_url: URL) -> None:
    values, knee, red_flags = login_reads(
        login_url,
        "SELECT * FROM analytics_monthly_values",
        "SELECT * FROM analytics_body_part_frequencies",
        "SELECT month, consultations, with_red_flags FROM analytics_monthly_red_flags",
    )
    assert values == PUBLISHED
    assert knee == [("knee", 5)]
    assert red_flags == [(OCT, 12, 5)]


def test_1004_up_and_down_keeps_the_data_and_moves_the_grants(
    pg_server: PgTestServer, empty_database_url: URL, second_empty_database: URL
) -> None:
    url = empty_database_url
    migrations.upgrade(url, "1003")
    asyncio.run(seed_at_1003(url))
    run_sql(url, *DAY_CELLS)
    roles = asyncio.run(read_roles(url))
    login, password = asyncio.run(create_login(url, roles.analytics))
    login_url = url.set(username=login, password=password)
    try:
        before = stored(url)
        check_at_1003(url, login_url, before)

        migrations.upgrade(url, "1004")
        check_at_1004(url, login_url, before)
        migrations.upgrade(url, "head")  # the refresh is this code's: it needs the head
        assert publish(url) == 1
        check_published(login_url)

        migrations.downgrade(url, "1003")
        check_at_1003(url, login_url, before)
        migrations.upgrade(second_empty_database, "1003")
        differences = databases_differ(url, second_empty_database)
        assert [line for line in differences if login not in line] == []

        migrations.upgrade(url, "1004")
        check_at_1004(url, login_url, before)
        migrations.upgrade(url, "head")
        assert publish(url) == 1
        check_published(login_url)
    finally:
        asyncio.run(drop_login(pg_server.url, login))
