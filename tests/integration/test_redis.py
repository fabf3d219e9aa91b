"""RedisStorage in the Go layout, and import-redis into PostgreSQL (real Redis).

The storage contract itself runs on Redis in tests/conformance/test_redis.py; this module
covers what is Redis's own: the key layout shared with the Go service, and importing from
it.  Raw keys are written and read with a plain client, as the Go service would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import Limits, Message, PostgresStorage
from ctxstore.commands.redis_import import import_redis
from ctxstore.errors import (
    ConflictError,
    CorruptDataError,
    StorageError,
    StorageUnavailableError,
    TooManyMessagesError,
)
from ctxstore.storage.redis import RedisStorage
from tests.conftest import drop_keys

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.redis


async def test_go_service_values_load_upgraded(
    redis_storage: RedisStorage, redis_client: Any
) -> None:
    client = redis_client
    go_value = [
        {"Role": "user", "Content": "你好"},
        {"Role": "Assistant", "Content": "你好！有什么可以帮助你的？", "Name": "bot"},
    ]
    await client.set(redis_storage.key("go"), json.dumps(go_value, ensure_ascii=False), ex=60)
    loaded = await redis_storage.load("go")
    assert [(m.role, m.content, m.name) for m in loaded] == [
        ("user", "你好", None),
        ("assistant", "你好！有什么可以帮助你的？", "bot"),
    ]
    assert await redis_storage.exists("go")
    assert await redis_storage.version("go") == 1  # written by Go: no version key yet
    assert await redis_storage.save("go", loaded, expected_version=1) == 2


async def test_saved_values_keep_the_original_layout(
    redis_storage: RedisStorage, redis_client: Any
) -> None:
    await redis_storage.save("s", [Message(role="user", content="我膝盖有下坠感", turn_id="t1")])
    client = redis_client
    raw = await client.get(f"{redis_storage.prefix}:s")
    (document,) = json.loads(raw)
    assert document["role"] == "user" and document["content"] == "我膝盖有下坠感"
    assert document["format_version"] == 2
    assert 0 < await client.ttl(f"{redis_storage.prefix}:s") <= 600
    keys = [key async for key in client.scan_iter(match=f"{redis_storage.prefix}:*")]
    assert keys == [f"{redis_storage.prefix}:s".encode()]  # the version key is outside


async def test_versions_are_checked_atomically(redis_storage: RedisStorage) -> None:
    assert await redis_storage.save("v", [], expected_version=0) == 1
    with pytest.raises(ConflictError) as caught:
        await redis_storage.save("v", [], expected_version=0)
    assert caught.value.current_version == 1


@pytest.mark.parametrize(
    "raw",
    [b"not json", b'{"role": "user"}', b'[{"role": "user", "content": 5}]', b"[1, 2]"],
)
async def test_unreadable_values_raise_corrupt_data(
    redis_storage: RedisStorage, raw: bytes, redis_client: Any
) -> None:
    await redis_client.set(redis_storage.key("bad"), raw)
    with pytest.raises(CorruptDataError) as caught:
        await redis_storage.load("bad")
    assert caught.value.session_id == "bad"


async def test_appends_keep_one_json_array(redis_storage: RedisStorage, redis_client: Any) -> None:
    """The Go service reads what appends leave, even after it wrote the session itself."""
    client = redis_client
    go_value = '[ {"Role": "user", "Content": "你好"} ]\n'
    await client.set(redis_storage.key("go"), go_value)
    assert await redis_storage.append("go", [Message(role="assistant", content="您好")]) == 2
    assert await redis_storage.append("go", []) == 3
    await redis_storage.append("go", [Message(role="user", content="膝盖疼", turn_id="t2")])
    documents = json.loads(await client.get(redis_storage.key("go")))
    assert [document.get("content", document.get("Content")) for document in documents] == [
        "你好",
        "您好",
        "膝盖疼",
    ]
    assert [m.content for m in await redis_storage.load("go")] == ["你好", "您好", "膝盖疼"]
    await redis_storage.append("fresh", [])
    assert json.loads(await client.get(redis_storage.key("fresh"))) == []
    await redis_storage.append("fresh", [Message(role="user", content="x")])
    assert len(json.loads(await client.get(redis_storage.key("fresh")))) == 1


async def test_the_message_limit_holds_for_appends(
    redis_url: str, redis_prefix: str, redis_client: Any
) -> None:
    async with RedisStorage.from_url(
        redis_url, prefix=redis_prefix, limits=Limits(max_messages=3)
    ) as storage:
        two = [Message(role="user", content="a"), Message(role="assistant", content="b")]
        await storage.append("s", two)
        with pytest.raises(TooManyMessagesError):
            await storage.append("s", two, expected_version=99)  # the count comes first
        assert (await storage.load("s"), await storage.version("s")) == (two, 1)
        # Rewritten behind the store's back (as the Go service does): counted afresh.
        await redis_client.set(storage.key("s"), json.dumps([{"Role": "user", "Content": "c"}]))
        assert await storage.append("s", two) == 2
        with pytest.raises(TooManyMessagesError):
            await storage.append("s", two[:1])


async def test_every_key_of_a_session_expires_with_it_but_the_profile(
    redis_storage: RedisStorage, redis_client: Any
) -> None:
    client = redis_client
    await redis_storage.save_profile("u", {"age": 30})
    await redis_storage.save("s", [Message(role="user", content="x")], user_id="u")
    await redis_storage.save_summary("s", "summary", covers_until=0)
    await redis_storage.save_state("s", {"stage": "collecting_details"})
    for key in redis_storage.session_keys("s"):
        assert 0 < await client.pttl(key) <= 600_000, key
    assert await client.ttl(redis_storage.profile_key("u")) == -1
    await redis_storage.delete("s")
    assert await client.exists(*redis_storage.session_keys("s")) == 0
    assert await client.exists(redis_storage.profile_key("u")) == 1


async def test_redis_errors_become_ctxstore_errors(
    redis_storage: RedisStorage, redis_client: Any
) -> None:
    await redis_client.hset(redis_storage.key("hash"), mapping={"x": "1"})
    with pytest.raises(StorageError):
        await redis_storage.load("hash")
    async with RedisStorage.from_url("redis://127.0.0.1:1/0") as unreachable:
        with pytest.raises(StorageUnavailableError):
            await unreachable.load("s")


@pytest.fixture
async def go_redis(redis_url: str, redis_client: Any) -> AsyncIterator[RedisStorage]:
    """A Redis prefix filled the way the Go service (and older Python code) left it."""
    prefix = f"ctxstore-import-{uuid.uuid4().hex[:8]}:session"
    storage = RedisStorage.from_url(redis_url, prefix=prefix)
    client = redis_client
    for index in range(40):
        value: list[dict[str, Any]] = [
            {"Role": "user", "Content": f"第{index}个会话：我膝盖有下坠感"},
            {"Role": "assistant", "Content": "是否伴随疼痛或肿胀？"},
        ]
        if index % 3 == 1:
            value = [{"role": "user", "content": f"format one {index}", "name": None}]
        await client.set(f"{prefix}:go-{index:03d}", json.dumps(value, ensure_ascii=False))
    await client.set(f"{prefix}:broken", b"{not json")
    await client.hset(f"{prefix}:a-hash", mapping={"x": "1"})
    try:
        yield storage
    finally:
        await storage.close()
        await drop_keys(redis_url, prefix)


async def table_dump(storage: PostgresStorage) -> list[tuple[Any, ...]]:
    async with storage.engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT s.session_id, s.version, m.seq, m.role, m.content, m.metadata "
                "FROM sessions s JOIN messages m USING (session_id) ORDER BY 1, 3"
            )
        )
        return [tuple(row) for row in rows]


async def test_import_twice_equals_import_once(
    go_redis: RedisStorage, pg_storage: PostgresStorage, redis_client: Any
) -> None:
    client = redis_client
    first = await import_redis(client, pg_storage, prefix=go_redis.prefix, show=False)
    assert (first.imported, first.appended, first.unchanged, first.diverged) == (40, 0, 0, [])
    assert len(first.failed) == 1 and "broken" in first.failed[0]
    assert len(first.skipped) == 1 and "a-hash" in first.skipped[0]
    once = await table_dump(pg_storage)
    second = await import_redis(client, pg_storage, prefix=go_redis.prefix, show=False)
    assert (second.imported, second.appended, second.unchanged) == (0, 0, 40)
    assert second.diverged == []
    assert await table_dump(pg_storage) == once
    loaded = await pg_storage.load("go-000")
    assert [(m.role, m.content) for m in loaded] == [
        ("user", "第0个会话：我膝盖有下坠感"),
        ("assistant", "是否伴随疼痛或肿胀？"),
    ]
    print(f"import-redis: {first.summary().splitlines()[0]}")


async def test_import_redis_command(
    go_redis: RedisStorage, redis_url: str, database_url: URL
) -> None:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}
    command = [
        sys.executable,
        "-m",
        "ctxstore.cli",
        "import-redis",
        "--redis-url",
        redis_url,
        "--prefix",
        go_redis.prefix,
    ]
    first = await asyncio.to_thread(
        subprocess.run, command, cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert first.returncode == 1  # one session failed, and the command says so
    assert "40 imported, 0 appended, 0 unchanged, 0 diverged, 1 skipped, 1 failed" in first.stdout
    assert "importing sessions [" in first.stderr  # the progress bar
    second = await asyncio.to_thread(
        subprocess.run, command, cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert "0 imported, 0 appended, 40 unchanged, 0 diverged" in second.stdout
