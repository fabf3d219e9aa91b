"""FallbackStorage's history under outages and crashes, for longer than the test.

The controller of tests/fallback_history.py for ``--duration`` seconds (default 120): a
worker process of ``--clients`` clients writes through a FallbackStorage (PostgreSQL
behind a proxy that refuses or black-holes connections for 0.5-2 s every 1-4 s, Redis as
the secondary) and is SIGKILLed and restarted every ~7 s.  Then the journal is replayed
and every session in PostgreSQL must equal a sequential replay of the acknowledged
writes plus some of the indeterminate ones.  Prints the figures; exits 1 on an anomaly.

Run: python -m benchmarks.bench_fallback_history [--duration 120] [--clients 8]
     [--pause 0.02] [--seed N]   (Redis: $CTXSTORE_BENCH_REDIS_URL, else 127.0.0.1:6379)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from sqlalchemy import URL
from tests.fallback_history import HistoryResult, run_history

from benchmarks.common import bench_database, table
from ctxstore.progress import Progress

REDIS_URL_ENV = "CTXSTORE_BENCH_REDIS_URL"


async def run(url: URL, redis_url: str, args: argparse.Namespace) -> HistoryResult:
    seconds = int(args.duration)
    progress = Progress("outages and crashes (s)", seconds)

    def tick(elapsed: float) -> None:
        if progress.done < seconds and int(elapsed) > progress.done:
            progress.advance(min(int(elapsed), seconds) - progress.done)
            if progress.done >= seconds:
                progress.finish()
                print("replaying the journal, reading PostgreSQL, checking...", file=sys.stderr)

    return await run_history(
        url,
        redis_url,
        duration=args.duration,
        clients=args.clients,
        sessions_per_client=args.sessions_per_client,
        pause=args.pause,
        seed=args.seed,
        tick=tick,
        keep_logs=args.keep_logs,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_fallback_history")
    parser.add_argument("--duration", type=float, default=120.0, help="seconds (at least 30)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sessions-per-client", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.02, help="most seconds between ops")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--keep-logs", action="store_true", help="keep the operation log")
    args = parser.parse_args()
    if args.duration < 30:
        parser.error("--duration must be at least 30 s (10 outages and 3 kills need room)")
    redis_url = os.environ.get(REDIS_URL_ENV, "redis://127.0.0.1:6379/0")
    with bench_database() as url:
        result = asyncio.run(run(url, redis_url, args))
    print(table(result.figures(), ("figure", "value")))
    for anomaly in result.anomalies:
        print(f"ANOMALY {anomaly}")
    if result.log_dir:
        print(f"operation log kept in {result.log_dir}")
    sys.exit(1 if result.anomalies else 0)


if __name__ == "__main__":
    main()
