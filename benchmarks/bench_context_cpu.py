"""CPU of a context build beside the same reads alone (issue 48, item 6).

``ContextBuilder.build`` (and ``build_json``, what the HTTP service sends) at an 8,000-token
budget from a 10,000-message session with a state, a profile, a summary and two knowledge
items, beside ``same reads``: the statement the build reads with (the session's head, its
documents and the window's first chunk, ``sql.SESSION_HEAD_AND_DOCUMENTS`` with the
build's parameters), fetched on the same connection and nothing done with the rows.

Each sample's CPU is the client's (``time.process_time_ns``) plus the backend's (the first
field of ``/proc/<backend pid>/schedstat``; the store runs on a pool of one connection,
which the baseline uses too).  Contenders run round-robin in a new shuffled order every
round; the figures are medians.  Target: a build <= 1.5x the same reads.

Two sessions (CASES): bench_context's (short CJK messages, all at one time to the
millisecond, +08:00) and bench_load_cpu's (longer answers, each message at its own
Go-style time with nanoseconds, +08:00).

Run: ``python -m benchmarks.bench_context_cpu [--rounds 200]`` on
CTXSTORE_BENCH_DATABASE_URL (a server on this machine: its backends' /proc is read) or
the embedded PostgreSQL.  ``PYTHONPATH=<other checkout>/src`` times another tree.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy import URL

from benchmarks import bench_context, bench_load_cpu
from benchmarks.common import bench_database, table
from ctxstore import ContextBuilder, EngineSettings, PostgresStorage
from ctxstore.commands.demo import KNOWLEDGE, STATES
from ctxstore.storage.postgres import sql
from ctxstore.tokens import untimed_label

SIZE = 10_000
BUDGET = 8_000
TARGET = 1.5
#: Session id -> how its history is made.
CASES = {
    "short messages, one time": bench_context.history,
    "long answers, own times": bench_load_cpu.history,
}


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process has spent on CPU."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


async def main(url: URL, rounds: int, warmup: int) -> None:
    storage = PostgresStorage.from_url(url, settings=EngineSettings(pool_size=1))
    try:
        await storage.save_profile("u", {"age": 34, "gender": "female"})
        for session, history in CASES.items():
            await storage.save(session, history(SIZE), user_id="u")
            await storage.save_state(session, STATES[-1])
            await storage.save_summary(session, "膝盖下坠感一周，走路明显。", covers_until=9)
        async with storage.driver() as driver:
            await driver.execute("VACUUM ANALYZE")
            pid = int(await driver.fetchval("SELECT pg_backend_pid()"))
        for session in CASES:
            await one_case(storage, pid, session, rounds, warmup)
    finally:
        await storage.close()


async def one_case(
    storage: PostgresStorage, pid: int, session: str, rounds: int, warmup: int
) -> None:
    builder = ContextBuilder(storage)
    encoding = builder.counter.count_label
    chunk = BUDGET // 40 + 16  # ContextBuilder's first chunk (builder._chunk)
    question = "那我现在应该怎么锻炼？"
    fetched: list[int] = []

    async def build() -> None:
        contract = await builder.build(session, "turn_x", question, KNOWLEDGE, BUDGET)
        assert contract.meta.included_message_count > 0

    async def build_json() -> None:
        assert await builder.build_json(session, "turn_x", question, KNOWLEDGE, BUDGET)

    async def same_reads() -> None:
        async with storage.driver() as driver:
            found = await sql.SESSION_HEAD_AND_DOCUMENTS.fetch(
                driver,
                sid=session,
                limit=chunk,
                budget=BUDGET,
                encoding=encoding,
                untimed=untimed_label(encoding),
            )
        fetched.append(len(found))

    contenders: dict[str, Callable[[], Awaitable[None]]] = {
        "same reads": same_reads,
        "build": build,
        "build_json": build_json,
    }
    for action in contenders.values():
        for _ in range(warmup):
            await action()
    samples: dict[str, list[tuple[int, int]]] = {name: [] for name in contenders}
    names = list(contenders)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            client, backend = time.process_time_ns(), cpu_ns(pid)
            await contenders[name]()
            samples[name].append((time.process_time_ns() - client, cpu_ns(pid) - backend))
    sample = await builder.build(session, "turn_x", question, KNOWLEDGE, BUDGET)
    included = sample.meta.included_message_count
    # The window's first chunk held every message the build took: its only read.
    assert included < fetched[-1] - 1, (included, fetched[-1])
    medians = {
        name: (
            statistics.median(c for c, _ in values) / 1e6,
            statistics.median(b for _, b in values) / 1e6,
            statistics.median(c + b for c, b in values) / 1e6,
        )
        for name, values in samples.items()
    }
    floor = medians["same reads"][2]
    print(
        f"\n{session}: context build at {BUDGET:,} tokens from {SIZE:,} messages"
        f" ({included} included), median of {rounds} rounds, CPU ms"
    )
    print(
        table(
            [
                (name, f"{c:.3f}", f"{b:.3f}", f"{s:.3f}", f"{s / floor:.2f}x")
                for name, (c, b, s) in medians.items()
            ],
            ("contender", "client", "backend", "sum", "/ same reads"),
        )
    )
    ratio = medians["build"][2] / floor
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"target build <= {TARGET}x same reads: {ratio:.2f}x {verdict}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    with bench_database() as database_url:
        asyncio.run(main(database_url, args.rounds, args.warmup))
