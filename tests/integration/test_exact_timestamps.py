"""Every instant Go can marshal, years 0001-9999 and any offset, round-trips exactly through
PostgreSQL and Redis, or is refused on write; never +-infinity, whatever the process's TZ.

Rows an earlier ctxstore stored as +-infinity load as CorruptDataError naming the row, and
``upgrade-data`` gives them back the instant they stood for.  (The Go program's own view
of all this is tests/interop/test_go_interop.py.)
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import URL

from ctxstore import ContextBuilder, Message, PostgresStorage
from ctxstore.commands.redis_import import import_redis
from ctxstore.commands.upgrade import upgrade_data
from ctxstore.errors import CorruptDataError, InvalidMessageError
from ctxstore.formats.messages import message_from_document
from ctxstore.storage.redis import RedisStorage
from ctxstore.timestamps import go_timestamp, nanoseconds_of

EDGES = [
    "0001-01-01T00:00:00Z",  # Go's zero time
    "0001-01-01T08:00:00+08:00",  # time.Time{}.In(Beijing)
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T18:59:59.999999-05:00",
    "2026-11-29T08:15:02.123+08:00",
    "2026-11-29T00:15:02-12:00",
    "2026-11-30T10:15:02+14:00",
    "2026-11-29T05:30:02+05:45",
    "1900-01-01T00:00:00+08:05",  # what Go writes for Shanghai's +08:05:43 of 1900
    "2026-03-29T01:30:00.000001-09:30",
    "2026-06-01T12:00:00+23:59",  # more than PostgreSQL takes as an offset (15:59)
    "2026-06-01T12:00:00-23:59",
    # Go's nanoseconds (issue 26): what json.Marshal(time.Now()) writes on Linux
    "9999-12-31T23:59:59.999999999Z",  # Go's last instant
    "2026-01-02T03:04:05.123456789+08:00",
    "0001-01-01T00:00:00.000000001Z",
    "2026-06-01T12:00:00.00000099-23:59",
]


def messages_at(stamps: list[str]) -> list[Message]:
    return [
        Message.parse({"role": "user", "content": f"m{i}", "turn_id": "t", "timestamp": stamp})
        for i, stamp in enumerate(stamps)
    ]


def exactly(messages: list[Message]) -> list[tuple[Any, ...]]:
    return [
        (m.timestamp, m.timestamp.utcoffset() if m.timestamp else None, nanoseconds_of(m.timestamp))
        for m in messages
    ]


@pytest.fixture(params=["UTC", "Asia/Shanghai", "America/New_York"])
def time_zone(request: pytest.FixtureRequest) -> Iterator[str]:
    before = os.environ.get("TZ")
    os.environ["TZ"] = request.param
    time.tzset()
    try:
        yield request.param
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.fixture
async def pg(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        yield storage


async def raw(storage: PostgresStorage, query: str, *args: Any) -> list[Any]:
    async with storage.driver() as driver:
        return list(await driver.fetch(query, *args))


async def test_edge_instants_round_trip_exactly_on_postgres(
    pg: PostgresStorage, database_url: URL, time_zone: str
) -> None:
    written = messages_at(EDGES)
    await pg.save("edges", written)
    for stamp, stored in zip(EDGES, await raw(pg, "SELECT ts::text FROM messages"), strict=True):
        assert "infinity" not in stored[0], stamp
    async with PostgresStorage.from_url(database_url) as fresh:  # nothing remembered
        loaded = await fresh.load("edges")
        assert exactly(loaded) == exactly(written)
        assert [m.timestamp.isoformat() for m in loaded if m.timestamp] == [
            m.timestamp.isoformat() for m in written if m.timestamp
        ]
        assert loaded == written
        # what the Go program wrote is what it reads back, byte for byte
        assert [go_timestamp(m.timestamp) for m in loaded if m.timestamp] == EDGES
        async with fresh.reader("edges") as reader:  # the context builder's reads
            assert exactly(await reader.span(1, len(EDGES))) == exactly(written[1:])
            newest = [stored.message for stored in await reader.newest(len(EDGES), 3)]
            assert exactly(newest) == exactly(written[-3:][::-1])  # newest first
    (activity,) = await raw(
        pg, "SELECT isfinite(first_activity_at) AND isfinite(last_activity_at) FROM sessions"
    )
    assert activity[0]


async def test_edge_instants_round_trip_exactly_on_redis(
    redis_storage: RedisStorage, time_zone: str
) -> None:
    written = messages_at(EDGES)
    await redis_storage.save("edges", written)
    loaded = await redis_storage.load("edges")
    assert exactly(loaded) == exactly(written)
    assert [go_timestamp(m.timestamp) for m in loaded if m.timestamp] == EDGES


async def recent_times(storage: Any, session_id: str) -> list[str]:
    contract = await ContextBuilder(storage).build(session_id, "t-next", "next?", token_budget=8000)
    document = json.loads(contract.to_json())
    return [message["timestamp"] for message in document["context"]["recent_messages"]]


async def test_the_context_contract_carries_the_text_go_wrote(
    pg: PostgresStorage, redis_storage: RedisStorage, database_url: URL
) -> None:
    written = messages_at(EDGES)
    await pg.save("edges", written)
    await redis_storage.save("edges", written)
    async with PostgresStorage.from_url(database_url) as fresh:  # counts read as stored
        assert await recent_times(fresh, "edges") == EDGES
    assert await recent_times(redis_storage, "edges") == EDGES


@pytest.mark.parametrize(
    ("stamp", "problem"),
    [
        (datetime(1900, 1, 1, tzinfo=ZoneInfo("Asia/Shanghai")), "whole number of minutes"),
        (datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=8))), "outside years 1-9999"),
        (datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))), "outside years"),
    ],
    ids=["offset-with-seconds", "before-year-1-in-utc", "after-year-9999-in-utc"],
)
async def test_what_cannot_be_kept_exactly_is_refused_on_write(
    pg: PostgresStorage, stamp: datetime, problem: str
) -> None:
    with pytest.raises(InvalidMessageError, match=problem):
        await pg.save("refused", [Message(role="user", content="x", timestamp=stamp)])
    assert not await pg.exists("refused")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("9999-12-31T23:59:59.9999999991Z", "below the nanosecond"),
        ("2026-01-02T03:04:05.1234567891+08:00", "below the nanosecond"),
        ("0000-12-31T19:00:00-05:00", "year 0 is out of range"),
    ],
)
def test_text_that_would_change_is_refused(text: str, problem: str) -> None:
    with pytest.raises(InvalidMessageError, match=problem):
        Message.parse({"role": "user", "content": "x", "timestamp": text})
    with pytest.raises(CorruptDataError, match=problem):  # read from Redis or an import
        message_from_document({"Role": "user", "Timestamp": text}, session_id="s", position=0)


async def test_a_change_of_offset_alone_is_saved(pg: PostgresStorage, database_url: URL) -> None:
    (beijing,) = messages_at(["2026-01-01T08:00:00+08:00"])
    (utc,) = messages_at(["2026-01-01T00:00:00Z"])
    assert beijing != utc  # the same instant, another timestamp
    await pg.save("offset", [beijing])
    await pg.save("offset", [utc])
    async with PostgresStorage.from_url(database_url) as fresh:
        assert exactly(await fresh.load("offset")) == exactly([utc])


async def put_infinities(pg: PostgresStorage) -> None:
    """What ctxstore wrote before: Go's zero and maximum times as -infinity/infinity."""
    await pg.save("inf", messages_at(EDGES[:4]))
    await raw(
        pg,
        "UPDATE messages SET ts = CASE WHEN ts < 'epoch' THEN '-infinity'::timestamptz "
        "ELSE 'infinity'::timestamptz END WHERE seq < 4",
    )
    await raw(pg, "UPDATE sessions SET first_activity_at = '-infinity'")


