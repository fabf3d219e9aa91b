"""Listing a user's sessions (issue 51, item 1): a page of 50, from users of 100, 1,000
and 10,000 sessions, in a database the size of 10,000,000 messages.

The target: a page of 50 in at most 5 ms, flat from 100 to 10,000 sessions per user and
whatever the page's depth.  The database is made by PostgreSQL itself (generate_series):
sessions of CTXSTORE_BENCH_LIST_SESSION_SIZE messages (default 20) until they count
CTXSTORE_BENCH_LIST_MESSAGES (default 10,000,000, so 500,000 sessions), of background users
of 50 sessions each, spread over a year in the order they were created, as a service's
table fills; the three measured users' sessions are scattered over the same year, so no
two of a page share a heap page.  A third of the sessions have a state, a quarter two
summaries.  The messages are counted in ``sessions.message_count`` but not written: the
listing never reads ``messages`` (its plan is checked in
tests/integration/test_list_sessions.py), so they would only make the database bigger.

Measured through ``PostgresStorage.list_sessions`` (what a caller waits for: the statement,
the rows, the models), interleaved rounds in a shuffled order, median ms per page:

- ``first page``: the newest 50;
- ``deep page``: the 50 from 90% down the listing (from 50 for the user of 100), by the
  cursor a walk through the pages gave;
- ``with summaries``: the first page with each latest summary's text;
- ``updated since``: the first page of sessions written in the last hour (one is): the
  filter is not in the index's order (creation time; revision 1005 says why), so the scan
  reads the user's sessions until the page is full, which grows with the user's count.

Then the shared buffers (hit or read) one page's statement touches, from EXPLAIN (ANALYZE,
BUFFERS): a count that noise can't blur.

Run: CTXSTORE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
     python -m benchmarks.bench_list_sessions [--rounds 100]
     (without the variable: the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.common import (
    bench_server,
    interleaved_medians,
    raw_connection,
    scratch_database,
    table,
)
from ctxstore import PostgresStorage
from ctxstore.models import SessionPage
from ctxstore.storage.postgres import sql

RESULTS = Path(__file__).resolve().parent / "results"
MESSAGES = int(os.environ.get("CTXSTORE_BENCH_LIST_MESSAGES", "10000000"))
SESSION_SIZE = int(os.environ.get("CTXSTORE_BENCH_LIST_SESSION_SIZE", "20"))
#: The users measured, by how many sessions each has.
MEASURED = (100, 1_000, 10_000)
BACKGROUND_PER_USER = 50
PAGE = 50
START = datetime(2025, 12, 1, tzinfo=UTC)
YEAR = timedelta(days=365)

#: Every session of the database, in the order of their creation times (so the heap is
#: in that order, as a table that grew over a year): the background users' every
#: ``step``, the measured users' at random times of the same year.
SESSIONS = """
INSERT INTO sessions (session_id, user_id, version, message_count, turn_count,
                      created_at, updated_at, first_activity_at, last_activity_at)
SELECT session_id, user_id, 1, $1::int, $1::int / 2, created_at,
       created_at + interval '20 minutes', created_at, created_at + interval '20 minutes'
  FROM (SELECT 'bg-' || n AS session_id, 'bg-user-' || (n % $2::int) AS user_id,
               $3::timestamptz + (n - 1) * $4::interval AS created_at
          FROM generate_series(1, $5::int) AS n
        UNION ALL
        SELECT 'list-' || u.n || '-' || g, 'list-user-' || u.n,
               $3::timestamptz + random() * $6::interval
          FROM unnest($7::int[]) AS u(n), generate_series(1, u.n) AS g) AS s
 ORDER BY created_at
"""
STATES = """
INSERT INTO consultation_states (session_id, version, stage, document, format_version)
SELECT session_id, 1, stage, jsonb_build_object('stage', stage), 3
  FROM (SELECT session_id, (ARRAY['intake', 'triage', 'advice'])[1 + abs(hashtext(session_id)) % 3]
               AS stage FROM sessions WHERE abs(hashtext(session_id)) % 3 = 0) AS s
"""
SUMMARIES = """
INSERT INTO summaries (session_id, summary_version, text, covers_until, format_version)
SELECT session_id, v, '右膝疼痛两周，上下楼梯加重；建议减少跑跳，冰敷，两周后复查。第' || v || '版',
       9 * v, 1
  FROM sessions, generate_series(1, 2) AS v WHERE abs(hashtext(session_id)) % 4 = 0
"""
#: One session of each measured user written in the last hour (the "updated since" case).
RECENT = """
UPDATE sessions SET updated_at = now()
 WHERE session_id IN (SELECT 'list-' || n || '-1' FROM unnest($1::int[]) AS n)
