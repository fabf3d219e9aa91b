"""``ctxstore demo``: a whole knee consultation (embedded PostgreSQL by default)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url

if TYPE_CHECKING:
    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    demo = commands.add_parser(
        "demo", help="play a whole knee consultation (embedded PostgreSQL by default)"
    )
    add_database_url(demo)
    demo.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".ctxstore/pgdata"),
        help="data folder of the embedded PostgreSQL (default: .ctxstore/pgdata)",
    )
    demo.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.demo import run_demo  # noqa: PLC0415 - keeps `ctxstore db` light

    run_demo(args.database_url or settings.database_url, args.data_dir)
    return 0
