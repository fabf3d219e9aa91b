"""The CLI reference (docs/cli.md), generated from the parser itself so it can't drift:
``python -m ctxstore.cli.reference > docs/cli.md``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from ctxstore.cli import build_parser

_WIDTH = 88


def reference() -> str:
    parser = build_parser()
    lines = [
        "# The `ctxstore` command",
        "",
        "Generated from the command's own parser (`python -m ctxstore.cli.reference`);",
        "`ctxstore COMMAND --help` prints the same. Settings every command reads from the",
        "environment are in [configuration.md](configuration.md).",
        "",
    ]
    for path, command in _commands(parser, "ctxstore"):
        lines += [f"## `{path}`", ""]
        if command.description:
            lines += [command.description, ""]
        lines += ["```text", _usage(command), "```", ""]
        rows = [_row(action) for action in command._actions if _documented(action)]
        if rows:
            lines += ["| argument | what it does |", "| --- | --- |", *rows, ""]
    return "\n".join(lines)


def _commands(
    parser: argparse.ArgumentParser, path: str
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    subcommands = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subcommands:
        yield path, parser
        return
    helps = {choice.dest: choice.help for choice in subcommands[0]._choices_actions}
    for name, sub in subcommands[0].choices.items():
        if sub.description is None and helps.get(name):
            sub.description = _sentence(str(helps[name]))
        yield from _commands(sub, f"{path} {name}")


def _usage(command: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(command.prog, width=_WIDTH)
    formatter.add_usage(command.usage, command._actions, command._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _documented(action: argparse.Action) -> bool:
    return not isinstance(action, argparse._HelpAction | argparse._VersionAction)


def _name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
    return ", ".join(f"`{flag}{metavar}`" for flag in action.option_strings)


def _row(action: argparse.Action) -> str:
    name = _name(action)
    text = (action.help or "") % {"default": action.default, "prog": "ctxstore"}
    if action.choices is not None:
        text += f" (one of: {', '.join(str(choice) for choice in action.choices)})"
    if action.required and action.option_strings:
        text += " (required)"
    escaped = text.replace("|", r"\|")  # a pipe would end the table cell
    return f"| {name} | {escaped} |"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


if __name__ == "__main__":
    sys.stdout.write(reference())
