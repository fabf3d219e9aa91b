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
    assert len(names) == 35 and all(name.startswith("CTXSTORE_") for name in names)


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


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
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
