"""import-redis never destroys newer PostgreSQL data (real Redis and PostgreSQL).

Each test writes Go-layout keys under a prefix of its own, imports them, and checks the
decision per session: new sessions imported, longer Redis lists appended without touching
the stored rows, equal ones unchanged, anything else diverged and left alone (unless
--overwrite), and a concurrent write never overwritten.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.redis_import import (
    Decision,
    Outcome,
    import_redis,
    read_stored,
    write_decision,
)
from ctxstore.errors import ConflictError

REPO = Path(__file__).resolve().parents[2]
CTXSTORE = Path(sys.executable).parent / "ctxstore"
pytestmark = pytest.mark.redis

HELLO = {"Role": "user", "Content": "hello from go"}
REPLY = {"Role": "assistant", "Content": "是否伴随疼痛或肿胀？"}
MORE = {"Role": "user", "Content": "走路的时候比较明显。"}
NEWER = {"role": "assistant", "content": "NEWER reply"}


def as_stored(*go: dict[str, str]) -> list[dict[str, str]]:
    """The Go messages as the Python service would have saved them."""
    return [{"role": item["Role"].lower(), "content": item["Content"]} for item in go]


def new_id(kind: str) -> str:
    return f"{kind}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def pg(module_database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(module_database_url) as storage:
        yield storage


@pytest.fixture
async def other_writer(module_database_url: URL) -> AsyncIterator[PostgresStorage]:
    """The live service: another engine, another process's knowledge."""
    async with PostgresStorage.from_url(module_database_url) as storage:
        yield storage


async def put(
    client: Any, prefix: str, session_id: str, *go: dict[str, str], px: int | None = None
) -> None:
    await client.set(f"{prefix}:{session_id}", json.dumps(list(go), ensure_ascii=False), px=px)


async def message_rows(storage: PostgresStorage, session_id: str) -> list[tuple[Any, ...]]:
    """Each stored row's position, content and physical identity (a rewrite changes them)."""
    async with storage.driver() as driver:
        found = await driver.fetch(
            "SELECT seq, content, xmin::text, ctid::text FROM messages "
            "WHERE session_id = $1 ORDER BY seq",
            session_id,
        )
    return [tuple(row) for row in found]


async def session_row(storage: PostgresStorage, session_id: str) -> tuple[Any, ...]:
    async with storage.driver() as driver:
        row = await driver.fetchrow(
            "SELECT version, xmin::text, expires_at FROM sessions WHERE session_id = $1",
            session_id,
        )
    return tuple(row) if row is not None else ()


async def database_clock(storage: PostgresStorage) -> datetime:
    """The time on the clock the sessions' ``expires_at`` is written by."""
    async with storage.driver() as driver:
        now: datetime = await driver.fetchval("SELECT clock_timestamp()")
    return now


async def assert_expires_with_its_key(
    storage: PostgresStorage, session_id: str, ttl: timedelta, before: datetime, after: datetime
) -> None:
    """The session expires when its Redis key does (``--carry-ttl``): the key was written
    with ``ttl`` after ``before`` and the import was over by ``after`` (both read on the
    database's clock), so its expiry lies between before + ttl and after + ttl, however long
    the import took.  The second of slack below is for the clocks only (Redis's PTTL is
    whole milliseconds; the importer measures the time since its read on its own clock).
    No window of elapsed time is assumed: a busy machine widens the interval instead of
    failing the test."""
    expires_at = (await session_row(storage, session_id))[2]
    assert expires_at is not None, session_id
    slack = timedelta(seconds=1)
    window = (before + ttl - slack, after + ttl)
    assert window[0] <= expires_at <= window[1], (session_id, expires_at, window)


def contents(messages: list[Message]) -> list[str]:
    return [message.content for message in messages]


