"""FallbackStorage under real SIGKILLs of redis-server, per Redis persistence (issue 25).

For each configuration, a database and a redis-server of its own and a 20-second history
of the workload in tests/fallback_history.py: 6 clients writing through FallbackStorage,
10 PostgreSQL outages (a TCP proxy), 3 SIGKILLs of the worker and 4 of redis-server
inside outages; then the journal drained and every session checked against what the
clients were told.  Figures: acknowledged writes, journaled, refused, lost, duplicated,
missing, and the history's anomalies.

- Redis defaults with ``journal_loss="accept"``: what every run did before (the journal
  trusted whatever Redis was);
- Redis defaults, ``appendfsync everysec`` and ``always``, with the default "refuse".
"""

from __future__ import annotations

import asyncio

from sqlalchemy import URL
from tests.fallback_history import HistoryResult, run_history
from tests.faults import RedisServer, redis_server

from benchmarks.common import bench_database

CONFIGS = [
    ("defaults, accept", (), "accept"),
    ("defaults, refuse", (), "refuse"),
    ("AOF everysec, refuse", ("--appendonly", "yes", "--appendfsync", "everysec"), "refuse"),
    ("AOF always, refuse", ("--appendonly", "yes", "--appendfsync", "always"), "refuse"),
]


async def history(url: URL, redis: RedisServer, loss: str, refusing: bool) -> HistoryResult:
    # Refused writes after a failed primary call are indeterminate: fewer ops per session
    # keep the histories checkable.
    return await run_history(
        url,
        redis.url,
        duration=20.0,
        clients=6,
        pause=0.3 if refusing else 0.05,
        sessions_per_client=6,
        redis=redis,
        redis_kills=4,
        journal_loss=loss,
        seed=25,
    )


def main() -> None:
    rows = []
    for name, options, loss in CONFIGS:
        refusing = loss == "refuse" and "always" not in name
        with bench_database() as url, redis_server(*options) as redis:
            result = asyncio.run(history(url, redis, loss, refusing))
        stats, verdict = result.worker_stats, result.verdict
        rows.append(
            (
                name,
                result.ops["ok"],
                stats["journaled"],
                stats["refused"],
                stats["lost"],
                verdict.duplicates,
                verdict.missing,
                len(result.anomalies),
            )
        )
        print(f"{name}: {len(result.anomalies)} anomalies", *result.anomalies[:3], sep="\n  ")
    header = ("config", "acked", "journaled", "refused", "lost", "dup", "missing", "anomalies")
    print("\n" + " | ".join(header))
    for row in rows:
        print(" | ".join(str(cell) for cell in row))


if __name__ == "__main__":
    main()
