"""Migrations tested like code: one head, up from empty, down and up, DDL equals tables.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import URL, text

from ctxstore.db import migrations
from ctxstore.db.engine import create_engine
from ctxstore.db.tables import metadata
from tests.pg_harness import PgTestServer

REPO = Path(__file__).resolve().parents[2]

SCHEMA_QUERIES = {
    "tables": """
        SELECT table_name FROM information_schema.tables
        WHERE table_schema = 'public' AND table_name <> 'alembic_version'
          AND table_type = 'BASE TABLE' ORDER BY 1""",
    "columns": """
        SELECT c.table_name, c.column_name, c.data_type, c.is_nullable, c.column_default,
               c.character_maximum_length, c.numeric_precision
        FROM information_schema.columns AS c
        JOIN information_schema.tables AS t USING (table_schema, table_name)
        WHERE c.table_schema = 'public' AND c.table_name <> 'alembic_version'
          AND t.table_type = 'BASE TABLE' ORDER BY 1, 2""",
    "constraints": """
        SELECT conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid)
        FROM pg_constraint
        WHERE connamespace = 'public'::regnamespace
          AND conrelid::regclass::text <> 'alembic_version' ORDER BY 1, 2""",
    "indexes": """
        SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename <> 'alembic_version' ORDER BY 1, 2""",
}


def schema_of(url: URL) -> dict[str, list[tuple[Any, ...]]]:
    async def read() -> dict[str, list[tuple[Any, ...]]]:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.connect() as conn:
                return {
                    name: [tuple(row) for row in await conn.execute(text(sql))]
                    for name, sql in SCHEMA_QUERIES.items()
                }
        finally:
            await engine.dispose()

    return asyncio.run(read())


def create_all(url: URL) -> None:
    async def build() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(metadata.create_all)
        finally:
            await engine.dispose()

    asyncio.run(build())


def revisions() -> list[str]:
    script = ScriptDirectory.from_config(migrations.alembic_config())
    return [rev.revision for rev in reversed(list(script.walk_revisions()))]


def test_there_is_exactly_one_head() -> None:
    heads = ScriptDirectory.from_config(migrations.alembic_config()).get_heads()
    assert len(heads) == 1
    assert migrations.head_revision() == heads[0]


def test_upgrade_from_empty_matches_the_table_definitions(
    pg_server: PgTestServer, empty_database_url: URL
) -> None:
    migrations.upgrade(empty_database_url)
    assert migrations.current(empty_database_url) == migrations.head_revision()
    from_source = pg_server.new_name("src")
    source_url = pg_server.create(from_source)
    try:
        create_all(source_url)
        migrated, declared = schema_of(empty_database_url), schema_of(source_url)
        for part in SCHEMA_QUERIES:
            assert migrated[part] == declared[part], part
        assert migrated["tables"] == [(name,) for name in sorted(metadata.tables)]
    finally:
        pg_server.drop(from_source)


def test_stairway_down_and_up_one_revision_at_a_time(empty_database_url: URL) -> None:
    for revision in revisions():
        migrations.upgrade(empty_database_url, revision)
        migrations.downgrade(empty_database_url, "-1")
        migrations.upgrade(empty_database_url, revision)
    migrations.downgrade(empty_database_url, "base")
    assert migrations.current(empty_database_url) is None
    assert schema_of(empty_database_url)["tables"] == []
    migrations.upgrade(empty_database_url)
    assert migrations.current(empty_database_url) == migrations.head_revision()


def _environment(url: URL) -> dict[str, str]:
    env = dict(os.environ)
    env["CTXSTORE_DATABASE_URL"] = url.render_as_string(hide_password=False)
    return env


def test_two_concurrent_alembic_upgrades_both_succeed(empty_database_url: URL) -> None:
    alembic = Path(sys.executable).with_name("alembic")
    env = _environment(empty_database_url)
    runs = [
        subprocess.Popen(
            [str(alembic), "upgrade", "head"],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert migrations.current(empty_database_url) == migrations.head_revision()
    ran = sum(output.count("Running upgrade  -> 1000") for output in outputs)
    assert ran == 1, outputs  # the second waited on the advisory lock, then had nothing to do


def test_alembic_accepts_a_plain_postgresql_url(empty_database_url: URL) -> None:
    plain = empty_database_url.set(drivername="postgresql")
    result = subprocess.run(  # noqa: PLW1510 - the tests read returncode
        [str(Path(sys.executable).with_name("alembic")), "upgrade", "head"],
        cwd=REPO,
        env=_environment(plain),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert migrations.current(empty_database_url) == migrations.head_revision()


def ctxstore_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: PLW1510 - the tests read returncode
        [sys.executable, "-m", "ctxstore.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_ctxstore_db_commands_never_print_the_password(empty_database_url: URL) -> None:
    with_password = empty_database_url.set(password="s3cret-Passw0rd")
    raw = with_password.render_as_string(hide_password=False)
    upgraded = ctxstore_cli("db", "upgrade", "--database-url", raw)
    assert upgraded.returncode == 0, upgraded.stderr
    current = ctxstore_cli("db", "current", "--database-url", raw)
    assert current.stdout.strip() == migrations.head_revision()
    downgraded = ctxstore_cli("db", "downgrade", "base", env=_environment(with_password))
    assert downgraded.returncode == 0, downgraded.stderr
    for result in (upgraded, current, downgraded):
        assert "s3cret" not in result.stdout + result.stderr
    assert "***" in upgraded.stdout
    assert migrations.current(empty_database_url) is None


def test_a_connection_failure_does_not_print_the_password() -> None:
    result = ctxstore_cli(
        "db", "current", "--database-url", "postgresql://u:s3cret-Passw0rd@127.0.0.1:1/none"
    )
    assert result.returncode == 1
    assert "ctxstore: error:" in result.stderr
    assert "Traceback" not in result.stderr
    assert "s3cret" not in result.stdout + result.stderr


def test_missing_database_url_is_a_clear_error() -> None:
    env = {k: v for k, v in os.environ.items() if k != "CTXSTORE_DATABASE_URL"}
    result = ctxstore_cli("db", "current", env=env)
    assert result.returncode == 1
    assert "CTXSTORE_DATABASE_URL" in result.stderr


def test_blocked_ddl_fails_fast_under_lock_timeout(database_url: URL) -> None:
    """A migration waiting on a table lock held by live traffic gives up, not stalls."""
    # Revision 1001 drops messages' key to sessions: it needs both tables' locks.
    migrations.downgrade(database_url, "1000")

    async def hold_lock_then_migrate() -> tuple[subprocess.CompletedProcess[str], float]:
        engine = create_engine(database_url, pooled=False)
        try:
            async with engine.connect() as conn:
                # ACCESS SHARE on every table, as live traffic would hold
                await conn.execute(text("SELECT count(*) FROM sessions, messages"))
                started = time.monotonic()
                result = await asyncio.to_thread(
                    ctxstore_cli,
                    "db",
                    "upgrade",
                    "--lock-timeout",
                    "1s",
                    "--database-url",
                    database_url.render_as_string(hide_password=False),
                )
                elapsed = time.monotonic() - started
                await conn.rollback()
            return result, elapsed
        finally:
            await engine.dispose()

    result, elapsed = asyncio.run(hold_lock_then_migrate())
    assert result.returncode == 1
    assert "lock" in result.stderr.lower()
    assert elapsed < 30
    assert migrations.current(database_url) == "1000"


@pytest.mark.parametrize("bad", ["mysql://root@localhost/db", "not a url at all"])
def test_unsupported_urls_are_rejected(bad: str) -> None:
    result = ctxstore_cli("db", "current", "--database-url", bad)
    assert result.returncode == 1
    assert "ctxstore: error:" in result.stderr