async def test_newer_postgres_data_is_never_truncated(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    newer, other = new_id("newer"), new_id("other")
    await pg.save(newer, [*as_stored(HELLO), NEWER])
    await put(redis_client, redis_prefix, newer, HELLO)
    # Other messages after a shared start: diverged too, even though Redis has more.
    await pg.save(other, [*as_stored(HELLO), NEWER])
    await put(redis_client, redis_prefix, other, HELLO, REPLY, MORE)
    before = {
        sid: (await message_rows(pg, sid), await session_row(pg, sid)) for sid in (newer, other)
    }
    raw = await redis_client.get(f"{redis_prefix}:{newer}")

    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)

    assert (report.imported, report.appended, report.unchanged) == (0, 0, 0)
    assert sorted(p.session_id for p in report.diverged) == sorted([newer, other])
    assert report.replaced == [] and report.failed == [] and report.skipped == []
    for sid in (newer, other):
        assert await message_rows(pg, sid) == before[sid][0]
        assert await session_row(pg, sid) == before[sid][1]
        assert contents(await pg.load(sid)) == ["hello from go", "NEWER reply"]
    assert await redis_client.get(f"{redis_prefix}:{newer}") == raw
    summary = report.summary()
    assert "0 imported, 0 appended, 0 unchanged, 2 diverged, 0 skipped, 0 failed" in summary
    assert (
        f"diverged: {newer!r}: PostgreSQL holds 2 messages, Redis 1, the first 1 equal" in summary
    )
    assert (
        f"diverged: {other!r}: PostgreSQL holds 2 messages, Redis 3, the first 1 equal" in summary
    )


async def test_a_longer_redis_list_is_appended_and_stored_rows_stay(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    longer, empty, new = new_id("longer"), new_id("empty"), new_id("new")
    await pg.save(longer, as_stored(HELLO))
    await pg.save(empty, [])
    await put(redis_client, redis_prefix, longer, HELLO, REPLY, MORE)
    await put(redis_client, redis_prefix, empty, HELLO)
    await put(redis_client, redis_prefix, new, HELLO, REPLY)
    stored_before = await message_rows(pg, longer)
    version_before = (await session_row(pg, longer))[0]

    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)

    assert (report.imported, report.appended, report.unchanged) == (1, 2, 0)
    assert report.diverged == [] and report.failed == []
    after = await message_rows(pg, longer)
    assert after[:1] == stored_before  # same row version, same place: never rewritten
    assert [row[1] for row in after] == ["hello from go", REPLY["Content"], MORE["Content"]]
    assert (await session_row(pg, longer))[0] == version_before + 1  # one write
    assert contents(await pg.load(empty)) == ["hello from go"]
    assert contents(await pg.load(new)) == ["hello from go", REPLY["Content"]]
    assert (await session_row(pg, new))[2] is None  # no --carry-ttl: no expiry


