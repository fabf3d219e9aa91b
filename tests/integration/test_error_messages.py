"""What a new user sees when the database or the command line is wrong.

Every mistake ends in one ctxstore error that says what is wrong and what to do, never a
driver exception or a traceback: a database that was never migrated, or is behind, names
its revision, the head and `ctxstore db upgrade`; a missing database is named (the password
never is); bad ports, URLs and options are refused before anything connects.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import URL, text

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.engine import DATABASE_URL_ENV, create_engine
from ctxstore.errors import (
    ConfigurationError,
    DatabaseNotFoundError,
    InvalidInputError,
    SchemaMissingError,
)
from tests.pg_harness import PgTestServer

pytestmark = pytest.mark.postgres

SECRET = "pw-never-printed-7f3a"
HELLO = [Message(role="user", content="hello")]


def ctxstore(*args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, without a database URL in the environment."""
    env = {key: value for key, value in os.environ.items() if key != DATABASE_URL_ENV}
    return subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single line a ctxstore error prints: exit status 1, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("ctxstore: error: "), lines[0]
    return lines[0]


def usage_error(result: subprocess.CompletedProcess[str], option: str) -> str:
    """argparse's refusal of an option's value: exit status 2, no traceback."""
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, (result.returncode, result.stderr)
    last = result.stderr.splitlines()[-1]
    assert f"error: argument {option}: " in last, result.stderr
    return last


def with_password(url: URL) -> tuple[URL, str]:
    """``url`` with a password that must never be printed: the server's own when it has
    one (a wrong one would fail the login first), else one that trust auth ignores."""
    if url.password:
        return url, str(url.password)
    return url.set(password=SECRET), SECRET


def plain(url: URL) -> str:
    return url.render_as_string(hide_password=False)


@pytest.fixture
def behind_database_url(pg_server: PgTestServer) -> Iterator[URL]:
    """A database that records 0.x's revision 0005, far behind the head, and holds none
    of its tables (the pre-release revisions are gone from the tree since 1.0's squash;
    the checks read the record, the first call meets the missing tables)."""
    name = pg_server.new_name("behind")
    url = pg_server.create(name)
    try:
        asyncio.run(record_revision(url, "0005"))
        yield url
    finally:
        pg_server.drop(name)


async def record_revision(url: URL, revision: str) -> None:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                text("CREATE TABLE alembic_version (version_num varchar(32) PRIMARY KEY)")
            )
            await connection.execute(
                text("INSERT INTO alembic_version VALUES (:revision)"), {"revision": revision}
            )
    finally:
        await engine.dispose()


@pytest.fixture
def missing_database_url(pg_server: PgTestServer) -> tuple[URL, str]:
    """A URL naming a database that does not exist on the test server, and its password."""
    return with_password(pg_server.url.set(database=f"ctxstore_missing_{uuid.uuid4().hex[:8]}"))


# -- the schema ------------------------------------------------------------------------------


async def test_a_never_migrated_database_says_to_upgrade(empty_database_url: URL) -> None:
    head = migrations.head_revision()
    # Opened, the store reads the revision and refuses at once: no first write needed.
    with pytest.raises(SchemaMissingError) as refused:
        async with PostgresStorage.from_url(empty_database_url):
            pass
    said = str(refused.value)
    assert "no ctxstore schema (no revision)" in said and f"needs revision {head}" in said
    assert "`ctxstore db upgrade`" in said
    assert refused.value.details["revision_read"] is True
    assert refused.value.current_revision is None
    # Used without being opened, it names the missing table at its first call.
    store = PostgresStorage.from_url(empty_database_url)
    try:
        for attempt in (store.save("s", HELLO), store.load("s"), store.save_profile("u", {})):
            with pytest.raises(SchemaMissingError) as caught:
                await attempt
            message = str(caught.value)
            assert "schema is missing or behind" in message
            assert "does not exist" in message  # the table the server named
            assert f"needs revision {head}" in message
            assert "`ctxstore db upgrade`" in message and "`ctxstore db current`" in message
            assert caught.value.head_revision == head
            assert caught.value.details["revision_read"] is False
    finally:
        await store.close()


