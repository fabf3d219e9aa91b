"""The ``ctxstore`` parser: every command (and subcommand) names the function it runs."""

from __future__ import annotations

import argparse

import pytest

from ctxstore.cli import build_parser

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
