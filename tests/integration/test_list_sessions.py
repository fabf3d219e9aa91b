"""A user's sessions, listed: ``list_sessions`` and ``iter_sessions`` on every backend.

One contract, ``ListingContract``, subclassed per store that can list (as
tests/conformance/ does for the whole storage contract): MemoryStorage, PostgresStorage
plain and with encryption at rest, and a healthy FallbackStorage (PostgreSQL primary).
Each runs the same pages: newest first, no duplicates nor gaps across pages, the filters,
another user's sessions never listed, sealed summaries opened only when asked, and the
refusals (a cursor that doesn't decode or was made for another user or filter, a limit
out of range).  RedisStorage refuses with NotSupportedError (no index by user), a
degraded FallbackStorage with StorageUnavailableError (only the primary holds every
session).

On PostgreSQL the page query is one scan of ix_sessions_user_id_created_at, in its order,
at a realistic size (rows made by generate_series, then ANALYZE): no Sort, no Seq Scan,
and no more index entries read for a page 9,000 sessions deep than for the first.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import FallbackStorage, Limits, MemoryStorage, PostgresStorage, RedisStorage
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import (
    EncryptionKeyError,
    InvalidInputError,
    NotSupportedError,
    StorageUnavailableError,
)
from ctxstore.models import Message, SessionListing
from ctxstore.storage.postgres import sql
from ctxstore.storage.store import VersionedStorage
from tests.conformance.test_fallback import degraded

#: Opens a store (``ttl=`` optional) as an async context manager.
StorageFactory = Callable[..., AbstractAsyncContextManager[Any]]


def turn(text: str) -> list[Message]:
    return [Message(role="user", content=text), Message(role="assistant", content="好的")]


async def create(storage: VersionedStorage, user_id: str, count: int, prefix: str) -> list[str]:
    """``count`` sessions of ``user_id``, one after the other; their ids, oldest first."""
    made = []
    for number in range(count):
        session_id = f"{prefix}-{number:03d}"
        await storage.save(session_id, turn(f"{prefix} {number}"), user_id=user_id)
        made.append(session_id)
    return made


async def walk(storage: VersionedStorage, user_id: str, **options: Any) -> list[list[str]]:
    """Every page of the user's listing, as session ids."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        page = await storage.list_sessions(user_id, cursor=cursor, **options)
        pages.append([item.session_id for item in page.items])
        if page.next_cursor is None:
            return pages
        assert len(pages) < 100, "the cursor never ends"
        cursor = page.next_cursor


def flat(pages: list[list[str]]) -> list[str]:
    return [session_id for page in pages for session_id in page]


def newest_first(made: list[str]) -> list[str]:
    return list(reversed(made))


