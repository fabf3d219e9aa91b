"""``ctxstore --version`` and ``--help`` answer at once (issue 49): building the parser
imports no database driver, no pydantic, no tiktoken and no HTTP stack; each command
imports what it needs when it runs.  Checked by what a fresh interpreter has loaded, not
by a clock (a busy machine would decide a time limit)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from ctxstore.cli import analytics, options, serve

#: What the parser must not load: each costs from tens of milliseconds (tiktoken) to
#: most of a second (SQLAlchemy with Alembic, pydantic with the settings).
HEAVY = (
    "alembic",
    "asyncpg",
    "cryptography",
    "fastapi",
    "opentelemetry",
    "pydantic",
    "pydantic_settings",
    "redis",
    "sqlalchemy",
    "starlette",
    "tiktoken",
    "uvicorn",
)

_PROBE = """\
import json, runpy, sys
sys.argv = ["ctxstore", *json.loads(sys.argv[1])]
try:
    runpy.run_module("ctxstore.cli", run_name="__main__")
except SystemExit as exit:
    code = exit.code
else:
    code = None
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({heavy!r}))
print("\\n" + json.dumps({{"code": code, "loaded": loaded}}), file=sys.stderr)
"""


def _run(*arguments: str) -> tuple[str, int, list[str]]:
    """stdout, the exit code and the heavy packages loaded by ``ctxstore ARGUMENTS``."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE.format(heavy=list(HEAVY)), json.dumps(arguments)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    return result.stdout, report["code"], report["loaded"]


@pytest.mark.parametrize(
    "arguments",
    [
        ("--version",),
        ("--help",),
        ("serve", "--help"),
        ("analytics", "--help"),
        ("db", "upgrade", "--help"),
        ("summarize-worker", "--help"),
    ],
    ids=" ".join,
)
def test_version_and_help_load_nothing_heavy(arguments: tuple[str, ...]) -> None:
    output, code, loaded = _run(*arguments)

    assert code == 0
    assert loaded == []
    if arguments == ("--version",):
        assert output.startswith("ctxstore ")
    else:
        assert output.startswith("usage: ctxstore")


def test_the_help_lists_every_command() -> None:
    output, _, _ = _run("--help")

    for command in ("db", "upgrade-data", "import-redis", "analytics", "serve", "demo", "dev"):
        assert command in output


def test_a_command_that_runs_imports_what_it_needs() -> None:
    """The deferred imports are there: the contract's schema needs pydantic."""
    output, code, loaded = _run("contract", "schema")

    assert code == 0
    assert json.loads(output)["title"]
    assert "pydantic" in loaded


def test_the_names_the_parser_restates_are_the_libraries_own() -> None:
    """What the parser states itself, instead of importing the module that owns it."""
    from ctxstore.db import engine  # noqa: PLC0415
    from ctxstore.settings import _LOG_CHOICES, PORT_RANGE, Settings  # noqa: PLC0415

    assert options.DATABASE_URL_ENV == engine.DATABASE_URL_ENV
    assert analytics.REPLICA_URL_ENV == engine.REPLICA_URL_ENV
    defaults = {name: Settings.model_fields[name].default for name in serve.SETTING_DEFAULTS}
    assert defaults == serve.SETTING_DEFAULTS
    assert serve.LOG_CHOICES == _LOG_CHOICES
    assert set(serve.OPTION_SETTINGS.values()) <= set(Settings.model_fields)
    with pytest.raises(argparse.ArgumentTypeError):
        serve.port_number(str(PORT_RANGE[1] + 1))
    assert serve.port_number(str(PORT_RANGE[1])) == PORT_RANGE[1]
