"""``alembic/schema.sql`` is the schema the migrations make, and the pre-release fixture is
a database exactly as ctxstore 0.x left it (what the 1.0 baseline upgrades from)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.encryption import Encryption, Keyring
from tests.migrations import prerelease_data as data
from tests.migrations.catalog import differences, snapshot
from tests.migrations.prerelease import apply_schema_file, plain, restore_prerelease, sqlscript
from tests.pg_harness import PgTestServer

#: The retirement rule's list: functions the head revision still holds that neither
#: ctxstore's code calls nor a live function calls; the release that drops them is 1.0
#: (its baseline leaves them out: schema.sql has none of them).
RETIRED_AT_1_0 = [
    "analytics_durations_v1",
    "analytics_durations_v2",
    "analytics_frequencies_v1",
    "analytics_frequencies_v2",
    "analytics_funnel_v1",
    "analytics_overview_v1",
    "analytics_overview_v2",
    "analytics_red_flags_v1",
    "analytics_red_flags_v2",
    "analytics_transitions_v1",
    "analytics_value_frequencies",
    "analytics_value_frequencies_v2",
    "ctxstore_append_if_unchanged_v1",
    "ctxstore_append_if_unchanged_v2",
    "ctxstore_append_v1",
    "ctxstore_append_v3",
    "ctxstore_append_v4",
    "ctxstore_append_v5",
    "ctxstore_erase_user_sessions_v1",
    "ctxstore_write_state_v1",
]


@pytest.fixture
def second_empty_database(pg_server: PgTestServer) -> Iterator[URL]:
    name = pg_server.new_name("empty")
    url = pg_server.create(name)
    yield url
    pg_server.drop(name)


async def drop_functions(url: URL, names: list[str]) -> None:
    connection = await asyncpg.connect(plain(url))
    try:
        for name in names:
            await connection.execute(f"DROP FUNCTION {name}")
    finally:
        await connection.close()


def test_the_schema_file_is_the_head_schema_less_the_retired_functions(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    migrations.upgrade(empty_database_url, "head")
    asyncio.run(drop_functions(empty_database_url, RETIRED_AT_1_0))
    asyncio.run(apply_schema_file(second_empty_database))
    migrated = asyncio.run(snapshot(plain(empty_database_url)))
    from_file = asyncio.run(snapshot(plain(second_empty_database)))
    assert len(from_file["functions"]) == 22
    assert differences(migrated, from_file) == []


def test_the_comparison_sees_a_changed_function_and_a_missing_grant(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    """The comparison is not blind: one function body and one grant apart are caught."""
    asyncio.run(apply_schema_file(empty_database_url))
    asyncio.run(apply_schema_file(second_empty_database))

    async def tamper() -> None:
        connection = await asyncpg.connect(plain(second_empty_database))
        try:
            await connection.execute(
                "CREATE OR REPLACE FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, "
                "p_age interval) RETURNS SETOF integer LANGUAGE sql AS 'SELECT 1'"
            )
            analytics = await connection.fetchval(
                "SELECT quote_ident(role_name) FROM ctxstore_roles WHERE kind = 'analytics'"
            )
            await connection.execute(f"REVOKE SELECT ON analytics_suppression FROM {analytics}")
        finally:
            await connection.close()

    asyncio.run(tamper())
    found = differences(
        asyncio.run(snapshot(plain(empty_database_url))),
        asyncio.run(snapshot(plain(second_empty_database))),
    )
    assert any(line.startswith("functions:") for line in found)
    assert any(line.startswith("relation_grants:") for line in found)


def test_the_prerelease_fixture_is_a_database_at_revision_0026(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    """The dump is, catalog for catalog, what 0.x's own migrations make (after the squash
    it is the only witness of the pre-release schema)."""
    migrations.upgrade(empty_database_url, "0026")
    asyncio.run(restore_prerelease(second_empty_database))
    assert migrations.current(second_empty_database) == "0026"
    found = differences(
        asyncio.run(snapshot(plain(empty_database_url))),
        asyncio.run(snapshot(plain(second_empty_database))),
    )
    assert found == []


def test_what_0x_wrote_reads_back_and_takes_new_writes(empty_database_url: URL) -> None:
    url = empty_database_url
    asyncio.run(restore_prerelease(url))
    sealing = Encryption(Keyring({data.MASTER_KEY_ID: data.MASTER_KEY}))
    new_turn = [Message(role="user", content="还是疼", turn_id="t99")]

    async def read_and_write(sealed: bool) -> None:
        async with PostgresStorage.from_url(url, encryption=sealing if sealed else None) as store:
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

    async def plain_extras() -> None:
        async with PostgresStorage.from_url(url) as store:
            found = await store.load_profile(data.user_id(4))
            assert found is not None and found.value.age == 34

    asyncio.run(plain_extras())

    async def cells() -> int:
        connection = await asyncpg.connect(plain(url))
        try:
            return int(await connection.fetchval("SELECT count(*) FROM analytics_value_cells"))
        finally:
            await connection.close()

    assert asyncio.run(cells()) == 3


SRC = Path(__file__).resolve().parents[2] / "src" / "ctxstore"
CALL = re.compile(r"\b((?:ctxstore|analytics)_[a-z_0-9]+_v[0-9]+)\s*\(")


def called_by_src() -> set[str]:
    """The SQL functions ctxstore's code calls by name (in Python and in its .sql files)."""
    found: set[str] = set()
    for path in [*SRC.rglob("*.py"), *SRC.rglob("*.sql")]:
        found.update(CALL.findall(path.read_text(encoding="utf-8")))
    return found