class ListingContract:
    @pytest.fixture
    def make_storage(self) -> StorageFactory:
        raise NotImplementedError(f"{type(self).__name__} must define make_storage")

    @pytest.fixture
    async def storage(self, make_storage: StorageFactory) -> AsyncIterator[Any]:
        async with make_storage() as storage:
            yield storage

    # -- pages ------------------------------------------------------------------------------

    async def test_pages_show_every_session_once_newest_first(
        self, storage: VersionedStorage
    ) -> None:
        made = await create(storage, "patient", 23, "p")
        pages = await walk(storage, "patient", limit=5)
        assert [len(page) for page in pages] == [5, 5, 5, 5, 3]
        assert flat(pages) == newest_first(made)

    async def test_a_last_full_page_has_no_cursor(self, storage: VersionedStorage) -> None:
        made = await create(storage, "patient", 10, "p")
        assert await walk(storage, "patient", limit=5) == [
            newest_first(made)[:5],
            newest_first(made)[5:],
        ]
        whole = await storage.list_sessions("patient", limit=1000)
        assert [i.session_id for i in whole.items] == newest_first(made)
        assert whole.next_cursor is None

    async def test_iter_sessions_walks_every_page(self, storage: VersionedStorage) -> None:
        made = await create(storage, "patient", 7, "p")
        found = [item.session_id async for item in storage.iter_sessions("patient", page_size=3)]
        assert found == newest_first(made)
        assert [item async for item in storage.iter_sessions("nobody")] == []

    async def test_a_page_is_the_same_whatever_the_limit_before_it(
        self, storage: VersionedStorage
    ) -> None:
        made = await create(storage, "patient", 9, "p")
        first = await storage.list_sessions("patient", limit=2)
        rest = await storage.list_sessions("patient", limit=1000, cursor=first.next_cursor)
        assert [i.session_id for i in rest.items] == newest_first(made)[2:]

    async def test_a_walk_sees_each_session_once_while_others_are_written(
        self, storage: VersionedStorage
    ) -> None:
        """The order is by creation, which no write changes: a session written to between
        two pages keeps its place, one created meanwhile is before the walk's start."""
        made = await create(storage, "patient", 6, "p")
        first = await storage.list_sessions("patient", limit=3)
        await storage.append(made[0], turn("还疼"), user_id="patient")  # the oldest, unseen
        await storage.append(made[4], turn("好些了"), user_id="patient")  # seen already
        await storage.save("p-new", turn("新的"), user_id="patient")
        rest = await storage.list_sessions("patient", limit=3, cursor=first.next_cursor)
        assert [i.session_id for i in [*first.items, *rest.items]] == newest_first(made)
        assert rest.items[-1].message_count == 4
        again = await storage.list_sessions("patient", limit=1)
        assert again.items[0].session_id == "p-new"

    # -- what an item says ------------------------------------------------------------------

    async def test_an_item_says_what_the_session_holds(self, storage: VersionedStorage) -> None:
        await storage.save("plain", turn("膝盖疼"), user_id="patient")
        await storage.save("full", turn("脚踝扭了"), user_id="patient")
        await storage.append("full", turn("肿了"), user_id="patient")
        await storage.save_state("full", {"stage": "triage"})
        await storage.save_summary("full", "脚踝外侧扭伤", covers_until=1)
        await storage.save_summary("full", "脚踝外侧扭伤，肿胀", covers_until=3)
        page = await storage.list_sessions("patient")
        full, plain = page.items
        assert page.next_cursor is None
        assert (full.session_id, full.message_count, full.stage, full.summary_version) == (
            "full",
            4,
            "triage",
            2,
        )
        assert full.summary_text is None  # not asked
        assert (plain.session_id, plain.message_count, plain.stage) == ("plain", 2, None)
        assert (plain.summary_version, plain.summary_text) == (0, None)
        assert full.updated_at > full.created_at > plain.created_at
        assert plain.updated_at >= plain.created_at
        for item in page.items:
            assert item.created_at.utcoffset() == timedelta(0)

        texts = await storage.list_sessions("patient", with_summaries=True)
        assert [(i.session_id, i.summary_text) for i in texts.items] == [
            ("full", "脚踝外侧扭伤，肿胀"),
            ("plain", None),
        ]

    async def test_an_item_is_the_same_model_everywhere(self, storage: VersionedStorage) -> None:
        await storage.save("s", turn("头疼"), user_id="patient")
        page = await storage.list_sessions("patient")
        assert isinstance(page.items[0], SessionListing)
        dumped = json.loads(page.model_dump_json())
        assert set(dumped) == {"items", "next_cursor"}
        assert set(dumped["items"][0]) == {
            "session_id",
            "created_at",
            "updated_at",
            "message_count",
            "stage",
            "summary_version",
            "summary_text",
        }

    # -- whose sessions ------------------------------------------------------------------------

    async def test_another_users_sessions_are_never_listed(self, storage: VersionedStorage) -> None:
        mine, theirs = [], []
        for number in range(6):  # interleaved, so no order alone separates them
            mine += await create(storage, "patient", 1, f"mine{number}")
            theirs += await create(storage, "neighbour", 1, f"theirs{number}")
        await storage.save("anonymous", turn("无名"))  # a session without a user
        assert flat(await walk(storage, "patient", limit=4)) == newest_first(mine)
        assert flat(await walk(storage, "neighbour", limit=4)) == newest_first(theirs)
        nobody = await storage.list_sessions("nobody")
        assert (nobody.items, nobody.next_cursor) == ([], None)

    async def test_a_deleted_or_erased_session_is_gone(self, storage: VersionedStorage) -> None:
        made = await create(storage, "patient", 3, "p")
        await storage.delete(made[1])
        assert flat(await walk(storage, "patient")) == [made[2], made[0]]
        await storage.erase_user("patient")
        assert flat(await walk(storage, "patient")) == []

    async def test_an_expired_session_is_not_listed(self, make_storage: StorageFactory) -> None:
        async with make_storage(ttl=timedelta(seconds=1)) as storage:
            await storage.save("old", turn("早"), user_id="patient")
            await asyncio.sleep(1.3)
            await storage.save("new", turn("晚"), user_id="patient")
            assert flat(await walk(storage, "patient")) == ["new"]

    # -- filters ----------------------------------------------------------------------------------

    async def test_the_stage_filter_pages_too(self, storage: VersionedStorage) -> None:
        made = await create(storage, "patient", 12, "p")
        triage = [session_id for n, session_id in enumerate(made) if n % 3 == 0]
        for session_id in made:
            stage = "triage" if session_id in triage else "advice"
            await storage.save_state(session_id, {"stage": stage})
        await create(storage, "patient", 2, "stateless")
        pages = await walk(storage, "patient", limit=3, stage="triage")
        assert pages == [newest_first(triage)[:3], newest_first(triage)[3:]]
        none = await storage.list_sessions("patient", stage="discharge")
        assert (none.items, none.next_cursor) == ([], None)

    async def test_updated_since_lists_what_was_written_since(
        self, storage: VersionedStorage
    ) -> None:
        made = await create(storage, "patient", 6, "p")
        listed = (await storage.list_sessions("patient")).items
        mark = next(i for i in listed if i.session_id == made[3]).updated_at
        await storage.append(made[0], turn("又疼了"), user_id="patient")
        await storage.save_state(made[1], {"stage": "triage"})  # not a message write
        pages = await walk(storage, "patient", limit=2, updated_since=mark)
        # made[3] itself (at the mark: inclusive), the two after it, and the oldest, written
        # to since; in the listing's order, by creation.
        assert flat(pages) == [made[5], made[4], made[3], made[0]]
        later = await storage.list_sessions(
            "patient", updated_since=datetime.now(UTC) + timedelta(hours=1)
        )
        assert later.items == []

    # -- refusals -----------------------------------------------------------------------------

    async def test_a_cursor_is_for_its_own_user_and_filters(
        self, storage: VersionedStorage
    ) -> None:
        await create(storage, "patient", 4, "p")
        await create(storage, "neighbour", 4, "n")
        since = datetime(2020, 1, 1, tzinfo=UTC)
        cursor = (await storage.list_sessions("patient", limit=2)).next_cursor
        filtered = (
            await storage.list_sessions("patient", limit=2, updated_since=since)
        ).next_cursor
        for user_id, options in (
            ("neighbour", {}),
            ("patient", {"stage": "triage"}),
            ("patient", {"updated_since": since}),
        ):
            with pytest.raises(InvalidInputError, match="another user's listing or other filters"):
                await storage.list_sessions(user_id, cursor=cursor, **options)
        with pytest.raises(InvalidInputError, match="another user's listing or other filters"):
            await storage.list_sessions("patient", cursor=filtered)
        # the same instant in another offset is the same filter
        shifted = since.astimezone(datetime.now().astimezone().tzinfo)
        page = await storage.list_sessions("patient", cursor=filtered, updated_since=shifted)
        assert len(page.items) == 2

    @pytest.mark.parametrize(
        "cursor",
        [
            "",
            "not a cursor!",
            "WzEsIm",  # cut short
            "=" * 8,
            "x" * 3000,
            base64.urlsafe_b64encode(b'{"a": 1}').decode().rstrip("="),
            base64.urlsafe_b64encode(b'[2,"f","2026-01-01T00:00:00+00:00","s"]').decode(),
            base64.urlsafe_b64encode(b'[true,"f","t","s"]').decode(),
            base64.urlsafe_b64encode(b"\xff\xfe").decode(),
            base64.urlsafe_b64encode(b"[" * 1500).decode(),  # deeper than json can nest
            42,
            b"WzEs",
        ],
    )
    async def test_a_cursor_that_doesnt_decode_is_refused_and_changes_nothing(
        self, storage: VersionedStorage, cursor: object
    ) -> None:
        made = await create(storage, "patient", 3, "p")
        with pytest.raises(InvalidInputError, match="cursor"):
            await storage.list_sessions("patient", cursor=cursor)  # type: ignore[arg-type]
        assert flat(await walk(storage, "patient", limit=2)) == newest_first(made)

    async def test_a_tampered_position_is_refused(self, storage: VersionedStorage) -> None:
        await create(storage, "patient", 3, "p")
        cursor = (await storage.list_sessions("patient", limit=1)).next_cursor
        assert cursor is not None
        document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        for position in (["not a time", "p-001"], [document[2], ""], [document[2], "a\x00"]):
            forged = json.dumps([*document[:2], *position]).encode()
            with pytest.raises(InvalidInputError, match="no valid position"):
                await storage.list_sessions(
                    "patient", cursor=base64.urlsafe_b64encode(forged).decode().rstrip("=")
                )

    @pytest.mark.parametrize("limit", [0, -1, 1001, 10**9, True, 2.0, "5", None])
    async def test_a_limit_out_of_range_is_refused(
        self, storage: VersionedStorage, limit: object
    ) -> None:
        with pytest.raises(InvalidInputError, match="limit must be an int from 1 to 1000"):
            await storage.list_sessions("patient", limit=limit)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="page_size must be an int from 1 to 1000"):
            await anext(storage.iter_sessions("patient", page_size=limit))  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "arguments",
        [
            {"user_id": ""},
            {"user_id": None},
            {"user_id": 7},
            {"user_id": "a\x00b"},
            {"user_id": "u" * 256},
            {"stage": ""},
            {"stage": 3},
            {"stage": "a\x00"},
            {"updated_since": datetime(2026, 1, 1)},  # naive
            {"updated_since": "2026-01-01T00:00:00Z"},
            {"with_summaries": "yes"},
            {"with_summaries": 1},
        ],
    )
    async def test_other_bad_arguments_are_refused(
        self, storage: VersionedStorage, arguments: dict[str, Any]
    ) -> None:
        options = {"user_id": "patient", **arguments}
        with pytest.raises(InvalidInputError):
            await storage.list_sessions(**options)


