"""The ``ctxstore`` parser: every command (and subcommand) names the function it runs;
serve's options, each given or else its ``CTXSTORE_HTTP_*`` variable."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ctxstore.cli import build_parser
from ctxstore.errors import ConfigurationError
from ctxstore.http.auth import new_token
from ctxstore.settings import load_settings

COMMANDS = {
    "db": {"upgrade", "downgrade", "current", "distribute", "roles", "min-group-size"},
    "contract": {"schema", "example"},
    "upgrade-data": set(),
    "recount": set(),
    "summarize-worker": set(),
    "import-redis": set(),
    "analytics": set(),
    "seed-sample": set(),
    "purge-expired": set(),
    "rotate-keys": set(),
    "serve": set(),
    "erase-user": set(),
    "hold": {"list", "add", "lift"},
    "retention": {"show", "set", "unset"},
    "ledger": {"verify", "list", "show"},
    "export-user": set(),
    "import-user": set(),
    "demo": set(),
    "dev": set(),
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_every_command_is_there_and_runs_a_function() -> None:
    commands = _subcommands(build_parser())
    assert set(commands) == set(COMMANDS)
    for name, parser in commands.items():
        subcommands = _subcommands(parser)
        assert set(subcommands) == COMMANDS[name]
        for leaf in subcommands.values() or [parser]:
            assert callable(leaf.get_default("func")), name


def test_a_missing_command_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([])
    assert exited.value.code == 2


# -- analytics: whole days, or months for the monthly reports --------------------------------


def test_analytics_windows_take_a_day_or_a_month() -> None:
    args = build_parser().parse_args(
        ["analytics", "complaints", "--since", "2026-09", "--until", "2026-12-01"]
    )
    assert (args.since, args.until) == (
        datetime(2026, 9, 1, tzinfo=UTC),
        datetime(2026, 12, 1, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    "arguments",
    [
        ("--per", "week"),  # issue 50: the month is the only period
        ("--per", "day"),
        ("--since", "2026-11-02T09:00"),
        ("--until", "2026-13"),
        ("--since", "2026-1"),
    ],
    ids=" ".join,
)
def test_a_bad_analytics_option_is_a_usage_error(
    arguments: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["analytics", "red-flags", *arguments])
    assert exited.value.code == 2
    assert arguments[0] in capsys.readouterr().err


# -- serve: each option, else its variable, else the default --------------------------------


@dataclass
class Served:
    """What `ctxstore serve` handed uvicorn and the logging, and the environment the
    workers would have started with."""

    uvicorn: dict[str, Any] = field(default_factory=dict)
    logging: tuple[str, str] = ("", "")
    environment: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def serve_without_a_server(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Served]:
    """`ctxstore serve ARGS` with ENV as its environment, up to the call that would bind."""
    uvicorn = pytest.importorskip("uvicorn")
    from ctxstore.http import server  # noqa: PLC0415 - the http extra

    def serve(*arguments: str, **variables: str) -> Served:
        served = Served()
        environment = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_")}
        environment |= {
            "CTXSTORE_DATABASE_URL": "postgresql://app@db.invalid/ctx",
            "CTXSTORE_HTTP_TOKENS": new_token("ops", ["admin"])[1],
            **variables,
        }
        monkeypatch.setattr(os, "environ", environment)
        monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.uvicorn.update(options))
        monkeypatch.setattr(
            server, "configure_logging", lambda *given: setattr(served, "logging", given)
        )
        monkeypatch.setattr(signal, "signal", lambda *_: None)  # not this test process's
        args = build_parser().parse_args(["serve", *arguments])
        assert args.func(args, load_settings()) == 0
        served.environment = dict(environment)
        return served

    return serve


def test_serve_options_fall_back_to_their_variables(
    serve_without_a_server: Callable[..., Served],
) -> None:
    defaults = serve_without_a_server().uvicorn
    assert (defaults["host"], defaults["port"], defaults["workers"]) == ("127.0.0.1", 8080, 1)
    assert (defaults["timeout_graceful_shutdown"], defaults["timeout_keep_alive"]) == (30, 75)

    served = serve_without_a_server(
        CTXSTORE_HTTP_HOST="0.0.0.0",
        CTXSTORE_HTTP_PORT="9090",
        CTXSTORE_HTTP_WORKERS="3",
        CTXSTORE_HTTP_GRACEFUL_TIMEOUT="40",
        CTXSTORE_HTTP_KEEP_ALIVE="20",
        CTXSTORE_HTTP_LOG_FORMAT="json",
        CTXSTORE_HTTP_ACCESS_LOG="0",
    )
    options = served.uvicorn
    assert (options["host"], options["port"], options["workers"]) == ("0.0.0.0", 9090, 3)
    assert (options["timeout_graceful_shutdown"], options["timeout_keep_alive"]) == (40, 20)
    assert served.logging == ("json", "info")
    # The variable reaches the workers as it was: serve exports no option not given.
    assert served.environment["CTXSTORE_HTTP_ACCESS_LOG"] == "0"


def test_a_serve_option_wins_over_its_variable_and_reaches_the_workers(
    serve_without_a_server: Callable[..., Served],
) -> None:
    served = serve_without_a_server(
        "--port",
        "7070",
        "--workers",
        "2",
        "--graceful-timeout",
        "12",
        "--log-format",
        "text",
        "--log-level",
        "warning",
        "--pool-size",
        "4",
        "--no-access-log",
        CTXSTORE_HTTP_PORT="9090",
        CTXSTORE_HTTP_WORKERS="3",
        CTXSTORE_HTTP_GRACEFUL_TIMEOUT="40",
        CTXSTORE_HTTP_LOG_FORMAT="json",
        CTXSTORE_HTTP_LOG_LEVEL="debug",
        CTXSTORE_HTTP_POOL_SIZE="9",
        CTXSTORE_HTTP_KEEP_ALIVE="20",
    )
    options = served.uvicorn
    assert (options["port"], options["workers"], options["timeout_graceful_shutdown"]) == (
        7070,
        2,
        12,
    )
    assert options["timeout_keep_alive"] == 20  # no option given: the variable's
    assert served.logging == ("text", "warning")
    # What each worker reads (it loads the settings itself): the options given.
    workers_read = served.environment
    assert workers_read["CTXSTORE_HTTP_POOL_SIZE"] == "4"
    assert workers_read["CTXSTORE_HTTP_LOG_FORMAT"] == "text"
    assert workers_read["CTXSTORE_HTTP_ACCESS_LOG"] == "0"
    assert workers_read["CTXSTORE_HTTP_KEEP_ALIVE"] == "20"


def test_tls_files_come_from_options_or_variables(
    serve_without_a_server: Callable[..., Served], tmp_path: Path
) -> None:
    served = serve_without_a_server(
        "--ssl-keyfile",
        str(tmp_path / "flag.key"),
        CTXSTORE_HTTP_SSL_CERTFILE=str(tmp_path / "tls.crt"),
        CTXSTORE_HTTP_SSL_KEYFILE=str(tmp_path / "tls.key"),
    )
    assert served.uvicorn["ssl_certfile"] == tmp_path / "tls.crt"
    assert served.uvicorn["ssl_keyfile"] == tmp_path / "flag.key"
    with pytest.raises(ConfigurationError, match="CTXSTORE_HTTP_SSL_KEYFILE\\) go together"):
        serve_without_a_server(CTXSTORE_HTTP_SSL_CERTFILE=str(tmp_path / "tls.crt"))


@pytest.mark.parametrize(
    "arguments",
    [
        ("--port", "65536"),
        ("--port", "0"),
        ("--workers", "two"),
        ("--log-format", "logfmt"),
        ("--log-level", "verbose"),
    ],
    ids=" ".join,
)
def test_a_bad_serve_option_is_a_usage_error(arguments: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["serve", *arguments])
    assert exited.value.code == 2


def test_a_bad_variable_stops_serve_naming_it(
    serve_without_a_server: Callable[..., Served],
) -> None:
    with pytest.raises(ConfigurationError, match="CTXSTORE_HTTP_PORT='99999'"):
        serve_without_a_server(CTXSTORE_HTTP_PORT="99999")


def test_the_retention_command_offers_the_kinds_the_schema_accepts() -> None:
    """The parser names them without importing the command (asyncpg): the same list."""
    from ctxstore.cli.retention import KINDS  # noqa: PLC0415
    from ctxstore.commands.retention import DATA_CLASSES  # noqa: PLC0415
    from ctxstore.db.tables import ctxstore_retention_periods  # noqa: PLC0415

    assert KINDS == DATA_CLASSES
    [check] = [
        c
        for c in ctxstore_retention_periods.constraints
        if str(c.name).endswith("_data_class_known")
    ]
    assert all(f"'{kind}'" in str(check.sqltext) for kind in KINDS)
