"""Issue 50: a BI tool connecting as the analytics login (here ``psql``) reads the same
months and the same suppression as ``ctxstore analytics``, and nothing under them."""

from __future__ import annotations

import asyncio
import csv
import io
import os
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import FREQUENCY_KINDS, FREQUENCY_REPORTS, MAX_LIMIT, run_report
from ctxstore.commands.sample import seed_sample
from ctxstore.db.engine import create_engine
from tests.integration.test_compose_roles import psql_dir
from tests.integration.test_deidentified_analytics import analytics_database
from tests.pg_harness import PgTestServer

#: 300 consultations over the 8 weeks before this: October and November 2026.
SEEDED_UNTIL = datetime(2026, 11, 26, 12, tzinfo=UTC)
#: November's publication day: both months published.
TODAY = date(2026, 12, 8)


@dataclass
class Published:
    url: URL
    analyst: URL


async def seed_and_publish(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await seed_sample(storage, 300, show=False, now=SEEDED_UNTIL)
        report = await refresh_aggregates(storage, today=TODAY, show=False)
    assert report.months_published == 2, report.summary()


@pytest.fixture(scope="module")
def published(pg_server: PgTestServer) -> Iterator[Published]:
    with analytics_database(pg_server, "bi") as (url, login_url):
        asyncio.run(seed_and_publish(url))
        yield Published(url, login_url)


def psql(url: URL, statement: str) -> subprocess.CompletedProcess[str]:
    """``statement`` run by the psql a BI user would have, as ``url``'s login, as CSV."""
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    return subprocess.run(
        [str(Path(psql_dir()) / "psql"), "-X", "--csv", "-v", "ON_ERROR_STOP=1", "-d", dsn],
        input=statement,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PGCONNECT_TIMEOUT": "10"},
        check=False,
    )


def psql_rows(url: URL, statement: str) -> list[list[str]]:
    done = psql(url, statement)
    assert done.returncode == 0, done.stderr
    return list(csv.reader(io.StringIO(done.stdout)))[1:]


async def report_rows(url: URL, name: str) -> list[list[str]]:
    engine = create_engine(url)
    try:
        report = await run_report(engine, name, limit=MAX_LIMIT, today=TODAY)
    finally:
        await engine.dispose()
    return [[str(value) for value in row[:3]] for row in report.rows]


@pytest.mark.parametrize("name", FREQUENCY_REPORTS)
def test_psql_reads_the_months_the_report_shows(published: Published, name: str) -> None:
    kind = FREQUENCY_KINDS[name]
    seen = psql_rows(
        published.analyst,
        "SELECT to_char(month, 'YYYY-MM'), value, consultations FROM analytics_monthly_values "
        f"WHERE kind = '{kind}' ORDER BY month, consultations DESC, value",
    )
    reported = asyncio.run(report_rows(published.analyst, name))
    assert seen == reported
    if name != "red-flag-types":  # at 5 a day a red-flag type may miss k in both months
        assert {row[0] for row in seen} == {"2026-10", "2026-11"}


def test_psql_reads_the_monthly_red_flags_and_withheld_counts(published: Published) -> None:
    red_flags = psql_rows(
        published.analyst,
        "SELECT to_char(month, 'YYYY-MM'), consultations, with_red_flags "
        "FROM analytics_monthly_red_flags ORDER BY month",
    )
    assert red_flags == asyncio.run(report_rows(published.analyst, "red-flags"))
    assert all(row[2] for row in red_flags), "at 5 a day each month's red-flag count shows"
    withheld = psql_rows(
        published.analyst,
        "SELECT to_char(month, 'YYYY-MM'), sum(consultations) / count(*) "
        "FROM analytics_monthly_withheld GROUP BY month ORDER BY month",
    )
    assert [row[1] for row in withheld] == [row[1] for row in red_flags]


def test_the_all_time_views_sum_the_shown_months(published: Published) -> None:
    monthly = psql_rows(
        published.analyst,
        "SELECT value, consultations FROM analytics_monthly_values WHERE kind = 'symptom'",
    )
    summed: Counter[str] = Counter()
    for value, consultations in monthly:
        summed[value] += int(consultations)
    all_time = psql_rows(published.analyst, "SELECT * FROM analytics_symptom_frequencies")
    assert {value: int(count) for value, count in all_time} == dict(summed)


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM analytics_month_cells",
        "SELECT * FROM analytics_months",
        "SELECT * FROM analytics_value_cells",
        "SELECT * FROM analytics_red_flags_daily",
        "SELECT * FROM analytics_frequencies_v3('red_flag', NULL, NULL)",
    ],
)
def test_psql_reads_nothing_under_the_views(published: Published, statement: str) -> None:
    done = psql(published.analyst, statement)
    assert done.returncode != 0
    assert "permission denied" in done.stderr


def test_psql_gets_no_window_but_whole_months(published: Published) -> None:
    done = psql(published.analyst, "SELECT * FROM analytics_month_values_v1('2026-10-15', NULL)")
    assert done.returncode != 0
    assert "since must be the first day of a month, not 2026-10-15" in done.stderr
