"""``ctxstore dev``: the embedded PostgreSQL for your own code, migrated, until Ctrl-C."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands

if TYPE_CHECKING:
    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    dev = commands.add_parser(
        "dev",
        help="start the embedded PostgreSQL with ctxstore's schema, print its URL and keep "
        "it up until Ctrl-C (for your own code and tests)",
    )
    dev.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".ctxstore/pgdata"),
        help="data folder of the embedded PostgreSQL, kept when it stops "
        "(default: .ctxstore/pgdata, the demo's)",
    )
    dev.add_argument(
        "--database",
        default="ctxstore_dev",
        help="the database created and migrated for you (default: ctxstore_dev)",
    )
    dev.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.demo import run_dev_server  # noqa: PLC0415 - keeps `ctxstore db` light

    run_dev_server(args.data_dir, args.database)
    return 0
