"""Analytics at 100,000 consultations (issue 6): the seeding rate, every report's time
(the monthly ones over the months a refresh published, issue 50), and the daily reports'
query plans (written to docs/analytics-plans.md with --write-plans).

Run: python -m benchmarks.bench_analytics [--sessions N] [--write-plans]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from sqlalchemy import URL, text
from tests.analytics_reports_0011 import ALL_TIME_SQL as ALL_TIME_0011
from tests.analytics_reports_0011 import REPORT_SQL as REPORT_0011

from benchmarks.common import bench_database, seeded_and_analyzed, table
from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import MONTHLY_REPORTS, REPORTS, run_report
from ctxstore.commands.months import month_start, publication_day

#: The reports over consultations (whole days); the rest read the published months.
DAILY_REPORTS = tuple(name for name in REPORTS if name not in MONTHLY_REPORTS)

PLANS = Path(__file__).resolve().parents[1] / "docs" / "analytics-plans.md"


def windows(name: str, today: date) -> tuple[tuple[str, date | None], ...]:
    """All time, and a recent window: the last 7 days, or last month for a monthly report
    (its windows are first days of months)."""
    if name in MONTHLY_REPORTS:
        return (("all time", None), ("last month", first_of_last_month(today)))
    return (("all time", None), ("last 7 days", today - timedelta(days=7)))


def first_of_last_month(today: date) -> date:
    return (today.replace(day=1) - timedelta(days=1)).replace(day=1)


async def main(url: URL, sessions: int, write_plans: bool) -> None:
    async with PostgresStorage.from_url(url) as storage:
        seeded = await seeded_and_analyzed(storage, sessions)
        today = datetime.now(UTC).date()
        # Every month seeded published, this one included, so the monthly reports have
        # months to read (a real refresh waits until 7 days after a month ends).
        published = await refresh_aggregates(
            storage, today=publication_day(month_start(today)), show=False
        )
        timings = []
        for name in REPORTS:
            for label, since in windows(name, today):
                samples = []
                for _ in range(5):
                    started = time.perf_counter()
                    report = await run_report(storage.engine, name, since=since)
                    samples.append(time.perf_counter() - started)
                timings.append((name, label, len(report.rows), statistics.median(samples) * 1000))
        plans = []
        if write_plans:
            async with storage.engine.connect() as conn:
                for name in DAILY_REPORTS:
                    # The SQL each daily report's function runs (revision 0012): a plan of
                    # the function call itself would show only a function scan.  The
                    # monthly reports read the few rows a month published.
                    for label, since in windows(name, today):
                        sql = (
                            REPORT_0011[name]
                            if since is not None
                            else ALL_TIME_0011.get(name, REPORT_0011[name])
                        )
                        parameters = {"since": since, "until": None, "bucket": "day", "limit": 20}
                        rows = await conn.execute(
                            text(
                                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) "
                                # the exact columns are in this view since revision 0016
                                + sql.replace(
                                    "analytics_consultations", "analytics_consultation_details"
                                )
                            ),
                            parameters,
                        )
                        plans.append((f"{name}, {label}", "\n".join(row[0] for row in rows)))
    print()
    print(seeded.summary())
    print(published.summary().splitlines()[0])
    print(f"\nreports over {sessions:,} consultations, median of 5")
    rendered = table(
        [(name, label, f"{rows:,}", f"{ms:,.1f}") for name, label, rows, ms in timings],
        ("report", "window", "rows", "ms"),
    )
    print(rendered)
    if write_plans:
        body = [
            "# Analytics query plans",
            "",
            f"Measured by `python -m benchmarks.bench_analytics --write-plans` on "
            f"{sessions:,} seeded consultations ({seeded.messages:,} messages, "
            f"{seeded.state_versions:,} state versions), PostgreSQL on this repository's "
            "CI machine (2 cores). `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)`: without a window "
            "the aggregate views answer directly; with --since/--until the consultations are "
            "selected first (index on first_activity_at) and the rest joined to them.",
            "",
            "```",
            rendered,
            "```",
        ]
        for name, plan in plans:
            body += ["", f"## {name}", "", "```", plan, "```"]
        PLANS.write_text("\n".join(body) + "\n", encoding="utf-8")
        print(f"\nplans written to {PLANS}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--write-plans", action="store_true")
    options = parser.parse_args()
    with bench_database() as database_url:
        asyncio.run(main(database_url, options.sessions, options.write_plans))
