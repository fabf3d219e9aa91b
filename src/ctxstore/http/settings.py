"""The service's settings, from the environment (each worker process reads them itself).

``ctxstore serve`` turns its options into these variables before the server starts, so
one process or several read the same configuration.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import URL

from ctxstore.db.engine import EngineSettings, url_from_environment
from ctxstore.encryption import MASTER_KEYS_ENV, MASTER_KEYS_FILE_ENV, Encryption
from ctxstore.errors import ConfigurationError
from ctxstore.http.auth import TokenRegistry
from ctxstore.storage.postgres import PostgresStorage

MAX_BODY_ENV = "CTXSTORE_HTTP_MAX_BODY_BYTES"
POOL_SIZE_ENV = "CTXSTORE_HTTP_POOL_SIZE"
TIMEOUT_ENV = "CTXSTORE_HTTP_OPERATION_TIMEOUT"
RETRY_AFTER_ENV = "CTXSTORE_HTTP_RETRY_AFTER"
TTL_ENV = "CTXSTORE_HTTP_SESSION_TTL_SECONDS"
ACCESS_LOG_ENV = "CTXSTORE_HTTP_ACCESS_LOG"

DEFAULT_MAX_BODY = 16 * 1024 * 1024


@dataclass(frozen=True)
class HttpSettings:
    database_url: URL
    tokens: TokenRegistry
    #: Request bodies above this many bytes are refused with 413 before they are parsed.
    max_body_bytes: int = DEFAULT_MAX_BODY
    #: PostgreSQL connections per worker process.
    pool_size: int = 10
    #: No storage call takes longer (seconds): 503 instead.
    operation_timeout: float = 10.0
    #: Seconds a 503 asks the client to wait (``Retry-After``).
    retry_after: int = 2
    #: Sessions expire this long after their last message write (None: never).
    session_ttl: timedelta | None = None
    #: Encryption at rest, when a master key is configured.
    encryption: bool = False
    #: One line per request (method, route template, status, time, token name).
    access_log: bool = True

    @classmethod
    def from_environment(cls) -> HttpSettings:
        ttl = _positive_int(TTL_ENV, 0)
        return cls(
            database_url=url_from_environment(),
            tokens=TokenRegistry.from_environment(),
            max_body_bytes=_positive_int(MAX_BODY_ENV, DEFAULT_MAX_BODY),
            pool_size=_positive_int(POOL_SIZE_ENV, 10),
            operation_timeout=_positive(TIMEOUT_ENV) or 10.0,
            retry_after=_positive_int(RETRY_AFTER_ENV, 2),
            session_ttl=timedelta(seconds=ttl) if ttl else None,
            encryption=bool(
                os.environ.get(MASTER_KEYS_ENV) or os.environ.get(MASTER_KEYS_FILE_ENV)
            ),
            access_log=os.environ.get(ACCESS_LOG_ENV, "1").strip() != "0",
        )

    def open_store(self) -> PostgresStorage:
        """The store the service runs on (its engine is created here, connected lazily)."""
        return PostgresStorage.from_url(
            self.database_url,
            settings=EngineSettings(application_name="ctxstore-http", pool_size=self.pool_size),
            ttl=self.session_ttl,
            operation_timeout=self.operation_timeout,
            encryption=Encryption.from_environment() if self.encryption else None,
        )


def _positive(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not (value > 0 and math.isfinite(value)):
        raise ConfigurationError(f"{name} must be a positive number, not {raw!r}")
    return value


def _positive_int(name: str, default: int) -> int:
    value = _positive(name)
    if value is None:
        return default
    if value != int(value):
        raise ConfigurationError(f"{name} must be a whole number, not {value}")
    return int(value)
