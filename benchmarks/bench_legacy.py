"""upgrade-data over 10,000 legacy rows, and the import-redis rate, in one run (issue 4).

Redis: $CTXSTORE_BENCH_REDIS_URL or redis://127.0.0.1:6379/0, under a prefix of its own
that is deleted afterwards.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import PostgresStorage
from ctxstore.commands.redis_import import import_redis
from ctxstore.commands.upgrade import upgrade_data

SESSIONS, PER_SESSION = 500, 20  # 10,000 message rows
REDIS_SESSIONS = 5_000


async def seed_legacy_rows(storage: PostgresStorage) -> None:
    async with storage.driver() as driver:
        await driver.executemany(
            "INSERT INTO sessions (session_id, version, message_count, content_hash) "
            "VALUES ($1, 1, $2, '\\x00'::bytea)",
            [(f"legacy-{i:04d}", PER_SESSION) for i in range(SESSIONS)],
        )
        rows = []
        for i in range(SESSIONS):
            for seq in range(PER_SESSION):
                fmt = (i + seq) % 3  # formats 0, 1 and 2 mixed
                role = "User" if fmt == 0 and seq % 2 == 0 else ("user", "assistant")[seq % 2]
                meta = json.dumps({"TraceID": f"{i}-{seq}"}) if fmt == 0 else None
                rows.append((f"legacy-{i:04d}", seq, role, f"第{seq}条：膝盖有下坠感", meta, fmt))
        await driver.executemany(
            "INSERT INTO messages (session_id, seq, role, content, metadata, digest, "
            "format_version) VALUES ($1, $2, $3, $4, $5::jsonb, '\\x00'::bytea, $6)",
            rows,
        )


async def main(url: URL) -> None:
    import redis.asyncio as redis_asyncio  # noqa: PLC0415

    async with PostgresStorage.from_url(url) as storage:
        await seed_legacy_rows(storage)
        async with storage.driver() as driver:
            first = await upgrade_data(driver, show=False)
            second = await upgrade_data(driver, show=False)
        redis_url = os.environ.get("CTXSTORE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
        client = redis_asyncio.from_url(redis_url)
        prefix = f"ctxstore-bench-{uuid.uuid4().hex[:8]}:session"
        try:
            async with client.pipeline(transaction=False) as pipe:
                for i in range(REDIS_SESSIONS):
                    value = [
                        {"Role": "user", "Content": f"第{i}个会话：我膝盖有下坠感"},
                        {"Role": "assistant", "Content": "是否伴随疼痛或肿胀？"},
                        {"Role": "user", "Content": "走路的时候比较明显。"},
                    ]
                    pipe.set(f"{prefix}:s{i:05d}", json.dumps(value, ensure_ascii=False))
                await pipe.execute()
            imported = await import_redis(client, storage, prefix=prefix, show=False)
            again = await import_redis(client, storage, prefix=prefix, show=False)
        finally:
            async for key in client.scan_iter(match=f"{prefix}*", count=1000):
                await client.delete(key)
            await client.aclose()
    print(f"\nupgrade-data over {SESSIONS * PER_SESSION:,} stored rows (formats 0, 1, 2 mixed)")
    print(
        table(
            [
                ("first run", f"{first.rows_upgraded:,}", f"{first.seconds:.2f}"),
                ("second run", f"{second.rows_upgraded:,}", f"{second.seconds:.2f}"),
            ],
            ("run", "rows upgraded", "seconds"),
        )
    )
    print(f"\nimport-redis of {REDIS_SESSIONS:,} Go-format sessions (3 messages each)")
    print(
        table(
            [
                ("first run", f"{imported.imported:,}", f"{imported.seen / imported.seconds:,.0f}"),
                (
                    "second run",
                    f"{again.unchanged:,} unchanged",
                    f"{again.seen / again.seconds:,.0f}",
                ),
            ],
            ("run", "sessions", "sessions/s"),
        )
    )


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
