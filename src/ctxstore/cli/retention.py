"""``ctxstore retention show | set | unset``: how long each kind of data is kept, the
owner's (ctxstore.commands.retention); ``ctxstore purge-expired`` applies it."""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

from ctxstore.cli.options import (
    Commands,
    add_database_url,
    database_url,
    login_name,
    positive_int,
)

if TYPE_CHECKING:
    from ctxstore.settings import Settings

KINDS = ("messages", "summaries", "state_history", "profiles", "ledger")


def register(commands: Commands) -> None:
    retention = commands.add_parser(
        "retention", help="how long each kind of data is kept (purge-expired applies it)"
    )
    actions = retention.add_subparsers(dest="retention_action", required=True, metavar="ACTION")
    show = actions.add_parser("show", help="the periods set, with who set them and when")
    show.set_defaults(func=show_periods)
    put = actions.add_parser("set", help="keep a kind of data this many days")
    put.add_argument("data_class", choices=KINDS, help="the kind of data")
    put.add_argument("days", type=positive_int, help="days to keep it")
    put.add_argument(
        "--by", default=None, help="who sets it, recorded (default: the login name running this)"
    )
    put.set_defaults(func=set_period)
    unset = actions.add_parser("unset", help="keep a kind of data without a period again")
    unset.add_argument("data_class", choices=KINDS, help="the kind of data")
    unset.set_defaults(func=unset_period)
    for sub in (show, put, unset):
        add_database_url(sub)


def show_periods(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import retention  # noqa: PLC0415 - asyncpg
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    async def run() -> list[str]:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            found = await retention.periods(storage)
        return [period.line() for period in found] or ["no retention period set"]

    print("\n".join(asyncio.run(run())))
    return 0


def set_period(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import retention  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    async def run() -> str:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            period = await retention.set_period(
                storage,
                args.data_class,
                timedelta(days=args.days),
                set_by=args.by or login_name(),
            )
        return "set " + period.line()

    print(asyncio.run(run()))
    return 0


def unset_period(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import retention  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    async def run() -> bool:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            return await retention.unset_period(storage, args.data_class)

    had = asyncio.run(run())
    print(f"{args.data_class}: no period{'' if had else ' (none was set)'}")
    return 0
