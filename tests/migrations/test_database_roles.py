"""Issue 13, item 2: roles that belong to one database.

Two databases on one cluster get different roles, and a login of one can neither connect
to nor read the other; an existing role is taken over only when harmless, unless
CTXSTORE_ADOPT_EXISTING_ROLES=1; down to base the roles hold nothing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError

from ctxstore.db import migrations
from ctxstore.db.admin import quote_identifier
from ctxstore.db.engine import create_engine
from ctxstore.db.roles import (
    ADOPT_ENV,
    ANALYTICS_ENV,
    APP_ENV,
    MAX_NAME_LENGTH,
    MIN_GROUP_SIZE_ENV,
    OWNER_ENV,
    PREFIX_ENV,
    RoleNames,
    derived_role_names,
    recorded_role_names,
)
from ctxstore.errors import ConfigurationError, MigrationError
from ctxstore.settings import load_settings
from tests.pg_harness import PgTestServer


def role_names(database: str | None) -> RoleNames:
    """The names the environment's settings give ``database`` (as a migration derives them)."""
    return derived_role_names(database or "", load_settings())


ROLE_ENVS = (OWNER_ENV, APP_ENV, ANALYTICS_ENV, ADOPT_ENV, MIN_GROUP_SIZE_ENV)


@pytest.fixture(autouse=True)
def clean_role_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ROLE_ENVS:
        monkeypatch.delenv(name, raising=False)


def run_sql(url: URL, *statements: str) -> list[list[tuple[Any, ...]]]:
    """Each statement in autocommit, as the test server's (superuser) login."""

    async def go() -> list[list[tuple[Any, ...]]]:
        engine = create_engine(url, pooled=False)
        results = []
        try:
            async with engine.connect() as plain:
                conn = await plain.execution_options(isolation_level="AUTOCOMMIT")
                for statement in statements:
                    result = await conn.execute(text(statement))
                    results.append([tuple(row) for row in result] if result.returns_rows else [])
        finally:
            await engine.dispose()
        return results

    return asyncio.run(go())


def scalar(url: URL, statement: str) -> Any:
    return run_sql(url, statement)[0][0][0]


def recorded(url: URL) -> RoleNames:
    async def go() -> RoleNames | None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(recorded_role_names)
        finally:
            await engine.dispose()

    names = asyncio.run(go())
    assert names is not None
    return names


def unique(kind: str) -> str:
    """A role name under the run's prefix: the harness drops it even if a test cannot."""
    return f"{os.environ[PREFIX_ENV]}_{kind}_{uuid.uuid4().hex[:6]}"


@contextmanager
def databases(pg_server: PgTestServer, *kinds: str) -> Iterator[list[URL]]:
    names = [pg_server.new_name(kind) for kind in kinds]
    urls = [pg_server.create(name) for name in names]
    try:
        yield urls
    finally:
        for name in names:
            pg_server.drop(name)


@contextmanager
def logins(server: URL, *memberships: str) -> Iterator[list[tuple[str, str]]]:
    """LOGIN roles, one IN ROLE each of ``memberships``: (name, password)."""
    made = [(unique("login"), uuid.uuid4().hex) for _ in memberships]
    try:
        for (name, password), role in zip(made, memberships, strict=True):
            run_sql(server, f"CREATE ROLE {name} LOGIN PASSWORD '{password}' IN ROLE {role}")
        yield made
    finally:
        for name, _ in made:
            run_sql(server, f"DROP ROLE IF EXISTS {name}")


def as_login(url: URL, login: tuple[str, str], statement: str) -> Any:
    """``statement``'s first value, connected as ``login`` itself."""
    return scalar(url.set(username=login[0], password=login[1]), statement)


def seed(url: URL, session_id: str) -> None:
    """A session with a message and a state, by plain SQL."""
    run_sql(
        url,
        f"INSERT INTO sessions (session_id, user_id, message_count) "
        f"VALUES ('{session_id}', 'user-{session_id}', 1)",
        f"INSERT INTO messages (session_id, seq, role, content, digest, format_version) "
        f"VALUES ('{session_id}', 0, 'user', 'secret of {session_id}', "
        f"sha256('{session_id}'), 2)",
        f"INSERT INTO consultation_states (session_id, version, stage, chief_complaint, "
        f"document, format_version) VALUES ('{session_id}', 1, 'greeting', 'knee', '{{}}', 1)",
        f"INSERT INTO consultation_state_history (session_id, version, stage, "
        f"chief_complaint, document, format_version) "
        f"VALUES ('{session_id}', 1, 'greeting', 'knee', '{{}}', 1)",
    )


