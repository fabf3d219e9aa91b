"""The cost curve: every operation at 10 million messages against the same at 10,000.

Two databases on one server: ``small`` (1,000 sessions, 10,000 messages) and ``large``
(1,000,000 sessions, 10,000,000 messages), both seeded with COPY (not through the API),
plus the same probe sessions written through the API in each.  Then, interleaved in one
run: append of one turn, load of 100 messages, the 8,000-token window, ``exists``, the
analytics overview and a purge-expired batch.  Target: every per-session operation
within 1.5x of its small-table figure.  Table and index sizes per million messages, a
chart in docs/cost-curve.png and the figures in docs/cost-curve.json.

Set CTXSTORE_COST_SESSIONS to seed fewer sessions (e.g. 100000 for a quick look).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import URL

from benchmarks.bench_context import history
from benchmarks.common import bench_database, interleaved_medians, raw_connection, table
from ctxstore import ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.commands.analytics import run_report
from ctxstore.db import migrations
from ctxstore.db.admin import create_database, drop_database, drop_roles_with_prefix
from ctxstore.db.engine import create_engine
from ctxstore.db.roles import derived_role_names
from ctxstore.models import MESSAGE_FORMAT
from ctxstore.progress import Progress
from ctxstore.settings import load_settings
from ctxstore.storage.postgres import sql
from ctxstore.tokens import TokenCounter

LARGE_SESSIONS = int(os.environ.get("CTXSTORE_COST_SESSIONS", "1000000"))
SMALL_SESSIONS = 1_000
MESSAGES_PER_SESSION = 10
# Every n-th seeded session has expired: enough purge batches at both sizes.
EXPIRED_EVERY = {"small": 3, "large": 20}
PURGE_BATCH = 50
PROBES = 8  # API-written sessions per kind, identical in both databases
TRIALS = 200
SLOW_TRIALS = 5
TARGET = 1.5
DOCS = Path(__file__).resolve().parents[1] / "docs"

SENTENCES = [
    "My knee hurts when I walk down the stairs, mostly in the morning.",
    "How long has this been going on, and did anything start it?",
    "About two weeks. I twisted it a little during a football game.",
    "Is there any swelling, locking, or a feeling that the knee gives way?",
    "膝盖上下楼梯时疼，早上更明显，已经两周了。",
    "Please rate the pain from 0 to 10, and tell me where exactly it hurts.",
    "It is a dull ache on the inner side, maybe a four out of ten.",
    "Rest, ice for fifteen minutes, and avoid stairs for a few days; see a doctor if it swells.",
]


def _seed_lines(
    first: int, count: int, prefix: str, costs: list[int], expired_every: int
) -> tuple[list[bytes], list[bytes]]:
    """COPY text lines for ``count`` sessions and their messages."""
    now = datetime.now(UTC)
    expired = (now - timedelta(days=1)).isoformat()
    stamp = now.isoformat()
    sessions: list[bytes] = []
    messages: list[bytes] = []
    for number in range(first, first + count):
        session_id = f"{prefix}{number:08d}"
        expires = expired if number % expired_every == 0 else "\\N"
        sessions.append(
            f"{session_id}\tuser-{number % 50000}\t{MESSAGES_PER_SESSION}\t"
            f"{MESSAGES_PER_SESSION}\t{stamp}\t{stamp}\t{expires}\t"
            f"{MESSAGES_PER_SESSION // 2}\t{stamp}\t{stamp}\n".encode()
        )
        for seq in range(MESSAGES_PER_SESSION):
            pick = (number + seq) % len(SENTENCES)
            digest = hashlib.sha256(f"{session_id}:{seq}".encode()).hexdigest()
            messages.append(
                f"{session_id}\t{seq}\t{'user' if seq % 2 == 0 else 'assistant'}\t"
                f"{SENTENCES[pick]}\t{stamp}\t\\\\x{digest}\t{costs[pick]}\t"
                f"{MESSAGE_FORMAT}\tcl100k_base\n".encode()
            )
    return sessions, messages


async def _chunks(lines: list[bytes]) -> AsyncIterator[bytes]:
    for start in range(0, len(lines), 5000):
        yield b"".join(lines[start : start + 5000])


async def seed(url: URL, sessions: int, prefix: str, expired_every: int) -> None:
    """``sessions`` sessions of MESSAGES_PER_SESSION messages each, with COPY."""
    counter = TokenCounter()
    costs = [counter.message_cost(Message(role="user", content=s)) or 0 for s in SENTENCES]
    connection = await raw_connection(url)
    progress = Progress(f"seeding {sessions:,} sessions (COPY)", sessions)
    try:
        # Seeded rows are consistent by construction: skip the per-row foreign-key checks.
        await connection.execute("SET session_replication_role = replica")
        step = 20_000
        for first in range(0, sessions, step):
            count = min(step, sessions - first)
            session_lines, message_lines = _seed_lines(first, count, prefix, costs, expired_every)
            await connection.copy_to_table(
                "sessions",
                source=_chunks(session_lines),
                columns=[
                    "session_id",
                    "user_id",
                    "version",
                    "message_count",
                    "created_at",
                    "updated_at",
                    "expires_at",
                    "turn_count",
                    "first_activity_at",
                    "last_activity_at",
                ],
            )
            await connection.copy_to_table(
                "messages",
                source=_chunks(message_lines),
                columns=[
                    "session_id",
                    "seq",
                    "role",
                    "content",
                    "ts",
                    "digest",
                    "token_count",
                    "format_version",
                    "token_encoding",
                ],
            )
            progress.advance(count)
        progress.finish()
        await connection.execute("VACUUM (ANALYZE) sessions")
        await connection.execute("VACUUM (ANALYZE) messages")
    finally:
        await connection.close()


async def probes(storage: PostgresStorage) -> None:
    """The sessions the per-session operations touch, written through the API."""
    for number in range(PROBES):
        await storage.save(f"probe-load-{number}", history(100), user_id="probe")
        await storage.save(f"probe-window-{number}", history(600), user_id="probe")
        await storage.save(f"probe-grow-{number}", history(10), user_id="probe")


async def sizes(url: URL, messages: int) -> list[tuple[str, ...]]:
    connection = await raw_connection(url)
    try:
        found = await connection.fetch(
            "SELECT relname, pg_table_size(oid) AS heap, pg_indexes_size(oid) AS indexes "
            "FROM pg_class WHERE relname IN ('sessions', 'messages') ORDER BY relname"
        )
    finally:
        await connection.close()
    millions = messages / 1_000_000
    return [
        (
            row["relname"],
            f"{row['heap'] / 2**20 / millions:,.0f}",
            f"{row['indexes'] / 2**20 / millions:,.0f}",
            f"{(row['heap'] + row['indexes']) / 2**20 / millions:,.0f}",
        )
        for row in found
    ]


class Target:
    """One database's storage, manager, engine and the ids its operations pick."""

    def __init__(self, url: URL, sessions: int, prefix: str) -> None:
        self.url, self.sessions, self.prefix = url, sessions, prefix
        self.storage = PostgresStorage.from_url(url)
        self.manager = ContextManager(self.storage, strategy=TokenBudget(8000))
        self.engine = create_engine(url)
        self.random = random.Random(7)
        self.turn = 0

    def some_session(self) -> str:
        number = self.random.randrange(self.sessions)
        return f"{self.prefix}{number:08d}"

    async def append(self) -> object:
        self.turn += 1
        turn = [
            Message(role="user", content=f"turn {self.turn}: it still hurts"),
            Message(role="assistant", content="Since when exactly?"),
        ]
        return await self.storage.append(f"probe-grow-{self.turn % PROBES}", turn)

    async def load(self) -> object:
        return await self.storage.load(f"probe-load-{self.random.randrange(PROBES)}")

    async def window(self) -> object:
        return await self.manager.get_context(f"probe-window-{self.random.randrange(PROBES)}")

    async def exists(self) -> object:
        return await self.storage.exists(self.some_session())

    async def overview(self) -> object:
        return await run_report(self.engine, "overview")

    async def purge(self) -> object:
        async with self.storage.driver() as driver:
            return await sql.PURGE_EXPIRED_BATCH.fetch(driver, batch_size=PURGE_BATCH)

    async def close(self) -> None:
        await self.storage.close()
        await self.engine.dispose()


