"""Database URLs, the storage's pool and SQLAlchemy engines, with production defaults.

The storage runs every statement on a pool of asyncpg connections (:func:`create_pool`,
db/pool.py); SQLAlchemy engines (:func:`create_engine`) serve migrations, reports and
admin code.  Both take their connections' settings from one :class:`EngineSettings`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
from asyncpg import connect_utils
from sqlalchemy import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from ctxstore.db.pool import FairPool
from ctxstore.errors import ConfigurationError
from ctxstore.redaction import redact as redact  # noqa: PLC0414 - re-exported (mypy)

#: The variables' names, for messages (ctxstore.settings reads them).
DATABASE_URL_ENV = "CTXSTORE_DATABASE_URL"
#: The URL ``db`` commands and Alembic use when set: a direct connection to the primary,
#: for deployments whose service URL goes through a transaction pooler.
MIGRATION_DATABASE_URL_ENV = "CTXSTORE_MIGRATION_DATABASE_URL"
#: A streaming replica for reads that tolerate lag (analytics; PostgresStorage read_url).
REPLICA_URL_ENV = "CTXSTORE_REPLICA_DATABASE_URL"
#: ``?pooling=transaction``: the URL points at a transaction pooler (PgBouncer's
#: pool_mode=transaction).  See :func:`behind_transaction_pooler`.
POOLING_OPTION = "pooling"
_POOLING_MODES = ("transaction", "none")
_ACCEPTED_DRIVERS = {"postgresql", "postgres", "postgresql+asyncpg", "postgresql+psycopg2"}
_MAX_PORT = 65535
#: URL query options asyncpg takes as text; its other options are EngineSettings, and one
#: it does not know would fail every connect with a TypeError.  libpq's sslmode is ssl.
_URL_OPTIONS = frozenset(
    {"ssl", "host", "passfile", "target_session_attrs", "krbsrvname", "gsslib"}
    | {"prepared_statement_cache_size"}  # read by SQLAlchemy's asyncpg dialect
    | {POOLING_OPTION}  # ctxstore's own: taken off the URL by create_engine
)
_SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def normalize_url(raw: str | URL) -> URL:
    """Accept ``postgresql://``, ``postgres://`` or ``postgresql+asyncpg://``; return asyncpg."""
    try:
        url = make_url(raw) if isinstance(raw, str) else raw
    except ArgumentError:
        # Not SQLAlchemy's message: older releases quoted the whole URL, password included.
        raise ConfigurationError(
            "not a database URL: use postgresql://user:password@host:5432/dbname"
        ) from None
    except ValueError:
        # make_url's int() of the port; its message would not say which part is wrong.
        raise ConfigurationError(
            "not a database URL: its host:port can't be read, the port must be a number "
            "(postgresql://user:password@host:5432/dbname)"
        ) from None
    if url.drivername not in _ACCEPTED_DRIVERS:
        raise ConfigurationError(
            f"unsupported database URL scheme {url.drivername!r}: use postgresql:// "
            "or postgresql+asyncpg://"
        )
    if url.port is not None and not 0 < url.port <= _MAX_PORT:
        raise ConfigurationError(
            f"the database URL's port {url.port} is outside 1-{_MAX_PORT} (PostgreSQL's "
            "default is 5432)"
        )
    if url.host is not None and "@" in url.host:
        # user:p@ss@host splits at the first @: the "host" holds the password's end.
        raise ConfigurationError(
            "the database URL's host holds an @: percent-encode @ in the password as %40"
        )
    url = _password_from_query(url)
    return url.set(drivername="postgresql+asyncpg", query=_checked_options(url))


def _password_from_query(url: URL) -> URL:
    """libpq's ``?password=`` moved to the URL's password, which str(url) masks."""
    if "password" not in url.query:
        return url
    password = url.query["password"]
    if not isinstance(password, str):
        raise ConfigurationError("the database URL gives ?password= more than once: keep one")
    if url.password is not None:
        raise ConfigurationError(
            "the database URL gives a password both before its host and as ?password: keep one"
        )
    return url.difference_update_query(["password"]).set(password=password)


def _checked_options(url: URL) -> dict[str, str | tuple[str, ...]]:
    options = dict(url.query)
    if "sslmode" in options:
        if "ssl" in options:
            raise ConfigurationError("the database URL gives both ssl and sslmode: keep one")
        options["ssl"] = options.pop("sslmode")
    _refuse_unknown_options(options)
    _check_option_values(options)
    return options