def holds_anything_in(server: URL, role: str, database: str) -> bool:
    """Whether ``role`` owns or is granted anything in ``database``, CONNECT included."""
    return bool(
        scalar(
            server,
            f"""
            SELECT EXISTS (
              SELECT 1 FROM pg_shdepend AS s
               WHERE s.refobjid = (SELECT oid FROM pg_roles WHERE rolname = '{role}')
                 AND (s.dbid = (SELECT oid FROM pg_database WHERE datname = '{database}')
                      OR (s.dbid = 0 AND s.classid = 'pg_database'::regclass
                          AND s.objid = (SELECT oid FROM pg_database
                                          WHERE datname = '{database}'))))
            """,
        )
    )


def refused_connection(url: URL, login: tuple[str, str]) -> str:
    with pytest.raises(DBAPIError) as caught:
        as_login(url, login, "SELECT 1")
    return str(caught.value)


# -- two databases, one cluster ----------------------------------------------------------------


def test_two_databases_on_one_cluster_have_their_own_roles(pg_server: PgTestServer) -> None:
    with databases(pg_server, "a", "b") as (a, b):
        for url, session_id in ((a, "in-a"), (b, "in-b")):
            migrations.upgrade(url)
            seed(url, session_id)
        roles_a, roles_b = recorded(a), recorded(b)
        assert roles_a == role_names(a.database) and roles_b == role_names(b.database)
        assert not set(roles_a.all()) & set(roles_b.all())
        for name in (*roles_a.all(), *roles_b.all()):
            assert len(name) <= MAX_NAME_LENGTH and name.startswith(os.environ[PREFIX_ENV])
        with logins(pg_server.url, roles_a.app, roles_b.app, roles_a.analytics) as (
            app_a,
            app_b,
            analyst_a,
        ):
            assert as_login(a, app_a, "SELECT content FROM messages") == "secret of in-a"
            assert as_login(b, app_b, "SELECT content FROM messages") == "secret of in-b"
            for url, login in ((b, app_a), (a, app_b), (b, analyst_a)):
                assert "permission denied for database" in refused_connection(url, login)
            assert as_login(a, analyst_a, "SELECT count(*) FROM analytics_consultations") == 1
            with pytest.raises(DBAPIError, match="permission denied for table messages"):
                as_login(a, analyst_a, "SELECT content FROM messages")
        # PUBLIC lost CONNECT and TEMPORARY on the migrated databases only
        for url in (a, b):
            for privilege in ("CONNECT", "TEMPORARY"):
                assert not scalar(
                    pg_server.url,
                    f"SELECT has_database_privilege('public', '{url.database}', '{privilege}')",
                )
        assert scalar(
            pg_server.url, "SELECT has_database_privilege('public', current_database(), 'CONNECT')"
        )


def test_ctxstore_db_roles_prints_the_roles_to_grant(pg_server: PgTestServer) -> None:
    with databases(pg_server, "cli") as (url,):
        raw = url.render_as_string(hide_password=False)

        def ctxstore(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "ctxstore.cli", *args, "--database-url", raw],
                capture_output=True,
                text=True,
                check=False,
            )

        below = ctxstore("db", "roles")
        assert below.returncode == 1 and "ctxstore db upgrade" in below.stderr
        migrations.upgrade(url)
        result = ctxstore("db", "roles")
        assert result.returncode == 0, result.stderr
        names = recorded(url)
        for kind, name in (("owner", names.owner), ("app", names.app)):
            assert any(line.split()[:2] == [kind, name] for line in result.stdout.splitlines())


def drop_roles(server: URL, names: tuple[str, ...]) -> None:
    run_sql(server, *(f"DROP ROLE IF EXISTS {quote_identifier(name)}" for name in names))


# -- taking over an existing role ----------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "grant_elsewhere", "reason"),
    [
        ("SUPERUSER NOLOGIN", None, "is a superuser"),
        ("LOGIN", None, "can log in"),
        ("NOLOGIN CREATEROLE", None, "has CREATEROLE"),
        ("NOLOGIN IN ROLE pg_read_all_data", None, "is a member of pg_read_all_data"),
        ("NOLOGIN", "GRANT SELECT ON scratch TO {role}", "holds privileges or owns objects in"),
        ("NOLOGIN", "GRANT CONNECT ON DATABASE {db} TO {role}", "holds privileges"),
        ("NOLOGIN", "ALTER TABLE scratch OWNER TO {role}", "holds privileges or owns objects"),
    ],
)
def test_an_existing_role_that_is_not_harmless_is_refused(
    pg_server: PgTestServer,
    monkeypatch: pytest.MonkeyPatch,
    attributes: str,
    grant_elsewhere: str | None,
    reason: str,
) -> None:
    role = unique("existing")
    with databases(pg_server, "target", "other") as (target, other):
        run_sql(pg_server.url, f"CREATE ROLE {role} {attributes}")
        try:
            if grant_elsewhere:
                run_sql(
                    other,
                    "CREATE TABLE scratch (x int)",
                    grant_elsewhere.format(role=role, db=quote_identifier(str(other.database))),
                )
            monkeypatch.setenv(APP_ENV, role)
            with pytest.raises(MigrationError) as caught:
                migrations.upgrade(target)
            message = str(caught.value)
            assert f"{role!r} {reason}" in message
            if grant_elsewhere:
                assert f"database {other.database}" in message
            assert f"{ADOPT_ENV}=1" in message and APP_ENV in message
            assert migrations.current(target) is None
        finally:
            pg_server.drop(str(other.database))
            run_sql(pg_server.url, f"DROP ROLE IF EXISTS {role}")