class TestMemory(ListingContract):
    @pytest.fixture
    def make_storage(self) -> StorageFactory:
        @asynccontextmanager
        async def make(*, ttl: timedelta | None = None) -> AsyncIterator[MemoryStorage]:
            async with MemoryStorage(ttl=ttl) as storage:
                yield storage

        return make


class TestPostgres(ListingContract):
    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        @asynccontextmanager
        async def make(*, ttl: timedelta | None = None) -> AsyncIterator[PostgresStorage]:
            async with PostgresStorage.from_url(database_url, ttl=ttl) as storage:
                yield storage

        return make


KEYRING = Keyring({"test": os.urandom(32)})


class TestPostgresEncrypted(ListingContract):
    """Every row sealed: the summaries' text is opened with the store's keys when asked."""

    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        @asynccontextmanager
        async def make(*, ttl: timedelta | None = None) -> AsyncIterator[PostgresStorage]:
            async with PostgresStorage.from_url(
                database_url, ttl=ttl, encryption=Encryption(KEYRING)
            ) as storage:
                yield storage

        return make

    async def test_sealed_sessions_list_without_keys_unless_their_text_is_asked(
        self, storage: PostgresStorage, database_url: URL
    ) -> None:
        await storage.save("sealed", turn("膝盖疼"), user_id="patient")
        await storage.save_state("sealed", {"stage": "triage", "chief_complaint": "膝盖疼"})
        await storage.save_summary("sealed", "右膝疼痛两周", covers_until=1)
        stored = await _fetchval(database_url, "SELECT sealed IS NOT NULL FROM summaries")
        assert stored is True
        async with PostgresStorage.from_url(database_url) as without_keys:
            page = await without_keys.list_sessions("patient")
            [item] = page.items
            assert (item.stage, item.summary_version, item.summary_text) == ("triage", 1, None)
            with pytest.raises(EncryptionKeyError, match="open the storage with encryption"):
                await without_keys.list_sessions("patient", with_summaries=True)
        [opened] = (await storage.list_sessions("patient", with_summaries=True)).items
        assert opened.summary_text == "右膝疼痛两周"