async def measure(small: Target, large: Target) -> dict[str, tuple[float, float]]:
    operations: list[tuple[str, str, int, bool]] = [
        ("append one turn", "append", TRIALS, True),
        ("load 100 messages", "load", TRIALS, True),
        ("8,000-token window", "window", TRIALS, True),
        ("exists", "exists", TRIALS, True),
        (f"purge-expired batch ({PURGE_BATCH})", "purge", SLOW_TRIALS, True),
        ("analytics overview", "overview", SLOW_TRIALS, False),
    ]
    results: dict[str, tuple[float, float]] = {}
    for label, method, trials, _per_session in operations:
        actions: dict[str, Callable[[], Awaitable[object]]] = {
            "small": getattr(small, method),
            "large": getattr(large, method),
        }
        warmup = 1 if trials == SLOW_TRIALS else 5
        medians = await interleaved_medians(actions, trials=trials, warmup=warmup)
        results[label] = (medians["small"], medians["large"])
        print(f"  {label}: {medians['small']:.3f} ms vs {medians['large']:.3f} ms", flush=True)
    return results


def chart(results: dict[str, tuple[float, float]], large_messages: int) -> None:
    try:
        import matplotlib  # noqa: PLC0415

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        print("matplotlib is not installed (make bench installs it): no chart")
        return
    labels = [label for label in results if "analytics" not in label]
    ratios = [results[label][1] / results[label][0] for label in labels]
    figure, axis = plt.subplots(figsize=(8, 4))
    axis.barh(labels, ratios, color=["#2a7" if r <= TARGET else "#c33" for r in ratios])
    axis.axvline(TARGET, color="#555", linestyle="--", label=f"target {TARGET}x")
    axis.axvline(1.0, color="#999", linewidth=0.8)
    axis.set_xlabel(f"time at {large_messages:,} messages / time at 10,000 messages")
    axis.set_title("ctxstore per-session operations: the cost curve")
    axis.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(DOCS / "cost-curve.png", dpi=110)
    print(f"chart: {DOCS / 'cost-curve.png'}")


