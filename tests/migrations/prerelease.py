"""Databases made two ways without the migrations: from the pre-release fixture dump and
from ``alembic/schema.sql`` applied as it stands."""

from __future__ import annotations

from pathlib import Path

import asyncpg
from alembic.util import load_python_file
from sqlalchemy import URL

from ctxstore.db.roles import RoleNames, derived_role_names
from ctxstore.settings import load_settings
from tests.migrations import prerelease_data as data

REPO = Path(__file__).resolve().parents[2]
SCHEMA_FILE = REPO / "alembic" / "schema.sql"
FIXTURE = Path(__file__).parent / "golden" / "prerelease-0026.sql"
sqlscript = load_python_file(str(REPO / "alembic" / "frozen"), "sqlscript.py")


def plain(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def role_names(url: URL) -> RoleNames:
    """The roles ``ctxstore db upgrade`` would give this database."""
    return derived_role_names(str(url.database), load_settings())


async def create_roles(connection: asyncpg.Connection, names: RoleNames) -> None:
    """As the migrations do: NOLOGIN roles, the migrating user a member of the owner,
    and only they may connect."""
    database = sqlscript.quote_identifier(await connection.fetchval("SELECT current_database()"))
    for name in names.all():
        if not await connection.fetchval("SELECT count(*) FROM pg_roles WHERE rolname = $1", name):
            await connection.execute(f"CREATE ROLE {sqlscript.quote_identifier(name)} NOLOGIN")
    owner, app, analytics = (sqlscript.quote_identifier(name) for name in names.all())
    await connection.execute(f"GRANT {owner} TO CURRENT_USER")
    await connection.execute(f"REVOKE CONNECT, TEMPORARY ON DATABASE {database} FROM PUBLIC")
    await connection.execute(f"GRANT CONNECT ON DATABASE {database} TO {owner}, {app}, {analytics}")
    await connection.execute(f"GRANT TEMPORARY ON DATABASE {database} TO {owner}, {app}")


async def restore_prerelease(url: URL) -> RoleNames:
    """The fixture dump restored into the empty database at ``url``, under its own roles:
    a database exactly as ctxstore 0.x left it at revision 0026."""
    names = role_names(url)
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    script = "\n".join(line for line in lines if not line.startswith("\\"))  # psql's own
    for kind, dumped in data.DUMP_ROLES.items():
        script = script.replace(dumped, names.of(kind))
    connection = await asyncpg.connect(plain(url))
    try:
        await create_roles(connection, names)
        async with connection.transaction():
            await connection.execute(script)
    finally:
        await connection.close()
    return names


async def apply_schema_file(url: URL, min_group_size: int = 5) -> RoleNames:
    """``alembic/schema.sql`` applied to the empty database at ``url`` as psql would."""
    names = role_names(url)
    variables: dict[str, str | int] = {
        f"{kind}_role": names.of(kind) for kind in ("owner", "app", "analytics")
    }
    variables["min_group_size"] = min_group_size
    statements = sqlscript.statements(SCHEMA_FILE.read_text(encoding="utf-8"), variables)
    connection = await asyncpg.connect(plain(url))
    try:
        await create_roles(connection, names)
        async with connection.transaction():
            for statement in statements:
                await connection.execute(statement)
    finally:
        await connection.close()
    return names
