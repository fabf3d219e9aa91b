"""Database URLs and engines with production defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util.concurrency import await_only

from ctxstore.errors import ConfigurationError

DATABASE_URL_ENV = "CTXSTORE_DATABASE_URL"
_ACCEPTED_DRIVERS = {"postgresql", "postgres", "postgresql+asyncpg", "postgresql+psycopg2"}


def normalize_url(raw: str | URL) -> URL:
    """Accept ``postgresql://``, ``postgres://`` or ``postgresql+asyncpg://``; return asyncpg."""
    try:
        url = make_url(raw) if isinstance(raw, str) else raw
    except ArgumentError as error:
        raise ConfigurationError(f"not a database URL: {error}") from None
    if url.drivername not in _ACCEPTED_DRIVERS:
        raise ConfigurationError(
            f"unsupported database URL scheme {url.drivername!r}: use postgresql:// "
            "or postgresql+asyncpg://"
        )
    return url.set(drivername="postgresql+asyncpg")


def redact(url: str | URL) -> str:
    """The URL as text with any password replaced by ***; safe to print and log."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<unparseable database URL>"
    return parsed.render_as_string(hide_password=True)


def url_from_environment(explicit: str | None = None) -> URL:
    """The database URL from an explicit value, else ``CTXSTORE_DATABASE_URL``."""
    raw = explicit or os.environ.get(DATABASE_URL_ENV)
    if not raw:
        raise ConfigurationError(
            f"no database URL: pass --database-url or set {DATABASE_URL_ENV} "
            "(postgresql://user:password@host:5432/dbname)"
        )
    return normalize_url(raw)


@dataclass(frozen=True)
class EngineSettings:
    """Engine defaults that fit a service on the request path.

    Every call is bounded: connecting (``connect_timeout``), each statement on the client
    (``command_timeout``) and on the server (``statement_timeout``), and a transaction
    left idle by a crashed worker (``idle_in_transaction_timeout``).
    """

    application_name: str = "ctxstore"
    pool_size: int = 10
    max_overflow: int = 10
    pool_timeout: float = 10.0
    pool_recycle: float = 1800.0
    connect_timeout: float = 5.0
    command_timeout: float | None = 30.0
    statement_timeout_ms: int = 30_000
    lock_timeout_ms: int = 10_000
    idle_in_transaction_timeout_ms: int = 60_000
    extra_server_settings: dict[str, str] = field(default_factory=dict)

    def connect_args(self) -> dict[str, object]:
        server_settings = {
            "application_name": self.application_name,
            "statement_timeout": str(self.statement_timeout_ms),
            "lock_timeout": str(self.lock_timeout_ms),
            "idle_in_transaction_session_timeout": str(self.idle_in_transaction_timeout_ms),
            **self.extra_server_settings,
        }
        return {
            "timeout": self.connect_timeout,
            "command_timeout": self.command_timeout,
            "server_settings": server_settings,
        }


def create_engine(
    url: str | URL, settings: EngineSettings | None = None, *, pooled: bool = True
) -> AsyncEngine:
    """An AsyncEngine on asyncpg with ctxstore's defaults (see EngineSettings)."""
    settings = settings or EngineSettings()
    normalized = normalize_url(url)
    if not pooled:
        return create_async_engine(
            normalized, poolclass=NullPool, connect_args=settings.connect_args()
        )
    engine = create_async_engine(
        normalized,
        pool_pre_ping=True,
        pool_size=settings.pool_size,
        max_overflow=settings.max_overflow,
        pool_timeout=settings.pool_timeout,
        pool_recycle=settings.pool_recycle,
        connect_args=settings.connect_args(),
        # SQLAlchemy logs the URL with the password hidden; never echo statements.
        echo=False,
        hide_parameters=True,
    )
    # SQLAlchemy's asyncpg ping wraps ";" in BEGIN/ROLLBACK (for pgbouncer), three round
    # trips on every checkout; a bare ";" proves the connection alive in one.
    engine.sync_engine.dialect.do_ping = _one_round_trip_ping  # type: ignore[method-assign]
    return engine


def _one_round_trip_ping(dbapi_connection: Any) -> bool:
    try:
        await_only(dbapi_connection._connection.fetchrow(";"))
    except Exception as error:
        # Raises the DBAPI error the pool expects, so a dead connection is replaced.
        dbapi_connection._handle_exception(error)
    return True
