"""What the hot table charges a turn: backend CPU and WAL per 2-message append (issue 47, 6).

A turn (a user message and the assistant's answer: Chinese sports-injury consultation
text, Go-style RFC 3339 times with nanoseconds) is appended to a session holding 1,000
messages, on one PostgreSQL server, by each contender in turn:

- ``today (library)``: ``PostgresStorage.append`` on a database ``ctxstore db upgrade``
  made (the CLI, run as a subprocess), the session loaded first as a service would (so
  the store knows its content hash and carries it on);
- ``today (v7 replay)``: the one statement the library sends (``sql.APPEND``, that is
  ``SELECT ctxstore_append_v7(...)``) with the very arguments it builds, on a dedicated
  asyncpg connection opened with the library's settings (its timeouts);
  ``today (v7, no timeouts)``: the same on a connection with asyncpg's defaults.  The
  warm-up batch of every run checks that the library sent exactly one statement a turn,
  ``append``, with the arguments the replays pass;
- ``a no FK``, ``b no CHECKs``, ``c no FK/CHECKs``: the v7 replay on copies of today's
  database without ``fk_messages_session_id_sessions``, without the five CHECK constraints
  of ``messages``, without both (today's has the FK put back as the baseline, revision
  1000, had it: revision 1001 dropped it, so ``a`` is the schema at head); ``b1``: the
  five CHECKs as one (their conjunction: the same rows refused, one constraint to prepare
  per statement);
- ``d one statement``: v7's fast path as one prepared statement (a data-modifying CTE:
  the session row's UPDATE, then the INSERT of the rows), same arguments, today's
  constraints; ``e d, no FK/CHECKs``: the same without the FK and the CHECKs; ``f d, no
  FK``: without the FK only;
- ``g``, ``h``, ``i``: the v7 replay on copies of ``a`` (the schema at head) whose
  ``sessions`` carries the 1.0 baseline's indexes (``g``: ``ix_sessions_user_id``), or a
  listing index instead: on the last update (``h``: ``(user_id, updated_at DESC,
  session_id DESC)``, the alternative revision 1005 turned down: ``updated_at`` moves
  every turn, so no update of the row is HOT) or on the creation time (``i``: ``(user_id,
  created_at DESC, session_id DESC)``, revision 1005's, which no write changes);
- ``floor``: one prepared INSERT of the 2 rows (a ``VALUES`` list) into a bare copy of
  ``messages`` (its columns and primary key only), asyncpg's default connection;
- ``langchain``: langchain-postgres ``PostgresChatMessageHistory.aadd_messages`` (psycopg,
  its default transaction: BEGIN, two INSERTs in a pipeline, COMMIT) on its own table
  made by ``acreate_tables``, the same contents (turn id and Go time in
  ``additional_kwargs``).

Each contender has a database of its own (today's copied with ``CREATE DATABASE ...
TEMPLATE``) and a session of 1,000 messages per batch, read whole just before it (as a
turn's context read would; not measured).  A batch is ``--turns`` turns sent one after
the other (``--turns 1``: each measured turn comes cold, after the context read, as in a
service); around it the harness reads

- backend CPU: the first field of ``/proc/<pid>/schedstat`` (ns on CPU) of the
  contender's backend (``pg_backend_pid()``; for the library, every client backend of its
  database, found in ``pg_stat_activity``): the server must run on this machine;
- WAL: ``pg_current_wal_insert_lsn()`` before and after (cluster-wide, so run it on a
  quiet server), and, when ``pg_waldump`` and the server's ``pg_wal`` are readable, the
  records of the batch's LSN range that touch the contender's database (by relation) or
  belong to its transactions (their commits): bytes with and without full-page images,
  and record kinds per turn, immune to other databases' traffic.

Batches are interleaved: every round runs each contender's batch once, in a new shuffled
order; a run is a CHECKPOINT, a warm-up round, then ``--rounds`` rounds; ``--runs`` runs.
Reported: the median over runs of each run's median per turn, the spread (min-max of the
run medians) and the ratio to langchain (median and spread of the per-run ratios); what
each change saves (two contenders' difference in the same round, medians as above); the
WAL records a turn writes, per contender; and whether every ctxstore contender wrote the
library's rows byte for byte; and the share of each contender's ``sessions`` updates
that were HOT (pg_stat_user_tables, over the run, warm-up included).  Every scratch database
and the roles ``ctxstore db upgrade`` created are dropped at the end.

``--only a,g,h,i`` runs those contenders (by the first word of their names) beside the
library and langchain, which every run keeps (the checks and ratios need them).

Run: CTXSTORE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
     python -m benchmarks.bench_append_costs [--runs 3] [--rounds 12] [--turns 25] [--only ...]
Needs the `bench` extra (langchain-postgres, psycopg).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import operator
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import URL

from benchmarks.common import bench_server, table
from ctxstore import Message, PostgresStorage
from ctxstore.db.engine import EngineSettings, normalize_url
from ctxstore.models import MESSAGE_FORMAT
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Statement

SEEDED = 1_000  # messages in a session before its batch
FPI = "(full-page images)"
LANGCHAIN_TABLE = "langchain_messages"
FK = "fk_messages_session_id_sessions"
STATEMENT_CALLS = ("fetch", "fetchrow", "fetchval", "execute")
#: What the library's connections are opened with (application_name and the timeouts):
#: the replays use the same, so they differ from the library by the client only.
LIBRARY_SETTINGS: dict[str, str] = EngineSettings().connect_args()["server_settings"]  # type: ignore[assignment]
COLUMNS = (
    "session_id, seq, role, content, turn_id, ts, ts_offset, name, metadata, digest,"
    " token_count, format_version, token_encoding, key_id, sealed, ts_nanos"
)
ROWS = "$13::ctxstore_message_row_v1[]"

#: v7's fast path as one statement, the arguments of ``sql.APPEND`` in its order: the
#: session row's UPDATE (every column and condition v7 writes and checks for plaintext
#: rows; a sealed append, a new session or a refusal returns no row: the caller then
#: calls v7), the rows at the positions it hands out, the journal's write ids.
ONE_STATEMENT = f"""
WITH head AS (
    UPDATE sessions AS s
       SET expires_at = now() + $4::interval,
           turn_count = s.turn_count + $10::integer,
           first_activity_at = CASE WHEN s.message_count = 0
                                    THEN coalesce($11::timestamptz, now())
                                    ELSE s.first_activity_at END,
           last_activity_at = coalesce($12::timestamptz, now()),
           message_count = s.message_count + cardinality({ROWS}),
           content_hash = CASE WHEN s.message_count = 0 THEN $8::bytea
                               WHEN s.message_count = $6::integer
                                AND s.content_hash = $7::bytea
                               THEN $9::bytea END,
           version = s.version + 1,
           user_id = coalesce(s.user_id, $3::text),
           updated_at = now()
     WHERE s.session_id = $1::text
       AND $2::bigint IS DISTINCT FROM 0
       AND ($2::bigint IS NULL OR s.version = $2::bigint)
       AND ($3::text IS NULL
            OR (SELECT pg_advisory_xact_lock_shared(
                           hashtextextended('ctxstore user ' || $3::text, 0))) IS NOT NULL)
       AND ($3::text IS NULL OR s.user_id IS NULL OR s.user_id = $3::text)
       AND s.message_count + cardinality({ROWS}) <= $5::integer
       AND (s.expires_at IS NULL OR s.expires_at > now())
       AND (({ROWS})[1]).key_id IS NULL
    RETURNING s.message_count - cardinality({ROWS}) AS start, s.version
), written AS (
    INSERT INTO messages ({COLUMNS})
    SELECT $1::text, head.start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata::jsonb, m.digest, m.token_count,
           m.format_version, m.token_encoding, m.key_id, m.sealed, m.ts_nanos
      FROM head, unnest({ROWS}) AS m
), applied AS (
    INSERT INTO applied_session_writes (session_id, write_id)
    SELECT $1::text, w::uuid FROM head, unnest($14::text[]) AS w
    ON CONFLICT DO NOTHING
)
SELECT head.start, head.version FROM head"""

_ROW_CASTS = (
    "$1::text, $2::integer, $3::text, $4::text, $5::text, $6::text::timestamptz,"
    " $7::integer, $8::text, $9::text::jsonb, $10::bytea, $11::integer, $12::smallint,"
    " $13::text, $14::bigint, $15::bytea, $16::smallint"
)


def _shifted(casts: str, by: int) -> str:
    return re.sub(r"\$(\d+)", lambda m: f"${int(m.group(1)) + by}", casts)


#: The floor: the 2 rows as a VALUES list, one prepared INSERT.
FLOOR = f"INSERT INTO bare_messages ({COLUMNS}) VALUES ({_ROW_CASTS}), ({_shifted(_ROW_CASTS, 16)})"

# -- the conversation -----------------------------------------------------------------------------

USER_LINES = (
    "我膝盖有下坠感，走路的时候比较明显。",
    "上下楼梯的时候会突然打软，上周打篮球扭过一下。",
    "跑步的时候脚踝扭了一下，外侧肿起来了，走路有点疼。",
    "最近腰一直很酸，久坐以后更严重，早上起床比较僵。",
    "右边肩膀抬起来会疼，打羽毛球以后开始的，举过头顶最疼。",
    "早上下床第一步脚跟特别疼，走一会儿会好一些。",
    "最近跑量增加了，已经两周了，需要停跑吗？",
    "疼痛大概五分吧，晚上侧睡的时候会痛醒一次。",
    "没有发烧，也没有麻木，就是蹲下去的时候很难受。",
    "冰敷之后好一点，但是第二天又开始疼。",
)
ASSISTANT_LINES = (
    "根据你描述的情况，可能是髌骨周围的软组织受到了刺激，目前不太像严重的结构损伤。",
    "建议先减少跑步和跳跃类运动，给膝盖一到两周的恢复时间，期间可以改为游泳或骑车。",
    "可以每天冰敷两到三次，每次十五分钟左右，注意不要让冰袋直接接触皮肤。",
    "如果出现明显肿胀、无法负重、夜间痛醒或者腿部麻木无力，请尽快到医院就诊。",
    "平时可以做一些股四头肌和臀部肌肉的力量训练，比如靠墙静蹲和侧卧抬腿。",
    "上下楼梯的时候尽量扶着扶手，避免突然发力或者扭转膝盖。",
    "请问疼痛大概几分（0-10）？是持续的疼还是只在某些动作时出现？",
    "持续多久了？之前这个部位有没有受过伤，或者做过手术？",
    "热身不充分也是常见的诱因，运动前至少活动十分钟，运动后做好拉伸。",
    "如果两周后仍没有改善，建议去运动医学科做一下体格检查，必要时做核磁共振。",
    "睡觉时可以在膝盖下面垫一个枕头，减轻关节压力，也有助于缓解晨起的僵硬。",
    "护具可以先用一段时间保护一下，但不要长期依赖，力量恢复以后逐步减少使用。",
)
ZONE = 8 * 3600


def go_time(moment: datetime, nanosecond: int) -> str:
    """What Go's time.Time.MarshalJSON writes: RFC 3339, +08:00, the fraction without
    trailing zeros (``nanosecond`` below the second, its last three digits non-zero)."""
    local = moment + timedelta(seconds=ZONE)
    fraction = f"{nanosecond:09d}".rstrip("0")
    return f"{local:%Y-%m-%dT%H:%M:%S}.{fraction}+08:00"


@dataclass(frozen=True)
class Turn:
    user: str
    assistant: str
    turn_id: str
    user_time: str  # Go's text
    assistant_time: str

    def messages(self) -> list[Message]:
        return [
            Message(role="user", content=self.user, turn_id=self.turn_id, timestamp=self.user_time),
            Message(
                role="assistant",
                content=self.assistant,
                turn_id=self.turn_id,
                timestamp=self.assistant_time,
            ),
        ]

    def langchain(self) -> list[Any]:
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415

        return [
            HumanMessage(
                content=self.user,
                additional_kwargs={"turn_id": self.turn_id, "timestamp": self.user_time},
            ),
            AIMessage(
                content=self.assistant,
                additional_kwargs={"turn_id": self.turn_id, "timestamp": self.assistant_time},
            ),
        ]


def conversation(session: int, turns: int) -> list[Turn]:
    """Session ``session``'s first ``turns`` turns (the same every time)."""
    rng = random.Random(1_000_003 * 47 + session)
    moment = datetime(2026, 11, 2, 1, tzinfo=UTC) + timedelta(hours=session)
    found = []
    for index in range(turns):
        stamps = []
        for _ in range(2):
            moment += timedelta(seconds=rng.randint(5, 90), microseconds=rng.randrange(10**6))
            stamps.append(go_time(moment.replace(microsecond=0), rng.randrange(1, 10**9)))
        found.append(
            Turn(
                "".join(rng.sample(USER_LINES, rng.randint(1, 2))),
                "".join(rng.sample(ASSISTANT_LINES, rng.randint(3, 5))),
                f"turn_{index + 1:04d}",
                stamps[0],
                stamps[1],
            )
        )
    return found


