"""Server-side time of a per-turn write: ctxstore beside langchain-postgres, from the
server's own log.

Every statement a turn sends is timed by PostgreSQL itself (``log_min_duration_statement
= 0``, set on the scratch database only): parse + bind + execute, summed per turn.  That
leaves out the commit (the WAL flush at Sync) and the client, which the WAL bytes per
turn and bench_compare's round trips cover.  Contenders run round-robin, and a turn's
statements are the log entries written between its start and its end, so any client
code (this one or a redesign) is measured the same way.

Two workloads, each with ``ttl`` None and 7 days (a changing ``expires_at`` is indexed):
- ``one session``: every turn goes to one session of 1,000 messages (as bench_compare);
- ``2,000 sessions``: turns rotate over 2,000 sessions of 10 messages each, so the
  sessions table spans many full pages, as a service's does.

Per contender: server ms per turn (mean and median), statements per turn, the share of
its ``sessions`` updates that were HOT, and WAL bytes per turn (the last two from a run of
that contender alone).

Needs the server's log file: the embedded server started here writes it to
``<data dir>/log``; with CTXSTORE_BENCH_DATABASE_URL, give the file in
CTXSTORE_BENCH_SERVER_LOG (the server must log to stderr redirected to that file).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.bench_compare import (
    SAVE_HISTORY,
    SAVE_PLAIN,
    Action,
    Prepared,
    content,
    history,
    psycopg_conninfo,
)
from benchmarks.common import raw_connection, table
from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.admin import create_database, drop_database
from ctxstore.db.engine import normalize_url, redact

RESULTS = Path(__file__).resolve().parent / "results"
TURNS = int(os.environ.get("CTXSTORE_BENCH_SERVER_TURNS", "400"))
MANY = int(os.environ.get("CTXSTORE_BENCH_SERVER_SESSIONS", "2000"))
TTLS: dict[str, timedelta | None] = {"ttl none": None, "ttl 7 days": timedelta(days=7)}

_DURATION = re.compile(rb"duration: (\d+\.\d+) ms  (parse|bind|execute|statement)")


class ServerLog:
    """The server's log file, read by byte range."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def offset(self) -> int:
        return self.path.stat().st_size

    def entries(self, start: int, end: int) -> list[tuple[str, float]]:
        with self.path.open("rb") as log:
            log.seek(start)
            chunk = log.read(end - start)
        return [(kind.decode(), float(ms)) for ms, kind in _DURATION.findall(chunk)]


@contextmanager
def server() -> Iterator[tuple[URL, Path]]:
    """A server (embedded unless CTXSTORE_BENCH_DATABASE_URL) and its log file."""
    explicit = os.environ.get("CTXSTORE_BENCH_DATABASE_URL")
    if explicit:
        log = os.environ.get("CTXSTORE_BENCH_SERVER_LOG")
        if not log:
            raise SystemExit("set CTXSTORE_BENCH_SERVER_LOG to the server's log file")
        yield normalize_url(explicit), Path(log)
        return
    from ctxstore.embedded import EmbeddedPostgres  # noqa: PLC0415

    data = Path(tempfile.mkdtemp(prefix="ctxstore-bench-")) / "pgdata"
    embedded = EmbeddedPostgres(data)
    try:
        yield normalize_url(embedded.start()), data / "log"
    finally:
        embedded.stop()


def turn(n: int) -> list[Message]:
    return [
        Message(role="user", content=content(n), turn_id=f"new_{n}", timestamp=_at(n, 0)),
        Message(role="assistant", content=content(n + 1), turn_id=f"new_{n}", timestamp=_at(n, 5)),
    ]


def _at(n: int, second: int) -> str:
    return f"2026-11-29T09:{n // 60 % 60:02d}:{second:02d}+08:00"