async def test_infinite_rows_are_corrupt_data_naming_the_row_then_upgrade_data_repairs_them(
    pg: PostgresStorage, database_url: URL, time_zone: str
) -> None:
    await put_infinities(pg)
    async with PostgresStorage.from_url(database_url) as fresh:
        with pytest.raises(CorruptDataError, match="-infinity") as caught:
            await fresh.load("inf")
        assert (caught.value.session_id, caught.value.position) == ("inf", 0)
        with pytest.raises(CorruptDataError, match="upgrade-data"):
            async with fresh.reader("inf") as reader:
                await reader.span(2, 4)
    async with pg.driver() as driver:
        report = await upgrade_data(driver, show=False)
        assert (report.timestamps_repaired, report.failed) == (4, []), report.summary()
        again = await upgrade_data(driver, show=False)
        assert again.timestamps_repaired == 0
    async with PostgresStorage.from_url(database_url) as fresh:
        assert exactly(await fresh.load("inf")) == exactly(messages_at(EDGES[:4]))
        assert await fresh.version("inf") == 1  # given back, not rewritten
    (first,) = await raw(pg, "SELECT first_activity_at FROM sessions")
    assert first[0] == datetime(1, 1, 1, 0, 0, 0, 1, tzinfo=UTC)


async def test_an_infinity_no_offset_can_place_stays_failed(pg: PostgresStorage) -> None:
    await put_infinities(pg)
    await raw(pg, "UPDATE messages SET ts_offset = -3600 WHERE seq = 0")  # year 0
    async with pg.driver() as driver:
        report = await upgrade_data(driver, show=False)
    assert report.timestamps_repaired == 3
    assert len(report.failed) == 1 and "message 0" in report.failed[0]
    with pytest.raises(CorruptDataError):
        await pg.load("inf")


async def test_import_redis_of_go_edge_times_then_nothing_to_do(
    redis_client: Any, redis_prefix: str, pg: PostgresStorage
) -> None:
    go = [
        {"Role": "user", "Content": "hi", "TurnID": "t1", "Timestamp": stamp, "Metadata": None}
        for stamp in EDGES
    ]
    await redis_client.set(f"{redis_prefix}:go", json.dumps(go))
    await redis_client.set(f"{redis_prefix}:nil", "null")
    first = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    assert (first.imported, first.failed) == (2, []), first.summary()
    loaded = await pg.load("go")
    assert [(m.turn_id, m.metadata) for m in loaded] == [("t1", {})] * len(EDGES)
    assert exactly(loaded) == exactly(messages_at(EDGES))
    assert await pg.load("nil") == [] and await pg.exists("nil")
    second = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    assert (second.unchanged, second.imported) == (2, 0), second.summary()
    assert await pg.version("go") == 1
