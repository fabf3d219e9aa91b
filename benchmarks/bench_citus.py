"""A turn's append on Citus (issue 18), beside the same work done by hand and beside plain
PostgreSQL, in one run.

Starts its own cluster (tests/citus/cluster.py: a coordinator and two workers, durable,
Citus's default 32 shards per table) and, on the coordinator's server, a database without
the extension: plain PostgreSQL on the same binaries and settings.  Each figure is the
median of interleaved trials of appending one turn (2 messages) at the expected version,
as ContextManager's callers do:

- ctxstore's append, on Citus and on PostgreSQL;
- the same work as a plain ``UPDATE sessions`` + ``INSERT INTO messages`` (two rows) in one
  transaction, by hand over asyncpg: the floor on each;
- on Citus, the single-statement CTE ctxstore sends to PostgreSQL, which Citus runs as
  several steps with a two-phase commit (what appends cost before the parts).

Run: ``python -m benchmarks.bench_citus`` (needs Citus installed: .ci/run installs it).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from sqlalchemy import URL
from tests.citus.cluster import CitusCluster, unavailable_reason

from benchmarks.common import append_values, interleaved_medians, raw_connection, table
from ctxstore import Message, PostgresStorage
from ctxstore.commands.analytics import run_report
from ctxstore.commands.sample import seed_sample
from ctxstore.db import migrations
from ctxstore.db.admin import create_database
from ctxstore.db.distribute import distribute
from ctxstore.db.engine import create_engine
from ctxstore.storage.postgres import sql

TRIALS = 200
SEEDED = 1000  # sample consultations in the database distributed while it holds them
WARMUP = 20
HISTORY_TURNS = 50  # every session starts at 100 messages


def turn(index: int) -> list[Message]:
    return [
        Message(role="user", content=f"第{index}轮：膝盖走路时有下坠感。", turn_id=f"t{index}"),
        Message(role="assistant", content=f"第{index}轮：是否伴随疼痛？", turn_id=f"t{index}"),
    ]


_BY_HAND_UPDATE = """
UPDATE sessions SET message_count = message_count + 2, version = version + 1,
       content_hash = NULL, turn_count = turn_count + 1, updated_at = now(),
       last_activity_at = now()
 WHERE session_id = $1 AND version = $2
RETURNING message_count - 2 AS start, version"""


def _by_hand_insert() -> str:
    columns = ("session_id", "seq", *sql.MESSAGE_WRITE_COLUMNS)
    row = ", ".join(f"${i}" for i in range(1, len(columns) + 1))
    second = ", ".join(f"${i + len(columns)}" for i in range(1, len(columns) + 1))
    return f"INSERT INTO messages ({', '.join(columns)}) VALUES ({row}), ({second})"


class Target:
    """One database: ctxstore's store, a raw connection and a session for each writer."""

    def __init__(self, label: str, url: URL) -> None:
        self.label, self.url = label, url
        self.versions: dict[str, int] = {}
        self.storage = PostgresStorage.from_url(url)
        self.raw: asyncpg.Connection | None = None

    async def open(self, writers: list[str]) -> None:
        self.raw = await raw_connection(self.url)
        history = [m for i in range(HISTORY_TURNS) for m in turn(i)]
        for writer in writers:
            self.versions[writer] = await self.storage.save(f"{writer}", history)

    async def close(self) -> None:
        if self.raw is not None:
            await self.raw.close()
        await self.storage.close()

    def ctxstore_append(self, session: str) -> Callable[[], Awaitable[None]]:
        async def append() -> None:
            self.versions[session] = await self.storage.append(
                session, turn(self.versions[session]), expected_version=self.versions[session]
            )

        return append

    def by_hand(self, session: str) -> Callable[[], Awaitable[None]]:
        insert = _by_hand_insert()

        async def update_and_insert() -> None:
            assert self.raw is not None
            new_rows = append_values(turn(self.versions[session]))["new_rows"]
            async with self.raw.transaction():
                row = await self.raw.fetchrow(_BY_HAND_UPDATE, session, self.versions[session])
                values: list[Any] = []
                for offset in range(2):
                    # a row's fields: its seq, then the columns in MESSAGE_WRITE_COLUMNS' order
                    values += [session, row["start"] + offset, *new_rows[offset][1:]]
                await self.raw.execute(insert, *values)
            self.versions[session] = row["version"]

        return update_and_insert

    def whole_statement(self, session: str) -> Callable[[], Awaitable[None]]:
        """The one-statement append (the CTE), sent as it is to whatever runs it."""

        async def whole() -> None:
            assert self.raw is not None
            messages = turn(self.versions[session])
            _start, version, *_refusal = await sql.APPEND.fetchval(
                self.raw, sid=session, user_id=None, added_hash=b"", ttl=None,
                turns=1, first_ts=None, last_ts=None, known_count=None, known_hash=None,
                extended_hash=None, max_messages=200_000, expected=self.versions[session],
                **append_values(messages),
            )  # fmt: skip
            self.versions[session] = version

        return whole


