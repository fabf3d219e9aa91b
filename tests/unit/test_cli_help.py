"""Every option of every ``ctxstore`` command says what it is for and, when it has one,
its default (issue 28: help and defaults on every option)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from ctxstore.cli import build_parser
from ctxstore.cli.reference import reference
from ctxstore.settings import Settings


def options(
    parser: argparse.ArgumentParser, path: str = "ctxstore"
) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from options(sub, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction | argparse._VersionAction):
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", action


def test_every_option_has_help_and_shows_its_default() -> None:
    found = list(options(build_parser()))
    assert len(found) > 40  # every command's options, not just the top level
    missing_help = [name for name, action in found if not action.help]
    assert missing_help == []
    hidden_defaults = [
        name
        for name, action in found
        if action.default not in (None, True, False, argparse.SUPPRESS)
        and "default" not in (action.help or "")
    ]
    assert hidden_defaults == []


def _command(name: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = build_parser()._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
    return parser


def test_default_placeholders_render() -> None:
    assert "(default: 4)" in _command("summarize-worker").format_help()
    text = _command("serve").format_help()
    assert "(default: $CTXSTORE_HTTP_PORT, else 8080)" in text
    assert "$CTXSTORE_HTTP_TOKENS_FILE" in text


#: serve's options that only print something and exit: nothing to configure.
_SERVE_HELPERS = {"--help", "--new-token", "--openapi"}


def test_every_serve_option_names_its_variable() -> None:
    """Issue 49: every option of `ctxstore serve` has an environment form, a setting of
    docs/configuration.md, and its help says which."""
    variables = {str(field.validation_alias) for field in Settings.model_fields.values()}
    named = {}
    for action in _command("serve")._actions:
        flag = action.option_strings[-1]
        if flag in _SERVE_HELPERS:
            continue
        named[flag] = re.findall(r"\$(CTXSTORE_[A-Z_]+)", action.help or "")
    assert all(named.values()), [flag for flag, found in named.items() if not found]
    assert {name for found in named.values() for name in found} <= variables
    assert len(named) == 15  # every option, the two log options among them


def test_the_published_cli_reference_is_current() -> None:
    """docs/cli.md is generated: python -m ctxstore.cli.reference > docs/cli.md"""
    published = Path(__file__).parents[2] / "docs" / "cli.md"
    assert published.read_text(encoding="utf-8") == reference()
