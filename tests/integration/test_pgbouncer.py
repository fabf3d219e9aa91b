"""Through a real PgBouncer in transaction pooling mode (tests/pooler.py: Debian's
pgbouncer, two server connections handed out round robin).

The store works through it with ``?pooling=transaction`` (no named prepared statement
outlives its transaction); a URL without it gets a clear error; migrations refuse to run
through it and run over ``CTXSTORE_MIGRATION_DATABASE_URL``.  The contract
(tests/conformance/test_postgres.py) and the concurrency tests
(test_concurrency_pgbouncer.py) run through it too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.db import migrations
from ctxstore.errors import ConfigurationError, MigrationError
from tests.pg_harness import PgTestServer
from tests.pooler import PgBouncer

WORKERS = 8
TURNS = 60


def cli(*arguments: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # the URLs come from ``env`` alone; the run's role prefix stays (its roles are dropped)
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CTXSTORE_") or k == "CTXSTORE_ROLE_PREFIX"
    }
    return subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", *arguments],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def plain(url: URL) -> str:
    return url.render_as_string(hide_password=False)


async def test_eight_workers_do_ordinary_turns_through_two_server_connections(
    database_url: URL, pgbouncer: PgBouncer
) -> None:
    """The failure this replaces: 8 workers, InvalidSQLStatementNameError after 3 to 5
    turns.  Each worker has its own storage (its own client connections), as processes
    of a service would; every turn is an append, a context window and a state save."""
    pooled = pgbouncer.url(database_url)

    async def worker(number: int) -> int:
        async with PostgresStorage.from_url(pooled) as storage:
            manager = ContextManager(storage, strategy=TokenBudget(2000))
            session_id = f"worker-{number}"
            for turn in range(TURNS):
                await manager.add_messages(
                    session_id,
                    [
                        Message(role="user", content=f"{number}:{turn} my knee hurts"),
                        Message(role="assistant", content=f"{number}:{turn} since when?"),
                    ],
                    user_id=f"user-{number}",
                )
                window = await manager.get_context(session_id)
                assert window.messages[-1].content == f"{number}:{turn} since when?"
                await storage.save_state(session_id, {"stage": "intake", "pain_level": 3})
            return await storage.version(session_id)

    versions = await asyncio.gather(*(worker(number) for number in range(WORKERS)))
    assert versions == [TURNS] * WORKERS
    async with PostgresStorage.from_url(database_url) as direct:
        for number in range(WORKERS):
            stored = await direct.load(f"worker-{number}")
            assert len(stored) == 2 * TURNS
            assert [m.content for m in stored[::2]] == [
                f"{number}:{turn} my knee hurts" for turn in range(TURNS)
            ]


async def test_a_pooler_url_without_the_pooling_option_is_a_clear_error(
    database_url: URL, pgbouncer: PgBouncer
) -> None:
    async with PostgresStorage.from_url(pgbouncer.url(database_url, marked=False)) as storage:
        with pytest.raises(ConfigurationError, match=r"pooling=transaction") as caught:
            await storage.load("s")
    assert "unsupported startup parameter" in str(caught.value)


def test_migrations_refuse_a_url_marked_as_a_transaction_pooler(
    empty_database_url: URL, pgbouncer: PgBouncer
) -> None:
    pooled = pgbouncer.url(empty_database_url)
    with pytest.raises(MigrationError, match="CTXSTORE_MIGRATION_DATABASE_URL"):
        migrations.upgrade(pooled, "head")
    assert migrations.current(empty_database_url) is None  # nothing applied
    result = cli("db", "upgrade", env={"CTXSTORE_DATABASE_URL": plain(pooled)})
    assert result.returncode != 0
    assert "transaction pooler" in result.stderr and "Traceback" not in result.stderr
    assert migrations.current(empty_database_url) is None


@pytest.fixture(scope="module")
def lenient_pgbouncer(pg_server: PgTestServer) -> Iterator[PgBouncer]:
    """A PgBouncer that lets the clients' session settings through (and drops them), so
    an unmarked URL connects: only the migrations' own check can notice the pooling."""
    pooler = PgBouncer(
        pg_server.url,
        ignore_startup_parameters=(
            "statement_timeout,lock_timeout,idle_in_transaction_session_timeout"
        ),
    )
    try:
        yield pooler
    finally:
        pooler.stop()


