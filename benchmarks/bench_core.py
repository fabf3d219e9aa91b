"""Core store timings, in one run (issue 2).

- per-turn save (2 new messages through the full-overwrite API) for sessions holding
  10, 100, 1,000 and 10,000 messages, run round-robin; target: 1,000 / 10 <= 1.5
- load of 1,000 messages beside a raw asyncpg SELECT of the same rows (and beside raw
  asyncpg plus validating pydantic models); target: load <= 1.5x raw asyncpg

Run: ``make bench`` (embedded PostgreSQL) or set CTXSTORE_BENCH_DATABASE_URL.
"""

from __future__ import annotations

import asyncio
import sys

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, raw_connection, table
from ctxstore import Message, PostgresStorage

SIZES = (10, 100, 1_000, 10_000)
TRIALS = 60
LOAD_SIZE = 1_000


def conversation(count: int) -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"第{i}条：我膝盖有下坠感，走路时更明显，持续大约一周。" * 3,
            turn_id=f"turn_{i // 2:05d}",
            timestamp="2026-11-29T08:15:02.123+08:00",
        )
        for i in range(count)
    ]


async def per_turn_saves(storage: PostgresStorage) -> dict[int, float]:
    histories: dict[int, list[Message]] = {}
    for size in SIZES:
        await storage.save(f"turns-{size}", conversation(size))
        histories[size] = await storage.load(f"turns-{size}")  # what a service holds

    def appender(size: int):  # type: ignore[no-untyped-def]
        async def append_turn() -> None:
            current = histories[size]  # the list load() returned, extended in place
            turn = len(current) // 2
            current.extend(
                [
                    Message(role="user", content=f"新问题 {turn}", turn_id=f"t{turn}"),
                    Message(role="assistant", content=f"回答 {turn}", turn_id=f"t{turn}"),
                ]
            )
            await storage.save(f"turns-{size}", current)

        return append_turn

    medians = await interleaved_medians(
        {str(size): appender(size) for size in SIZES}, trials=TRIALS
    )
    return {size: medians[str(size)] for size in SIZES}


async def loads(storage: PostgresStorage, url: URL) -> dict[str, float]:
    expected = conversation(LOAD_SIZE)
    await storage.save("load-1000", expected)
    raw = await raw_connection(url)
    query = (
        "SELECT seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, "
        "format_version FROM messages WHERE session_id = $1 ORDER BY seq"
    )

    async def ctxstore_load() -> None:
        assert len(await storage.load("load-1000")) == LOAD_SIZE

    async def raw_select() -> None:
        assert len(await raw.fetch(query, "load-1000")) == LOAD_SIZE

    async def raw_select_validated_models() -> None:
        rows = await raw.fetch(query, "load-1000")
        models = [
            Message(role=r["role"], content=r["content"], turn_id=r["turn_id"], timestamp=r["ts"])
            for r in rows
        ]
        assert len(models) == LOAD_SIZE

    try:
        assert await storage.load("load-1000") == expected
        return await interleaved_medians(
            {
                "ctxstore load": ctxstore_load,
                "raw asyncpg SELECT": raw_select,
                "raw asyncpg + pydantic models": raw_select_validated_models,
            },
            trials=TRIALS,
        )
    finally:
        await raw.close()


async def main(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        saves = await per_turn_saves(storage)
        load = await loads(storage, url)
    base = saves[SIZES[0]]
    print(f"\nper-turn save (2 new messages, full-overwrite API), median of {TRIALS}")
    print(
        table(
            [(f"{size:,}", f"{ms:.3f}", f"{ms / base:.2f}x") for size, ms in saves.items()],
            ("stored messages", "ms per turn", f"vs {SIZES[0]}"),
        )
    )
    ratio = saves[1_000] / base
    print(f"target 1,000/10 <= 1.5: {ratio:.2f} {'met' if ratio <= 1.5 else 'MISSED'}")
    floor = load["raw asyncpg SELECT"]
    print(f"\nload of {LOAD_SIZE:,} messages, median of {TRIALS}")
    print(
        table(
            [(name, f"{ms:.3f}", f"{ms / floor:.2f}x") for name, ms in load.items()],
            ("reader", "ms", "vs raw SELECT"),
        )
    )
    load_ratio = load["ctxstore load"] / floor
    verdict = "met" if load_ratio <= 1.5 else "MISSED"
    print(f"target load <= 1.5x raw asyncpg: {load_ratio:.2f} {verdict}")


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
    sys.exit(0)