def test_the_migrating_superuser_is_never_the_owner(
    pg_server: PgTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CTXSTORE_OWNER_ROLE=postgres (the login migrating) used to hand everything to it."""
    with databases(pg_server, "su") as (url,):
        user = scalar(url, "SELECT session_user")
        monkeypatch.setenv(OWNER_ENV, user)
        with pytest.raises(MigrationError, match=f"'{user}' (is a superuser, )?can log in"):
            migrations.upgrade(url)
        assert migrations.current(url) is None


def test_adopt_existing_roles_takes_over_a_login_role_when_told(
    pg_server: PgTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    role = unique("adopted")
    with databases(pg_server, "adopt") as (url,):
        run_sql(pg_server.url, f"CREATE ROLE {role} LOGIN")
        try:
            monkeypatch.setenv(APP_ENV, role)
            monkeypatch.setenv(ADOPT_ENV, "1")
            migrations.upgrade(url)
            assert recorded(url).app == role
            migrations.downgrade(url, "base")
            monkeypatch.setenv(ADOPT_ENV, "maybe")
            with pytest.raises(ConfigurationError, match=f"{ADOPT_ENV}='maybe'"):
                migrations.upgrade(url)
        finally:
            pg_server.drop(str(url.database))
            run_sql(pg_server.url, f"DROP ROLE IF EXISTS {role}")


def test_harmless_existing_roles_are_adopted_with_their_members(
    pg_server: PgTestServer,
) -> None:
    """Roles a deploy made beforehand (NOLOGIN, nothing elsewhere) and granted its logins."""
    with databases(pg_server, "pre") as (url,):
        names = role_names(url.database)
        run_sql(pg_server.url, *(f"CREATE ROLE {name} NOLOGIN" for name in names.all()))
        with logins(pg_server.url, names.app) as (service,):
            migrations.upgrade(url)
            assert recorded(url) == names
            assert as_login(url, service, "SELECT count(*) FROM sessions") == 0


@pytest.mark.parametrize("bad", ["ctxstore_app\n", "Ctxstore_app", "pg_monitor", "a" * 64, "x y"])
def test_role_names_from_the_environment_are_checked_whole(
    pg_server: PgTestServer, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    with databases(pg_server, "badname") as (url,):
        monkeypatch.setenv(APP_ENV, bad)
        with pytest.raises(ConfigurationError, match=APP_ENV):
            migrations.upgrade(url)
        assert migrations.current(url) is None


def test_the_min_group_size_comes_from_the_environment(
    pg_server: PgTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with databases(pg_server, "k") as (url,):
        monkeypatch.setenv(MIN_GROUP_SIZE_ENV, "1")
        with pytest.raises(ConfigurationError, match=f"{MIN_GROUP_SIZE_ENV}='1'"):
            migrations.upgrade(url)
        # Refused when the settings are read, before the baseline runs: nothing changed.
        assert migrations.current(url) is None
        monkeypatch.setenv(MIN_GROUP_SIZE_ENV, "12")
        migrations.upgrade(url)
        assert scalar(url, "SELECT min_group_size FROM analytics_suppression") == 12


def test_down_to_base_the_roles_hold_nothing_and_can_be_dropped(pg_server: PgTestServer) -> None:
    with databases(pg_server, "base") as (url,):
        migrations.upgrade(url)
        names = recorded(url)
        migrations.downgrade(url, "base")
        for name in names.all():
            assert not holds_anything_in(pg_server.url, name, str(url.database)), name
        # nothing anywhere: DROP ROLE succeeds while the database still exists
        run_sql(pg_server.url, *(f"DROP ROLE {name}" for name in names.all()))
        migrations.upgrade(url)  # and a fresh install makes them again
        assert recorded(url) == names