class TestFallbackHealthy(ListingContract):
    @pytest.fixture
    def make_storage(self, database_url: URL) -> StorageFactory:
        @asynccontextmanager
        async def make(*, ttl: timedelta | None = None) -> AsyncIterator[FallbackStorage]:
            primary = PostgresStorage.from_url(database_url, ttl=ttl)
            async with FallbackStorage(primary, MemoryStorage(ttl=ttl)) as storage:
                yield storage
                assert storage.stats.failovers == 0  # the primary listed every page

        return make


# -- where a listing can't be had ------------------------------------------------------------


async def test_redis_says_it_cant_list(redis_storage: RedisStorage) -> None:
    await redis_storage.save("s", turn("头疼"), user_id="patient")
    with pytest.raises(NotSupportedError, match="no index by user") as refused:
        await redis_storage.list_sessions("patient")
    assert (refused.value.operation, refused.value.backend) == ("list_sessions", "RedisStorage")
    assert isinstance(refused.value, NotImplementedError)
    with pytest.raises(NotSupportedError):
        await anext(redis_storage.iter_sessions("patient"))
    with pytest.raises(InvalidInputError):  # the rules first, on every backend
        await redis_storage.list_sessions("patient", limit=0)
    assert await redis_storage.load("s") == turn("头疼")