"""


@dataclass(frozen=True)
class Case:
    sessions: int
    what: str

    @property
    def user_id(self) -> str:
        return f"list-user-{self.sessions}"


async def seed(url: URL) -> dict[str, Any]:
    sessions = MESSAGES // SESSION_SIZE
    background = max(sessions - sum(MEASURED), 0)
    users = max(background // BACKGROUND_PER_USER, 1)
    connection = await raw_connection(url)
    started = time.perf_counter()
    try:
        await connection.execute("SELECT setseed(0.51)")
        step = YEAR / max(background, 1)
        await connection.execute(
            SESSIONS, SESSION_SIZE, users, START, step, background, YEAR, list(MEASURED)
        )
        await connection.execute(STATES)
        await connection.execute(SUMMARIES)
        await connection.execute(RECENT, list(MEASURED))
        await connection.execute("VACUUM ANALYZE sessions, consultation_states, summaries")
        size = await connection.fetchval(
            "SELECT pg_size_pretty(pg_database_size(current_database()))"
        )
        counts = await connection.fetchrow(
            "SELECT count(*) AS sessions, sum(message_count) AS messages FROM sessions"
        )
    finally:
        await connection.close()
    return {
        "sessions": int(counts["sessions"]),
        "messages counted": int(counts["messages"]),
        "background users": users,
        "database size": size,
        "seconds to seed": round(time.perf_counter() - started, 1),
    }


async def deep_cursor(storage: PostgresStorage, user_id: str, sessions: int) -> str:
    """The cursor of the page 90% down the user's listing (50 down for 100 sessions)."""
    depth = max(PAGE, sessions * 9 // 10)
    cursor = None
    for _ in range(depth // PAGE):
        page = await storage.list_sessions(user_id, limit=PAGE, cursor=cursor)
        cursor = page.next_cursor
    assert cursor is not None
    return cursor


def check(page: SessionPage, case: Case) -> None:
    expected = 1 if case.what == "updated since" else PAGE
    if len(page.items) != expected:
        raise RuntimeError(f"{case}: {len(page.items)} items, not {expected}")


async def measure(url: URL, rounds: int) -> dict[Case, float]:
    async with PostgresStorage.from_url(url) as storage:
        hour_ago = datetime.now(UTC) - timedelta(hours=1)
        actions = {}
        for sessions in MEASURED:
            user_id = Case(sessions, "").user_id
            cursor = await deep_cursor(storage, user_id, sessions)
            options: dict[str, dict[str, Any]] = {
                "first page": {},
                "deep page": {"cursor": cursor},
                "with summaries": {"with_summaries": True},
                "updated since": {"updated_since": hour_ago},
            }
            for what, extra in options.items():
                case = Case(sessions, what)

                async def page(case: Case = case, extra: dict[str, Any] = extra) -> None:
                    check(await storage.list_sessions(case.user_id, limit=PAGE, **extra), case)

                actions[case] = page
        found = await interleaved_medians(
            {f"{c.sessions}/{c.what}": a for c, a in actions.items()},
            rounds,
            warmup=10,
            shuffled=True,
            progress="pages",
        )
        return {case: found[f"{case.sessions}/{case.what}"] for case in actions}


async def buffers(url: URL) -> dict[Case, int]:
    """Shared buffers one page's statement touches (hit or read), first and deep page."""
    found = {}
    async with PostgresStorage.from_url(url) as storage:
        connection = await raw_connection(url)
        try:
            for sessions in MEASURED:
                user_id = Case(sessions, "").user_id
                deep = await storage.list_sessions(
                    user_id, limit=1, cursor=await deep_cursor(storage, user_id, sessions)
                )
                after = deep.items[0]
                for what, position in (("first page", None), ("deep page", after)):
                    values = {
                        "with_summaries": False,
                        "user_id": user_id,
                        "after_created_at": position.created_at if position else None,
                        "after_session_id": position.session_id if position else None,
                        "updated_since": None,
                        "stage": None,
                        "limit": PAGE + 1,
                    }
                    plan = await connection.fetchval(
                        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql.LIST_SESSIONS.sql,
                        *sql.LIST_SESSIONS.arguments(values),
                    )
                    top = json.loads(plan)[0]["Plan"]
                    found[Case(sessions, what)] = (
                        top["Shared Hit Blocks"] + top["Shared Read Blocks"]
                    )
        finally:
            await connection.close()
    return found


def report(medians: dict[Case, float], touched: dict[Case, int]) -> str:
    kinds = ("first page", "deep page", "with summaries", "updated since")
    rows = [
        (
            f"{sessions:,}",
            *(f"{medians[Case(sessions, what)]:.2f}" for what in kinds),
            f"{touched[Case(sessions, 'first page')]} / {touched[Case(sessions, 'deep page')]}",
        )
        for sessions in MEASURED
    ]
    header = ("user's sessions", *(f"{what} ms" for what in kinds), "buffers first / deep")
    return table(rows, header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=100, help="timed pages per case")
    args = parser.parse_args()
    with bench_server() as server, scratch_database(server) as url:
        print(f"seeding {MESSAGES:,} messages' worth of sessions ({SESSION_SIZE} each)")
        database = asyncio.run(seed(url))
        print(", ".join(f"{key}: {value:,}" if isinstance(value, int) else f"{key}: {value}"
                        for key, value in database.items()))  # fmt: skip
        medians = asyncio.run(measure(url, args.rounds))
        touched = asyncio.run(buffers(url))
    print(f"\nmedian ms per page of {PAGE} (PostgresStorage.list_sessions, {args.rounds} rounds)\n")
    print(report(medians, touched))
    RESULTS.mkdir(exist_ok=True)
    document = {
        "database": database,
        "medians_ms": {f"{c.sessions} {c.what}": ms for c, ms in medians.items()},
        "buffers": {f"{c.sessions} {c.what}": n for c, n in touched.items()},
    }
    path = RESULTS / "list_sessions.json"
    path.write_text(json.dumps(document, indent=2), encoding="utf-8")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