class Workload:
    """Contenders writing turns to ``sessions`` sessions of ``size`` messages each."""

    def __init__(self, url: URL, name: str, sessions: int, size: int, ttl: timedelta | None):
        self.url, self.name, self.sessions, self.size, self.ttl = url, name, sessions, size, ttl
        self.prefix = uuid.uuid4().hex[:6]
        self.storages: list[PostgresStorage] = []
        self.n = 0

    def sid(self, kind: str, index: int) -> str:
        return f"{self.prefix}-{kind}-{index}"

    def storage(self) -> PostgresStorage:
        storage = PostgresStorage.from_url(self.url, ttl=self.ttl)
        self.storages.append(storage)
        return storage

    def next_turn(self) -> list[Message]:
        self.n += 1
        return turn(self.n)

    async def setup(self) -> None:
        import psycopg  # noqa: PLC0415
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
        from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

        self.human, self.ai = HumanMessage, AIMessage
        seed = self.storage()
        messages = history(self.size)
        for kind in ("history", "plain", "append"):
            for index in range(self.sessions):
                await seed.save(self.sid(kind, index), messages)
        self.raw = await raw_connection(self.url)
        await self.raw.execute(
            "CREATE TABLE IF NOT EXISTS raw_messages (session_id text, seq int, role text,"
            " content text, PRIMARY KEY (session_id, seq))"
        )
        await self.raw.executemany(
            "INSERT INTO raw_messages VALUES ($1, $2, $3, $4)",
            [
                (self.sid("raw", index), i, m.role, m.content)
                for index in range(self.sessions)
                for i, m in enumerate(messages)
            ],
        )
        self.raw_next = [self.size] * self.sessions
        self.pg = await psycopg.AsyncConnection.connect(psycopg_conninfo(self.url), autocommit=True)
        await PostgresChatMessageHistory.acreate_tables(self.pg, "lc_messages")
        self.lc = []
        for _ in range(self.sessions):
            lc = PostgresChatMessageHistory(
                "lc_messages", str(uuid.uuid4()), async_connection=self.pg
            )
            await lc.aadd_messages(
                [
                    (HumanMessage if m.role == "user" else AIMessage)(content=m.content)
                    for m in messages
                ]
            )
            self.lc.append(lc)
        self.history_store = self.storage()
        self.histories = [
            await self.history_store.load(self.sid("history", i)) for i in range(self.sessions)
        ]
        self.plain_store = self.storage()
        self.append_store = self.storage()

    def contenders(self) -> dict[str, Action | Prepared]:
        cursor = {name: 0 for name in ("history", "plain", "append", "lc", "raw")}
        loaded: list[list[Message]] = [[]]

        def rotate(kind: str) -> int:
            index = cursor[kind]
            cursor[kind] = (index + 1) % self.sessions
            return index

        async def save_history() -> None:
            index = rotate("history")
            self.histories[index].extend(self.next_turn())
            await self.history_store.save(self.sid("history", index), self.histories[index])

        async def load_plain() -> None:
            loaded[0] = await self.plain_store.load(self.sid("plain", cursor["plain"]))

        async def save_plain() -> None:
            index = rotate("plain")
            await self.plain_store.save(self.sid("plain", index), loaded[0] + self.next_turn())

        async def append() -> None:
            await self.append_store.append(self.sid("append", rotate("append")), self.next_turn())

        async def langchain() -> None:
            pair = self.next_turn()
            await self.lc[rotate("lc")].aadd_messages(
                [self.human(content=pair[0].content), self.ai(content=pair[1].content)]
            )

        async def raw_insert() -> None:
            index = rotate("raw")
            pair = self.next_turn()
            seq = self.raw_next[index]
            self.raw_next[index] += 2
            await self.raw.execute(
                "INSERT INTO raw_messages VALUES ($1, $2, $3, $4), ($1, $5, $6, $7)",
                self.sid("raw", index),
                seq,
                pair[0].role,
                pair[0].content,
                seq + 1,
                pair[1].role,
                pair[1].content,
            )

        return {
            SAVE_HISTORY: save_history,
            SAVE_PLAIN: Prepared(load_plain, save_plain),
            "ctxstore append": append,
            "langchain add_messages": langchain,
            "raw asyncpg insert": raw_insert,
        }

    async def close(self) -> None:
        for storage in self.storages:
            await storage.close()
        await self.raw.close()
        await self.pg.close()


async def _timed(log: ServerLog, action: Action | Prepared) -> list[tuple[str, float]]:
    if isinstance(action, Prepared):
        await action.prepare()
        action = action.run
    start = log.offset()
    await action()
    return log.entries(start, log.offset())


async def round_robin(
    log: ServerLog, actions: dict[str, Action | Prepared], turns: int
) -> dict[str, dict[str, float]]:
    for action in actions.values():  # warm-up: connections, prepared statements
        for _ in range(5):
            await action()
    per_turn: dict[str, list[float]] = {name: [] for name in actions}
    statements: dict[str, int] = dict.fromkeys(actions, 0)
    for _ in range(turns):
        for name, action in actions.items():
            entries = await _timed(log, action)
            per_turn[name].append(sum(ms for _, ms in entries))
            statements[name] += sum(1 for kind, _ in entries if kind in ("execute", "statement"))
    return {
        name: {
            "server ms mean": statistics.fmean(values),
            "server ms median": statistics.median(values),
            "statements per turn": statements[name] / turns,
        }
        for name, values in per_turn.items()
    }