async def main(large_url: URL) -> None:
    small_url = await create_database(large_url.set(database="postgres"), f"{large_url.database}_s")
    try:
        await asyncio.to_thread(migrations.upgrade, small_url)
        started = time.monotonic()
        await seed(small_url, SMALL_SESSIONS, "s", EXPIRED_EVERY["small"])
        await seed(large_url, LARGE_SESSIONS, "s", EXPIRED_EVERY["large"])
        seeded = time.monotonic() - started
        small = Target(small_url, SMALL_SESSIONS, "s")
        large = Target(large_url, LARGE_SESSIONS, "s")
        try:
            for target in (small, large):
                await probes(target.storage)
            results = await measure(small, large)
        finally:
            await small.close()
            await large.close()
        large_messages = LARGE_SESSIONS * MESSAGES_PER_SESSION
        per_million = await sizes(large_url, large_messages)
    finally:
        server = large_url.set(database="postgres")
        await drop_database(server, small_url.database or "")
        owner = derived_role_names(small_url.database or "", load_settings()).owner
        await drop_roles_with_prefix(server, owner.rsplit("_", 1)[0])
    rows = [
        (
            label,
            f"{small_ms:.3f}",
            f"{large_ms:.3f}",
            f"{large_ms / small_ms:.2f}x",
            "(whole table)"
            if "analytics" in label
            else ("met" if large_ms / small_ms <= TARGET else "MISSED"),
        )
        for label, (small_ms, large_ms) in results.items()
    ]
    print(
        f"\nCost curve: median ms, 10,000 messages vs {large_messages:,} "
        f"({LARGE_SESSIONS:,} sessions); seeding took {seeded:,.0f} s"
    )
    print(table(rows, ("operation", "10k ms", f"{large_messages:,} ms", "ratio", "<= 1.5x")))
    print("\nSizes per million messages (MiB):")
    print(table(per_million, ("table", "heap + TOAST", "indexes", "total")))
    (DOCS / "cost-curve.json").write_text(
        json.dumps(
            {
                "large_sessions": LARGE_SESSIONS,
                "large_messages": large_messages,
                "small_messages": SMALL_SESSIONS * MESSAGES_PER_SESSION,
                "median_ms": {k: {"small": v[0], "large": v[1]} for k, v in results.items()},
                "mib_per_million_messages": {
                    row[0]: {"heap": row[1], "indexes": row[2], "total": row[3]}
                    for row in per_million
                },
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    chart(results, large_messages)


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
