"""The service's settings, from ctxstore's Settings (each worker process loads them
itself, at its entry: ``app_from_environment``).

``ctxstore serve`` exports the options it was given as the variables they stand for
before the server starts, so one process or several read the same configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import URL

from ctxstore.db.engine import EngineSettings, normalize_url
from ctxstore.encryption import Encryption
from ctxstore.http.auth import TokenRegistry
from ctxstore.settings import DEFAULT_MAX_BODY, Settings
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.tokens import DEFAULT_ENCODING, TokenCounter


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
    encryption: Encryption | None = None
    #: One line per request (method, route template, status, time, token name).
    access_log: bool = True
    #: Messages in one write request (413 past it).
    max_messages: int = 2000
    #: The encoding stored token counts are made with (CTXSTORE_TOKEN_ENCODING).
    token_encoding: str = DEFAULT_ENCODING
    #: Seconds a request body may go without a byte (408 past it).
    body_timeout: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings) -> HttpSettings:
        ttl = settings.http_session_ttl_seconds
        return cls(
            database_url=normalize_url(settings.database_url_for()),
            tokens=TokenRegistry.from_settings(settings),
            max_body_bytes=settings.http_max_body_bytes,
            pool_size=settings.http_pool_size,
            operation_timeout=settings.http_operation_timeout,
            retry_after=settings.http_retry_after,
            session_ttl=timedelta(seconds=ttl) if ttl else None,
            encryption=Encryption.from_settings(settings)
            if settings.encryption_configured
            else None,
            access_log=settings.http_access_log,
            max_messages=settings.http_max_messages,
            token_encoding=settings.token_encoding,
            body_timeout=settings.http_body_timeout,
        )

    def open_store(self) -> PostgresStorage:
        """The store the service runs on (its engine is created here, connected lazily)."""
        return PostgresStorage.from_url(
            self.database_url,
            settings=EngineSettings(application_name="ctxstore-http", pool_size=self.pool_size),
            ttl=self.session_ttl,
            operation_timeout=self.operation_timeout,
            encryption=self.encryption,
            token_counter=TokenCounter(self.token_encoding),
        )
