"""ctxstore's configuration: every ``CTXSTORE_*`` environment variable, read here only.

:func:`load_settings` reads the environment once, at an entry point (the ``ctxstore``
command, each ``ctxstore serve`` worker, Alembic's env.py), and validates every value: a
bad one is a :class:`~ctxstore.errors.ConfigurationError` naming the variable.  Library
objects never read the environment; they take these values as explicit parameters.
docs/configuration.md is generated from this model: ``python -m ctxstore.settings``.
"""

from __future__ import annotations

import math
import re
import sys
from datetime import timedelta
from typing import Any, ClassVar

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from ctxstore.errors import ConfigurationError

PREFIX = "CTXSTORE_"
DEFAULT_ROLE_PREFIX = "ctxstore"
#: A request body the service reads at most: 4 MiB keeps the largest write near 60 ms of
#: one worker's CPU (benchmarks/bench_http_fairness.py).
DEFAULT_MAX_BODY = 4 * 1024 * 1024
#: Where ``ctxstore serve`` listens unless told: this machine only.
DEFAULT_HOST = "127.0.0.1"
PORT_RANGE = (1, 65535)
DEFAULT_MIN_GROUP_SIZE = 5
MIN_GROUP_SIZE_RANGE = (2, 1_000_000)
#: PostgreSQL's identifier limit (NAMEDATALEN - 1).
MAX_NAME_LENGTH = 63

_ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_ON = {"1", "true", "on", "yes"}
_OFF = {"", "0", "false", "off", "no"}
#: Settings in seconds that may have a fraction; the other positive numbers are whole.
_FRACTIONAL = frozenset({"http_operation_timeout", "http_head_timeout", "http_body_timeout"})
#: The values of the service's log settings (ctxstore.http.logs reads them).
_LOG_CHOICES = {
    "http_log_format": ("text", "json"),
    "http_log_level": ("debug", "info", "warning", "error"),
}


def validate_role_name(name: str, source: str) -> str:
    """``name`` if it is a plain role name ctxstore may use, else ConfigurationError."""
    if not _ROLE_NAME.fullmatch(name):
        raise ConfigurationError(
            f"role name {name!r} ({source}): use lower-case letters, digits and _, "
            f"starting with a letter or _, at most {MAX_NAME_LENGTH} characters"
        )
    if name.startswith("pg_"):
        raise ConfigurationError(
            f"role name {name!r} ({source}): names starting with pg_ are PostgreSQL's own "
            "(predefined roles such as pg_read_all_data); choose another"
        )
    return name


def _variable(name: str, description: str, default: Any = None) -> Any:
    return Field(default=default, validation_alias=PREFIX + name, description=description)