# -- the server -----------------------------------------------------------------------------------


def dsn(url: URL, database: str | None = None) -> str:
    target = url.set(drivername="postgresql")
    if database is not None:
        target = target.set(database=database)
    return target.render_as_string(hide_password=False)


def cpu_ns(pid: int) -> int:
    """Nanoseconds on CPU of process ``pid`` (schedstat; stat's ticks are 10 ms)."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


WALDUMP_LINE = re.compile(
    r"rmgr: (\S+)\s+len \(rec/tot\):\s*(\d+)/\s*(\d+), tx:\s*(\d+), lsn: \S+, prev \S+, "
    r"desc: (\S+)(.*)$"
)
RELATION = re.compile(r"rel \d+/(\d+)/\d+")


@dataclass(frozen=True)
class Record:
    """A WAL record as pg_waldump prints it."""

    kind: str  # rmgr/operation
    tx: int
    total: int  # bytes, full-page images included
    bare: int  # bytes without them ("rec" of "len (rec/tot)")
    databases: set[int]  # of the relations it names


@dataclass
class Wal:
    """The server's pg_waldump and WAL directory (None: not readable from here)."""

    waldump: Path | None
    directory: Path | None

    def records(self, start: str, end: str) -> list[Record]:
        """Each record in the range."""
        if self.waldump is None or self.directory is None or start == end:
            return []
        done = subprocess.run(
            [str(self.waldump), "-p", str(self.directory), "-s", start, "-e", end],
            capture_output=True,
            text=True,
            check=False,
        )
        found = []
        for line in done.stdout.splitlines():
            match = WALDUMP_LINE.match(line)
            if match is None:
                continue
            rmgr, bare, total, tx, op, rest = match.groups()
            databases = {int(oid) for oid in RELATION.findall(rest)}
            found.append(Record(f"{rmgr}/{op}", int(tx), int(total), int(bare), databases))
        return found

    def stats(self, start: str, end: str) -> str:
        if self.waldump is None or self.directory is None:
            return ""
        stats = subprocess.run(
            [
                str(self.waldump),
                "--stats=record",
                "-p",
                str(self.directory),
                *("-s", start, "-e", end),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return stats.stdout


def own_records(records: list[Record], oid: int) -> list[Record]:
    """The records of database ``oid``: touching its relations, or of its transactions."""
    xids = {r.tx for r in records if oid in r.databases and r.tx}
    return [r for r in records if oid in r.databases or (r.tx and r.tx in xids)]


async def find_wal(probe: asyncpg.Connection) -> Wal:
    major = int(await probe.fetchval("SHOW server_version_num")) // 10_000
    candidates = [Path(f"/usr/lib/postgresql/{major}/bin/pg_waldump")]
    if (found := shutil.which("pg_waldump")) is not None:
        candidates.append(Path(found))
    waldump = next((path for path in candidates if path.exists()), None)
    directory = Path(await probe.fetchval("SHOW data_directory")) / "pg_wal"
    return Wal(waldump, directory if os.access(directory, os.R_OK) else None)


# -- the contenders -------------------------------------------------------------------------------


@dataclass
class Batch:
    session: str  # ctxstore's session id
    number: int  # the conversation's seed
    turns: list[Turn]
    values: list[dict[str, Any]]  # sql.APPEND's arguments, turn by turn


@dataclass
class Contender:
    name: str
    database: str
    oid: int = 0
    pids: Callable[[], Any] | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)

    async def open(self, server: URL) -> None:
        raise NotImplementedError

    async def before(self, batch: Batch) -> None:
        """The turn's context read, not measured."""

    async def turn(self, batch: Batch, index: int) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class Replay(Contender):
    """``sql.APPEND`` (SELECT ctxstore_append_v7(...)) with the library's arguments, on a
    connection with the library's settings (``plain``: asyncpg's defaults)."""

    connection: asyncpg.Connection
    plain = False

    async def open(self, server: URL) -> None:
        settings = {} if self.plain else LIBRARY_SETTINGS
        self.connection = await asyncpg.connect(
            dsn(server, self.database), server_settings=settings
        )
        pid = await self.connection.fetchval("SELECT pg_backend_pid()")
        self.pids = lambda: [pid]

    async def before(self, batch: Batch) -> None:
        """The library's load statement (it reads the session row too, so a prune of the
        sessions page it triggers falls here, as the library's does)."""
        found = await sql.LOAD_SESSION.fetch(
            self.connection, sid=batch.session, current=MESSAGE_FORMAT
        )
        if len(found) != SEEDED + 1:
            raise RuntimeError(f"{self.name}: {len(found)} rows loaded")

    async def turn(self, batch: Batch, index: int) -> None:
        _start, version, *_ = await sql.APPEND.fetchval(self.connection, **batch.values[index])
        if version is None:
            raise RuntimeError(f"{self.name}: the append was refused")

    async def close(self) -> None:
        await self.connection.close()


class PlainReplay(Replay):
    plain = True


class OneStatement(Replay):
    """v7's fast path as one prepared statement."""

    async def open(self, server: URL) -> None:
        await super().open(server)
        self.statement = await self.connection.prepare(ONE_STATEMENT)

    async def turn(self, batch: Batch, index: int) -> None:
        found = await self.statement.fetchrow(*sql.APPEND.arguments(batch.values[index]))
        if found is None:
            raise RuntimeError(f"{self.name}: the fast path found no session to extend")


class Floor(Replay):
    plain = True

    async def open(self, server: URL) -> None:
        await super().open(server)
        self.statement = await self.connection.prepare(FLOOR)

    async def before(self, batch: Batch) -> None:
        await self.connection.fetch(
            "SELECT * FROM bare_messages WHERE session_id = $1 ORDER BY seq", batch.session
        )

    async def turn(self, batch: Batch, index: int) -> None:
        start = SEEDED + 2 * index
        arguments: list[Any] = []
        for row in batch.values[index]["new_rows"]:
            arguments += [batch.session, start + row[0], *row[1:]]
        await self.statement.fetchval(*arguments)


class Library(Contender):
    storage: PostgresStorage

    async def open(self, server: URL) -> None:
        self.storage = PostgresStorage.from_url(server.set(database=self.database))
        await self.storage.__aenter__()
        self.probe = await asyncpg.connect(dsn(server))

    async def backends(self) -> list[int]:
        return [
            int(pid)
            for (pid,) in await self.probe.fetch(
                "SELECT pid FROM pg_stat_activity"
                " WHERE datname = $1 AND backend_type = 'client backend'",
                self.database,
            )
        ]

    async def before(self, batch: Batch) -> None:
        loaded = await self.storage.load(batch.session)  # the store learns the content hash
        if len(loaded) < SEEDED:
            raise RuntimeError(f"{batch.session}: {len(loaded)} messages")
        pids = await self.backends()
        self.pids = lambda: pids

    async def turn(self, batch: Batch, index: int) -> None:
        await self.storage.append(batch.session, batch.turns[index].messages())

    async def close(self) -> None:
        await self.storage.close()
        await self.probe.close()


class Langchain(Contender):
    async def open(self, server: URL) -> None:
        import psycopg  # noqa: PLC0415
        from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

        self.history_class = PostgresChatMessageHistory
        self.connection = await psycopg.AsyncConnection.connect(dsn(server, self.database))
        async with self.connection.cursor() as cursor:
            await cursor.execute("SELECT pg_backend_pid()")
            (pid,) = await cursor.fetchone()  # type: ignore[misc]
        await self.connection.commit()
        self.pids = lambda: [pid]

    def history(self, batch: Batch) -> Any:
        session = str(uuid.UUID(int=batch.number + 1))
        return self.history_class(LANGCHAIN_TABLE, session, async_connection=self.connection)

    async def before(self, batch: Batch) -> None:
        found = await self.history(batch).aget_messages()
        if len(found) < SEEDED:
            raise RuntimeError(f"langchain session {batch.number}: {len(found)} messages")
        self.current = self.history(batch)

    async def turn(self, batch: Batch, index: int) -> None:
        await self.current.aadd_messages(batch.turns[index].langchain())

    async def close(self) -> None:
        await self.connection.close()


# -- the scratch databases ------------------------------------------------------------------------


@dataclass
class Scratch:
    server: URL
    base: str
    made: list[str] = field(default_factory=list)

    def name(self, suffix: str) -> str:
        return f"{self.base}_{suffix}"

    async def admin(self, *statements: str, database: str | None = None) -> None:
        connection = await asyncpg.connect(dsn(self.server, database))
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    async def create(self, name: str, template: str | None = None) -> str:
        self.made.append(name)
        clause = f' TEMPLATE "{template}"' if template else ""
        await self.admin(f'CREATE DATABASE "{name}"{clause}')
        return name

    async def drop(self) -> None:
        connection = await asyncpg.connect(dsn(self.server))
        try:
            for name in reversed(self.made):
                await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            roles = await connection.fetch(
                "SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1)",
                f"ctxstore_{self.base}_",
            )
            for (role,) in roles:
                await connection.execute(f'DROP ROLE IF EXISTS "{role}"')
        finally:
            await connection.close()


def upgrade(url: URL) -> None:
    """``ctxstore db upgrade``, the CLI, as an operator runs it."""
    cli = Path(sys.executable).with_name("ctxstore")
    command = [str(cli)] if cli.exists() else [sys.executable, "-m", "ctxstore.cli"]
    environment = {**os.environ, "CTXSTORE_DATABASE_URL": dsn(url)}
    subprocess.run([*command, "db", "upgrade"], env=environment, check=True)


def append_values(storage: PostgresStorage, session: str, turns: Sequence[Turn]) -> list[Any]:
    """sql.APPEND's arguments for each turn, as PostgresStorage._append builds them for a
    session of SEEDED messages this process knows (plaintext, no user, no expected
    version), and the hasher once the turns are in."""
    seeded = conversation_messages(session_number(session))
    digests = rows.digests_of(seeded, storage.limits)
    hasher = rows.hasher(None, b"".join(digests))
    count = len(seeded)
    values = []
    for turn in turns:
        messages = turn.messages()
        new = rows.batch(messages, storage.token_counter, storage.limits, None, session)
        added = b"".join(new.digests)
        extended = hasher.copy()
        extended.update(added)
        values.append(
            {
                "sid": session,
                "user_id": None,
                "added_hash": rows.hasher(None, added).digest(),
                "ttl": storage.ttl,
                "max_messages": storage.limits.max_messages,
                "write_ids": [],
                **rows.activity(messages, messages),
                "new_rows": rows.new_message_rows(new),
                "expected": None,
                "known_count": count,
                "known_hash": hasher.digest(),
                "extended_hash": extended.digest(),
            }
        )
        hasher, count = extended, count + len(messages)
    return values


def session_id(number: int) -> str:
    return f"bench-turn-{number:04d}"


def session_number(session: str) -> int:
    return int(session.rsplit("-", 1)[1])


def conversation_messages(number: int) -> list[Message]:
    return [m for turn in conversation(number, SEEDED // 2) for m in turn.messages()]


async def seed(scratch: Scratch, sessions: int) -> tuple[str, str]:
    """Today's database (upgraded by the CLI, ``sessions`` sessions of SEEDED messages,
    saved by the library) and langchain's (the same conversations); their names."""
    today = await scratch.create(scratch.name("today"))
    upgrade(scratch.server.set(database=today))
    expected = {}
    async with PostgresStorage.from_url(scratch.server.set(database=today)) as storage:
        for number in range(sessions):
            messages = conversation_messages(number)
            await storage.save(session_id(number), messages)
            digests = rows.digests_of(messages, storage.limits)
            expected[session_id(number)] = hashlib.sha256(b"".join(digests)).digest()
    connection = await asyncpg.connect(dsn(scratch.server, today))
    try:
        stored = dict(await connection.fetch("SELECT session_id, content_hash FROM sessions"))
        if stored != expected:
            raise RuntimeError("a stored content hash is not the SHA-256 of the digests")
        await connection.execute("VACUUM ANALYZE")
    finally:
        await connection.close()
    langchain = await scratch.create(scratch.name("langchain"))
    await seed_langchain(scratch.server, langchain, sessions)
    return today, langchain


async def seed_langchain(server: URL, database: str, sessions: int) -> None:
    import psycopg  # noqa: PLC0415
    from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

    async with await psycopg.AsyncConnection.connect(dsn(server, database)) as connection:
        await PostgresChatMessageHistory.acreate_tables(connection, LANGCHAIN_TABLE)
        for number in range(sessions):
            history = PostgresChatMessageHistory(
                LANGCHAIN_TABLE, str(uuid.UUID(int=number + 1)), async_connection=connection
            )
            messages = [m for turn in conversation(number, SEEDED // 2) for m in turn.langchain()]
            await history.aadd_messages(messages)
        await connection.set_autocommit(True)
        await connection.execute("VACUUM ANALYZE")


CHECKS = (
    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
    " WHERE conrelid = 'messages'::regclass AND contype = 'c' ORDER BY conname"
)


async def variant(scratch: Scratch, today: str, suffix: str, fk: bool, checks: str) -> str:
    """A copy of today's database without the FK of ``messages`` (``fk`` false), and
    with its five CHECKs as they are (``checks``: "keep"), dropped ("drop"), or dropped
    for one CHECK of their conjunction ("merge": the same refusals, one constraint)."""
    name = await scratch.create(scratch.name(suffix), template=today)
    connection = await asyncpg.connect(dsn(scratch.server, name))
    try:
        if not fk:
            await connection.execute(f"ALTER TABLE messages DROP CONSTRAINT {FK}")
        if checks != "keep":
            found = await connection.fetch(CHECKS)
            if len(found) != 5:
                raise RuntimeError(f"messages has {len(found)} CHECKs, not 5: {found}")
            for constraint, _ in found:
                await connection.execute(f"ALTER TABLE messages DROP CONSTRAINT {constraint}")
            if checks == "merge":
                merged = " AND ".join(
                    f"({definition.removeprefix('CHECK ')})" for _, definition in found
                )
                await connection.execute(
                    f"ALTER TABLE messages ADD CONSTRAINT ck_messages_row CHECK ({merged})"
                )
    finally:
        await connection.close()
    return name


#: The ``sessions`` indexes of each listing variant, made on a copy of ``a`` (the schema at
#: head, whatever its own listing index): the baseline's by user, then one listing index.
BASELINE_SESSIONS_INDEXES = (
    "DROP INDEX IF EXISTS ix_sessions_user_id_updated_at",
    "DROP INDEX IF EXISTS ix_sessions_user_id_created_at",
    "CREATE INDEX IF NOT EXISTS ix_sessions_user_id ON sessions (user_id)",
)
LISTING_INDEXES = {
    "g": BASELINE_SESSIONS_INDEXES,
    "h": (
        *BASELINE_SESSIONS_INDEXES,
        "CREATE INDEX ix_sessions_user_id_updated_at"
        " ON sessions (user_id, updated_at DESC, session_id DESC)",
        "DROP INDEX ix_sessions_user_id",
    ),
    "i": (
        *BASELINE_SESSIONS_INDEXES,
        "CREATE INDEX ix_sessions_user_id_created_at"
        " ON sessions (user_id, created_at DESC, session_id DESC)",
        "DROP INDEX ix_sessions_user_id",
    ),
}


async def listing_variant(scratch: Scratch, head: str, suffix: str) -> str:
    """A copy of ``head`` with the ``sessions`` indexes of LISTING_INDEXES[suffix]."""
    name = await scratch.create(scratch.name(suffix), template=head)
    await scratch.admin(*LISTING_INDEXES[suffix], "VACUUM ANALYZE sessions", database=name)
    return name


async def with_the_key(scratch: Scratch, today: str) -> None:
    """Today's database with the FK back, as the baseline (revision 1000) made it: revision
    1001 dropped it, and its cost stays measured (the contenders without it are the schema
    at head)."""
    connection = await asyncpg.connect(dsn(scratch.server, today))
    try:
        if not await connection.fetchval(
            "SELECT count(*) FROM pg_constraint WHERE conname = $1", FK
        ):
            await connection.execute(
                f"ALTER TABLE messages ADD CONSTRAINT {FK} FOREIGN KEY (session_id)"
                " REFERENCES sessions (session_id) ON DELETE CASCADE"
            )
    finally:
        await connection.close()


async def floor_database(scratch: Scratch, today: str) -> str:
    name = await scratch.create(scratch.name("floor"), template=today)
    await scratch.admin(
        "CREATE TABLE bare_messages (LIKE messages INCLUDING DEFAULTS)",
        "INSERT INTO bare_messages SELECT * FROM messages",
        "ALTER TABLE bare_messages ADD PRIMARY KEY (session_id, seq)",
        "VACUUM ANALYZE bare_messages",
        database=name,
    )
    return name


# -- the measurement ------------------------------------------------------------------------------


def cpu_of(pids: Sequence[int]) -> dict[int, int]:
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError, ValueError):
            found[pid] = cpu_ns(pid)
    return found


async def measured(
    probe: asyncpg.Connection, wal: Wal, contender: Contender, batch: Batch
) -> dict[str, Any]:
    """One batch of the contender, and what it cost the server."""
    await contender.before(batch)
    assert contender.pids is not None
    pids = list(contender.pids())
    lsn = await probe.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    cpu = cpu_of(pids)
    started = time.perf_counter()
    for index in range(len(batch.turns)):
        await contender.turn(batch, index)
    elapsed = time.perf_counter() - started
    cpu_after = cpu_of(pids)
    end = await probe.fetchval("SELECT pg_current_wal_insert_lsn()::text")
    wal_bytes = await probe.fetchval(
        "SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)", end, lsn
    )
    turns = len(batch.turns)
    records = own_records(wal.records(lsn, end), contender.oid)
    kinds: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for record in records:
        kinds[record.kind] += 1
        sizes[record.kind] += record.bare
        if record.total > record.bare:
            kinds[f"{FPI} {record.kind}"] += 1
            sizes[f"{FPI} {record.kind}"] += record.total - record.bare
    return {
        "cpu_us": sum(cpu_after[p] - cpu.get(p, 0) for p in cpu_after) / turns / 1000,
        "wal_bytes": float(wal_bytes) / turns,
        "own_wal_bytes": sum(r.total for r in records) / turns if records else None,
        "own_wal_bare": sum(r.bare for r in records) / turns if records else None,
        "wall_us": elapsed / turns * 1e6,
        "kinds": dict(kinds),
        "sizes": dict(sizes),
        "turns": turns,
        "range": (lsn, end),
    }


@dataclass
class Plan:
    runs: int
    rounds: int
    turns: int
    warmup: int
    #: ``--only``: the contenders to run beside the library and langchain (None: all).
    only: str | None = None

    @property
    def sessions(self) -> int:
        return self.runs * (self.rounds + 1)

    def number(self, run: int, round_: int) -> int:
        """The session of ``round_`` (0: the warm-up) of ``run``."""
        return run * (self.rounds + 1) + round_


async def check_replay(library: Library, batch: Batch) -> None:
    """The replay's arguments are the library's, and a turn is one statement: in the
    warm-up batch the library's statements (sql's) are recorded and compared."""
    await library.before(batch)
    sent: list[tuple[str, dict[str, Any]]] = []
    originals = {name: getattr(Statement, name) for name in STATEMENT_CALLS}

    def recording(name: str) -> Any:
        async def call(self: Statement, driver: Any, **values: Any) -> Any:
            sent.append((self.name, values))
            return await originals[name](self, driver, **values)

        return call

    for name in STATEMENT_CALLS:
        setattr(Statement, name, recording(name))
    try:
        for index in range(len(batch.turns)):
            await library.turn(batch, index)
    finally:
        for name, original in originals.items():
            setattr(Statement, name, original)
    names = [name for name, _ in sent]
    if names != ["append"] * len(batch.turns):
        raise RuntimeError(f"the library sent {names} for {len(batch.turns)} turns")
    if [values for _, values in sent] != batch.values:
        differing = {
            key
            for mine, (_, theirs) in zip(batch.values, sent, strict=True)
            for key in mine
            if theirs.get(key) != mine[key]
        }
        raise RuntimeError(f"the replay's arguments differ from the library's: {sorted(differing)}")


async def measured_quietly(contender: Contender, batch: Batch) -> None:
    await contender.before(batch)
    for index in range(len(batch.turns)):
        await contender.turn(batch, index)


def batches_for(storage: PostgresStorage, plan: Plan, run: int) -> list[Batch]:
    found = []
    for round_ in range(plan.rounds + 1):
        number = plan.number(run, round_)
        turns = plan.warmup if round_ == 0 else plan.turns
        every = conversation(number, SEEDED // 2 + turns)[SEEDED // 2 :]
        session = session_id(number)
        found.append(Batch(session, number, every, append_values(storage, session, every)))
    return found


async def one_run(
    probe: asyncpg.Connection,
    wal: Wal,
    contenders: list[Contender],
    batches: list[Batch],
    run: int,
) -> None:
    await probe.execute("CHECKPOINT")
    library = next(c for c in contenders if isinstance(c, Library))
    order = list(contenders)
    random.shuffle(order)
    for contender in order:  # the warm-up round
        if contender is library:
            await check_replay(library, batches[0])
        else:
            await measured_quietly(contender, batches[0])
    for number, batch in enumerate(batches[1:], 1):
        random.shuffle(order)
        for contender in order:
            sample = await measured(probe, wal, contender, batch)
            sample["run"], sample["round"] = run, number
            contender.samples.append(sample)
        print(f"  round {number}/{len(batches) - 1}", end="\r", flush=True)
    print()


# -- the report -----------------------------------------------------------------------------------


def per_run(contender: Contender, runs: int, rounds: int, key: str) -> list[float]:
    samples = contender.samples
    return [
        statistics.median(
            s[key] for s in samples[run * rounds : (run + 1) * rounds] if s[key] is not None
        )
        for run in range(runs)
    ]


def spread(values: list[float], digits: int = 0) -> str:
    middle, low, high = statistics.median(values), min(values), max(values)
    return f"{middle:,.{digits}f} [{low:,.{digits}f}-{high:,.{digits}f}]"


def report(contenders: list[Contender], plan: Plan) -> tuple[str, dict[str, Any]]:
    runs, rounds = plan.runs, plan.rounds
    langchain = next(c for c in contenders if isinstance(c, Langchain))
    lc_cpu = per_run(langchain, runs, rounds, "cpu_us")
    figures: dict[str, Any] = {}
    lines: list[tuple[str, ...]] = []
    for contender in contenders:
        cpu = per_run(contender, runs, rounds, "cpu_us")
        ratios = [c / lc for c, lc in zip(cpu, lc_cpu, strict=True)]
        wal = per_run(contender, runs, rounds, "wal_bytes")
        own = bare = None
        if contender.samples[0]["own_wal_bytes"] is not None:
            own = per_run(contender, runs, rounds, "own_wal_bytes")
            bare = per_run(contender, runs, rounds, "own_wal_bare")
        wall = per_run(contender, runs, rounds, "wall_us")
        figures[contender.name] = {
            "cpu_us": cpu,
            "ratio_to_langchain": ratios,
            "wal_bytes": wal,
            "own_wal_bytes": own,
            "own_wal_without_fpi": bare,
            "wall_us": wall,
        }
        lines.append(
            (
                contender.name,
                spread(cpu),
                f"{statistics.median(ratios):.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]",
                spread(wal),
                spread(own) if own else "-",
                spread(bare) if bare else "-",
                spread(wall),
            )
        )
    text = table(
        lines,
        (
            "contender",
            "backend CPU µs/turn",
            "/ langchain",
            "WAL B/turn (LSN)",
            "own-DB WAL B/turn",
            "without FPIs",
            "wall µs/turn",
        ),
    )
    return text, figures


def pairs_report(contenders: list[Contender], plan: Plan) -> tuple[str, dict[str, Any]]:
    """Each change's saving: per round, the difference of two contenders' µs per turn;
    the median over a run's rounds; the median and spread over runs."""
    by_name = {c.name: c for c in contenders}
    found: dict[str, list[float]] = {}
    for label, more, less in PAIRS:
        if more not in by_name or less not in by_name:
            continue
        cpu = {
            name: {(s["run"], s["round"]): s["cpu_us"] for s in by_name[name].samples}
            for name in (more, less)
        }
        found[f"{label}: {more} - {less}"] = [
            statistics.median(cpu[more][key] - cpu[less][key] for key in cpu[more] if key[0] == run)
            for run in range(plan.runs)
        ]
    lines: list[tuple[str, ...]] = [(label, spread(values)) for label, values in found.items()]
    return table(lines, ("change: contender - contender", "backend CPU µs/turn")), found


def records_report(contenders: list[Contender]) -> tuple[str, dict[str, Any]]:
    """WAL records per turn (counts, bytes) by kind, over every measured batch."""
    found: dict[str, dict[str, tuple[float, float]]] = {}
    for contender in contenders:
        turns = sum(s["turns"] for s in contender.samples)
        kinds: Counter[str] = Counter()
        sizes: Counter[str] = Counter()
        for sample in contender.samples:
            kinds.update(sample["kinds"])
            sizes.update(sample["sizes"])
        found[contender.name] = {
            kind: (kinds[kind] / turns, sizes[kind] / turns) for kind in sorted(kinds)
        }
    every = sorted({kind for kinds in found.values() for kind in kinds})
    if not every:
        return "(no pg_waldump: WAL records not read)", found
    header = ("record", *(c.name for c in contenders))
    lines = [
        (
            kind,
            *(
                f"{found[c.name][kind][0]:.2f} ({found[c.name][kind][1]:,.0f} B)"
                if kind in found[c.name]
                else "-"
                for c in contenders
            ),
        )
        for kind in every
    ]
    return table(lines, header), found


# -- main -----------------------------------------------------------------------------------------


LIBRARY, V7, PLAIN = "today (library)", "today (v7 replay)", "today (v7, no timeouts)"
NO_FK, NO_CHECKS, NEITHER = "a no FK", "b no CHECKs", "c no FK/CHECKs"
ONE_CHECK = "b1 the 5 CHECKs as 1"
ONE, ONE_BARE, FLOOR_NAME, LANGCHAIN = "d one statement", "e d, no FK/CHECKs", "floor", "langchain"
ONE_NO_FK = "f d, no FK"
BY_USER = "g sessions: 1.0's index by user"
BY_UPDATE = "h listing index on updated_at"
BY_CREATION = "i listing index on created_at"

#: What one change saves, as the difference of two contenders in the same round.
PAIRS = (
    ("FK", V7, NO_FK),
    ("FK, without the CHECKs", NO_CHECKS, NEITHER),
    ("CHECKs", V7, NO_CHECKS),
    ("CHECKs, without the FK", NO_FK, NEITHER),
    ("CHECKs as one constraint", V7, ONE_CHECK),
    ("the one CHECK", ONE_CHECK, NO_CHECKS),
    ("FK + CHECKs", V7, NEITHER),
    ("wrapper (v7 vs one statement)", V7, ONE),
    ("wrapper, without FK/CHECKs", NEITHER, ONE_BARE),
    ("FK + CHECKs, one statement", ONE, ONE_BARE),
    ("FK, one statement", ONE, ONE_NO_FK),
    ("wrapper + FK", V7, ONE_NO_FK),
    ("all three", V7, ONE_BARE),
    ("the library's client (vs its statement)", LIBRARY, V7),
    ("the library's timeouts", V7, PLAIN),
    ("listing index on updated_at (no HOT update)", BY_UPDATE, BY_USER),
    ("listing index on created_at", BY_CREATION, BY_USER),
)


def contenders_for(names: dict[str, str]) -> list[Contender]:
    every = [
        Library(LIBRARY, names.get("today", "")),
        Replay(V7, names.get("v7", "")),
        PlainReplay(PLAIN, names.get("v7plain", "")),
        Replay(NO_FK, names.get("a", "")),
        Replay(NO_CHECKS, names.get("b", "")),
        Replay(ONE_CHECK, names.get("b1", "")),
        Replay(NEITHER, names.get("c", "")),
        OneStatement(ONE, names.get("d", "")),
        OneStatement(ONE_BARE, names.get("e", "")),
        OneStatement(ONE_NO_FK, names.get("f", "")),
        Replay(BY_USER, names.get("g", "")),
        Replay(BY_UPDATE, names.get("h", "")),
        Replay(BY_CREATION, names.get("i", "")),
        Floor(FLOOR_NAME, names.get("floor", "")),
        Langchain(LANGCHAIN, names.get("langchain", "")),
    ]
    return [contender for contender in every if contender.database]


def wanted(only: str | None) -> set[str] | None:
    """The database suffixes ``--only`` asks for (None: all), by the first word of the
    contenders' names ("today": the library's two replays too)."""
    if only is None:
        return None
    words = {word.strip() for word in only.split(",") if word.strip()}
    return words | {"v7", "v7plain"} if "today" in words else words


async def prepare(scratch: Scratch, plan: Plan) -> dict[str, str]:
    today, langchain = await seed(scratch, plan.sessions)
    await with_the_key(scratch, today)
    names = {"today": today, "langchain": langchain}
    keep = wanted(plan.only)
    for suffix, fk, checks in (
        ("v7", True, "keep"),
        ("v7plain", True, "keep"),
        ("a", False, "keep"),
        ("b", True, "drop"),
        ("b1", True, "merge"),
        ("c", False, "drop"),
        ("d", True, "keep"),
        ("e", False, "drop"),
        ("f", False, "keep"),
    ):
        if keep is None or suffix in keep or (suffix == "a" and keep & LISTING_INDEXES.keys()):
            names[suffix] = await variant(scratch, today, suffix, fk, checks)
    for suffix in LISTING_INDEXES:
        if keep is None or suffix in keep:
            names[suffix] = await listing_variant(scratch, names["a"], suffix)
    if keep is not None and "a" not in keep:
        names.pop("a", None)  # made as the listing variants' template only
    if keep is None or "floor" in keep:
        names["floor"] = await floor_database(scratch, today)
    return names


#: What a database holds of the benchmark's sessions: every message column, and every
#: column of the session rows but the server's clock (updated_at; expires_at is NULL).
WRITTEN = {
    "messages": "SELECT md5(string_agg(m::text, '|' ORDER BY session_id, seq)) FROM {} AS m",
    "sessions": (
        "SELECT md5(string_agg((session_id, user_id, version, message_count, content_hash,"
        " turn_count, first_activity_at, last_activity_at, expires_at)::text, '|'"
        " ORDER BY session_id)) FROM sessions"
    ),
}


async def same_writes(server: URL, contenders: list[Contender]) -> str:
    """Whether every ctxstore contender wrote the same rows as the library did."""
    found: dict[str, dict[str, str]] = {}
    for contender in contenders:
        if isinstance(contender, Langchain):
            continue
        connection = await asyncpg.connect(dsn(server, contender.database))
        try:
            table_ = "bare_messages" if isinstance(contender, Floor) else "messages"
            found[contender.name] = {
                "messages": await connection.fetchval(WRITTEN["messages"].format(table_))
            }
            if not isinstance(contender, Floor):
                found[contender.name]["sessions"] = await connection.fetchval(WRITTEN["sessions"])
        finally:
            await connection.close()
    reference = found[LIBRARY]
    differing = [
        f"{name} ({what})"
        for name, written in found.items()
        for what, digest in written.items()
        if digest != reference[what]
    ]
    if differing:
        return f"rows written differ from the library's: {', '.join(differing)}"
    return (
        "rows written: every ctxstore contender's messages (the floor's too) and session rows "
        "are the library's, byte for byte (updated_at aside)"
    )


SESSIONS_UPDATES = (
    "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'sessions'"
)


async def sessions_updates(server: URL, contenders: list[Contender]) -> dict[str, tuple[int, int]]:
    """Each ctxstore contender's ``sessions`` updates so far, and how many were HOT (a
    backend reports its counters at the latest when it exits: read after closing)."""
    found = {}
    for contender in contenders:
        if isinstance(contender, Langchain | Floor):
            continue
        connection = await asyncpg.connect(dsn(server, contender.database))
        try:
            updates, hot = await connection.fetchrow(SESSIONS_UPDATES)
        finally:
            await connection.close()
        found[contender.name] = (int(updates), int(hot))
    return found


def hot_report(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]
) -> tuple[str, dict[str, Any]]:
    found: dict[str, Any] = {}
    for name, (updates, hot) in after.items():
        done = updates - before[name][0]
        found[name] = {
            "updates": done,
            "hot_share": (hot - before[name][1]) / done if done else None,
        }
    lines = [
        (
            name,
            f"{f['updates']:,}",
            "-" if f["hot_share"] is None else f"{100 * f['hot_share']:.0f} %",
        )
        for name, f in found.items()
    ]
    return table(lines, ("contender", "sessions updates", "HOT")), found


@contextlib.asynccontextmanager
async def opened(server: URL, contenders: list[Contender]) -> AsyncIterator[asyncpg.Connection]:
    probe = await asyncpg.connect(dsn(server))
    oids = dict(await probe.fetch("SELECT datname, oid FROM pg_database"))
    try:
        for contender in contenders:
            contender.oid = int(oids[contender.database])
            await contender.open(server)
        yield probe
    finally:
        for contender in contenders:
            with contextlib.suppress(Exception):
                await contender.close()
        await probe.close()


async def run(server: URL, plan: Plan) -> dict[str, Any]:
    scratch = Scratch(server, f"ctxstore_acost_{uuid.uuid4().hex[:6]}")
    try:
        started = time.perf_counter()
        names = await prepare(scratch, plan)
        print(
            f"seeded {plan.sessions} sessions of {SEEDED} in {time.perf_counter() - started:.0f} s"
        )
        contenders = contenders_for(names)
        updates_before = await sessions_updates(server, contenders)
        async with opened(server, contenders) as probe:
            wal = await find_wal(probe)
            if wal.waldump is None or wal.directory is None:
                print("pg_waldump or pg_wal not readable: WAL by LSN only")
            library = next(c for c in contenders if isinstance(c, Library))
            for number in range(plan.runs):
                print(f"run {number + 1}/{plan.runs}")
                batches = batches_for(library.storage, plan, number)
                await one_run(probe, wal, contenders, batches, number)
            figures_text, figures = report(contenders, plan)
            pairs_text, pairs = pairs_report(contenders, plan)
            same = await same_writes(server, contenders)
            records_text, records = records_report(contenders)
            today = contenders[0].samples[-1]["range"]
            stats = wal.stats(*today)
        print(
            f"\n{plan.runs} runs x {plan.rounds} rounds x {plan.turns} turns of 2 messages "
            f"(sessions of {SEEDED}); medians [min-max over runs]\n"
        )
        print(figures_text)
        print("\nWhat each change saves (paired in each round)\n")
        print(pairs_text)
        print(f"\n{same}")
        print("\nWAL records per turn: count (bytes), own database, every measured batch\n")
        print(records_text)
        if stats:
            print(
                f"\npg_waldump --stats=record, today (library)'s last batch ({plan.turns} turns):"
            )
            print(stats)
        await asyncio.sleep(1.5)  # the closed backends' counters reach the statistics
        hot_text, hot = hot_report(updates_before, await sessions_updates(server, contenders))
        print("\nsessions updates over the run (warm-up included), HOT share\n")
        print(hot_text)
        return {
            "hot": hot,
            "plan": plan.__dict__,
            "figures": figures,
            "pairs": pairs,
            "records": records,
            "same_writes": same,
            "samples": {
                c.name: [
                    {key: s[key] for key in ("run", "round", "cpu_us", "wal_bytes", "wall_us")}
                    for s in c.samples
                ]
                for c in contenders
            },
        }
    finally:
        await scratch.drop()


# -- the client's side: instructions (callgrind) and CPU, one contender a process -----------------

#: The contenders of ``--client``, each driven in a process of its own.
DRIVEN = ("library", "replay", "floor", "langchain")
#: Turns each driver sends before it measures.
WARM = 3
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def drive(which: str, server_dsn: str, database: str, count: int) -> None:
    """``count`` turns of ``which`` on session 0 of ``database`` (a fresh copy: the
    session holds SEEDED messages), after its context read and WARM turns (not
    measured), everything a turn needs built before.  Prints the loop's client CPU
    (process_time), backend CPU and wall time a turn, as JSON.  The loop runs inside
    ``operator.call`` (its C function ``_operator_call``, called nowhere else), so
    callgrind counts it alone: ``--collect-atstart=no --toggle-collect=_operator_call``."""
    server = normalize_url(server_dsn)
    session = session_id(0)
    every = conversation(0, SEEDED // 2 + WARM + count)[SEEDED // 2 :]
    batch = Batch(session, 0, every, [])
    contender: Contender
    if which == "library":
        contender = Library(which, database)
        ours = [turn.messages() for turn in every]
    elif which == "langchain":
        contender = Langchain(which, database)
        theirs = [turn.langchain() for turn in every]
    else:
        contender = (Replay if which == "replay" else Floor)(which, database)
        batch.values = append_values(PostgresStorage.from_url(server), session, every)

    async def turns(first: int, end: int) -> None:
        if isinstance(contender, Library):
            append = contender.storage.append
            for index in range(first, end):
                await append(session, ours[index])
        elif isinstance(contender, Langchain):
            add = contender.current.aadd_messages
            for index in range(first, end):
                await add(theirs[index])
        else:
            for index in range(first, end):
                await contender.turn(batch, index)

    async def before() -> list[int]:
        await contender.open(server)
        await contender.before(batch)
        await turns(0, WARM)  # first uses (the tokenizer's tables, prepared statements)
        assert contender.pids is not None
        return list(contender.pids())

    loop = asyncio.new_event_loop()
    try:
        pids = loop.run_until_complete(before())
        cpu = cpu_of(pids)
        client, started = time.process_time(), time.perf_counter()
        operator.call(loop.run_until_complete, turns(WARM, WARM + count))
        client, wall = time.process_time() - client, time.perf_counter() - started
        backend = sum(ns - cpu.get(pid, 0) for pid, ns in cpu_of(pids).items())
        loop.run_until_complete(contender.close())
    finally:
        loop.close()
    figures = {"client_us": client * 1e6, "backend_us": backend / 1000, "wall_us": wall * 1e6}
    print(json.dumps({key: value / count for key, value in figures.items()}))


def driven(which: str, server: URL, database: str, count: int, grind: bool) -> Any:
    """One driver process (under callgrind with ``grind``): the instructions of its loop
    a turn, or its figures a turn."""
    command = [sys.executable, "-m", "benchmarks.bench_append_costs", "--drive", which,
               dsn(server), database, str(count)]  # fmt: skip
    if grind:
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                   "--collect-atstart=no", "--toggle-collect=_operator_call", *command]  # fmt: skip
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    ran = subprocess.run(
        command, capture_output=True, text=True, env=environment, timeout=3600, check=False
    )
    found = _REFS.search(ran.stderr) if grind else None
    if ran.returncode != 0 or (grind and found is None):
        raise SystemExit(f"the {which} driver failed:\n{ran.stdout}\n{ran.stderr[-3000:]}")
    if found is not None:
        return int(found.group(1).replace(",", "")) / count
    return json.loads(ran.stdout.strip().splitlines()[-1])


async def client_costs(server: URL, grind: int, repeats: int, turns: int) -> None:
    """Client instructions a turn (callgrind, ``grind`` turns counted after the warm-up)
    and, without valgrind, client CPU, backend CPU and wall time a turn (``repeats`` runs
    of ``turns`` turns each, interleaved, medians), each contender on a fresh copy of its
    database."""
    scratch = Scratch(server, f"ctxstore_ccost_{uuid.uuid4().hex[:6]}")
    try:
        today, langchain = await seed(scratch, 1)
        bases = {"library": today, "replay": today, "langchain": langchain}
        bases["floor"] = await floor_database(scratch, today)
        copies = 0

        async def fresh(which: str) -> str:
            nonlocal copies
            copies += 1
            return await scratch.create(scratch.name(f"c{copies}"), template=bases[which])

        instructions: dict[str, float] = {}
        if shutil.which("valgrind") is None:
            print("valgrind not found: no instruction counts")
        else:
            for which in DRIVEN:
                database = await fresh(which)
                instructions[which] = await asyncio.to_thread(
                    driven, which, server, database, grind, True
                )
                print(f"  {which}: {instructions[which] / 1000:,.0f}k instructions a turn")
        samples: dict[str, list[dict[str, float]]] = {which: [] for which in DRIVEN}
        for _ in range(repeats):
            for which in random.sample(DRIVEN, len(DRIVEN)):
                database = await fresh(which)
                samples[which].append(
                    await asyncio.to_thread(driven, which, server, database, turns, False)
                )
        await scratch.drop()
        scratch.made.clear()
    finally:
        await scratch.drop()

    def median(which: str, key: str) -> float:
        return statistics.median(sample[key] for sample in samples[which])

    def cpu(which: str) -> float:
        return median(which, "client_us") + median(which, "backend_us")

    lines: list[tuple[str, ...]] = []
    for which in DRIVEN:
        refs = instructions.get(which)
        lines.append(
            (
                which,
                f"{refs / 1000:,.0f}k" if refs is not None else "-",
                f"{refs / instructions['langchain']:.2f}x" if refs is not None else "-",
                f"{median(which, 'client_us'):,.0f}",
                f"{median(which, 'backend_us'):,.0f}",
                f"{cpu(which):,.0f}",
                f"{cpu(which) / cpu('langchain'):.2f}x",
                f"{median(which, 'wall_us'):,.0f}",
                f"{median(which, 'wall_us') / median('langchain', 'wall_us'):.2f}x",
            )
        )
    print(
        f"\na turn (2 messages onto a session of {SEEDED}): client instructions "
        f"(callgrind, {grind} turns); CPU and wall: medians of {repeats} runs of {turns} turns"
    )
    header = ("contender", "client instr", "/ langchain", "client CPU µs", "backend CPU µs",
              "CPU sum µs", "/ langchain", "wall µs", "/ langchain")  # fmt: skip
    print(table(lines, header))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=12, help="measured rounds per run")
    parser.add_argument("--turns", type=int, default=25, help="turns per batch")
    parser.add_argument("--warmup", type=int, default=5, help="turns of the warm-up batch")
    parser.add_argument("--json", type=Path, help="also write the figures there")
    parser.add_argument(
        "--only", help="comma-separated contenders (first words: a,g,h,i) beside the library"
    )
    parser.add_argument(
        "--client", action="store_true",
        help="instead: client instructions (callgrind) and client+backend CPU of a turn",
    )  # fmt: skip
    parser.add_argument("--grind", type=int, default=50, help="--client: turns under callgrind")
    parser.add_argument("--repeats", type=int, default=5, help="--client: timed runs each")
    parser.add_argument("--client-turns", type=int, default=300, help="--client: turns a run")
    args = parser.parse_args()
    if args.client:
        with bench_server() as server:
            asyncio.run(client_costs(server, args.grind, args.repeats, args.client_turns))
        return
    plan = Plan(args.runs, args.rounds, args.turns, args.warmup, args.only)
    with bench_server() as server:
        found = asyncio.run(run(server, plan))
    if args.json is not None:
        args.json.write_text(json.dumps(found, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:
        which, server_dsn, database, count = sys.argv[2:6]
        drive(which, server_dsn, database, int(count))
    else:
        main()