async def functions_and_callees(url: URL) -> dict[str, set[str]]:
    connection = await asyncpg.connect(plain(url))
    try:
        rows = await connection.fetch(
            "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace"
        )
    finally:
        await connection.close()
    return {row["proname"]: set(CALL.findall(row["prosrc"])) - {row["proname"]} for row in rows}


def live(functions: dict[str, set[str]], roots: set[str]) -> set[str]:
    """``roots`` and every function they call, directly or not."""
    reached, todo = set(), [name for name in roots if name in functions]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [callee for callee in functions[name] if callee in functions]
    return reached


def test_every_function_at_head_is_called_or_kept_by_the_retirement_rule(
    empty_database_url: URL,
) -> None:
    """docs/design.md, "One live version of each function": a function at head is called
    by ctxstore's code (or by a function it calls), or the rule keeps it until a named
    release drops it."""
    migrations.upgrade(empty_database_url, "head")
    functions = asyncio.run(functions_and_callees(empty_database_url))
    called = called_by_src()
    assert "ctxstore_append_v7" in called and "analytics_overview_v3" in called
    unaccounted = set(functions) - live(functions, called) - set(RETIRED_AT_1_0)
    assert not unaccounted, f"neither called nor kept by the retirement rule: {unaccounted}"
    kept_but_called = set(RETIRED_AT_1_0) & live(functions, called)
    assert not kept_but_called, f"retired yet still called: {kept_but_called}"


def test_the_script_reader_fills_variables_and_splits_only_between_statements() -> None:
    script = """
    -- a comment; with a semicolon and :"owner_role"
    GRANT :"owner_role" TO CURRENT_USER;
    INSERT INTO t VALUES (:'app_role', ':''app_role;', :min_group_size, '1'::text, :unknown);
    CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; SELECT :'x' $body$;
    """
    variables = {"owner_role": 'o"1', "app_role": "a'b", "min_group_size": 5}
    assert sqlscript.statements(script, variables) == [
        'GRANT "o""1" TO CURRENT_USER',
        "INSERT INTO t VALUES ('a''b', ':''app_role;', 5, '1'::text, :unknown)",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; SELECT :'x' $body$",
    ]
    with pytest.raises(KeyError):
        sqlscript.statements('GRANT :"nobody" TO x;', variables)