def _refuse_unknown_options(options: dict[str, str | tuple[str, ...]]) -> None:
    unknown = sorted(set(options) - _URL_OPTIONS)
    if unknown:
        accepted = ", ".join(sorted(_URL_OPTIONS | {"sslmode", "password"}))
        raise ConfigurationError(
            f"unknown database URL option {unknown[0]!r}: the URL may set {accepted}; "
            "timeouts and the application name are EngineSettings"
        )


def _check_option_values(options: dict[str, str | tuple[str, ...]]) -> None:
    ssl = options.get("ssl")
    if ssl is not None and ssl not in _SSL_MODES:
        raise ConfigurationError(
            f"the database URL's sslmode must be one of {', '.join(_SSL_MODES)}, not {ssl!r}"
        )
    pooling = options.get(POOLING_OPTION)
    if pooling is not None and pooling not in _POOLING_MODES:
        raise ConfigurationError(
            f"the database URL's pooling must be one of {', '.join(_POOLING_MODES)}, "
            f"not {pooling!r}"
        )
    cache_size = options.get("prepared_statement_cache_size")
    if cache_size is not None and not (isinstance(cache_size, str) and cache_size.isdigit()):
        raise ConfigurationError(
            "the database URL's prepared_statement_cache_size must be a non-negative integer"
        )


def behind_transaction_pooler(url: URL) -> bool:
    """Whether the URL says it goes through a transaction pooler (``?pooling=transaction``).

    Then a server connection belongs to a client for one transaction only: no named
    prepared statement survives to the next one (asyncpg's statement cache and SQLAlchemy's
    are turned off; each statement is parsed in the transaction that runs it), PgBouncer
    refuses startup parameters other than application_name (so statement_timeout and
    friends must be set on the role: ``ALTER ROLE ... SET``), and session-level state such
    as the migrations' advisory lock can't be held (migrations refuse such a URL).
    """
    return url.query.get(POOLING_OPTION) == "transaction"


@dataclass(frozen=True)
class EngineSettings:
    """Engine defaults that fit a service on the request path.

    Every call is bounded: connecting (``connect_timeout``), each statement on the client
    (``command_timeout``) and on the server (``statement_timeout``), and a transaction
    left idle by a crashed worker (``idle_in_transaction_timeout``).
    """

    application_name: str = "ctxstore"
    pool_size: int = 10
    # Overflow connections are closed at checkin whenever the pool is full, so under
    # sustained load they are opened and closed per request (a backend fork each): with
    # 10 overflow, 32 busy sessions ran at a quarter of the throughput.  Size the pool.
    max_overflow: int = 0
    #: Seconds to get a connection once a caller's turn has come (waiting for the turn
    #: is bounded by the storage's operation_timeout).
    pool_timeout: float = 10.0
    #: A pooled connection idle this long is closed at the next checkout (the storage's
    #: pool); the SQLAlchemy engines recycle a connection this old.
    pool_recycle: float = 1800.0
    connect_timeout: float = 5.0
    command_timeout: float | None = 30.0
    statement_timeout_ms: int = 30_000
    lock_timeout_ms: int = 10_000
    idle_in_transaction_timeout_ms: int = 60_000
    extra_server_settings: dict[str, str] = field(default_factory=dict)
    #: Deprecated, without effect: the storage's pool pings no connection at checkout
    #: (asyncpg notices a closed socket; a read that meets a dead connection is retried).
    ping_skip_window: float | None = None

    def __post_init__(self) -> None:
        if self.ping_skip_window is not None:
            warnings.warn(
                "EngineSettings(ping_skip_window=...) has no effect any more: the storage's "
                "asyncpg pool sends no ping at checkout; drop the argument",
                DeprecationWarning,
                stacklevel=3,
            )

    def connect_args(self, *, transaction_pooler: bool = False) -> dict[str, object]:
        server_settings = {
            "application_name": self.application_name,
            "statement_timeout": str(self.statement_timeout_ms),
            "lock_timeout": str(self.lock_timeout_ms),
            "idle_in_transaction_session_timeout": str(self.idle_in_transaction_timeout_ms),
            **self.extra_server_settings,
        }
        if transaction_pooler:
            # PgBouncer passes on application_name only (others: "unsupported startup
            # parameter"); the server-side timeouts then come from the role's settings,
            # and command_timeout still bounds every call on the client.
            return {
                "timeout": self.connect_timeout,
                "command_timeout": self.command_timeout,
                "server_settings": {"application_name": self.application_name},
                # Named prepared statements live on one server connection; the next
                # transaction may get another.  Without a cache, asyncpg parses each
                # statement again in the transaction that binds it.
                "statement_cache_size": 0,
            }
        return {
            "timeout": self.connect_timeout,
            "command_timeout": self.command_timeout,
            "server_settings": server_settings,
        }


