"""Every ctxstore command against the distributed database, run as a user runs it."""

from __future__ import annotations

import base64
import json
import os
import uuid
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.analytics import FREQUENCY_REPORTS, REPORTS, run_report
from ctxstore.commands.months import first_unpublished_month
from ctxstore.db.engine import create_engine
from ctxstore.encryption import Encryption, Keyring
from tests.citus.conftest import ctxstore, query


def plain(url: URL) -> str:
    return url.render_as_string(hide_password=False)


async def test_schema_commands_and_settings(database_url: URL) -> None:
    url = plain(database_url)
    head = ctxstore("db", "current", "--database-url", url).strip()
    upgraded = ctxstore("db", "upgrade", "--database-url", url)
    assert f"already at revision {head}: nothing to apply" in upgraded
    assert "nothing to do" in ctxstore("db", "distribute", "--database-url", url)
    assert "owner" in ctxstore("db", "roles", "--database-url", url)
    ctxstore("db", "min-group-size", "3", "--database-url", url)
    assert ctxstore("db", "min-group-size", "--database-url", url).strip() == "3"
    ctxstore("db", "min-group-size", "5", "--database-url", url)


async def test_seed_analytics_and_erase(database_url: URL) -> None:
    url = plain(database_url)
    assert "30" in ctxstore("seed-sample", "--sessions", "30", "--database-url", url)
    [(sessions, users)] = await query(
        database_url, "SELECT count(*), count(DISTINCT user_id) FROM sessions"
    )
    assert sessions == 30
    published = await published_months(database_url)
    engine = create_engine(database_url)
    try:  # every report across every shard, through the analytics views
        reports = {name: await run_report(engine, name) for name in REPORTS}
    finally:
        await engine.dispose()
    assert reports["overview"].rows and reports["funnel"].rows  # the rest may be suppressed
    for name in FREQUENCY_REPORTS:  # each month's values counted, shown or withheld
        months = reports[name].periods
        assert months is not None
        assert {row[0]: row[1] for row in months.rows} == published, name
    overview = json.loads(
        ctxstore("analytics", "overview", "--format", "json", "--database-url", url)
    )
    assert overview == json.loads(reports["overview"].render("json"))
    [(user,)] = await query(database_url, "SELECT min(user_id) FROM sessions")
    [(owned,)] = await query(database_url, "SELECT count(*) FROM sessions WHERE user_id = $1", user)
    ctxstore("erase-user", user, "--database-url", url)
    assert await query(database_url, "SELECT 1 FROM sessions WHERE user_id = $1", user) == []
    assert await query(database_url, "SELECT 1 FROM user_profiles WHERE user_id = $1", user) == []
    [(left,)] = await query(database_url, "SELECT count(*) FROM sessions")
    assert left == 30 - owned and users > 1


async def published_months(database_url: URL) -> dict[str, int]:
    """``analytics refresh`` of the sample (spread over the last 56 days, so a month at
    least is due): 'YYYY-MM' -> consultations of each month it published."""
    refreshed = ctxstore("analytics", "refresh", "--database-url", plain(database_url))
    assert refreshed.startswith("published "), refreshed
    due = await query(
        database_url,
        "SELECT to_char(date_trunc('month', first_activity_at AT TIME ZONE 'UTC'), 'YYYY-MM'), "
        "count(*) FROM sessions WHERE first_activity_at < $1 GROUP BY 1",
        datetime.combine(first_unpublished_month(datetime.now(UTC).date()), time(), UTC),
    )
    assert due, refreshed
    return {month: count for month, count in due}


async def test_purge_expired_and_retention(database_url: URL) -> None:
    url = plain(database_url)
    async with PostgresStorage.from_url(database_url, ttl=timedelta(hours=1)) as storage:
        for index in range(6):
            await storage.save(f"p{index}", [Message(role="user", content=str(index))])
    # two expired an hour ago, two idle for ten days, two alive
    await query(
        database_url,
        "UPDATE sessions SET expires_at = now() - interval '1 hour' "
        "WHERE session_id IN ('p0', 'p1')",
    )
    await query(
        database_url,
        "UPDATE sessions SET updated_at = now() - interval '10 days' "
        "WHERE session_id IN ('p2', 'p3')",
    )
    assert "purged 2 expired sessions" in ctxstore(
        "purge-expired", "--batch-size", "1", "--database-url", url
    )
    ctxstore("purge-expired", "--older-than-days", "5", "--database-url", url)
    left = await query(database_url, "SELECT session_id FROM sessions ORDER BY 1")
    assert [row[0] for row in left] == ["p4", "p5"]
    [(orphans,)] = await query(
        database_url, "SELECT count(*) FROM messages WHERE session_id < 'p4'"
    )
    assert orphans == 0  # the cascade ran on the shards


