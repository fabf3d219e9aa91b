"""Analytics at 100,000 consultations (issue 6): the seeding rate, every report's time,
and the query plans (written to docs/analytics-plans.md with --write-plans).

Run: python -m benchmarks.bench_analytics [--sessions N] [--write-plans]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import URL, text
from tests.analytics_reports_0011 import ALL_TIME_SQL as ALL_TIME_0011
from tests.analytics_reports_0011 import REPORT_SQL as REPORT_0011

from benchmarks.common import bench_database, seeded_and_analyzed, table
from ctxstore import PostgresStorage
from ctxstore.commands.analytics import REPORTS, run_report

PLANS = Path(__file__).resolve().parents[1] / "docs" / "analytics-plans.md"


async def main(url: URL, sessions: int, write_plans: bool) -> None:
    async with PostgresStorage.from_url(url) as storage:
        seeded = await seeded_and_analyzed(storage, sessions)
        week_ago = datetime.now(UTC).date() - timedelta(days=7)  # windows are whole days
        timings = []
        for name in REPORTS:
            for label, since in (("all time", None), ("last 7 days", week_ago)):
                samples = []
                for _ in range(5):
                    started = time.perf_counter()
                    report = await run_report(storage.engine, name, since=since)
                    samples.append(time.perf_counter() - started)
                timings.append((name, label, len(report.rows), statistics.median(samples) * 1000))
        plans = []
        if write_plans:
            async with storage.engine.connect() as conn:
                for name in REPORTS:
                    # The SQL each report's function runs (revision 0012): a plan of the
                    # function call itself would show only a function scan.
                    for label, since, sql in (
                        ("all time", None, ALL_TIME_0011.get(name, REPORT_0011[name])),
                        ("last 7 days", week_ago, REPORT_0011[name]),
                    ):
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