class Settings(BaseSettings):
    """Every ``CTXSTORE_*`` variable, typed.  :func:`load_settings` reads the environment;
    ``Settings(field=value, ...)`` takes only what it is given (the defaults otherwise)."""

    # Exact names, as before (no lower-case spellings); no .env file, no secrets folder.
    model_config = SettingsConfigDict(
        case_sensitive=True, populate_by_name=True, frozen=True, extra="ignore"
    )
    _from_environment: ClassVar[bool] = False

    database_url: str | None = _variable(
        "DATABASE_URL",
        "The PostgreSQL URL of every command and of the service "
        "(postgresql://user:password@host:5432/dbname); --database-url wins.",
    )
    migration_database_url: str | None = _variable(
        "MIGRATION_DATABASE_URL",
        "The URL `ctxstore db` and Alembic use first: a direct connection to the primary "
        "when the service's URL goes through a transaction pooler.",
    )
    replica_database_url: str | None = _variable(
        "REPLICA_DATABASE_URL",
        "A streaming replica `ctxstore analytics` reads from (default of --replica-url).",
    )
    migration_lock_timeout: str | None = _variable(
        "MIGRATION_LOCK_TIMEOUT",
        "How long a migration's DDL waits for a table lock before failing (5s); "
        "--lock-timeout wins.",
    )
    role_prefix: str = _variable(
        "ROLE_PREFIX",
        "The first part of the role names a migration derives, "
        "prefix_database_owner, _app and _analytics.",
        DEFAULT_ROLE_PREFIX,
    )
    owner_role: str | None = _variable("OWNER_ROLE", "Names the owner role outright.")
    app_role: str | None = _variable("APP_ROLE", "Names the app role outright.")
    analytics_role: str | None = _variable("ANALYTICS_ROLE", "Names the analytics role outright.")
    adopt_existing_roles: bool = _variable(
        "ADOPT_EXISTING_ROLES",
        "1: a migration takes over existing roles that fail the harmlessness check.",
        False,
    )
    analytics_min_group_size: int = _variable(
        "ANALYTICS_MIN_GROUP_SIZE",
        "How many consultations a free-text value needs to show in analytics, as the "
        "baseline revision records it (2 to 1,000,000; later: `ctxstore db min-group-size K`).",
        DEFAULT_MIN_GROUP_SIZE,
    )
    backup_retention_days: int | None = _variable(
        "BACKUP_RETENTION_DAYS",
        "How many days the database's backups are kept: `erase-user` receipts then say "
        "until when backups taken before an erasure still hold the user (unset: no date).",
    )
    master_keys: SecretStr | None = _variable(
        "MASTER_KEYS",
        "Master keys of encryption at rest, id:base64key[,...] (the first current).",
    )
    master_keys_file: str | None = _variable(
        "MASTER_KEYS_FILE", "A file holding the master keys, when CTXSTORE_MASTER_KEYS is unset."
    )
    key_provider: str | None = _variable(
        "KEY_PROVIDER",
        "module:factory of a KeyProvider (e.g. a KMS), called with no arguments; instead of "
        "the master key variables.",
    )
    accept_plaintext: bool = _variable(
        "ACCEPT_PLAINTEXT",
        "1: with encryption on, read plaintext rows as genuine (only while data written "
        "before encryption remains; `rotate-keys --reencrypt --seal-plaintext` seals it).",
        False,
    )
    token_encoding: str = _variable(
        "TOKEN_ENCODING",
        "The tiktoken encoding stored token counts are made with: o200k_base for GPT-4o and "
        "later models (then run `ctxstore recount`), cl100k_base for GPT-4.",
        "cl100k_base",
    )
    telemetry: bool = _variable(
        "TELEMETRY", "1: OpenTelemetry spans and metrics of storage calls (0/off: none).", False
    )
    telemetry_key: SecretStr | None = _variable(
        "TELEMETRY_KEY",
        "HMAC key (hex, at least 32 digits) of the ids telemetry exports (default: random "
        "per process).",
    )
    http_host: str = _variable(
        "HTTP_HOST",
        "The address `ctxstore serve` binds (0.0.0.0: every IPv4 interface, as in a "
        "container); --host wins.",
        DEFAULT_HOST,
    )
    http_port: int = _variable(
        "HTTP_PORT", "The port `ctxstore serve` listens on (1 to 65535); --port wins.", 8080
    )
    http_workers: int = _variable(
        "HTTP_WORKERS",
        "Processes of `ctxstore serve` sharing the socket, each with its own pool of "
        "CTXSTORE_HTTP_POOL_SIZE connections; --workers wins.",
        1,
    )
    http_graceful_timeout: int = _variable(
        "HTTP_GRACEFUL_TIMEOUT",
        "Seconds SIGTERM lets the requests in flight finish before the service stops "
        "(give a container's stop timeout a few seconds more); --graceful-timeout wins.",
        30,
    )
    http_keep_alive: int = _variable(
        "HTTP_KEEP_ALIVE",
        "Seconds an idle keep-alive connection stays open: keep a client's idle timeout "
        "below it (75, as nginx's; Go's default is 90); --keep-alive wins.",
        75,
    )
    http_ssl_certfile: str | None = _variable(
        "HTTP_SSL_CERTFILE",
        "A TLS certificate chain (PEM): the service serves HTTPS, with "
        "CTXSTORE_HTTP_SSL_KEYFILE; --ssl-certfile wins.",
    )
    http_ssl_keyfile: str | None = _variable(
        "HTTP_SSL_KEYFILE",
        "The TLS private key (PEM) of CTXSTORE_HTTP_SSL_CERTFILE; --ssl-keyfile wins.",
    )
    http_ssl_ca_certs: str | None = _variable(
        "HTTP_SSL_CA_CERTS",
        "CA certificates (PEM): every client must present a certificate one of them "
        "signed (mutual TLS); --ssl-ca-certs wins.",
    )
    http_tokens: SecretStr | None = _variable(
        "HTTP_TOKENS", "The service's token grants, one a line (; also separates)."
    )
    http_tokens_file: str | None = _variable(
        "HTTP_TOKENS_FILE",
        "A file of token grants, when CTXSTORE_HTTP_TOKENS is unset; --tokens-file wins.",
    )
    http_max_body_bytes: int = _variable(
        "HTTP_MAX_BODY_BYTES",
        "Request bodies above this many bytes are refused with 413; --max-body-bytes wins.",
        DEFAULT_MAX_BODY,
    )
    http_pool_size: int = _variable(
        "HTTP_POOL_SIZE", "PostgreSQL connections per service worker; --pool-size wins.", 10
    )
    http_operation_timeout: float = _variable(
        "HTTP_OPERATION_TIMEOUT", "Seconds a storage call may take before a 503.", 10.0
    )
    http_retry_after: int = _variable("HTTP_RETRY_AFTER", "The Retry-After of a 503 (s).", 2)
    http_session_ttl_seconds: int | None = _variable(
        "HTTP_SESSION_TTL_SECONDS",
        "Sessions the service writes expire this long after their last write (unset: never).",
    )
    http_access_log: bool = _variable(
        "HTTP_ACCESS_LOG", "0: no log line per request (so does --no-access-log).", True
    )
    http_log_format: str = _variable(
        "HTTP_LOG_FORMAT",
        "How the service logs: text, one readable line per record, or json, one JSON "
        "object per line (time, level, logger, message, request_id, the access fields); "
        "--log-format wins.",
        "text",
    )
    http_log_level: str = _variable(
        "HTTP_LOG_LEVEL",
        "The service's and uvicorn's log level: debug, info, warning (no access lines) "
        "or error; the libraries' stay at warning at least; --log-level wins.",
        "info",
    )
    http_max_messages: int = _variable(
        "HTTP_MAX_MESSAGES",
        "Messages in one write request; more is refused with 413 (bounds one request's CPU).",
        2000,
    )
    http_max_request_line: int = _variable(
        "HTTP_MAX_REQUEST_LINE",
        "Bytes of a request's target (path and query) before a 414, unread further.",
        8192,
    )
    http_max_headers: int = _variable(
        "HTTP_MAX_HEADERS", "Header fields in one request before a 431.", 100
    )
    http_max_header_bytes: int = _variable(
        "HTTP_MAX_HEADER_BYTES",
        "Bytes of a request's head (request line and headers) before a 431, unread further.",
        32768,
    )
    http_head_timeout: float = _variable(
        "HTTP_HEAD_TIMEOUT",
        "Seconds a connection has to send a whole request head (its first, and each later "
        "one from its first byte) before a 408 and close.",
        10.0,
    )
    http_body_timeout: float = _variable(
        "HTTP_BODY_TIMEOUT",
        "Seconds a request body may go without a byte arriving before a 408 and close.",
        10.0,
    )
    http_max_connections: int = _variable(
        "HTTP_MAX_CONNECTIONS",
        "Open connections per worker; one more is closed before a byte is read.",
        1000,
    )

    @field_validator(
        "database_url",
        "migration_database_url",
        "replica_database_url",
        "migration_lock_timeout",
        "master_keys",
        "master_keys_file",
        "key_provider",
        "telemetry_key",
        "http_tokens",
        "http_tokens_file",
        "http_ssl_certfile",
        "http_ssl_keyfile",
        "http_ssl_ca_certs",
        mode="before",
    )
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("role_prefix", "owner_role", "app_role", "analytics_role", mode="before")
    @classmethod
    def _role_name(cls, value: Any, info: Any) -> Any:
        return value if value is None else validate_role_name(value, _name_of(info.field_name))

    @field_validator("adopt_existing_roles", mode="before")
    @classmethod
    def _adopt(cls, value: Any, info: Any) -> Any:
        return _switch(value, info, "{name}={value!r}: use 1 (adopt existing roles) or 0")

    @field_validator("token_encoding", mode="before")
    @classmethod
    def _token_encoding(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return "cl100k_base"
        import tiktoken  # noqa: PLC0415 - only when the variable is set

        known = sorted(tiktoken.list_encoding_names())
        if value not in known:
            raise ConfigurationError(
                f"{PREFIX}TOKEN_ENCODING={value[:40]!r} is not a tiktoken encoding: use one "
                f"of {', '.join(known)}"
            )
        return value

    @field_validator("telemetry", mode="before")
    @classmethod
    def _telemetry(cls, value: Any, info: Any) -> Any:
        return _switch(value, info, "{name} must be 1 or 0 (on/off), not {value!r}", shown=20)

    @field_validator("analytics_min_group_size", mode="before")
    @classmethod
    def _min_group_size(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return DEFAULT_MIN_GROUP_SIZE
        low, high = MIN_GROUP_SIZE_RANGE
        try:
            number = int(value.strip())
        except ValueError:
            number = 0
        if not low <= number <= high:
            raise ConfigurationError(
                f"{PREFIX}ANALYTICS_MIN_GROUP_SIZE={value.strip()!r}: use a whole number from "
                f"{low} to {high:,} (the fewest consultations a free-text value must have to "
                f"show; default {DEFAULT_MIN_GROUP_SIZE})"
            )
        return number

    @field_validator("telemetry_key", mode="after")
    @classmethod
    def _hex_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            try:
                bytes.fromhex(value.get_secret_value().strip())
            except ValueError:
                raise ConfigurationError(
                    f"{PREFIX}TELEMETRY_KEY must be hex digits (its value not shown)"
                ) from None
        return value

    @field_validator(
        "http_workers",
        "http_graceful_timeout",
        "http_keep_alive",
        "http_max_body_bytes",
        "http_pool_size",
        "http_operation_timeout",
        "http_retry_after",
        "http_session_ttl_seconds",
        "http_max_messages",
        "http_max_request_line",
        "http_max_headers",
        "http_max_header_bytes",
        "http_head_timeout",
        "http_body_timeout",
        "http_max_connections",
        "backup_retention_days",
        mode="before",
    )
    @classmethod
    def _positive(cls, value: Any, info: Any) -> Any:
        if not isinstance(value, str):
            return value
        name = _name_of(info.field_name)
        if not value.strip():
            return cls.model_fields[info.field_name].default
        try:
            number = float(value.strip())
        except ValueError:
            number = 0.0
        if not (number > 0 and math.isfinite(number)):
            raise ConfigurationError(f"{name} must be a positive number, not {value.strip()!r}")
        if info.field_name in _FRACTIONAL:
            return number
        if number != int(number):
            raise ConfigurationError(f"{name} must be a whole number, not {number}")
        return int(number)

    @field_validator("http_host", mode="before")
    @classmethod
    def _host(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        host = value.strip()
        if not host:
            return DEFAULT_HOST
        if any(character.isspace() for character in host):
            raise ConfigurationError(
                f"{PREFIX}HTTP_HOST={host[:40]!r}: use one address to bind (an IP address "
                "such as 0.0.0.0 or ::, or a host name), without spaces"
            )
        return host

    @field_validator("http_port", mode="before")
    @classmethod
    def _port(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        if not value.strip():
            return cls.model_fields["http_port"].default
        low, high = PORT_RANGE
        try:
            number = int(value.strip())
        except ValueError:
            number = 0
        if not low <= number <= high:
            raise ConfigurationError(
                f"{PREFIX}HTTP_PORT={value.strip()[:20]!r}: use a port number from {low} to {high}"
            )
        return number

    @field_validator("http_access_log", mode="before")
    @classmethod
    def _access_log(cls, value: Any) -> Any:
        return value.strip() != "0" if isinstance(value, str) else value

    @field_validator("http_log_format", "http_log_level", mode="before")
    @classmethod
    def _one_of(cls, value: Any, info: Any) -> Any:
        if not isinstance(value, str):
            return value
        word = value.strip().lower()
        if not word:
            return cls.model_fields[info.field_name].default
        allowed = _LOG_CHOICES[info.field_name]
        if word not in allowed:
            raise ConfigurationError(
                f"{_name_of(info.field_name)}={word[:20]!r}: use one of {', '.join(allowed)}"
            )
        return word

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only what the caller passes, unless load_settings builds them: settings built
        # in code never read the environment.
        return (init_settings, env_settings) if cls._from_environment else (init_settings,)

    # -- what the values mean ------------------------------------------------------------------

    @property
    def telemetry_key_bytes(self) -> bytes | None:
        """The telemetry key as bytes (None: random per process)."""
        if self.telemetry_key is None:
            return None
        return bytes.fromhex(self.telemetry_key.get_secret_value().strip())

    @property
    def backup_retention(self) -> timedelta | None:
        """CTXSTORE_BACKUP_RETENTION_DAYS as a duration (None: unset)."""
        days = self.backup_retention_days
        return timedelta(days=days) if days is not None else None

    @property
    def encryption_configured(self) -> bool:
        """Whether a master key or a key provider is configured (the service then
        encrypts at rest)."""
        return (
            self.master_keys is not None
            or self.master_keys_file is not None
            or self.key_provider is not None
        )

    def replaced(self, changes: dict[str, str]) -> Settings:
        """These settings with ``changes`` (field name: text, as in the environment) over
        them, validated as the environment's values are."""
        if not changes:
            return self
        current = {name: getattr(self, name) for name in type(self).model_fields}
        try:
            return Settings(**{**current, **changes})
        except ValidationError as error:
            raise _configuration_error(error) from None

    def database_url_for(self, explicit: str | None = None, *, migrating: bool = False) -> str:
        """The URL a command connects to: ``explicit`` (its --database-url), else for
        ``migrating`` CTXSTORE_MIGRATION_DATABASE_URL, else CTXSTORE_DATABASE_URL."""
        raw = explicit or (self.migration_database_url if migrating else None)
        raw = raw or self.database_url
        if not raw:
            raise ConfigurationError(
                f"no database URL: pass --database-url or set {PREFIX}DATABASE_URL "
                "(postgresql://user:password@host:5432/dbname)"
            )
        return raw


def _name_of(field: str) -> str:
    return PREFIX + field.upper()


def _switch(value: Any, info: Any, refusal: str, *, shown: int | None = None) -> Any:
    """1/true/on/yes or 0/false/off/no (or empty); ``refusal`` formats the error."""
    if not isinstance(value, str):
        return value
    word = value.strip().lower()
    if word in _OFF:
        return False
    if word in _ON:
        return True
    raise ConfigurationError(refusal.format(name=_name_of(info.field_name), value=word[:shown]))


class _Environment(Settings):
    _from_environment: ClassVar[bool] = True


def load_settings() -> Settings:
    """The settings from the environment, validated (ConfigurationError names a bad one)."""
    try:
        return _Environment()
    except ValidationError as error:
        raise _configuration_error(error) from None


def _configuration_error(error: ValidationError) -> ConfigurationError:
    """A type the validators above let through, as ctxstore's error naming the variable."""
    first = error.errors()[0]
    name = str(first["loc"][0]) if first["loc"] else "a CTXSTORE_ variable"
    return ConfigurationError(f"{name}: {first['msg']}")


def reference() -> str:
    """docs/configuration.md: one row per variable, from the model."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from ctxstore.settings: python -m ctxstore.settings > "
        "docs/configuration.md -->",
        "",
        "Every environment variable ctxstore reads. The `ctxstore` command, each "
        "`ctxstore serve` worker and Alembic's env.py read them once, at their start; "
        "library objects take the same values as parameters "
        "(`ctxstore.settings.load_settings()` reads them for your own entry point). "
        "An invalid value is a `ConfigurationError` naming the variable.",
        "",
        "| variable | type | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        kind = _type_name(field.annotation)
        default = "unset" if field.default is None else f"`{_shown(field.default)}`"
        lines.append(f"| `{_name_of(name)}` | {kind} | {default} | {field.description} |")
    return "\n".join(lines) + "\n"


def _type_name(annotation: Any) -> str:
    text = str(annotation).replace("pydantic.types.", "").replace("<class '", "")
    text = text.replace("'>", "").replace(" | None", "")
    return {"bool": "1 or 0", "SecretStr": "secret text", "str": "text"}.get(text, text)


def _shown(value: Any) -> str:
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


if __name__ == "__main__":
    sys.stdout.write(reference())
