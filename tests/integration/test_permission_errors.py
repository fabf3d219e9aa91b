"""A role without ctxstore's grants: the error names the role, the object and the
privilege, and says which role to grant (issue 27).  Real roles on the real server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.errors import ConfigurationError
from tests.pg_harness import PgTestServer

pytestmark = pytest.mark.postgres


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def ungranted(pg_server: PgTestServer, database_url: URL) -> Iterator[URL]:
    """A LOGIN role that may connect and use the schema, and nothing more."""
    name = f"{pg_server.role_prefix}_bare_{uuid.uuid4().hex[:8]}"

    async def execute(*statements: str) -> None:
        connection = await asyncpg.connect(_dsn(database_url))
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    asyncio.run(
        execute(
            f"CREATE ROLE {name} LOGIN PASSWORD 'bare-pw'",
            f"GRANT CONNECT ON DATABASE {database_url.database} TO {name}",
            f"GRANT USAGE ON SCHEMA public TO {name}",
        )
    )
    try:
        yield database_url.set(username=name, password="bare-pw")
    finally:
        asyncio.run(execute(f"DROP OWNED BY {name}", f"DROP ROLE IF EXISTS {name}"))


async def test_a_read_without_select_names_the_role_table_and_grant(ungranted: URL) -> None:
    async with PostgresStorage.from_url(ungranted) as storage:
        with pytest.raises(ConfigurationError) as caught:
            await storage.load("s1")
    error = caught.value
    role = ungranted.username
    assert error.details["role"] == role and error.details["sqlstate"] == "42501"
    assert error.details["object"].startswith(("table ", "view ", "function "))
    assert f"role {role!r} lacks" in error.message
    assert "ctxstore db roles" in error.message and f"TO {role}" in error.message
    assert "bare-pw" not in error.message


async def test_a_write_without_execute_names_the_function_and_execute(ungranted: URL) -> None:
    async with PostgresStorage.from_url(ungranted) as storage:
        with pytest.raises(ConfigurationError) as caught:
            await storage.append("s1", [Message(role="user", content="x")])
    error = caught.value
    kind = error.details["object"].split(" ", 1)[0]
    assert (kind, error.details["privilege"]) in (
        ("function", "EXECUTE"),
        ("table", "SELECT, INSERT, UPDATE or DELETE (as the statement needs)"),
    )
    assert "lacks" in error.message and "GRANT <app role>" in error.message
