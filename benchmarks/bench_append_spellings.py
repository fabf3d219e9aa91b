"""Where a turn's server time goes: the append statement spelled several ways, one run.

Issue 23 asks for an append with no per-turn write of the session row.  Before building
that, this measures what each part of today's write costs, interleaved on one database
(a turn of two messages appended to sessions of 1,000):

- ``floor``: one prepared one-row INSERT, committed (fsync);
- ``v2`` and ``v3``: ``SELECT ctxstore_append_v2/v3(...)`` as the storage calls them;
- the same UPDATE and INSERT as one plain statement (a modifying CTE; Citus refuses it in
  a delegated function);
- an INSERT at ``max(seq) + 1`` with no session-row write (the redesign's statement);
- each of the last two on copies of ``messages`` without the foreign key to ``sessions``,
  then without its CHECK constraints too;
- two rows as a ``VALUES`` list instead of fourteen ``unnest`` arrays;
- ``storage.append``: the whole call, Python included.

Run: python -m benchmarks.bench_append_spellings [--trials N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import URL

from benchmarks.common import (
    append_values,
    bench_database,
    interleaved_medians,
    raw_connection,
    table,
)
from ctxstore import Message, PostgresStorage

COLUMNS = (
    "seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, token_count,"
    " format_version, token_encoding, key_id, sealed"
)
ARRAYS = (
    "$2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::text[],"
    " $9::jsonb[], $10::bytea[], $11::int[], $12::smallint[], $13::text[], $14::bigint[],"
    " $15::bytea[]"
)
ORDER = [f"new_{name.strip()}" for name in COLUMNS.split(",")]
SELECTED = (
    "m.role, m.content, m.turn_id, m.ts::timestamptz, m.ts_offset, m.name, m.metadata,"
    " m.digest, m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed"
)
ROW_WRITE = """UPDATE sessions SET message_count = message_count + 2, version = version + 1,
       updated_at = now(), turn_count = turn_count + 1, last_activity_at = now(),
       content_hash = NULL
 WHERE session_id = $1 RETURNING message_count - 2 AS start"""
# Copies of messages: with its CHECKs but no foreign key, and with neither.
COPIES = """
CREATE TABLE messages_no_fk (LIKE messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS
                             INCLUDING INDEXES);
INSERT INTO messages_no_fk SELECT * FROM messages;
CREATE TABLE messages_bare (LIKE messages INCLUDING DEFAULTS INCLUDING INDEXES);
INSERT INTO messages_bare SELECT * FROM messages;
CREATE TABLE floor (id bigserial PRIMARY KEY, v text);
ANALYZE"""


def with_row_write(table: str) -> str:
    return f"""WITH s AS ({ROW_WRITE})
INSERT INTO {table} (session_id, {COLUMNS})
SELECT $1, s.start + m.seq, {SELECTED} FROM s, unnest({ARRAYS}) AS m({COLUMNS})"""


def at_next_position(table: str) -> str:
    return f"""INSERT INTO {table} (session_id, {COLUMNS})
SELECT $1, s.start + m.seq, {SELECTED}
  FROM (SELECT coalesce(max(seq), -1) + 1 AS start FROM {table} WHERE session_id = $1) AS s,
       unnest({ARRAYS}) AS m({COLUMNS})"""


def values_list(table: str) -> str:
    row = lambda first: ", ".join(  # noqa: E731
        ["$1"] + [f"${first + j}" + ("::timestamptz" if j == 4 else "") for j in range(14)]
    )
    return f"INSERT INTO {table} (session_id, {COLUMNS}) VALUES ({row(2)}), ({row(16)})"


def turn(number: int) -> list[Message]:
    return [
        Message(role="user", content=f"第{number}条：膝盖走路时有下坠感，上下楼梯更明显",
                turn_id=f"n{number}"),
        Message(role="assistant", content=f"第{number}条：是否伴随疼痛或肿胀？之前有没有扭伤过？",
                turn_id=f"n{number}"),
    ]  # fmt: skip


async def main(url: URL, trials: int) -> None:
    numbers = itertools.count()
    history = [m for i in range(500) for m in turn(i)]
    spellings = {
        "plain statement, session row written": with_row_write("messages"),
        "  without the foreign key": with_row_write("messages_no_fk"),
        "  without the FK and the CHECKs": with_row_write("messages_bare"),
        "INSERT at max(seq)+1, no row write": at_next_position("messages"),
        "  without the foreign key ": at_next_position("messages_no_fk"),
        "  without the FK and the CHECKs ": at_next_position("messages_bare"),
    }
    async with PostgresStorage.from_url(url) as storage:
        sessions = ["storage", "v2", "v3", *(f"s{i}" for i in range(len(spellings)))]
        for session in sessions:
            await storage.save(session, history)
        raw = await raw_connection(url)
        try:
            await raw.execute(COPIES)
            # p_expected .. p_last_ts: any version, no TTL, an unknown stored hash
            arguments = [None, None, None, 100_000, None, None, b"h" * 32, None, 1, None, None]

            def function(name: str) -> Callable[[], Awaitable[Any]]:
                call = f"SELECT {name}({', '.join(f'${i}' for i in range(1, 27))})"

                async def run() -> Any:
                    arrays = append_values(turn(next(numbers)))
                    head = [name.rsplit("_", 1)[1], *arguments]
                    return await raw.execute(call, *head, *[arrays[k] for k in ORDER])

                return run

            def spelled(query: str, session: str) -> Callable[[], Awaitable[Any]]:
                async def run() -> Any:
                    arrays = append_values(turn(next(numbers)))
                    return await raw.execute(query, session, *[arrays[k] for k in ORDER])

                return run

            positions = itertools.count(10_000_000, 2)

            async def two_values() -> Any:
                arrays = append_values(turn(next(numbers)))
                start = next(positions)
                arrays["new_seq"] = [start, start + 1]
                flat = [arrays[k][r] for r in range(2) for k in ORDER]
                return await raw.execute(values_list("messages_bare"), "s0", *flat)

            actions: dict[str, Callable[[], Awaitable[Any]]] = {
                "floor: prepared 1-row INSERT": lambda: raw.execute(
                    "INSERT INTO floor (v) VALUES ($1)", "x"
                ),
                "storage.append (whole call)": lambda: storage.append(
                    "storage", turn(next(numbers))
                ),
                "SELECT ctxstore_append_v2(...)": function("ctxstore_append_v2"),
                "SELECT ctxstore_append_v3(...)": function("ctxstore_append_v3"),
                **{
                    name: spelled(query, f"s{i}")
                    for i, (name, query) in enumerate(spellings.items())
                },
                "2 rows as VALUES, bare copy": two_values,
            }
            medians = await interleaved_medians(
                actions, trials, warmup=50, shuffled=True, progress="rounds"
            )
        finally:
            await raw.close()
    floor = medians["floor: prepared 1-row INSERT"]
    v2 = medians["SELECT ctxstore_append_v2(...)"]
    rows = [
        (name, f"{ms * 1000:,.0f}", f"{ms / floor:.2f}x", f"{ms / v2:.2f}x")
        for name, ms in medians.items()
    ]
    print(f"\none turn (2 messages, 1,000 stored), median of {trials}, interleaved")
    print(table(rows, ("spelling", "µs", "/ floor", "/ v2")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=1000)
    options = parser.parse_args()
    with bench_database() as database_url:
        asyncio.run(main(database_url, options.trials))