def test_the_cli_names_the_missing_schema_and_its_revision(empty_database_url: URL) -> None:
    line = one_error_line(
        ctxstore("seed-sample", "--sessions", "1", "--database-url", plain(empty_database_url))
    )
    head = migrations.head_revision()
    assert "no ctxstore schema (no revision)" in line
    assert f"needs revision {head}" in line and "`ctxstore db upgrade`" in line
    line = one_error_line(
        ctxstore("analytics", "overview", "--database-url", plain(empty_database_url))
    )
    assert "analytics_overview_v4" in line and "no ctxstore schema" in line


async def test_a_database_behind_names_both_revisions(behind_database_url: URL) -> None:
    head = migrations.head_revision()
    with pytest.raises(SchemaMissingError) as refused:
        async with PostgresStorage.from_url(behind_database_url):
            pass
    said = str(refused.value)
    assert "at 0.x revision 0005, older than 0026" in said
    assert f"this ctxstore needs revision {head}" in said and "ctxstore 0.x first" in said
    assert refused.value.current_revision == "0005"
    store = PostgresStorage.from_url(behind_database_url)  # not opened: the first call says
    try:
        with pytest.raises(SchemaMissingError, match=r"SQLSTATE 42(703|P01|883)"):
            await store.save("s", HELLO)
    finally:
        await store.close()
    for command in (["seed-sample", "--sessions", "1"], ["purge-expired"]):
        line = one_error_line(ctxstore(*command, "--database-url", plain(behind_database_url)))
        assert "at 0.x revision 0005" in line and f"this ctxstore needs revision {head}" in line
        assert "`ctxstore db upgrade`" in line


# -- the database ----------------------------------------------------------------------------


@pytest.mark.slow
async def test_a_missing_database_is_named_without_the_password(
    missing_database_url: tuple[URL, str],
) -> None:
    url, password = missing_database_url
    name = url.database
    async with PostgresStorage.from_url(url) as store:
        with pytest.raises(DatabaseNotFoundError) as caught:
            await store.save("s", HELLO)
    assert isinstance(caught.value, ConfigurationError)
    assert caught.value.database == name
    assert f"database {name!r} does not exist" in str(caught.value)
    assert password not in str(caught.value)
    for command in (
        ["db", "current"],
        ["analytics", "overview"],
        ["purge-expired"],
        ["upgrade-data"],
        ["seed-sample", "--sessions", "1"],
    ):
        result = ctxstore(*command, "--database-url", plain(url))
        line = one_error_line(result)
        assert f"database {name!r} does not exist" in line
        assert password not in result.stderr + result.stdout


async def test_an_unknown_role_is_a_configuration_error(pg_server: PgTestServer) -> None:
    url = pg_server.url.set(username=f"nobody_{uuid.uuid4().hex[:8]}", password=SECRET)
    async with PostgresStorage.from_url(url) as store:
        with pytest.raises(ConfigurationError, match="refused the login") as caught:
            await store.load("s")
    assert "check the user and password" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_nothing_listening_is_unavailable_and_says_where(pg_server: PgTestServer) -> None:
    # over TCP even when the test server is reached through a Unix socket (?host=...)
    tcp = pg_server.url.set(host="127.0.0.1", port=1, query={})
    url, password = with_password(tcp)
    result = ctxstore("db", "current", "--database-url", plain(url))
    line = one_error_line(result)
    assert "Connect call failed ('127.0.0.1', 1)" in line and "is PostgreSQL running" in line
    assert password not in result.stderr