async def test_a_degraded_fallback_refuses_to_list_and_keeps_serving() -> None:
    """Only the primary holds every session: the listing fails over with it, then is
    refused until the journal is replayed; every other call goes on on the secondary."""
    async with degraded(MemoryStorage(), None, Limits()) as storage:
        with pytest.raises(StorageUnavailableError):
            await storage.list_sessions("patient")
        assert storage.degraded and storage.stats.failovers == 1
        await storage.save("s", turn("头疼"), user_id="patient")
        with pytest.raises(StorageUnavailableError, match="list_sessions needs the primary"):
            await storage.list_sessions("patient")
        with pytest.raises(StorageUnavailableError, match="list_sessions needs the primary"):
            await anext(storage.iter_sessions("patient"))
        assert await storage.load("s") == turn("头疼")


# -- the plan, at a realistic size ----------------------------------------------------------

#: 100,000 sessions of 2,000 users (50 each), and users of 100, 1,000 and 10,000 sessions;
#: a third of the sessions with a state, a quarter with two summaries.
SEED = [
    """INSERT INTO sessions (session_id, user_id, message_count, created_at, updated_at)
       SELECT 'bulk-' || g, 'user-' || (g % 2000), 20,
              timestamptz '2026-01-01' + g * interval '1 minute',
              timestamptz '2026-01-01' + g * interval '1 minute' + interval '5 minutes'
         FROM generate_series(1, 100000) AS g""",
    """INSERT INTO sessions (session_id, user_id, message_count, created_at, updated_at)
       SELECT u.user_id || '-' || g, u.user_id, 20,
              timestamptz '2025-01-01' + g * interval '1 minute',
              timestamptz '2025-01-01' + g * interval '1 minute' + interval '5 minutes'
         FROM (VALUES ('u100', 100), ('u1000', 1000), ('heavy', 10000)) AS u(user_id, n),
              generate_series(1, u.n) AS g""",
    """INSERT INTO consultation_states (session_id, version, stage, document, format_version)
       SELECT session_id, 1, 'triage', '{"stage": "triage"}', 3
         FROM sessions WHERE abs(hashtext(session_id)) % 3 = 0""",
    """INSERT INTO summaries (session_id, summary_version, text, covers_until, format_version)
       SELECT session_id, v, 'summary ' || v, 9, 1
         FROM sessions, generate_series(1, 2) AS v WHERE abs(hashtext(session_id)) % 4 = 0""",
    "ANALYZE",
]
LISTED = "ix_sessions_user_id_created_at"
PAGE = 50


