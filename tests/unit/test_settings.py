"""ctxstore.settings: every CTXSTORE_* variable read there, validated once, documented."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest

from ctxstore import settings as settings_module
from ctxstore.errors import ConfigurationError
from ctxstore.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "configuration.md"


@pytest.fixture(autouse=True)
def no_ctxstore_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    import os  # noqa: PLC0415

    for name in list(os.environ):
        if name.startswith("CTXSTORE_") and not name.startswith("CTXSTORE_TEST"):
            monkeypatch.delenv(name)


def test_the_reference_is_up_to_date() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == settings_module.reference(), (
        "docs/configuration.md is stale: run `python -m ctxstore.settings > docs/configuration.md`"
    )


def _reads_only_libpq_variables(line: str) -> bool:
    """Every variable the line reads is libpq's (``os.environ.get("PGPASSWORD")``)."""
    names = re.findall(r"(?:os\.environ\.get|getenv)\(\s*\"([A-Z_]+)\"", line)
    bare = re.findall(r"os\.environ\b(?!\.get\()", line)
    return bool(names) and not bare and all(name.startswith("PG") for name in names)


def test_src_reads_no_ctxstore_variable_elsewhere() -> None:
    readers = re.compile(r"os\.environ\b|getenv\(")
    found = []
    for path in sorted((ROOT / "src" / "ctxstore").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if readers.search(line) and not _reads_only_libpq_variables(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    # server.py writes the serve options for its workers; metrics reads prometheus_client's
    # own PROMETHEUS_MULTIPROC_DIR: neither is a CTXSTORE_* read.  The pool reads libpq's
    # PG* variables as asyncpg would (db/engine.py), never a CTXSTORE_* one.
    allowed = ("src/ctxstore/http/server.py", "src/ctxstore/http/metrics.py")
    assert [line for line in found if not line.startswith(allowed)] == []


def test_every_variable_has_its_documented_name() -> None:
    names = {str(field.validation_alias) for field in Settings.model_fields.values()}
    assert len(names) == 43 and all(name.startswith("CTXSTORE_") for name in names)


def test_values_are_typed_and_defaults_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    defaults = load_settings()
    assert defaults.http_pool_size == 10 and defaults.http_access_log is True
    assert defaults.role_prefix == "ctxstore" and defaults.telemetry is False
    monkeypatch.setenv("CTXSTORE_HTTP_POOL_SIZE", "3")
    monkeypatch.setenv("CTXSTORE_HTTP_ACCESS_LOG", "0")
    monkeypatch.setenv("CTXSTORE_TELEMETRY", "on")
    monkeypatch.setenv("CTXSTORE_DATABASE_URL", "  ")  # blank: unset, as before
    loaded = load_settings()
    assert (loaded.http_pool_size, loaded.http_access_log, loaded.telemetry) == (3, False, True)
    assert loaded.database_url is None
    assert Settings().http_pool_size == 10  # built in code: the environment is not read
    assert defaults.backup_retention is None
    monkeypatch.setenv("CTXSTORE_BACKUP_RETENTION_DAYS", "35")
    assert load_settings().backup_retention == timedelta(days=35)
    assert defaults.token_encoding == "cl100k_base"
    monkeypatch.setenv("CTXSTORE_TOKEN_ENCODING", "o200k_base")
    assert load_settings().token_encoding == "o200k_base"
    assert (defaults.http_log_format, defaults.http_log_level) == ("text", "info")
    monkeypatch.setenv("CTXSTORE_HTTP_LOG_FORMAT", " JSON ")
    monkeypatch.setenv("CTXSTORE_HTTP_LOG_LEVEL", "Warning")
    loaded = load_settings()
    assert (loaded.http_log_format, loaded.http_log_level) == ("json", "warning")


#: Each of serve's options as a variable: a value, and what the setting reads from it.
SERVE_VARIABLES = [
    ("CTXSTORE_HTTP_HOST", " 0.0.0.0 ", "http_host", "0.0.0.0"),
    ("CTXSTORE_HTTP_PORT", "9090", "http_port", 9090),
    ("CTXSTORE_HTTP_WORKERS", "4", "http_workers", 4),
    ("CTXSTORE_HTTP_GRACEFUL_TIMEOUT", "45", "http_graceful_timeout", 45),
    ("CTXSTORE_HTTP_KEEP_ALIVE", "20", "http_keep_alive", 20),
    ("CTXSTORE_HTTP_SSL_CERTFILE", "/tls/tls.crt", "http_ssl_certfile", "/tls/tls.crt"),
    ("CTXSTORE_HTTP_SSL_KEYFILE", "/tls/tls.key", "http_ssl_keyfile", "/tls/tls.key"),
    ("CTXSTORE_HTTP_SSL_CA_CERTS", "/tls/ca.crt", "http_ssl_ca_certs", "/tls/ca.crt"),
]


@pytest.mark.parametrize(("name", "value", "field", "read"), SERVE_VARIABLES)
def test_each_serve_option_has_a_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, field: str, read: object
) -> None:
    unset = getattr(load_settings(), field)
    assert unset == Settings.model_fields[field].default != read
    monkeypatch.setenv(name, value)
    assert getattr(load_settings(), field) == read
    monkeypatch.setenv(name, "  ")  # blank: the default, as for every variable
    assert getattr(load_settings(), field) == unset


def test_serve_defaults_are_the_ones_it_always_had() -> None:
    defaults = Settings()
    assert (defaults.http_host, defaults.http_port, defaults.http_workers) == (
        "127.0.0.1",
        8080,
        1,
    )
    assert (defaults.http_graceful_timeout, defaults.http_keep_alive) == (30, 75)
    assert defaults.http_ssl_certfile is None and defaults.http_ssl_ca_certs is None


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CTXSTORE_HTTP_HOST", "0.0.0.0 ::", r"CTXSTORE_HTTP_HOST='0.0.0.0 ::': use one address"),
        ("CTXSTORE_HTTP_PORT", "70000", "CTXSTORE_HTTP_PORT='70000': use a port number from 1"),
        ("CTXSTORE_HTTP_PORT", "http", "CTXSTORE_HTTP_PORT='http': use a port number"),
        ("CTXSTORE_HTTP_PORT", "0", "CTXSTORE_HTTP_PORT='0': use a port number"),
        ("CTXSTORE_HTTP_WORKERS", "0", "CTXSTORE_HTTP_WORKERS must be a positive number"),
        ("CTXSTORE_HTTP_WORKERS", "2.5", "CTXSTORE_HTTP_WORKERS must be a whole number"),
        ("CTXSTORE_HTTP_GRACEFUL_TIMEOUT", "-1", "CTXSTORE_HTTP_GRACEFUL_TIMEOUT must be a po"),
        ("CTXSTORE_HTTP_KEEP_ALIVE", "soon", "CTXSTORE_HTTP_KEEP_ALIVE must be a positive"),
        ("CTXSTORE_HTTP_POOL_SIZE", "ten", "CTXSTORE_HTTP_POOL_SIZE must be a positive number"),
        ("CTXSTORE_HTTP_RETRY_AFTER", "1.5", "CTXSTORE_HTTP_RETRY_AFTER must be a whole number"),
        ("CTXSTORE_BACKUP_RETENTION_DAYS", "0", "CTXSTORE_BACKUP_RETENTION_DAYS must be a posi"),
        ("CTXSTORE_HTTP_OPERATION_TIMEOUT", "inf", "CTXSTORE_HTTP_OPERATION_TIMEOUT must be"),
        ("CTXSTORE_TELEMETRY", "maybe", "CTXSTORE_TELEMETRY must be 1 or 0"),
        ("CTXSTORE_TELEMETRY_KEY", "zz", "CTXSTORE_TELEMETRY_KEY must be hex"),
        ("CTXSTORE_ADOPT_EXISTING_ROLES", "sure", "CTXSTORE_ADOPT_EXISTING_ROLES='sure'"),
        ("CTXSTORE_ANALYTICS_MIN_GROUP_SIZE", "1", "CTXSTORE_ANALYTICS_MIN_GROUP_SIZE='1'"),
        ("CTXSTORE_APP_ROLE", "Bad Name", r"\(CTXSTORE_APP_ROLE\)"),
        ("CTXSTORE_ROLE_PREFIX", "pg_x", r"\(CTXSTORE_ROLE_PREFIX\)"),
        ("CTXSTORE_TOKEN_ENCODING", "gpt-4o", "is not a tiktoken encoding: use one of .*o200k"),
        ("CTXSTORE_HTTP_LOG_FORMAT", "logfmt", "CTXSTORE_HTTP_LOG_FORMAT='logfmt': use one of t"),
        ("CTXSTORE_HTTP_LOG_LEVEL", "verbose", "CTXSTORE_HTTP_LOG_LEVEL='verbose': use one of d"),
    ],
)
def test_a_bad_value_is_a_configuration_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigurationError, match=message):
        load_settings()


def test_secrets_are_not_shown() -> None:
    loaded = Settings(master_keys="k1:c2VjcmV0", http_tokens="a read sha256:00")
    assert "c2VjcmV0" not in repr(loaded) and "sha256:00" not in repr(loaded)


def test_the_url_a_command_uses() -> None:
    both = Settings(
        database_url="postgresql://app@h/a", migration_database_url="postgresql://o@h/a"
    )
    assert both.database_url_for() == "postgresql://app@h/a"
    assert both.database_url_for(migrating=True) == "postgresql://o@h/a"
    assert both.database_url_for("postgresql://x@h/b", migrating=True) == "postgresql://x@h/b"
    with pytest.raises(
        ConfigurationError, match="pass --database-url or set CTXSTORE_DATABASE_URL"
    ):
        Settings().database_url_for()