def test_migrations_notice_an_unmarked_transaction_pooler_before_applying_anything(
    empty_database_url: URL, lenient_pgbouncer: PgBouncer
) -> None:
    """The session-level lock would be held on one server connection and the revisions
    run on others: the migration stops before its first revision."""
    unmarked = lenient_pgbouncer.url(empty_database_url, marked=False)
    lenient_pgbouncer.warm(empty_database_url)  # two server connections, round robin
    with pytest.raises(MigrationError, match="different server sessions"):
        migrations.upgrade(unmarked, "head")
    assert migrations.current(empty_database_url) is None


def test_db_upgrade_runs_over_the_migration_url_while_the_service_url_pools(
    empty_database_url: URL, pgbouncer: PgBouncer
) -> None:
    env = {
        "CTXSTORE_DATABASE_URL": plain(pgbouncer.url(empty_database_url)),
        "CTXSTORE_MIGRATION_DATABASE_URL": plain(empty_database_url),
    }
    result = cli("db", "upgrade", env=env)
    assert result.returncode == 0, result.stderr
    assert migrations.current(empty_database_url) == migrations.head_revision()

    async def through_the_pooler() -> None:
        async with PostgresStorage.from_url(pgbouncer.url(empty_database_url)) as storage:
            await storage.save("after", [Message(role="user", content="hello")])
            assert await storage.load("after") == [Message(role="user", content="hello")]

    asyncio.run(through_the_pooler())


async def test_an_unmarked_url_through_a_lenient_pooler_names_the_pooling_option(
    database_url: URL, lenient_pgbouncer: PgBouncer
) -> None:
    """The pooler lets the session settings through, so the URL connects; the first
    statement that meets another client's server session (a named prepared statement
    missing or already there) is a ConfigurationError naming ?pooling=transaction."""
    unmarked = lenient_pgbouncer.url(database_url, marked=False)
    failures: list[BaseException] = []
    async with PostgresStorage.from_url(unmarked) as storage:

        async def worker(number: int) -> None:
            for turn in range(20):
                try:
                    await storage.append(f"w{number}", [Message(role="user", content=str(turn))])
                    await storage.load(f"w{number}")
                except Exception as error:  # each is checked below
                    failures.append(error)
                    return

        await asyncio.gather(*(worker(number) for number in range(8)))
    assert failures, "no statement met another session's prepared statements"
    for failure in failures:
        assert isinstance(failure, ConfigurationError), repr(failure)
        assert "?pooling=transaction" in str(failure)


async def test_a_first_append_leaves_every_server_connections_settings_as_they_were(
    database_url: URL, pgbouncer: PgBouncer
) -> None:
    """asyncpg learns the append's row type with JIT switched off around its query; the
    storage has it learnt when a connection opens, in a transaction, so the switch and
    the query share one server connection and nothing is left switched on any.  (The
    delay this removes, a second compiling the query at a connection's first append, is
    what the contract's expiry test through PgBouncer met on a slow machine.)"""
    direct = await asyncpg.connect(plain(database_url.set(drivername="postgresql")))
    try:
        default = await direct.fetchval("SHOW jit")
    finally:
        await direct.close()
    pooled = pgbouncer.url(database_url)
    async with PostgresStorage.from_url(pooled) as storage:
        for turn in range(4):
            await storage.append(f"jit-{turn}", [Message(role="user", content="膝盖疼")])
    bare = pooled.set(drivername="postgresql", query={})
    watcher = await asyncpg.connect(plain(bare), statement_cache_size=0)
    try:
        # Round robin over the two server connections: each answers more than once.
        seen = [await watcher.fetchval("SHOW jit") for _ in range(6)]
    finally:
        await watcher.close()
    assert seen == [default] * 6