def create_engine(
    url: str | URL, settings: EngineSettings | None = None, *, pooled: bool = True
) -> AsyncEngine:
    """An SQLAlchemy AsyncEngine on asyncpg with ctxstore's defaults (see EngineSettings),
    for migrations, reports and admin code: the storage's own calls use create_pool."""
    settings = settings or EngineSettings()
    normalized = normalize_url(url)
    pooler = behind_transaction_pooler(normalized)
    normalized = normalized.difference_update_query([POOLING_OPTION])
    if pooler:  # SQLAlchemy's own statement cache too (Alembic, analytics)
        normalized = normalized.update_query_dict({"prepared_statement_cache_size": "0"})
    connect_args = settings.connect_args(transaction_pooler=pooler)
    if not pooled:
        engine = create_async_engine(
            normalized,
            poolclass=NullPool,
            connect_args=connect_args,
            hide_parameters=True,  # as below: no bound value in a log or an error
        )
    else:
        engine = create_async_engine(
            normalized,
            pool_pre_ping=True,  # not the hot path: admin calls are rare, a ping is cheap
            pool_size=settings.pool_size,
            max_overflow=settings.max_overflow,
            pool_timeout=settings.pool_timeout,
            pool_recycle=settings.pool_recycle,
            connect_args=connect_args,
            # str(engine.url) masks the password (a ?password= was moved there); never
            # echo statements.
            echo=False,
            hide_parameters=True,
        )
    return engine


def create_pool(
    url: str | URL,
    settings: EngineSettings | None = None,
    *,
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None = None,
) -> FairPool:
    """The storage's pool for ``url`` (db/pool.py): connections open on first use, up to
    pool_size + max_overflow, and one idle longer than pool_recycle is closed at the next
    checkout.

    Nothing runs at checkout or at checkin beyond what a call needs: no ping (asyncpg
    notices a closed socket, and a read that meets a dead connection is retried), and at
    checkin only a rollback of a transaction left open, not a RESET ALL / UNLISTEN round
    trip (the storage sets nothing beyond a transaction: every SET it runs is SET LOCAL).
    asyncpg keeps each connection's prepared statements (statement_cache_size), except
    behind a transaction pooler (``?pooling=transaction``), where none survives its
    transaction.  Each new connection gets the json/jsonb codecs the SQLAlchemy engines
    use (JSON text in, parsed values out), then ``init``.
    """
    settings = settings or EngineSettings()
    normalized = normalize_url(url)
    options = {
        key: value
        for key, value in normalized.query.items()
        if key not in {POOLING_OPTION, "prepared_statement_cache_size"}
    }
    connect_args = settings.connect_args(transaction_pooler=behind_transaction_pooler(normalized))
    cache_size = normalized.query.get("prepared_statement_cache_size")
    if isinstance(cache_size, str) and "statement_cache_size" not in connect_args:
        connect_args["statement_cache_size"] = int(cache_size)
    # The query's options win over the URL's parts (a ?host= socket directory), as in libpq.
    arguments = {**normalized.translate_connect_args(username="user"), **options, **connect_args}

    looked_up: dict[str, object] | None = None

    async def connect() -> asyncpg.Connection:
        nonlocal looked_up
        if looked_up is None:  # once per pool, on a worker thread: see _file_lookups
            looked_up = await asyncio.to_thread(_file_lookups, arguments)
        tried = looked_up
        try:
            connection = await asyncpg.connect(**{**arguments, **tried})
        except ConnectionError as error:
            if tried.get("ssl") in (None, False) or "rejected SSL upgrade" not in str(error):
                raise
            looked_up = {**tried, "ssl": False}  # sslmode=prefer: plain when refused
            connection = await asyncpg.connect(**{**arguments, **looked_up})
        try:
            await _prepare(init, connection)
        except BaseException:
            connection.terminate()
            raise
        return connection

    return FairPool(
        connect,
        max_size=settings.pool_size + max(settings.max_overflow, 0),
        idle_lifetime=settings.pool_recycle,
        open_timeout=settings.pool_timeout,
    )


