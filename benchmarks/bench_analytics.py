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

from benchmarks.common import bench_database, table
from ctxstore import PostgresStorage
from ctxstore.analytics import ALL_TIME_SQL, REPORT_SQL, REPORTS, run_report
from ctxstore.sample import seed_sample

PLANS = Path(__file__).resolve().parents[1] / "docs" / "analytics-plans.md"


async def main(url: URL, sessions: int, write_plans: bool) -> None:
    async with PostgresStorage.from_url(url) as storage:
        seeded = await seed_sample(storage, sessions, concurrency=16)
        async with storage.engine.connect() as conn:
            await conn.execute(text("ANALYZE"))
            await conn.commit()
        week_ago = datetime.now(UTC) - timedelta(days=7)
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
                    for label, since, sql in (
                        ("all time", None, ALL_TIME_SQL.get(name, REPORT_SQL[name])),
                        ("last 7 days", week_ago, REPORT_SQL[name]),
                    ):
                        parameters = {"since": since, "until": None, "bucket": "day", "limit": 20}
                        rows = await conn.execute(
                            text("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON) " + sql),
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
