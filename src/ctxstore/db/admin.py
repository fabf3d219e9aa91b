"""Creating and dropping databases (demo setup and the test harness), and reading a
database's recorded roles (`ctxstore db roles`)."""

from __future__ import annotations

from sqlalchemy import URL, text
from sqlalchemy.dialects import postgresql

from ctxstore.db.engine import create_engine, normalize_url
from ctxstore.db.errors import translated
from ctxstore.db.roles import RoleNames, recorded_role_names

_PREPARER = postgresql.dialect().identifier_preparer  # type: ignore[no-untyped-call]


def quote_identifier(name: str) -> str:
    return _PREPARER.quote_identifier(name)


async def _autocommit(url: URL, *statements: tuple[str, dict[str, object]]) -> list[object]:
    engine = create_engine(url, pooled=False)
    results: list[object] = []
    try:
        async with engine.connect() as plain:
            conn = await plain.execution_options(isolation_level="AUTOCOMMIT")
            for sql, params in statements:
                result = await conn.execute(text(sql), params)
                results.append(result.scalar() if result.returns_rows else None)
    finally:
        await engine.dispose()
    return results


async def database_exists(server_url: str | URL, name: str) -> bool:
    url = normalize_url(server_url)
    with translated("checking for a database"):
        (found,) = await _autocommit(
            url, ("SELECT 1 FROM pg_database WHERE datname = :name", {"name": name})
        )
    return found is not None


async def create_database(
    server_url: str | URL, name: str, *, template: str | None = None, exist_ok: bool = False
) -> URL:
    """Create database ``name`` on the server of ``server_url``; return its URL."""
    url = normalize_url(server_url)
    if not (exist_ok and await database_exists(url, name)):
        sql = f"CREATE DATABASE {quote_identifier(name)}"
        if template:
            sql += f" TEMPLATE {quote_identifier(template)}"
        with translated("creating a database"):
            await _autocommit(url, (sql, {}))
    return url.set(database=name)


async def drop_database(server_url: str | URL, name: str) -> None:
    url = normalize_url(server_url)
    with translated("dropping a database"):
        await _autocommit(
            url, (f"DROP DATABASE IF EXISTS {quote_identifier(name)} WITH (FORCE)", {})
        )


async def drop_roles_with_prefix(server_url: str | URL, prefix: str) -> list[str]:
    """Drop the roles named ``{prefix}_*`` (test clean-up; roles are cluster-wide)."""
    url = normalize_url(server_url)
    engine = create_engine(url, pooled=False)
    dropped: list[str] = []
    try:
        async with engine.connect() as plain:
            conn = await plain.execution_options(isolation_level="AUTOCOMMIT")
            names = (
                await conn.execute(
                    text("SELECT rolname FROM pg_roles WHERE starts_with(rolname, :p)"),
                    {"p": prefix + "_"},
                )
            ).scalars()
            for name in list(names):
                await conn.execute(text(f"DROP ROLE IF EXISTS {quote_identifier(name)}"))
                dropped.append(name)
    finally:
        await engine.dispose()
    return dropped


async def database_roles(url: str | URL) -> RoleNames | None:
    """The roles revision 0008 recorded in this database (None below 0008)."""
    engine = create_engine(url, pooled=False)
    try:
        with translated("reading the database's roles"):
            async with engine.connect() as conn:
                return await conn.run_sync(recorded_role_names)
    finally:
        await engine.dispose()
