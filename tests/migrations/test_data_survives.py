"""Data written at an earlier revision survives upgrades (and the way back down)."""

from __future__ import annotations

import asyncio
import hashlib

from sqlalchemy import URL, text

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.engine import create_engine

SEEDED = [
    Message(
        role="user", content="我膝盖有下坠感", turn_id="t1", timestamp="2026-11-29T08:15:02+08:00"
    ),
    Message(role="assistant", content="是否伴随疼痛或肿胀？", turn_id="t1"),
    Message(role="user", content="没有肿胀", metadata={"channel": "app"}),
]


def seed_at_revision_0001(url: URL) -> None:
    """Rows exactly as revision 0001's code wrote them, by plain SQL."""

    async def seed() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as conn:
                digests = [m.digest() for m in SEEDED]
                await conn.execute(
                    text(
                        "INSERT INTO sessions (session_id, user_id, version, message_count, "
                        "content_hash) VALUES ('old', 'u1', 4, 3, :h)"
                    ),
                    {"h": hashlib.sha256(b"".join(digests)).digest()},
                )
                for seq, message in enumerate(SEEDED):
                    stamp = message.timestamp
                    await conn.execute(
                        text(
                            "INSERT INTO messages (session_id, seq, role, content, turn_id, ts, "
                            "ts_offset, name, metadata, digest, format_version) VALUES "
                            "('old', :seq, :role, :content, :turn, :ts, :off, NULL, "
                            "CAST(:meta AS jsonb), :digest, 2)"
                        ),
                        {
                            "seq": seq,
                            "role": message.role,
                            "content": message.content,
                            "turn": message.turn_id,
                            "ts": stamp,
                            "off": int(stamp.utcoffset().total_seconds()) if stamp else None,
                            "meta": '{"channel": "app"}' if message.metadata else None,
                            "digest": message.core_digest(),
                        },
                    )
        finally:
            await engine.dispose()

    asyncio.run(seed())


def test_sessions_seeded_at_0001_survive_the_upgrade_and_back(empty_database_url: URL) -> None:
    migrations.upgrade(empty_database_url, "0001")
    seed_at_revision_0001(empty_database_url)
    migrations.upgrade(empty_database_url, "head")

    async def use_after_upgrade() -> None:
        async with PostgresStorage.from_url(empty_database_url) as storage:
            assert await storage.load("old") == SEEDED
            assert await storage.version("old") == 4
            snapshot = await storage.snapshot("old")
            assert (snapshot.user_id, snapshot.summary_version, snapshot.state_version) == (
                "u1",
                0,
                0,
            )
            extra = Message(role="assistant", content="好的")
            assert await storage.save("old", [*SEEDED, extra]) == 5
            await storage.save_summary("old", "总结", covers_until=3)
        async with PostgresStorage.from_url(empty_database_url) as cold:
            # a process that never saw the hash: the append leaves it NULL for the next save
            assert await cold.append("old", [Message(role="user", content="还有")]) == 6

    asyncio.run(use_after_upgrade())
    migrations.downgrade(empty_database_url, "0001")

    async def use_after_downgrade_and_upgrade() -> None:
        async with PostgresStorage.from_url(empty_database_url) as storage:
            loaded = await storage.load("old")
            assert [m.content for m in loaded][-2:] == ["好的", "还有"]
            edited = [*loaded[:2], Message(role="user", content="改了")]
            await storage.save("old", edited)
            assert await storage.load("old") == edited

    migrations.upgrade(empty_database_url, "head")
    asyncio.run(use_after_downgrade_and_upgrade())
