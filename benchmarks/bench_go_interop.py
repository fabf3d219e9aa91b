"""Go-written sessions against ctxstore-native ones, in one run (issue 14).

The same conversations stored twice in Redis: as the Go service's ``json.Marshal`` of an
untagged struct writes them (``TurnID``, RFC 3339 ``Timestamp``, ``Metadata`` map, a field
ctxstore doesn't have), and as ctxstore writes them.  Reported: parsing, RedisStorage
loads, writing back for the Go struct, and import-redis into PostgreSQL, each as messages
or sessions per second and as the ratio Go / native.

Redis: $CTXSTORE_BENCH_REDIS_URL or redis://127.0.0.1:6379/0, under prefixes of its own
that are deleted afterwards.  PostgreSQL: see benchmarks/common.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from functools import partial

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import Message, PostgresStorage
from ctxstore.commands.redis_import import import_redis
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
from ctxstore.storage.redis import RedisStorage
from ctxstore.storage.redis.values import messages_json, parse_session_value
from ctxstore.timestamps import go_timestamp

SESSIONS, PER_SESSION = 2_000, 10
GO_LAYOUT = GoLayout.of("untagged", fields=("TokenCount",))
ZONES = [timezone(timedelta(hours=8)), UTC, timezone(timedelta(hours=-5, minutes=-30))]


def conversation(index: int) -> list[Message]:
    start = datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=ZONES[index % len(ZONES)])
    return [
        Message(
            role=("user", "assistant")[seq % 2],
            content=f"第{index}个会话，第{seq}条：我膝盖有下坠感 <b>&</b> 😀",
            turn_id=f"turn_{seq // 2 + 1:04d}",
            timestamp=start + timedelta(seconds=7 * seq),
            name="" if seq % 2 == 0 else "bot",
            metadata={"trace": f"{index}-{seq}", "TokenCount": 12 + seq},
        )
        for seq in range(PER_SESSION)
    ]


def as_go_writes(messages: list[Message]) -> str:
    """json.Marshal of []struct{Role, Content, Name, TurnID string; Timestamp time.Time;
    TokenCount int; Metadata map[string]interface{}} (Go escapes <, > and &)."""
    documents = []
    for message in messages:
        metadata = dict(message.metadata)
        count = metadata.pop("TokenCount")
        assert message.timestamp is not None
        documents.append(
            {
                "Role": message.role,
                "Content": message.content,
                "Name": message.name or "",
                "TurnID": message.turn_id,
                "Timestamp": go_timestamp(message.timestamp),
                "TokenCount": count,
                "Metadata": metadata,
            }
        )
    text = json.dumps(documents, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


ROUNDS = 5  # the machine may be shared: the two kinds alternate, best round reported


def best_rate(count: int, action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return count / (time.perf_counter() - started)


async def best_async_rate(count: int, action: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await action()
    return count / (time.perf_counter() - started)


async def main(url: URL) -> None:
    import redis.asyncio as redis_asyncio  # noqa: PLC0415

    sessions = [conversation(index) for index in range(SESSIONS)]
    kinds = {
        "go": ([as_go_writes(messages) for messages in sessions], GO_LAYOUT),
        "native": ([messages_json(messages) for messages in sessions], GO_SERVICE),
    }
    for texts, _ in kinds.values():  # both shapes load as the same messages
        assert parse_session_value(texts[7], "s7") == sessions[7]
    messages = SESSIONS * PER_SESSION
    rates: dict[tuple[str, str], float] = {}

    def keep(kind: str, what: str, rate: float) -> None:
        rates[kind, what] = max(rates.get((kind, what), 0.0), rate)

    for _ in range(ROUNDS):
        for kind, (texts, layout) in kinds.items():
            keep(kind, "parse", best_rate(messages, lambda t=texts: parse_all(t)))
            keep(kind, "write", best_rate(messages, lambda lay=layout: write_all(sessions, lay)))

    redis_url = os.environ.get("CTXSTORE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
    client = redis_asyncio.from_url(redis_url)
    prefixes = {kind: f"ctxstore-bench-{uuid.uuid4().hex[:8]}:session" for kind in kinds}
    try:
        for kind, (texts, _) in kinds.items():
            async with client.pipeline(transaction=False) as pipe:
                for index, text in enumerate(texts):
                    pipe.set(f"{prefixes[kind]}:s{index:05d}", text)
                await pipe.execute()
        async with PostgresStorage.from_url(url) as pg:
            for _ in range(2):
                for kind in kinds:
                    async with RedisStorage(client, prefix=prefixes[kind]) as storage:
                        keep(
                            kind,
                            "load",
                            await best_async_rate(messages, partial(load_all, storage)),
                        )
                    report = await import_redis(client, pg, prefix=prefixes[kind], show=False)
                    assert report.imported == SESSIONS, report.summary()
                    keep(kind, "import", SESSIONS / report.seconds)
                    async with pg.driver() as driver:  # the other kind imports the same ids
                        await driver.execute("DELETE FROM sessions")
    finally:
        for prefix in prefixes.values():
            async for key in client.scan_iter(match=f"{prefix}*", count=1000):
                await client.delete(key)
        await client.aclose()

    print(f"\n{SESSIONS:,} sessions x {PER_SESSION} messages, written by Go and by ctxstore")
    print("(Go: json.Marshal of an untagged struct; written back with its GoLayout)")
    rows = [
        (
            label,
            f"{rates['go', key]:,.0f}",
            f"{rates['native', key]:,.0f}",
            f"{rates['go', key] / rates['native', key]:.2f}",
        )
        for label, key in (
            ("parse (messages/s)", "parse"),
            ("RedisStorage.load (messages/s)", "load"),
            ("import-redis into PostgreSQL (sessions/s)", "import"),
            ("write JSON for the struct (messages/s)", "write"),
        )
    ]
    print(table(rows, ("", "Go", "native", "Go / native")))


def parse_all(texts: list[str]) -> None:
    for index, text in enumerate(texts):
        parse_session_value(text, f"s{index}")


def write_all(sessions: list[list[Message]], layout: GoLayout) -> None:
    for messages in sessions:
        messages_json(messages, layout)


async def load_all(storage: RedisStorage) -> None:
    for index in range(SESSIONS):
        await storage.load(f"s{index:05d}")


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
