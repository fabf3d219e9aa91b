"""Shared pieces of the benchmark scripts: a server, a fresh database, timing helpers."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import URL, text

from ctxstore.db import migrations
from ctxstore.db.admin import create_database, drop_database, drop_roles_with_prefix
from ctxstore.db.engine import normalize_url, redact
from ctxstore.db.roles import derived_role_names
from ctxstore.progress import Progress
from ctxstore.settings import load_settings

BENCH_URL_ENV = "CTXSTORE_BENCH_DATABASE_URL"


@contextlib.contextmanager
def bench_server() -> Iterator[URL]:
    """$CTXSTORE_BENCH_DATABASE_URL's server, else an embedded one stopped at the end."""
    explicit = os.environ.get(BENCH_URL_ENV)
    if explicit:
        server = normalize_url(explicit)
        print(f"server: {redact(server)} (given)")
        yield server
        return
    from ctxstore.embedded import EmbeddedPostgres  # noqa: PLC0415

    embedded = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="ctxstore-bench-")) / "pgdata")
    server = normalize_url(embedded.start())
    print(f"server: {redact(server)} (embedded)")
    try:
        yield server
    finally:
        embedded.stop()


@contextlib.contextmanager
def scratch_database(server: URL, revision: str | None = "head") -> Iterator[URL]:
    """A new database on ``server`` migrated to ``revision`` (None: left empty), dropped
    at the end with the roles its migrations created."""
    name = f"ctxstore_bench_{uuid.uuid4().hex[:8]}"
    url = asyncio.run(create_database(server, name))
    try:
        if revision is not None:
            migrations.upgrade(url, revision)
        yield url
    finally:
        asyncio.run(drop_database(server, name))
        # Roles are cluster-wide and named after the database (db/roles.py): drop them too.
        owner = derived_role_names(name, load_settings()).owner
        asyncio.run(drop_roles_with_prefix(server, owner.rsplit("_", 1)[0]))


@contextlib.contextmanager
def bench_database() -> Iterator[URL]:
    """A freshly migrated database on $CTXSTORE_BENCH_DATABASE_URL or the embedded server."""
    with bench_server() as server, scratch_database(server) as url:
        yield url


async def seeded_and_analyzed(storage: Any, sessions: int) -> Any:
    """``sessions`` sample consultations written through ``storage`` (a PostgresStorage),
    then ANALYZE, so the reports' plans are those of a table with statistics."""
    from ctxstore.commands.sample import seed_sample  # noqa: PLC0415

    seeded = await seed_sample(storage, sessions, concurrency=16)
    async with storage.engine.connect() as conn:
        await conn.execute(text("ANALYZE"))
        await conn.commit()
    return seeded


async def raw_connection(url: URL) -> asyncpg.Connection:
    """A plain asyncpg connection to the same database (the floor to compare with; the
    host a ``?host=`` names first, as libpq: a scratch server's Unix socket)."""
    host = url.query.get("host") or url.host
    return await asyncpg.connect(
        user=url.username,
        password=url.password,
        host=host if isinstance(host, str) else None,
        port=url.port,
        database=url.database,
    )


async def median_ms(action: Callable[[], Awaitable[object]], trials: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        await action()
    samples = []
    for _ in range(trials):
        started = time.perf_counter()
        await action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


async def interleaved_medians(
    actions: dict[str, Callable[[], Awaitable[object]]],
    trials: int,
    warmup: int = 5,
    *,
    shuffled: bool = False,
    progress: str | None = None,
) -> dict[str, float]:
    """Median milliseconds per action, running the actions round-robin (``shuffled``:
    in a new order every round; ``progress``: a bar with that label over the rounds).

    Interleaving spreads the machine's noise evenly over everything compared, so the
    ratios between the figures hold even when the absolute numbers drift.
    """
    for _ in range(warmup):
        for action in actions.values():
            await action()
    samples: dict[str, list[float]] = {name: [] for name in actions}
    bar = Progress(progress, trials) if progress is not None else None
    names = list(actions)
    for _ in range(trials):
        if shuffled:
            random.shuffle(names)
        for name in names:
            started = time.perf_counter()
            await actions[name]()
            samples[name].append(time.perf_counter() - started)
        if bar is not None:
            bar.advance()
    if bar is not None:
        bar.finish()
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    lines = [" | ".join(str(cell).ljust(width) for cell, width in zip(header, widths, strict=True))]
    lines.append("-+-".join("-" * width for width in widths))
    lines += [
        " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    return "\n".join(lines)


async def raw_pool(url: URL, size: int) -> asyncpg.Pool:
    """A plain asyncpg pool on the same database, with the jsonb codec ctxstore uses."""
    host = url.host or url.query.get("host")

    async def init(conn: asyncpg.Connection) -> None:
        await conn.set_type_codec(
            "jsonb",
            encoder=lambda text: b"\x01" + text.encode(),
            decoder=lambda data: data[1:].decode(),
            schema="pg_catalog",
            format="binary",
        )

    return await asyncpg.create_pool(
        user=url.username,
        password=url.password,
        host=host if isinstance(host, str) else None,
        port=url.port,
        database=url.database,
        min_size=size,
        max_size=size,
        init=init,
    )


def append_values(messages: list[Any]) -> dict[str, Any]:
    """The messages' parameters of ctxstore's append (one ctxstore_message_row_v1 each, no
    journal write ids), for raw_append."""
    from ctxstore.storage.postgres import rows  # noqa: PLC0415
    from ctxstore.storage.rules import DEFAULT_LIMITS  # noqa: PLC0415
    from ctxstore.tokens import TokenCounter  # noqa: PLC0415

    new = rows.batch(messages, TokenCounter(), DEFAULT_LIMITS)
    return {"new_rows": rows.new_message_rows(new), "write_ids": []}


async def raw_append(
    conn: asyncpg.Connection,
    session: str,
    arrays: dict[str, Any],
    fresh_hash: bytes,
    version: int,
) -> int:
    """The statement ctxstore's append ends in (at the expected version), sent by hand:
    the floor for append throughput.  Returns the new version."""
    from ctxstore.storage.postgres import sql  # noqa: PLC0415

    _start, new_version, *_refusal = await sql.APPEND.fetchval(
        conn,
        sid=session,
        expected=version,
        user_id=None,
        ttl=None,
        max_messages=200_000,
        known_count=None,
        known_hash=None,
        added_hash=fresh_hash,
        extended_hash=None,
        turns=1,
        first_ts=None,
        last_ts=None,
        **arrays,
    )
    return int(new_version)