# -- URLs and options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"postgresql://postgres:{SECRET}@127.0.0.1:notaport/db", "the port must be a number"),
        (f"postgresql://postgres:{SECRET}@127.0.0.1:99999/db", "port 99999 is outside 1-65535"),
        (f"postgresql://postgres:{SECRET}@127.0.0.1:0/db", "port 0 is outside 1-65535"),
        (f"postgresql://postgres:{SECRET}@[::1/db", "not a database URL"),
        (f"postgresql://postgres:{SECRET}@127.0.0.1/db?foo=bar", "unknown database URL option"),
        (f"postgresql://postgres:{SECRET}@127.0.0.1/db?sslmode=on", "sslmode must be one of"),
        (f"mysql://root:{SECRET}@127.0.0.1/db", "unsupported database URL scheme 'mysql'"),
        ("not a url", "not a database URL"),
    ],
)
def test_a_bad_database_url_is_one_line(url: str, expected: str) -> None:
    commands = [["db", "current"]]
    if ":notaport" in url or ":99999" in url:  # the ports the issue reported, on every kind
        commands += [
            ["analytics", "overview"],
            ["import-redis", "--redis-url", "redis://127.0.0.1:6379/0"],
        ]
    for command in commands:
        result = ctxstore(*command, "--database-url", url)
        assert expected in one_error_line(result)
        assert SECRET not in result.stderr


@pytest.mark.parametrize(
    ("redis_url", "expected"),
    [
        ("notaurl", "must specify one of the following schemes"),
        (f"redis://:{SECRET}@127.0.0.1:notaport/0", "could not be cast to integer"),
        (f"redis://:{SECRET}@127.0.0.1:99999/0", "Port out of range"),
    ],
)
def test_a_bad_redis_url_is_one_line(
    module_database_url: URL, redis_url: str, expected: str
) -> None:
    result = ctxstore(
        "import-redis", "--database-url", plain(module_database_url), "--redis-url", redis_url
    )
    line = one_error_line(result)
    assert "--redis-url is not a usable Redis URL" in line and expected in line
    assert SECRET not in result.stderr


@pytest.mark.parametrize("limit", ["-1", "0", "1000001", str(10**20)])
def test_an_analytics_limit_out_of_range_is_invalid_input(
    module_database_url: URL, limit: str
) -> None:
    line = one_error_line(
        ctxstore(
            "analytics",
            "complaints",
            "--limit",
            limit,
            "--database-url",
            plain(module_database_url),
        )
    )
    assert "limit must be an integer from 1 to 1,000,000" in line
    assert line.endswith(f"not {limit}")


async def test_run_report_refuses_a_bad_limit_before_the_database(
    module_database_url: URL,
) -> None:
    from ctxstore.commands.analytics import run_report  # noqa: PLC0415
    from ctxstore.db.engine import create_engine  # noqa: PLC0415

    engine = create_engine(module_database_url)
    try:
        for limit in (-1, 0, 10**20, True, 2.5):
            with pytest.raises(InvalidInputError, match="limit must be an integer"):
                await run_report(engine, "complaints", limit=limit)  # type: ignore[arg-type]
        report = await run_report(engine, "complaints", limit=1_000_000)
        assert report.columns == ["month", "chief_complaint", "consultations", "share"]
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["analytics", "overview", "--since", "0001-01-01T00:00+08:00"], "--since"),
        (["analytics", "overview", "--until", "9999-12-31T23:00-05:00"], "--until"),
        (["analytics", "overview", "--since", "yesterday"], "--since"),
        (["purge-expired", "--batch-size", "-1"], "--batch-size"),
        (["upgrade-data", "--batch-size", "0"], "--batch-size"),
        (["seed-sample", "--sessions", "-5"], "--sessions"),
        (["seed-sample", "--sessions", "1", "--concurrency", "0"], "--concurrency"),
        (["import-redis", "--redis-url", "redis://x/0", "--concurrency", "-1"], "--concurrency"),
        (["db", "upgrade", "--lock-timeout", "bogus"], "--lock-timeout"),
    ],
)
def test_a_bad_option_is_refused_before_anything_connects(args: list[str], option: str) -> None:
    # Port 1: nothing listens there, so a command that got as far as connecting would fail
    # with another message.
    usage_error(ctxstore(*args, "--database-url", "postgresql://u@127.0.0.1:1/db"), option)