async def test_rotate_keys_and_reencrypt(database_url: URL) -> None:
    old, new = os.urandom(32), os.urandom(32)
    keyring = f"old:{base64.b64encode(old).decode()}"
    async with PostgresStorage.from_url(
        database_url, encryption=Encryption(Keyring({"old": old}))
    ) as storage:
        await storage.save_profile("u-rotate", {"age": 40})
        for index in range(3):
            await storage.save(
                f"r{index}", [Message(role="user", content="秘密")], user_id="u-rotate"
            )
        await storage.save("r-own", [Message(role="user", content="own key")])
    rotated = f"new:{base64.b64encode(new).decode()},{keyring}"
    url = plain(database_url)
    ctxstore("rotate-keys", "--database-url", url, env={"CTXSTORE_MASTER_KEYS": rotated})
    masters = await query(database_url, "SELECT DISTINCT master_key_id FROM data_keys")
    assert [row[0] for row in masters] == ["new"]
    ctxstore(
        "rotate-keys", "--reencrypt", "--database-url", url, env={"CTXSTORE_MASTER_KEYS": rotated}
    )
    [(retired,)] = await query(
        database_url, "SELECT count(*) FROM data_keys WHERE retired_at IS NOT NULL"
    )
    assert retired == 0  # every old key replaced, then deleted
    async with PostgresStorage.from_url(
        database_url, encryption=Encryption(Keyring({"new": new}))
    ) as storage:
        assert [m.content for m in await storage.load("r1")] == ["秘密"]
        assert [m.content for m in await storage.load("r-own")] == ["own key"]
        profile = await storage.load_profile("u-rotate")
        assert profile is not None and profile.value.age == 40


async def test_upgrade_data_rewrites_legacy_rows(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("legacy", [Message(role="user", content="old row")])
    await query(database_url, "UPDATE messages SET format_version = 1 WHERE session_id = 'legacy'")
    out = ctxstore("upgrade-data", "--database-url", plain(database_url))
    assert "1" in out, out
    [(version,)] = await query(
        database_url, "SELECT format_version FROM messages WHERE session_id = 'legacy'"
    )
    assert version != 1


async def test_import_redis(database_url: URL, redis_url: str) -> None:
    import redis.asyncio as redis_asyncio  # noqa: PLC0415

    prefix = f"ctxstore-test-{uuid.uuid4().hex[:12]}:session"
    client = redis_asyncio.from_url(redis_url)
    try:
        await client.set(f"{prefix}:go-1", '[{"Role": "user", "Content": "from go"}]')
        ctxstore(
            "import-redis", "--redis-url", redis_url, "--prefix", prefix,
            "--database-url", plain(database_url),
        )  # fmt: skip
    finally:
        await client.delete(f"{prefix}:go-1")
        await client.aclose()
    async with PostgresStorage.from_url(database_url) as storage:
        assert [m.content for m in await storage.load("go-1")] == ["from go"]


async def test_demo(database_url: URL, tmp_path: Path) -> None:
    ctxstore("demo", "--database-url", plain(database_url), "--data-dir", str(tmp_path))
    [(sessions,)] = await query(database_url, "SELECT count(*) FROM sessions")
    assert sessions >= 1


def test_the_http_service(database_url: URL) -> None:
    httpx = pytest.importorskip("httpx", reason="the http extra is not installed (httpx)")
    live_server = pytest.importorskip(
        "tests.http.live", reason="the http extra is not installed (ctxstore serve)"
    )
    tokens = live_server.Tokens.make()
    live = live_server.LiveServer.on(database_url, tokens).start()
    try:
        headers = tokens.header()
        path = f"{live.base_url}/v1/sessions/over-http/messages"
        body = {"messages": [{"role": "user", "content": "膝盖"}]}
        assert httpx.post(path, json=body, headers=headers, timeout=30).status_code == 201
        assert httpx.post(path, json=body, headers=headers, timeout=30).status_code == 200
        answer = httpx.get(path, headers=headers, timeout=30)
        assert [m["content"] for m in answer.json()["messages"]] == ["膝盖", "膝盖"]
        assert httpx.get(f"{live.base_url}/readyz", headers=headers, timeout=30).status_code == 200
        assert live.terminate() == 0
    finally:
        live.close()
