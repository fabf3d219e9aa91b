"""What saving the stored list again costs, now that it keeps the version: the same list
(the very objects loaded, and equal ones built afresh) against the Go service's usual
save, the loaded list plus one message.

Run: python -m benchmarks.bench_identical_save [--messages 40] [--trials 200]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import Message, PostgresStorage

START = datetime(2026, 12, 3, 8, tzinfo=UTC)


def message(index: int) -> Message:
    return Message(
        role=("user", "assistant")[index % 2],
        content=f"message {index}: 膝盖下坠感 knee",
        turn_id=f"turn_{index // 2:04d}",
        timestamp=START + timedelta(seconds=index),
    )


async def run(url: URL, args: argparse.Namespace) -> None:
    async with PostgresStorage.from_url(url) as storage:
        same = [message(index) for index in range(args.messages)]
        await storage.save("bench-same", same)
        growing = list(same)
        await storage.save("bench-growing", growing)

        async def save_same() -> None:
            await storage.save("bench-same", same)

        async def save_equal() -> None:
            await storage.save("bench-same", [message(i) for i in range(args.messages)])

        async def save_one_more() -> None:
            growing.append(message(len(growing)))
            await storage.save("bench-growing", growing)

        actions = {
            "same objects": save_same,
            "equal, built afresh": save_equal,
            "one message more": save_one_more,
        }
        version_before = await storage.version("bench-same")
        medians = await interleaved_medians(
            actions, args.trials, shuffled=True, progress="identical saves"
        )
        assert await storage.version("bench-same") == version_before  # kept, every time
        for name in ("bench-same", "bench-growing"):
            await storage.delete(name)
    base = medians["one message more"]
    rows = [
        (name, f"{medians[name]:.3f}", f"{medians[name] / base:.2f}x")
        for name in ("same objects", "equal, built afresh", "one message more")
    ]
    print(table(rows, (f"save of {args.messages} messages", "median ms", "vs one more")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    with bench_database() as url:
        asyncio.run(run(url, args))


if __name__ == "__main__":
    main()