async def _fetchval(url: URL, query: str) -> Any:
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        return await connection.fetchval(query)
    finally:
        await connection.close()


def nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    return [plan, *(node for child in plan.get("Plans", []) for node in nodes(child))]


def literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool | int):
        return str(value).lower()
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    assert isinstance(value, str) and "'" not in value
    return f"'{value}'"


async def explained(
    connection: Any, generic: bool, user_id: str, after: SessionListing | None
) -> list[dict[str, Any]]:
    """The plan nodes of a page of list_sessions (after ``after``), as PostgreSQL plans it
    for a caller passing these values (custom) or for any values (``generic``: what a
    prepared statement's plan may become after five runs)."""
    values = sql.LIST_SESSIONS.arguments(
        {
            "with_summaries": True,
            "user_id": user_id,
            "after_created_at": after.created_at if after else None,
            "after_session_id": after.session_id if after else None,
            "updated_since": None,
            "stage": None,
            "limit": PAGE + 1,
        }
    )
    mode = "force_generic_plan" if generic else "force_custom_plan"
    await connection.execute(f"SET plan_cache_mode = {mode}")
    found = await connection.fetchval(
        "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE listing"
        f"({', '.join(literal(value) for value in values)})"
    )
    return nodes(json.loads(found)[0]["Plan"])


def sessions_scans(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [node for node in found if node.get("Relation Name") == "sessions"]


def assert_one_ordered_scan(found: list[dict[str, Any]]) -> None:
    """The page read in the index's order: no Sort, no Seq Scan, one Index Scan of the
    listing index reading the page and the one item past it, and nothing else."""
    kinds = [node["Node Type"] for node in found]
    assert "Sort" not in kinds and "Seq Scan" not in kinds, kinds
    [scan] = sessions_scans(found)
    assert (scan["Node Type"], scan["Index Name"]) == ("Index Scan", LISTED)
    assert (scan["Actual Rows"], scan.get("Rows Removed by Filter", 0)) == (PAGE + 1, 0)


async def seeded_deep_position(database_url: URL, connection: Any) -> SessionListing:
    """The seed written and analyzed; the item a walk of "heavy" reaches 9,000 down."""
    for statement in SEED:
        await connection.execute(statement)
    await connection.execute(f"PREPARE listing AS {sql.LIST_SESSIONS.sql}")
    async with PostgresStorage.from_url(database_url) as storage:
        walked = storage.iter_sessions("heavy", page_size=1000)
        return [item async for item in walked][9_000]


@pytest.mark.parametrize("generic", [False, True], ids=["custom plan", "generic plan"])
async def test_a_page_is_one_ordered_scan_of_the_listing_index(
    database_url: URL, generic: bool
) -> None:
    connection = await asyncpg.connect(
        database_url.set(drivername="postgresql").render_as_string(False)
    )
    try:
        deep = await seeded_deep_position(database_url, connection)
        for user_id, after in (("u1000", None), ("heavy", None), ("heavy", deep)):
            assert_one_ordered_scan(await explained(connection, generic, user_id, after))
        # A user whose sessions fit on a page or two: the generic plan is the same ordered
        # scan; a custom plan may instead collect them by a bitmap of the same index and
        # sort those few (cheaper by PostgreSQL's estimate, which the sampled statistics
        # move from one ANALYZE to the next; bounded by the user's own count).
        for user_id, count in (("user-7", 50), ("u100", 100)):
            found = await explained(connection, generic, user_id, None)
            kinds = [node["Node Type"] for node in found]
            assert "Seq Scan" not in kinds and ("Sort" not in kinds or not generic), kinds
            [scan] = [node for node in found if node.get("Index Name") == LISTED]
            # The page and one past it in order, or the user's sessions, nobody else's.
            assert scan["Actual Rows"] in (min(count, PAGE + 1), count), (user_id, scan)
    finally:
        await connection.close()