async def test_a_second_run_changes_nothing(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    ids = {kind: new_id(kind) for kind in ("new", "longer", "diverged", "empty")}
    await pg.save(ids["longer"], as_stored(HELLO))
    await pg.save(ids["diverged"], [*as_stored(HELLO), NEWER])
    await put(redis_client, redis_prefix, ids["new"], HELLO, REPLY)
    await put(redis_client, redis_prefix, ids["longer"], HELLO, REPLY)
    await put(redis_client, redis_prefix, ids["diverged"], HELLO)
    await put(redis_client, redis_prefix, ids["empty"])  # an empty session is one too

    first = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    assert (first.imported, first.appended, len(first.diverged)) == (2, 1, 1)
    once = {sid: (await message_rows(pg, sid), await session_row(pg, sid)) for sid in ids.values()}

    second = await import_redis(redis_client, pg, prefix=redis_prefix, show=False, carry_ttl=True)
    assert (second.imported, second.appended, second.unchanged) == (0, 0, 3)
    assert [p.session_id for p in second.diverged] == [ids["diverged"]]
    assert second.rereads == 0
    for sid in ids.values():  # not a row written: same xmin everywhere
        assert (await message_rows(pg, sid), await session_row(pg, sid)) == once[sid]
    assert await pg.exists(ids["empty"]) and await pg.load(ids["empty"]) == []


async def test_overwrite_replaces_diverged_sessions(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    newer, longer = new_id("newer"), new_id("longer")
    await pg.save(newer, [*as_stored(HELLO), NEWER])
    await pg.save(longer, as_stored(HELLO))
    await put(redis_client, redis_prefix, newer, HELLO)
    await put(redis_client, redis_prefix, longer, HELLO, REPLY)
    version = (await session_row(pg, newer))[0]

    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False, overwrite=True)

    assert (report.imported, report.appended, report.diverged) == (1, 1, [])
    assert [str(p) for p in report.replaced] == [
        f"{newer!r}: PostgreSQL holds 2 messages, Redis 1, the first 1 equal"
    ]
    assert f"replaced: {newer!r}" in report.summary()
    assert contents(await pg.load(newer)) == ["hello from go"]
    assert (await session_row(pg, newer))[0] == version + 1
    assert contents(await pg.load(longer)) == ["hello from go", REPLY["Content"]]


async def test_carry_ttl_sets_expires_at_from_the_keys_pttl(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    new, longer, forever = new_id("new"), new_id("longer"), new_id("forever")
    await pg.save(longer, as_stored(HELLO))
    before = await database_clock(pg)
    await put(redis_client, redis_prefix, new, HELLO, px=3_600_000)
    await put(redis_client, redis_prefix, longer, HELLO, REPLY, px=90_000)
    await put(redis_client, redis_prefix, forever, HELLO)

    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False, carry_ttl=True)
    after = await database_clock(pg)

    assert (report.imported, report.appended) == (2, 1)
    await assert_expires_with_its_key(pg, new, timedelta(hours=1), before, after)
    await assert_expires_with_its_key(pg, longer, timedelta(seconds=90), before, after)
    assert (await session_row(pg, forever))[2] is None  # a key without a TTL never expires


async def test_a_concurrent_write_is_never_overwritten(
    pg: PostgresStorage, other_writer: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    longer, new = new_id("longer"), new_id("new")
    await pg.save(longer, as_stored(HELLO))
    await put(redis_client, redis_prefix, longer, HELLO, REPLY)
    await put(redis_client, redis_prefix, new, HELLO)
    done: set[str] = set()

    async def live_service_writes(session_id: str) -> None:
        # Between the import's read and its write, once per session.
        if session_id not in done:
            done.add(session_id)
            await other_writer.append(session_id, [NEWER])

    report = await import_redis(
        redis_client, pg, prefix=redis_prefix, show=False, after_read=live_service_writes
    )

    assert report.rereads == 2  # each session read again, and decided again
    assert (report.imported, report.appended, report.failed) == (0, 0, [])
    assert sorted(p.session_id for p in report.diverged) == sorted([longer, new])
    assert contents(await pg.load(longer)) == ["hello from go", "NEWER reply"]
    assert contents(await pg.load(new)) == ["NEWER reply"]


async def test_overwrite_decides_again_after_a_concurrent_write(
    pg: PostgresStorage, other_writer: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    newer = new_id("newer")
    await pg.save(newer, [*as_stored(HELLO), NEWER])
    await put(redis_client, redis_prefix, newer, HELLO)
    writes: list[Callable[[], Awaitable[int]]] = [
        lambda: other_writer.append(newer, [{"role": "user", "content": "later"}])
    ]

    async def live_service_writes(session_id: str) -> None:
        if writes:
            await writes.pop()()

    report = await import_redis(
        redis_client,
        pg,
        prefix=redis_prefix,
        show=False,
        overwrite=True,
        after_read=live_service_writes,
    )

    assert report.rereads == 1
    # The replacement was decided on what the concurrent write left, not on the old read.
    assert [(p.postgres_count, p.common) for p in report.replaced] == [(3, 1)]
    assert contents(await pg.load(newer)) == ["hello from go"]


async def test_a_stale_decision_is_refused(
    pg: PostgresStorage, other_writer: PostgresStorage
) -> None:
    sid = new_id("stale")
    await pg.save(sid, as_stored(HELLO))
    incoming = [
        Message(role="user", content="hello from go"),
        Message(role="assistant", content="x"),
    ]
    for overwrite in (False, True):
        stored = await read_stored(pg, sid, len(incoming))
        await other_writer.append(sid, [NEWER])
        decision = Decision(
            Outcome.REPLACED if overwrite else Outcome.APPENDED, stored, stored.count
        )
        with pytest.raises(ConflictError):
            await write_decision(pg, sid, incoming, decision)
    assert contents(await pg.load(sid)) == ["hello from go", "NEWER reply", "NEWER reply"]
    # A session read as missing that exists by the time of the write.
    missing = await read_stored(pg, sid + "-not-yet", 1)
    await other_writer.save(sid + "-not-yet", [NEWER])
    with pytest.raises(ConflictError):
        await write_decision(pg, sid + "-not-yet", incoming, Decision(Outcome.IMPORTED, missing, 0))
    assert contents(await pg.load(sid + "-not-yet")) == ["NEWER reply"]


async def test_the_command(
    redis_client: Any,
    redis_url: str,
    redis_prefix: str,
    module_database_url: URL,
    pg: PostgresStorage,
) -> None:
    newer, new = new_id("newer"), new_id("new")
    await pg.save(newer, [*as_stored(HELLO), NEWER])
    await put(redis_client, redis_prefix, newer, HELLO)
    before = await database_clock(pg)
    await put(redis_client, redis_prefix, new, HELLO, px=600_000)
    env = {
        **os.environ,
        "CTXSTORE_DATABASE_URL": module_database_url.render_as_string(hide_password=False),
    }
    command = [str(CTXSTORE), "import-redis", "--redis-url", redis_url]
    command = [*command, "--prefix", redis_prefix, "--carry-ttl"]

    async def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(
            subprocess.run,
            [*command, *extra],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    first = await run()
    after = await database_clock(pg)
    assert first.returncode == 0, first.stderr
    assert "1 imported, 0 appended, 0 unchanged, 1 diverged, 0 skipped, 0 failed" in first.stdout
    assert f"diverged: {newer!r}" in first.stdout and "--overwrite replaces them" in first.stdout
    assert contents(await pg.load(newer)) == ["hello from go", "NEWER reply"]
    # However long the command took to start and run: when the key expires.
    await assert_expires_with_its_key(pg, new, timedelta(minutes=10), before, after)

    second = await run("--overwrite")
    assert second.returncode == 0, second.stderr
    assert "1 imported, 0 appended, 1 unchanged, 0 diverged" in second.stdout
    assert f"replaced: {newer!r}" in second.stdout
    assert contents(await pg.load(newer)) == ["hello from go"]


async def test_an_expired_session_counts_as_missing(
    pg: PostgresStorage, redis_client: Any, redis_prefix: str
) -> None:
    expired = new_id("expired")
    await pg.save(expired, [*as_stored(HELLO), NEWER])
    async with pg.driver() as driver:
        await driver.execute(
            "UPDATE sessions SET expires_at = now() - interval '1 second' WHERE session_id = $1",
            expired,
        )
    await put(redis_client, redis_prefix, expired, HELLO)

    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)

    assert (report.imported, report.diverged) == (1, [])
    assert contents(await pg.load(expired)) == ["hello from go"]
    assert (await session_row(pg, expired))[0] == 1  # a session afresh


async def test_the_report_accounts_for_every_key_with_its_reason(
    redis_client: Any,
    redis_url: str,
    redis_prefix: str,
    module_database_url: URL,
    pg: PostgresStorage,
    tmp_path: Path,
) -> None:
    """Issue 26: the summary names the first 20 of a kind; an operator could not tell
    which of the other keys failed.  ``--report FILE``: one JSON line per key."""
    new, same, newer = new_id("new"), new_id("same"), new_id("newer")
    await pg.save(same, as_stored(HELLO))
    await pg.save(newer, [*as_stored(HELLO), NEWER])
    for session_id in (new, same, newer):
        await put(redis_client, redis_prefix, session_id, HELLO)
    broken = [new_id("broken") for _ in range(25)]  # more than the summary lists
    for session_id in broken:
        await redis_client.set(f"{redis_prefix}:{session_id}", b"[{not json")
    await redis_client.rpush(f"{redis_prefix}:a-list", "not a session")
    report = tmp_path / "import.jsonl"
    env = {
        **os.environ,
        "CTXSTORE_DATABASE_URL": module_database_url.render_as_string(hide_password=False),
    }
    done = await asyncio.to_thread(
        subprocess.run,
        [str(CTXSTORE), "import-redis", "--redis-url", redis_url, "--prefix", redis_prefix,
         "--report", str(report)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # something failed
    assert "... and 5 more failed (--report FILE lists every key)" in done.stdout
    assert f"every key's outcome: {report} (29 JSON lines)" in done.stdout
    lines = [json.loads(line) for line in report.read_text("utf-8").splitlines()]
    by_key = {line["key"]: line for line in lines}
    assert len(lines) == len(by_key) == 29
    outcome = {key.split(":")[-1]: line["outcome"] for key, line in by_key.items()}
    assert (outcome[new], outcome[same], outcome[newer]) == ("imported", "unchanged", "diverged")
    assert outcome["a-list"] == "skipped"
    assert "a Redis list" in by_key[f"{redis_prefix}:a-list"]["reason"]
    for session_id in broken:
        line = by_key[f"{redis_prefix}:{session_id}"]
        assert (line["outcome"], line["session_id"]) == ("failed", session_id)
        assert line["reason"]  # why, for each one
    diverged = by_key[f"{redis_prefix}:{newer}"]
    assert (diverged["redis_messages"], diverged["postgres_messages"], diverged["common"]) == (
        1,
        2,
        1,
    )
