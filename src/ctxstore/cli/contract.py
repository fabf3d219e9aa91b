"""``ctxstore contract schema|example``: the Context Contract's JSON Schema, an example."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands

if TYPE_CHECKING:
    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    contract = commands.add_parser("contract", help="the Context Contract")
    contract_commands = contract.add_subparsers(dest="contract_command", required=True)
    schema = contract_commands.add_parser(
        "schema", help="print the contract's JSON Schema (for the Go side)"
    )
    schema.set_defaults(func=print_schema)
    example = contract_commands.add_parser("example", help="print a complete example contract")
    example.set_defaults(func=print_example)


def print_schema(_args: argparse.Namespace, _settings: Settings) -> int:
    from ctxstore.contract import contract_json_schema  # noqa: PLC0415

    print(json.dumps(contract_json_schema(), ensure_ascii=False, indent=2))
    return 0


def print_example(_args: argparse.Namespace, _settings: Settings) -> int:
    from ctxstore.contract import EXAMPLE  # noqa: PLC0415

    print(json.dumps(EXAMPLE, ensure_ascii=False, indent=2))
    return 0
