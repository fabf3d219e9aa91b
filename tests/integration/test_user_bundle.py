"""Everything held about a user, exported as one bundle and imported elsewhere (issue 51).

The round trip is exact: export from one PostgreSQL database, import into another, export
again: the same bytes, digests included, with a sealed session (encryption at rest on
both sides, each with its own master key), a Go-written timestamp (nanoseconds, an offset)
and rows in old formats (exported upgraded).  A damaged bundle (a digest, a truncation, a
count) and an import onto a user or session already there write nothing, and leave what
was there as it was.  MemoryStorage round-trips the same way; RedisStorage refuses.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import FallbackStorage, MemoryStorage, Message, PostgresStorage, RedisStorage
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import BundleError, ConflictError, NotSupportedError
from ctxstore.storage.bundle import canonical
from ctxstore.storage.store import VersionedStorage
from tests.integration.test_legacy_formats import GO_ROWS, OLD_STATE, insert_legacy_session, sql

USER = "patient-7"
#: What a Go client's time.Time marshals: nanoseconds, and the offset it was taken in.
GO_TIME = "2024-03-05T09:15:42.123456789+08:00"


async def export(storage: VersionedStorage, user_id: str = USER) -> bytes:
    return b"".join([chunk async for chunk in storage.export_user(user_id, batch_size=2)])


async def fill(storage: VersionedStorage) -> None:
    """A user with a profile and two sessions, one with summaries and a state history."""
    await storage.save_profile(USER, {"age": 41, "known_limitations": ["左膝旧伤"]})
    await storage.save(
        "knee",
        [
            Message(role="user", content="我膝盖有下坠感", turn_id="t1", timestamp=GO_TIME),
            Message(role="assistant", content="持续多久了？", turn_id="t1", metadata={"k": 1.5}),
            Message(role="user", content="一周", turn_id="t2", name="p"),
        ],
        user_id=USER,
    )
    await storage.append("knee", [Message(role="assistant", content="疼吗？")], user_id=USER)
    await storage.save_summary("knee", "膝盖下坠感一周", covers_until=1)
    await storage.save_summary("knee", "膝盖下坠感一周，不疼", covers_until=3)
    await storage.save_state("knee", {"stage": "intake", "chief_complaint": "膝盖下坠感"})
    await storage.save_state("knee", {"stage": "triage", "pain_level": 3, "future": "kept"})
    await storage.save("empty", [], user_id=USER)
    await storage.save("someone-else", [Message(role="user", content="hi")], user_id="other")


@pytest.fixture
def other_database_url(pg_server: Any, template_database: str) -> Iterator[URL]:
    """A second database at head: where the bundle is imported."""
    name = pg_server.new_name("db")
    url = pg_server.create(name, template=template_database)
    try:
        yield url
    finally:
        pg_server.drop(name)


def sealed_store(url: URL) -> PostgresStorage:
    """A store sealing every row, under a master key of its own (reading the rows written
    before encryption was on, as the legacy ones)."""
    keyring = Keyring({"k": os.urandom(32)})
    return PostgresStorage.from_url(url, encryption=Encryption(keyring, accept_plaintext=True))


@pytest.fixture
async def source(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with sealed_store(database_url) as storage:
        yield storage


@pytest.fixture
async def target(other_database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with sealed_store(other_database_url) as storage:
        yield storage


async def add_legacy(source: PostgresStorage, database_url: URL) -> None:
    """A session of the user in rows older code wrote, and a state in format 1."""
    await insert_legacy_session(source, "legacy", GO_ROWS, version=3)
    await sql(source, "UPDATE sessions SET user_id = :u WHERE session_id = 'legacy'", u=USER)
    async with PostgresStorage.from_url(database_url) as plain:
        await plain.save_state("legacy", OLD_STATE)
    await sql(
        source,
        "UPDATE consultation_states SET format_version = 1, document = CAST(:d AS jsonb) "
        "WHERE session_id = 'legacy'",
        d=json.dumps(OLD_STATE),
    )


async def count_rows(url: URL, table: str) -> int:
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    connection = await asyncpg.connect(dsn)
    try:
        return int(await connection.fetchval(f"SELECT count(*) FROM {table}"))
    finally:
        await connection.close()


async def test_the_round_trip_between_two_databases_is_byte_for_byte(
    source: PostgresStorage, target: PostgresStorage, database_url: URL, other_database_url: URL
) -> None:
    await fill(source)
    await add_legacy(source, database_url)
    bundle = await export(source)

    receipt = await target.import_user([bundle[:100], bundle[100:]])  # chunks of any size
    assert (receipt.sessions, receipt.messages, receipt.summaries) == (3, 8, 2)
    assert (receipt.states, receipt.state_changes, receipt.profile) == (2, 3, True)
    assert await export(target) == bundle

    knee = await target.load("knee")
    assert knee[0].timestamp is not None and knee[0].timestamp.isoformat().endswith("789+08:00")
    legacy = await target.load("legacy")
    assert [m.role for m in legacy] == ["user", "assistant", "user", "assistant"]  # upgraded
    assert await target.version("legacy") == 3  # versions as exported
    assert await count_rows(other_database_url, "messages WHERE key_id IS NULL") == 0  # sealed
    assert not await target.exists("someone-else")  # another user's session stays behind
    # The content hash is what a save leaves: the next append continues from version 2.
    assert await target.append("knee", [Message(role="user", content="不疼")]) == 3


async def test_a_bundle_is_the_same_from_postgresql_and_memory(source: PostgresStorage) -> None:
    await fill(source)
    bundle = await export(source)
    memory = MemoryStorage()
    await memory.import_user([bundle])
    assert await export(memory) == bundle
    again = MemoryStorage()
    await again.import_user([await export(memory)])
    assert await export(again) == bundle


async def test_a_user_without_anything_exports_an_empty_bundle(source: PostgresStorage) -> None:
    lines = (await export(source, "nobody")).splitlines()
    assert json.loads(lines[0])["user_id"] == "nobody"
    assert json.loads(lines[-1])["counts"] == dict.fromkeys(
        ["message", "profile", "session", "state", "state_change", "summary"], 0
    )


def damaged(bundle: bytes, how: str) -> bytes:
    lines = bundle.splitlines(keepends=True)
    if how == "digest":  # one character of a message changed, the line still valid JSON
        at = next(i for i, line in enumerate(lines) if b"\xe4\xb8\x80\xe5\x91\xa8" in line)
        lines[at] = lines[at].replace("一周".encode(), "两周".encode())
    elif how == "truncated":
        return b"".join(lines[:-1])
    elif how == "cut mid-line":
        return bundle[:-10]
    elif how == "count":  # a message dropped, the manifest rewritten to match the bytes
        at = next(i for i, line in enumerate(lines) if b'"kind":"message"' in line)
        del lines[at]
    elif how == "manifest":
        manifest = json.loads(lines[-1])
        manifest["counts"]["summary"] += 1
        lines[-1] = canonical(manifest)
    return b"".join(lines)


@pytest.mark.parametrize("how", ["digest", "truncated", "cut mid-line", "count", "manifest"])
async def test_a_damaged_bundle_writes_nothing(
    source: PostgresStorage, target: PostgresStorage, other_database_url: URL, how: str
) -> None:
    await fill(source)
    bundle = damaged(await export(source), how)
    await target.save("there-before", [Message(role="user", content="keep")], user_id="x")
    with pytest.raises(BundleError):
        await target.import_user([bundle])
    for table in ("summaries", "consultation_states", "user_profiles"):
        assert await count_rows(other_database_url, table) == 0
    assert await count_rows(other_database_url, "sessions") == 1
    assert [m.content for m in await target.load("there-before")] == ["keep"]
    assert await export(target) == await export(MemoryStorage())  # nothing of the user


async def test_import_onto_an_existing_user_or_session_is_refused(
    source: PostgresStorage, target: PostgresStorage
) -> None:
    await fill(source)
    bundle = await export(source)
    await target.save_profile(USER, {"age": 9})
    with pytest.raises(ConflictError, match="user 'patient-7' already exists"):
        await target.import_user([bundle])
    profile = await target.load_profile(USER)
    assert profile is not None and (profile.value.age, profile.version) == (9, 1)
    assert not await target.exists("knee")

    await target.delete_profile(USER)
    await target.save("knee", [Message(role="user", content="mine")], user_id="another")
    with pytest.raises(ConflictError, match="session 'knee' already exists"):
        await target.import_user([bundle])
    assert [m.content for m in await target.load("knee")] == ["mine"]
    assert await target.load_profile(USER) is None


async def test_memory_refuses_the_same_way() -> None:
    source, target = MemoryStorage(), MemoryStorage()
    await fill(source)
    bundle = await export(source)
    await target.save("knee", [], user_id="another")
    with pytest.raises(ConflictError):
        await target.import_user([bundle])
    with pytest.raises(BundleError):
        await MemoryStorage().import_user([damaged(bundle, "digest")])
    assert await target.load_profile(USER) is None


@pytest.mark.parametrize(
    ("bundle", "says"),
    [
        (b"", "empty"),
        (b'{"kind":"header"}\n', "not a ctxstore user bundle"),
        (b"not json\n", "not a line of JSON"),
        (
            b'{"format":"ctxstore.user-bundle","format_version":2,"kind":"header","user_id":"u"}\n',
            "format version 2",
        ),
    ],
)
async def test_what_is_not_a_bundle_is_refused_clearly(bundle: bytes, says: str) -> None:
    with pytest.raises(BundleError, match=says):
        await MemoryStorage().import_user([bundle])


async def test_redis_can_neither_export_nor_import(redis_storage: RedisStorage) -> None:
    with pytest.raises(NotSupportedError) as refused:
        await export(redis_storage)
    assert refused.value.operation == "export_user"
    memory = MemoryStorage()
    await fill(memory)
    with pytest.raises(NotSupportedError) as refused:
        await redis_storage.import_user([await export(memory)])
    assert refused.value.operation == "import_user"


async def test_a_healthy_fallback_exports_and_imports_on_its_primary(
    database_url: URL, other_database_url: URL
) -> None:
    memory = MemoryStorage()
    await fill(memory)
    bundle = await export(memory)
    async with FallbackStorage(PostgresStorage.from_url(database_url), MemoryStorage()) as fallback:
        await fallback.import_user([bundle])
        assert await export(fallback) == bundle
        assert await export(fallback.primary) == bundle
