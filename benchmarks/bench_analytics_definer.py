"""Every report through its SECURITY DEFINER function (revision 0012) beside the SQL the
report ran before 0012 (the views read directly: tests/analytics_reports_0011.py), in one
run on one database, alternating sample by sample; both must answer the same.

The database is taken back to revision 0015, the last with the views 0011 read (0016
coarsens them and takes windows of whole days only).

Run: python -m benchmarks.bench_analytics_definer [--sessions N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import URL, text
from tests.analytics_reports_0011 import ALL_TIME_SQL as ALL_TIME_0011
from tests.analytics_reports_0011 import REPORT_SQL as REPORT_0011

from benchmarks.common import bench_database, seeded_and_analyzed, table
from ctxstore import PostgresStorage
from ctxstore.analytics import REPORT_SQL, REPORTS
from ctxstore.db import migrations

#: What run_report ran from revision 0012 to 0015: the v1 functions.
REPORT_0012 = {name: sql.replace("_v2(", "_v1(") for name, sql in REPORT_SQL.items()}


async def main(url: URL, sessions: int, rounds: int) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await seeded_and_analyzed(storage, sessions)
        async with storage.engine.connect() as conn:
            week_ago = datetime.now(UTC) - timedelta(days=7)
            rows = []
            for name in REPORTS:
                for label, since in (("all time", None), ("last 7 days", week_ago)):
                    old_sql = ALL_TIME_0011.get(name) if since is None else None
                    contenders = {
                        "before": old_sql or REPORT_0011[name],
                        "after": REPORT_0012[name],
                    }
                    values = {"since": since, "until": None, "bucket": "day", "limit": 20}
                    timed: dict[str, list[float]] = {"before": [], "after": []}
                    answers = {}
                    for _ in range(rounds):
                        for which, sql in contenders.items():
                            started = time.perf_counter()
                            result = await conn.execute(text(sql), values)
                            answers[which] = sorted((tuple(row) for row in result), key=repr)
                            timed[which].append(time.perf_counter() - started)
                    assert answers["before"] == answers["after"], (name, label)
                    old, new = (statistics.median(timed[k]) * 1000 for k in ("before", "after"))
                    rows.append((name, label, f"{old:,.2f}", f"{new:,.2f}", f"{new / old:.2f}x"))
    print(f"\nreports over {sessions:,} consultations, median of {rounds} (ms)")
    print(table(rows, ("report", "window", "views directly", "via 0012", "ratio")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    options = parser.parse_args()
    with bench_database() as database_url:
        migrations.downgrade(database_url, "0015")
        asyncio.run(main(database_url, options.sessions, options.rounds))
