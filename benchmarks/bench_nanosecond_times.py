"""What Go's nanosecond times cost: loads and appends of sessions whose every message has
digits below the microsecond, against the same sessions to the microsecond.

Two sessions of ``--messages`` messages (one with Go's nine-digit times, one to the
microsecond), read whole and through the context window, and a one-message append to
each, interleaved, as medians and ratios.

Run: python -m benchmarks.bench_nanosecond_times [--messages 1000] [--trials 200]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import Message, PostgresStorage
from ctxstore.timestamps import with_nanoseconds

START = datetime(2026, 12, 3, 8, tzinfo=UTC)


def conversation(count: int, nanos: bool) -> list[Message]:
    return [
        Message(
            role=("user", "assistant")[index % 2],
            content=f"message {index}: 膝盖下坠感 knee",
            turn_id=f"turn_{index // 2:04d}",
            timestamp=with_nanoseconds(
                START + timedelta(seconds=index, microseconds=index), 789 if nanos else 0
            ),
        )
        for index in range(count)
    ]


async def run(url: URL, args: argparse.Namespace) -> None:
    async with PostgresStorage.from_url(url) as storage:
        for name, nanos in (("ns", True), ("us", False)):
            await storage.save(f"bench-{name}", conversation(args.messages, nanos))
        turn = [0]

        async def append(name: str, nanos: bool) -> None:
            turn[0] += 1
            moment = with_nanoseconds(START + timedelta(days=1, seconds=turn[0]), 5 if nanos else 0)
            message = Message(role="user", content="next", timestamp=moment)
            await storage.append(f"bench-{name}", [message])

        actions = {
            "load (ns)": lambda: storage.load("bench-ns"),
            "load (us)": lambda: storage.load("bench-us"),
            "newest 40 (ns)": lambda: storage.newest("bench-ns", 40),
            "newest 40 (us)": lambda: storage.newest("bench-us", 40),
            "append (ns)": lambda: append("ns", True),
            "append (us)": lambda: append("us", False),
        }
        medians = await interleaved_medians(
            actions, args.trials, shuffled=True, progress="nanosecond times"
        )
        for name in ("ns", "us"):
            await storage.delete(f"bench-{name}")
    rows = [
        (kind, f"{medians[kind + ' (ns)']:.3f}", f"{medians[kind + ' (us)']:.3f}",
         f"{medians[kind + ' (ns)'] / medians[kind + ' (us)']:.2f}x")
        for kind in ("load", "newest 40", "append")
    ]  # fmt: skip
    print(table(rows, (f"{args.messages:,} messages", "Go ns times, ms", "us times, ms", "ratio")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    with bench_database() as url:
        asyncio.run(run(url, args))


if __name__ == "__main__":
    main()