def _file_lookups(arguments: dict[str, Any]) -> dict[str, object]:
    """What asyncpg would read from files at every connect, read once, off the event
    loop: a blocking read there stalls every task of the loop (and trips blocking-call
    checkers such as blockbuster, which langchain-core's tests run under).

    - no password: ``PGPASSWORD``, else the one the password file gives (``passfile``,
      ``PGPASSFILE`` or ``~/.pgpass``), else an empty one, so asyncpg does not look again;
    - no ``sslmode`` over TCP: libpq's default, prefer, as the SSL context asyncpg would
      build with the client certificate and key (``PGSSLCERT``, ``PGSSLKEY``, else
      ``~/.postgresql``'s) when present; ``connect``
      falls back to a plain connection when the server refuses SSL, as prefer does.

    Only for a URL that names its host and user (else asyncpg's defaults apply).
    """
    found: dict[str, object] = {}
    host = str(arguments.get("host") or "")
    if not host or not arguments.get("user"):  # asyncpg's own defaults (PGHOST, PGUSER)
        return found
    if arguments.get("password") is None:
        found["password"] = os.environ.get("PGPASSWORD") or _password_from_file(arguments) or ""
    over_tcp = not host.startswith("/")
    if arguments.get("ssl") is None and not os.environ.get("PGSSLMODE") and over_tcp:
        found["ssl"] = _prefer_context()
    return found


def _password_from_file(arguments: dict[str, Any]) -> str | None:
    passfile = arguments.get("passfile") or os.environ.get("PGPASSFILE")
    path = Path(passfile) if passfile else Path.home() / ".pgpass"
    read = getattr(connect_utils, "_read_password_from_pgpass", None)
    if read is None or not path.is_file():
        return None
    password = read(passfile=path, **_pgpass_entry(arguments))
    return password if isinstance(password, str) else None


def _pgpass_entry(arguments: dict[str, Any]) -> dict[str, Any]:
    """The connection a .pgpass line is matched against, with libpq's defaults."""
    user = str(arguments.get("user") or "")
    return {
        "hosts": [str(arguments.get("host") or "localhost")],
        "ports": [int(arguments.get("port") or 5432)],
        "database": str(arguments.get("database") or user),
        "user": user,
    }


def _prefer_context() -> ssl.SSLContext:
    """The context asyncpg builds for sslmode=prefer (no certificate check), with the
    client certificate and key it would load."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        folder = Path.home() / ".postgresql"
    except (RuntimeError, KeyError):  # no home directory: asyncpg looks for none either
        return context
    certificate = Path(os.environ.get("PGSSLCERT") or folder / "postgresql.crt")
    key = Path(os.environ.get("PGSSLKEY") or folder / "postgresql.key")
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        context.load_cert_chain(certificate, keyfile=key if key.exists() else None)
    return context


async def learn_types(connection: asyncpg.Connection, type_names: Sequence[str]) -> None:
    """Have asyncpg learn ``type_names`` (composite types a statement takes) now, in one
    transaction; a type the schema lacks yet (a revision before it) is left to be learnt
    when a statement meets it.

    asyncpg learns a type it has no codec for with an introspection query, JIT switched
    off around it by two more statements (the query takes a second or more to compile on
    two cores).  Behind a transaction pooler the three would go to three server
    connections, leaving JIT off on one and compiling the query on another, at a turn's
    first append; in a transaction they share one.
    """
    for name in type_names:
        try:
            async with connection.transaction():
                await connection.fetchval(f"SELECT $1::{name}[] IS NULL", None)
        except (asyncpg.UndefinedObjectError, asyncpg.InsufficientPrivilegeError):
            continue


async def _prepare(
    init: Callable[[asyncpg.Connection], Awaitable[None]] | None, connection: asyncpg.Connection
) -> None:
    """json and jsonb as SQLAlchemy's asyncpg dialect exchanges them (binary, JSON text
    in, ``json.loads`` out), so a value reads the same through either."""
    await connection.set_type_codec(
        "json",
        encoder=str.encode,
        decoder=lambda data: json.loads(data.decode()),
        schema="pg_catalog",
        format="binary",
    )
    await connection.set_type_codec(
        "jsonb",
        encoder=lambda text: b"\x01" + text.encode(),  # jsonb's binary format version
        decoder=lambda data: json.loads(data[1:].decode()),
        schema="pg_catalog",
        format="binary",
    )
    if init is not None:
        await init(connection)