async def _sessions_counters(url: URL, workload: Workload) -> tuple[int, int]:
    # A backend sends its counters to the statistics when it exits: close every pool.
    for storage in workload.storages:
        await storage.close()
    await asyncio.sleep(0.5)
    conn = await raw_connection(url)
    try:
        row = await conn.fetchrow(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'sessions'"
        )
    finally:
        await conn.close()
    return int(row["n_tup_upd"]), int(row["n_tup_hot_upd"])


async def alone(url: URL, workload: Workload, name: str, turns: int) -> dict[str, float | None]:
    """HOT share and WAL bytes per turn of one contender run by itself."""
    action = workload.contenders()[name]
    before_upd, before_hot = await _sessions_counters(url, workload)
    probe = await raw_connection(url)
    try:
        wal_before = await probe.fetchval("SELECT pg_current_wal_insert_lsn()")
        for _ in range(turns):
            await action()
        wal = await probe.fetchval("SELECT pg_current_wal_insert_lsn() - $1::pg_lsn", wal_before)
    finally:
        await probe.close()
    after_upd, after_hot = await _sessions_counters(url, workload)
    updates = after_upd - before_upd
    return {
        "sessions updates per turn": updates / turns,
        "HOT %": 100 * (after_hot - before_hot) / updates if updates else None,
        "WAL bytes per turn": float(wal) / turns,
    }


async def measure(url: URL, log: ServerLog) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for ttl_name, ttl in TTLS.items():
        for shape, sessions, size in (("one session", 1, 1_000), (f"{MANY:,} sessions", MANY, 10)):
            label = f"{shape}, {ttl_name}"
            workload = Workload(url, label, sessions, size, ttl)
            await workload.setup()
            try:
                figures = await round_robin(log, workload.contenders(), TURNS)
                # Each alone long enough to update every session three times: steady state.
                for name in figures:
                    figures[name].update(await alone(url, workload, name, max(TURNS, 3 * sessions)))
            finally:
                await workload.close()
            results[label] = figures
            print(f"measured {label}", flush=True)
    return results


def report(results: dict[str, Any]) -> str:
    lines = []
    for label, figures in results.items():
        lc = figures["langchain add_messages"]["server ms mean"]
        rows = []
        for name, f in figures.items():
            hot = f["HOT %"]
            rows.append(
                (
                    name,
                    f"{f['server ms mean']:.3f}",
                    f"{f['server ms median']:.3f}",
                    f"{f['server ms mean'] / lc:.2f}",
                    f"{f['statements per turn']:.2f}",
                    "-" if hot is None else f"{hot:.0f}",
                    f"{f['WAL bytes per turn']:,.0f}",
                )
            )
        lines.append(f"\n{label}: server time per turn (parse+bind+execute), ms")
        lines.append(
            table(
                rows,
                ("writer", "mean", "median", "/ langchain", "stmts", "HOT %", "WAL B/turn"),
            )
        )
    return "\n".join(lines)


async def _set_logging(server_url: URL, name: str, on: bool) -> None:
    conn = await raw_connection(server_url)
    try:
        for setting, value in (
            ("log_min_duration_statement", "0"),
            ("log_parameter_max_length", "0"),
        ):
            if on:
                await conn.execute(f"ALTER DATABASE {name} SET {setting} = {value}")
            else:
                await conn.execute(f"ALTER DATABASE {name} RESET {setting}")
    finally:
        await conn.close()


def main() -> None:
    with server() as (server_url, log_path):
        name = f"ctxstore_bench_{uuid.uuid4().hex[:8]}"
        url = asyncio.run(create_database(server_url, name))
        print(f"server: {redact(server_url)}, log {log_path}")
        try:
            migrations.upgrade(url)
            asyncio.run(_set_logging(server_url, name, True))
            started = time.perf_counter()
            results = asyncio.run(measure(url, ServerLog(log_path)))
            print(f"({time.perf_counter() - started:.0f} s)")
        finally:
            asyncio.run(drop_database(server_url, name))
    print(report(results))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "server_time.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"\nwrote {RESULTS / 'server_time.json'}")


if __name__ == "__main__":
    main()
