"""No password or other URL secret is ever printed, logged or put in an error message.

The real `ctxstore` and `alembic` commands and the library run against the test server
with a secret in every URL form (user info, ``?password=``, percent-encoded specials,
``postgres://`` and ``postgresql+asyncpg://``, the environment variable, Redis URLs), on
success and error paths; the secret's marker must appear nowhere: stdout, stderr, the
``str``/``repr`` of every raised error and of its causes, DEBUG logs of ``ctxstore``,
``alembic`` and ``sqlalchemy``, ``str(engine.url)``.  The server's pg_hba is trust on the
usual test setup, so a made-up password is sent and ignored; the tests that need to log
in with one skip, saying so, on a server that checks passwords.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.engine import DATABASE_URL_ENV, create_engine, normalize_url
from ctxstore.errors import (
    ConfigurationError,
    CtxStoreError,
    DatabaseNotFoundError,
    MigrationError,
    StorageUnavailableError,
)
from tests.pg_harness import PgTestServer

# Slow: nearly every test runs the ctxstore command, a process of its own (make test-slow).
pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# Each secret holds a marker found nowhere else; no output may contain any marker.
PLAIN = "Zq9Kx7-plain"
SPECIAL = "p@ss:w/rd?#&=% Zq8Kx7"  # every character a URL must percent-encode
ROLE_PASSWORD = "Zq7Kx7-role"  # the login role's real password (never sent)
MARKERS = ("Zq9Kx7", "Zq8Kx7", "Zq7Kx7")
SECRETS = (PLAIN, SPECIAL, ROLE_PASSWORD)

UrlForm = Callable[[URL, str], str]


def userinfo(scheme: str) -> UrlForm:
    return lambda url, secret: url.set(drivername=scheme, password=secret).render_as_string(
        hide_password=False
    )


def in_query(scheme: str) -> UrlForm:
    def form(url: URL, secret: str) -> str:
        bare = url.set(drivername=scheme, password=None).render_as_string(hide_password=False)
        return f"{bare}{'&' if '?' in bare else '?'}password={quote_plus(secret)}"

    return form


FORMS: dict[str, UrlForm] = {
    "userinfo": userinfo("postgresql"),
    "userinfo-asyncpg": userinfo("postgresql+asyncpg"),
    "query": in_query("postgresql"),
    "query-postgres-scheme": in_query("postgres"),
}
CASES = [
    pytest.param(form, secret, id=f"{name}-{label}")
    for name, form in FORMS.items()
    for label, secret in (("plain", PLAIN), ("special", SPECIAL))
]


def assert_hidden(*texts: object) -> None:
    for text in texts:
        shown = str(text)
        for marker in MARKERS:
            assert marker not in shown, shown
        for secret in SECRETS:  # as written, and in its encoded forms
            for form in (secret, quote(secret, safe=""), quote_plus(secret)):
                assert form not in shown, shown


def assert_error_hidden(error: BaseException) -> None:
    """The error, and every error it was raised from, in str and repr."""
    seen: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in seen:
        seen.append(current)
        assert_hidden(str(current), repr(current), getattr(current, "details", ""))
        current = current.__cause__ or current.__context__


def run(
    command: list[str], *, env_url: str | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != DATABASE_URL_ENV}
    if env_url is not None:
        env[DATABASE_URL_ENV] = env_url
    result = subprocess.run(
        command, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=180
    )
    assert_hidden(result.stdout, result.stderr)
    return result


def ctxstore(*args: str, env_url: str | None = None) -> subprocess.CompletedProcess[str]:
    """The installed console script, as a user runs it."""
    return run([str(BIN / "ctxstore"), *args], env_url=env_url)


# The CLI with every logger at DEBUG (it has no flag for it): main() keeps this handler.
DEBUG_CLI = """import logging, sys
logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
logging.getLogger("sqlalchemy").setLevel(logging.DEBUG)  # SQLAlchemy sets WARN otherwise
from ctxstore.cli import main
sys.exit(main(sys.argv[1:]))
"""


def ctxstore_debug(*args: str) -> subprocess.CompletedProcess[str]:
    result = run([sys.executable, "-c", DEBUG_CLI, *args])
    assert "DEBUG " in result.stderr or "INFO " in result.stderr  # logging was on
    return result


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("ctxstore: error: ")
    return line


@pytest.fixture
def trusting(pg_server: PgTestServer) -> URL:
    """The test server, when it lets a made-up password log in (pg_hba trust)."""
    if pg_server.url.password is not None:
        pytest.skip(
            "the test server checks passwords (its URL has one): a made-up secret can't "
            "log in, so only the error paths run"
        )
    return pg_server.url


@pytest.fixture
def scratch(trusting: URL, empty_database_url: URL) -> URL:
    """A new empty database (dropped afterwards) on a server that ignores passwords."""
    return empty_database_url


def refused_port(url: URL) -> URL:
    """``url`` pointed at a TCP port nothing listens on."""
    return url.set(host="127.0.0.1", port=1, query={})


def missing_database(pg_server: PgTestServer) -> URL:
    return pg_server.url.set(database=f"ctxstore_missing_{uuid.uuid4().hex[:8]}")


def driver_dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def login_role(pg_server: PgTestServer) -> Iterator[str]:
    """A LOGIN role with a password (roles are cluster-wide: a unique name, dropped after)."""
    name = f"{pg_server.role_prefix}_login_{uuid.uuid4().hex[:8]}"

    async def execute(sql: str) -> None:
        connection = await asyncpg.connect(driver_dsn(pg_server.url))
        try:
            await connection.execute(sql)
        finally:
            await connection.close()

    asyncio.run(execute(f"CREATE ROLE {name} LOGIN PASSWORD '{ROLE_PASSWORD}'"))
    try:
        yield name
    finally:
        asyncio.run(execute(f"DROP ROLE IF EXISTS {name}"))


# -- the CLI: success paths ---------------------------------------------------------------------


@pytest.mark.parametrize(("form", "secret"), CASES)
def test_db_upgrade_and_current_print_no_secret(scratch: URL, form: UrlForm, secret: str) -> None:
    url = form(scratch, secret)
    head = migrations.head_revision()
    upgraded = ctxstore("db", "upgrade", "--database-url", url)
    assert upgraded.returncode == 0, upgraded.stderr
    # The URL is shown, its password masked (a user's URL has one to mask: user:***@).
    assert upgraded.stdout.strip().endswith(f"upgraded from revision (empty) to {head}")
    if scratch.username is not None:
        assert f"{scratch.username}:***@" in upgraded.stdout
    current = ctxstore("db", "current", "--database-url", url)
    assert (current.returncode, current.stdout.strip()) == (0, head)
    again = ctxstore("db", "upgrade", "--database-url", url)
    assert again.stdout.strip().endswith(f"was already at revision {head}: nothing to apply")
    down = ctxstore("db", "downgrade", "base", "--database-url", url)
    assert down.returncode == 0 and down.stdout.strip().endswith("is at revision base")


def test_the_environment_variable_and_every_report_format(scratch: URL) -> None:
    url = in_query("postgresql")(scratch, SPECIAL)
    assert ctxstore("db", "upgrade", env_url=url).returncode == 0
    for output in ("table", "json", "csv"):
        report = ctxstore("analytics", "overview", "--format", output, env_url=url)
        assert report.returncode == 0, report.stderr
        assert "consultations" in report.stdout
    assert ctxstore("db", "current", env_url=userinfo("postgres")(scratch, PLAIN)).returncode == 0


def test_the_cli_at_debug_logs_no_secret(scratch: URL) -> None:
    url = in_query("postgresql")(scratch, PLAIN)
    upgraded = ctxstore_debug("db", "upgrade", "--database-url", url)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "alembic.runtime.migration" in upgraded.stderr  # Alembic's own records
    assert "sqlalchemy.engine" in upgraded.stderr  # the statements SQLAlchemy logs
    failed = ctxstore_debug(
        "db",
        "current",
        "--database-url",
        in_query("postgresql")(refused_port(scratch), SPECIAL),
    )
    assert failed.returncode == 1 and "Connect call failed" in failed.stderr


def test_a_login_role_with_a_password(scratch: URL, login_role: str) -> None:
    # The role's real password is in the URL (what a deploy would pass), then a wrong one.
    for secret in (ROLE_PASSWORD, PLAIN):
        url = userinfo("postgresql")(scratch.set(username=login_role), secret)
        current = ctxstore("db", "current", "--database-url", url)
        assert (current.returncode, current.stdout.strip()) == (0, "(empty database: no revision)")
        # Not the owner: the role may not create the schema.
        line = error_line(ctxstore("db", "upgrade", "--database-url", url))
        assert "permission denied" in line or "InsufficientPrivilege" in line or "42501" in line


# -- the CLI: error paths -----------------------------------------------------------------------


@pytest.mark.parametrize(("form", "secret"), CASES)
def test_a_refused_port_prints_no_secret(
    pg_server: PgTestServer, form: UrlForm, secret: str
) -> None:
    url = form(refused_port(pg_server.url), secret)
    for command in (["db", "current"], ["db", "upgrade"], ["analytics", "overview"]):
        line = error_line(ctxstore(*command, "--database-url", url))
        assert "Connect call failed ('127.0.0.1', 1)" in line


@pytest.mark.parametrize(("form", "secret"), CASES)
def test_a_missing_database_prints_no_secret(
    pg_server: PgTestServer, form: UrlForm, secret: str
) -> None:
    url = form(missing_database(pg_server), secret)
    for command in (["db", "current"], ["db", "upgrade"], ["seed-sample", "--sessions", "1"]):
        line = error_line(ctxstore(*command, "--database-url", url))
        expected = "refused the login" if pg_server.url.password else "does not exist"
        assert expected in line


def test_a_login_role_on_a_missing_database(pg_server: PgTestServer, login_role: str) -> None:
    url = userinfo("postgresql")(missing_database(pg_server).set(username=login_role), PLAIN)
    line = error_line(ctxstore("db", "current", "--database-url", url))
    assert "does not exist" in line or "refused the login" in line


def test_a_missing_schema_prints_no_secret(scratch: URL) -> None:
    # The CLI reads the revision again to say it: a second connection with the same URL.
    for form in FORMS.values():
        line = error_line(
            ctxstore("analytics", "overview", "--database-url", form(scratch, SPECIAL))
        )
        assert "no ctxstore schema" in line


def test_a_bad_revision_prints_no_secret(scratch: URL) -> None:
    line = error_line(
        ctxstore(
            "db",
            "upgrade",
            "nosuchrevision",
            "--database-url",
            in_query("postgresql")(scratch, PLAIN),
        )
    )
    assert "nosuchrevision" in line


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            f"postgresql://app@127.0.0.1:1/db?sslpassword={quote_plus(SPECIAL)}",
            "unknown database URL option 'sslpassword'",
        ),
        (
            f"postgresql://app@127.0.0.1:1/db?sslmode=require&sslpassword={PLAIN}",
            "unknown database URL option",
        ),
        (f"postgresql://app:{PLAIN}@127.0.0.1:1/db?password={PLAIN}", "a password both"),
        (f"postgresql://app@127.0.0.1:1/db?password={PLAIN}&password=x", "more than once"),
        (f"postgresql://app:p@{PLAIN}@127.0.0.1:1/db", "percent-encode @"),
        (f"host=127.0.0.1 port=1 password={PLAIN} dbname=db", "not a database URL"),
        (f"postgresql://app:{PLAIN}@[::1/db", "not a database URL"),
        (f"postgresql://app:{PLAIN}@127.0.0.1:port/db", "the port must be a number"),
        (f"mysql://app:{PLAIN}@127.0.0.1/db?password={PLAIN}", "unsupported database URL scheme"),
    ],
)
def test_a_refused_url_prints_no_secret(url: str, expected: str) -> None:
    assert expected in error_line(ctxstore("db", "current", "--database-url", url))
    assert expected in error_line(ctxstore("db", "current", env_url=url))


@pytest.mark.parametrize(
    ("redis_url", "expected"),
    [
        (f"redis://:{PLAIN}@127.0.0.1:1/0", "connecting to 127.0.0.1:1"),
        (f"redis://someone:{quote(SPECIAL, safe='')}@127.0.0.1:1/0", "connecting to 127.0.0.1:1"),
        (f"redis://:{PLAIN}@127.0.0.1:notaport/0", "not a usable Redis URL"),
    ],
)
def test_a_redis_url_prints_no_secret(scratch: URL, redis_url: str, expected: str) -> None:
    database = in_query("postgresql")(scratch, SPECIAL)
    assert ctxstore("db", "upgrade", "--database-url", database).returncode == 0
    line = error_line(
        ctxstore("import-redis", "--database-url", database, "--redis-url", redis_url)
    )
    assert expected in line


def test_a_live_redis_with_a_password_prints_no_secret(scratch: URL, redis_url: str) -> None:
    database = in_query("postgresql")(scratch, PLAIN)
    assert ctxstore("db", "upgrade", "--database-url", database).returncode == 0
    scheme, rest = redis_url.split("://", 1)
    address = rest.rsplit("@", 1)[-1]
    secret = quote(SPECIAL, safe="")
    # A user Redis does not know: AUTH is refused, and the refusal is printed.
    refused = ctxstore(
        "import-redis",
        "--database-url",
        database,
        "--redis-url",
        f"{scheme}://nobody-{uuid.uuid4().hex[:6]}:{secret}@{address}",
    )
    assert "invalid username-password pair" in error_line(refused)
    # The default user: a Redis without requirepass lets redis-py carry on; one with a
    # password refuses this one.  Either way the run ends and prints no secret.
    default = ctxstore(
        "import-redis", "--database-url", database, "--redis-url", f"{scheme}://:{secret}@{address}"
    )
    if default.returncode == 0:
        assert "0 failed" in default.stdout
    else:
        assert "AUTH" in error_line(default) or "password" in error_line(default)


# -- Alembic's own command ----------------------------------------------------------------------


def test_alembic_prints_no_secret(scratch: URL, pg_server: PgTestServer) -> None:
    alembic = str(BIN / "alembic")
    url = in_query("postgresql")(scratch, SPECIAL)
    upgraded = run([alembic, "-x", f"database_url={url}", "upgrade", "head"])
    assert upgraded.returncode == 0, upgraded.stderr
    assert "Running upgrade" in upgraded.stderr  # alembic.ini's logging was on
    # `current --verbose` prints the URL: the query's password was moved where it is masked.
    current = run([alembic, "current", "--verbose"], env_url=url)
    assert current.returncode == 0, current.stderr
    assert migrations.head_revision() in current.stdout and "***" in current.stdout
    failed = run(
        [alembic, "upgrade", "head"],
        env_url=userinfo("postgresql")(refused_port(pg_server.url), PLAIN),
    )
    assert failed.returncode != 0 and "Connect call failed" in failed.stderr


# -- the library: errors, DEBUG logs, engine URLs -----------------------------------------------


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    for name in ("ctxstore", "alembic", "sqlalchemy"):
        caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def assert_logs_hidden(caplog: pytest.LogCaptureFixture) -> None:
    assert caplog.records, "nothing was logged: the check would be empty"
    for record in caplog.records:
        assert_hidden(record.getMessage(), record.exc_text or "", record.stack_info or "")
    assert_hidden(caplog.text)


def test_the_library_logs_and_engine_urls_show_no_secret(
    scratch: URL, debug_logs: pytest.LogCaptureFixture
) -> None:
    for form in FORMS.values():
        url = form(scratch, SPECIAL)
        engine = create_engine(url)
        try:
            assert_hidden(str(engine.url), repr(engine.url), repr(engine.sync_engine))
            assert normalize_url(url).password == SPECIAL  # the secret still logs in
        finally:
            engine.sync_engine.dispose()
    url = in_query("postgresql")(scratch, SPECIAL)
    migrations.upgrade(url)
    assert migrations.current(url) == migrations.head_revision()
    with pytest.raises(MigrationError) as caught:  # Alembic's message, redacted
        migrations.upgrade(url, "nosuchrevision")
    assert "nosuchrevision" in str(caught.value)
    assert_error_hidden(caught.value)

    async def use() -> None:
        async with PostgresStorage.from_url(url) as storage:
            assert_hidden(str(storage.engine.url))
            await storage.save("s", [{"role": "user", "content": "hi"}])
            assert len(await storage.load("s")) == 1

    asyncio.run(use())
    names = {record.name.split(".")[0] for record in debug_logs.records}
    assert {"alembic", "sqlalchemy"} <= names, names
    assert_logs_hidden(debug_logs)


def test_the_library_errors_show_no_secret(
    pg_server: PgTestServer, debug_logs: pytest.LogCaptureFixture
) -> None:
    attempts: list[tuple[Callable[[], object], type[CtxStoreError]]] = []
    for form in FORMS.values():
        refused = form(refused_port(pg_server.url), SPECIAL)
        missing = form(missing_database(pg_server), PLAIN)
        attempts += [
            (lambda url=refused: migrations.current(url), StorageUnavailableError),
            (lambda url=refused: migrations.upgrade(url), MigrationError),
            (lambda url=missing: migrations.current(url), DatabaseNotFoundError),
            (lambda url=missing: migrations.upgrade(url), DatabaseNotFoundError),
            (lambda url=refused: asyncio.run(load_from(url)), StorageUnavailableError),
        ]
    attempts += [
        (lambda: normalize_url(f"postgresql://a:p@{PLAIN}@h/d"), ConfigurationError),
        (lambda: normalize_url(f"postgresql://a@h/d?sslpassword={PLAIN}"), ConfigurationError),
        (lambda: normalize_url(f"host=h password={PLAIN}"), ConfigurationError),
    ]
    for attempt, expected in attempts:
        with pytest.raises(CtxStoreError) as caught:
            attempt()
        if pg_server.url.password is None or expected is not DatabaseNotFoundError:
            assert isinstance(caught.value, expected), repr(caught.value)
        assert_error_hidden(caught.value)
    assert_logs_hidden(debug_logs)


async def load_from(url: str) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await storage.load("s")
