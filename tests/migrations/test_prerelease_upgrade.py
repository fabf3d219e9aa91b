"""A database where ctxstore 0.x left it (revision 0026) upgrades to 1.0 with its data,
keys and analytics; an older pre-release one is refused, saying what to run."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import MigrationError
from tests.migrations import prerelease_data as data
from tests.migrations.catalog import databases_differ
from tests.migrations.prerelease import restore_prerelease
from tests.migrations.test_database_roles import run_sql, scalar
from tests.migrations.writers import writes_during

SEALING = Encryption(Keyring({data.MASTER_KEY_ID: data.MASTER_KEY}))


def test_upgraded_from_0026_the_database_is_the_baseline_catalog_for_catalog(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    migrations.upgrade(empty_database_url, "head")
    asyncio.run(restore_prerelease(second_empty_database))
    migrations.upgrade(second_empty_database, "head")
    assert migrations.current(second_empty_database) == migrations.head_revision()
    found = databases_differ(empty_database_url, second_empty_database)
    assert found == []


def test_the_comparison_sees_a_function_the_upgrade_left(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    """Not blind to the upgrade's own work: the restored 0026 database, unconverted,
    differs from the baseline by the retired functions."""
    migrations.upgrade(empty_database_url, "head")
    asyncio.run(restore_prerelease(second_empty_database))
    found = databases_differ(empty_database_url, second_empty_database)
    assert any("ctxstore_append_v5" in line for line in found)


def test_what_0x_wrote_reads_back_and_takes_new_writes_at_1_0(empty_database_url: URL) -> None:
    url = empty_database_url
    asyncio.run(restore_prerelease(url))
    migrations.upgrade(url, "head")
    new_turn = [Message(role="user", content="还是疼", turn_id="t99")]

    async def read_and_write(sealed: bool) -> None:
        async with PostgresStorage.from_url(url, encryption=SEALING if sealed else None) as store:
            for number in range(data.CONSULTATIONS):
                session_id = data.session_id(number, sealed=sealed)
                assert await store.load(session_id) == data.turn(number)
                state = await store.load_state(session_id)
                assert state is not None and state.value.stage == "assessing"
                assert len(await store.state_history(session_id)) == 2
                found = await store.load_summary(session_id)
                assert found is not None and found.text == data.summary(number)
            written = data.session_id(3, sealed=sealed)
            await store.append(written, new_turn, user_id=data.user_id(3))
            assert await store.load(written) == [*data.turn(3), *new_turn]
            applied = await store.applied_writes(data.session_id(1, sealed=sealed), [data.WRITE_ID])
            assert list(applied) == [data.WRITE_ID]

    asyncio.run(read_and_write(sealed=False))
    asyncio.run(read_and_write(sealed=True))

    async def extras() -> None:
        from ctxstore.adapters.langgraph import CtxstoreSaver  # noqa: PLC0415
        from ctxstore.summaries import SummaryQueue  # noqa: PLC0415

        async with PostgresStorage.from_url(url) as store:
            found = await store.load_profile(data.user_id(4))
            assert found is not None and found.value.age == 34
            job = await SummaryQueue(store).claim(30)
            assert job is not None and job.session_id == data.session_id(2, sealed=False)
            config = {"configurable": {"thread_id": data.graph_thread(), "checkpoint_ns": ""}}
            checkpoint = await CtxstoreSaver(store).aget_tuple(config)
            assert checkpoint is not None
            assert checkpoint.checkpoint["channel_values"]["notes"] == "膝盖"

    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    asyncio.run(extras())
    assert scalar(url, "SELECT count(*) FROM analytics_value_cells") == 3


def test_an_older_prerelease_database_is_refused_saying_what_to_run(
    empty_database_url: URL,
) -> None:
    url = empty_database_url
    asyncio.run(restore_prerelease(url))
    run_sql(url, "UPDATE alembic_version SET version_num = '0017'")
    with pytest.raises(MigrationError, match=r"0017.*ctxstore 0\.x first.*ctxstore db upgrade"):
        migrations.upgrade(url, "head")
    assert migrations.current(url) == "0017"
    assert scalar(url, "SELECT to_regproc('ctxstore_append_v5') IS NOT NULL")


def test_a_prerelease_database_is_not_downgraded_by_1_0(empty_database_url: URL) -> None:
    url = empty_database_url
    asyncio.run(restore_prerelease(url))
    with pytest.raises(MigrationError, match="only upgrades it"):
        migrations.downgrade(url, "base")
    assert migrations.current(url) == "0026"


def test_the_upgrade_from_0026_under_eight_writers_loses_and_fails_nothing(
    empty_database_url: URL,
) -> None:
    """Plain and sealed writers of this release, started on the 0026 database."""
    url = empty_database_url
    asyncio.run(restore_prerelease(url))
    report = writes_during(url, lambda: migrations.upgrade(url, "head"))
    report.assert_no_failed_or_lost()
    assert migrations.current(url) == migrations.head_revision()


def test_the_baseline_goes_down_to_an_empty_database_and_up_again(database_url: URL) -> None:
    migrations.downgrade(database_url, "base")
    left = (
        "SELECT array_agg(relname::text ORDER BY relname) FROM pg_class "
        "WHERE relnamespace = 'public'::regnamespace"
    )
    assert scalar(database_url, left) == ["alembic_version", "alembic_version_pkc"]
    migrations.upgrade(database_url, "head")

    async def write() -> list[Message]:
        async with PostgresStorage.from_url(database_url) as store:
            await store.append("after", [Message(role="user", content="又来了")])
            return await store.load("after")

    assert [m.content for m in asyncio.run(write())] == ["又来了"]