def other_operations(target: Target) -> dict[str, Callable[[], Awaitable[object]]]:
    """One session's other calls, on a 100-message session (``ours`` keeps growing)."""
    storage, state = target.storage, {"stage": "collecting_details", "pain_level": 3}

    async def save_state() -> None:
        await storage.save_state("other", state)

    async def save_summary() -> None:
        await storage.save_summary("other", "一周以来膝盖下坠感", covers_until=10)

    async def save_new_and_delete() -> None:
        await storage.save("fleeting", turn(0))
        await storage.delete("fleeting")

    return {
        f"{target.label}: load (100 messages)": lambda: storage.load("other"),
        f"{target.label}: snapshot": lambda: storage.snapshot("other"),
        f"{target.label}: save_state": save_state,
        f"{target.label}: save_summary": save_summary,
        f"{target.label}: save a new session + delete": save_new_and_delete,
    }


async def measure(citus: URL, plain: URL) -> dict[str, float]:
    on_citus, on_postgres = Target("Citus", citus), Target("PostgreSQL", plain)
    try:
        await on_citus.open(["ours", "hand", "cte", "other"])
        await on_postgres.open(["ours", "hand", "other"])
        others = await interleaved_medians(
            {**other_operations(on_citus), **other_operations(on_postgres)},
            trials=TRIALS // 2,
            warmup=WARMUP,
        )
        print(f"{report_others(others)}\n")
        return await interleaved_medians(
            {
                "Citus: ctxstore append": on_citus.ctxstore_append("ours"),
                "Citus: UPDATE + INSERT by hand": on_citus.by_hand("hand"),
                "Citus: the one-statement CTE": on_citus.whole_statement("cte"),
                "PostgreSQL: ctxstore append": on_postgres.ctxstore_append("ours"),
                "PostgreSQL: UPDATE + INSERT by hand": on_postgres.by_hand("hand"),
            },
            trials=TRIALS,
            warmup=WARMUP,
        )
    finally:
        await on_citus.close()
        await on_postgres.close()


def report_others(medians: dict[str, float]) -> str:
    rows = []
    for name, ms in medians.items():
        where, operation = name.split(": ", 1)
        if where == "Citus":
            plain = medians[f"PostgreSQL: {operation}"]
            rows.append((operation, f"{ms:.3f}", f"{plain:.3f}", f"{ms / plain:.2f}x"))
    return table(rows, ("operation (median ms)", "Citus", "PostgreSQL", "Citus vs PostgreSQL"))


def report(medians: dict[str, float]) -> str:
    floor = {"Citus": medians["Citus: UPDATE + INSERT by hand"]}
    floor["PostgreSQL"] = medians["PostgreSQL: UPDATE + INSERT by hand"]
    ours_on_postgres = medians["PostgreSQL: ctxstore append"]
    rows = [
        (
            name,
            f"{ms:.3f}",
            f"{ms / floor[name.split(':')[0]]:.2f}x",
            f"{ms / ours_on_postgres:.2f}x",
        )
        for name, ms in medians.items()
    ]
    header = ("append of one turn at a version", "ms", "vs by hand, same server", "vs PostgreSQL")
    ratio = medians["Citus: ctxstore append"] / floor["Citus"]
    verdict = "within" if ratio <= 1.5 else "OVER"
    return f"{table(rows, header)}\n\nctxstore on Citus: {ratio:.2f}x the hand-written " + (
        f"transaction ({verdict} the 1.5x target)"
    )


async def seeded(url: URL) -> str:
    async with PostgresStorage.from_url(url) as storage:
        return (await seed_sample(storage, SEEDED, show=False)).summary().splitlines()[0]


async def overview_ms(url: URL) -> float:
    engine = create_engine(url)
    try:
        await run_report(engine, "overview")
        started = time.perf_counter()
        for _ in range(5):
            await run_report(engine, "overview")
        return (time.perf_counter() - started) / 5 * 1000
    finally:
        await engine.dispose()


def existing_database(cluster: CitusCluster, plain: URL) -> None:
    """``ctxstore db distribute`` of a database that holds data, and a report over it."""
    existing = asyncio.run(cluster.create_database("bench_existing"))
    migrations.upgrade(existing)
    print(f"an existing database: {asyncio.run(seeded(existing))}")
    asyncio.run(seeded(plain))
    messages = asyncio.run(_count(existing))
    done = asyncio.run(distribute(existing))
    print(done.summary())
    print(
        f"  {messages:,} messages copied: {messages / done.writes_waited:,.0f} messages/s "
        "while writes waited (reads went on)"
    )
    citus, postgres = asyncio.run(overview_ms(existing)), asyncio.run(overview_ms(plain))
    print(
        f"analytics overview over {SEEDED:,} consultations: {citus:.1f} ms on Citus "
        f"(every shard, in parallel), {postgres:.1f} ms on PostgreSQL\n"
    )


async def _count(url: URL) -> int:
    connection = await raw_connection(url)
    try:
        return int(await connection.fetchval("SELECT count(*) FROM messages"))
    finally:
        await connection.close()


def main() -> int:
    reason = unavailable_reason()
    if reason is not None:
        print(f"bench_citus: skipped: {reason}")
        return 0
    cluster = CitusCluster(shard_count=32, durable=True)
    cluster.start()
    try:
        citus = asyncio.run(cluster.create_database("bench_citus"))
        migrations.upgrade(citus)
        print(asyncio.run(distribute(citus)).summary())
        plain = asyncio.run(create_database(cluster.url(), "bench_plain"))
        migrations.upgrade(plain)
        print(
            f"coordinator and 2 workers on 127.0.0.1, durable; plain PostgreSQL: a database "
            f"without the extension on the coordinator's server; median of {TRIALS}, "
            "interleaved\n"
        )
        existing_database(cluster, plain)
        print(report(asyncio.run(measure(citus, plain))))
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
