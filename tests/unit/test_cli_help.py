"""Every option of every ``ctxstore`` command says what it is for and, when it has one,
its default (issue 28: help and defaults on every option)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from ctxstore.cli import build_parser
from ctxstore.cli.reference import reference


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


def test_default_placeholders_render() -> None:
    text = build_parser()._subparsers._group_actions[0].choices["serve"].format_help()  # type: ignore[union-attr]
    assert "(default: 8080)" in text
    assert "$CTXSTORE_HTTP_TOKENS_FILE" in text


def test_the_published_cli_reference_is_current() -> None:
    """docs/cli.md is generated: python -m ctxstore.cli.reference > docs/cli.md"""
    published = Path(__file__).parents[2] / "docs" / "cli.md"
    assert published.read_text(encoding="utf-8") == reference()
