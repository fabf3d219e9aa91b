"""``ctxstore hold list | add | lift``: legal holds, the owner's (ctxstore.commands.holds).

Run with the owner's database URL: the app role may read holds, never place or lift one.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, database_url, login_name

if TYPE_CHECKING:
    from ctxstore.settings import Settings

_BY = "who places or lifts it, recorded with it (default: the login name running this)"


def register(commands: Commands) -> None:
    hold = commands.add_parser(
        "hold", help="legal holds: what they cover, no purge, deletion or erasure removes"
    )
    actions = hold.add_subparsers(dest="hold_action", required=True, metavar="ACTION")
    listing = actions.add_parser("list", help="the holds in force, what each covers now")
    listing.add_argument("--all", action="store_true", help="the lifted holds too")
    listing.set_defaults(func=list_holds)
    add = actions.add_parser("add", help="place a hold on a user or a session")
    subject = add.add_mutually_exclusive_group(required=True)
    subject.add_argument("--user", help="hold every session of this user, and their profile")
    subject.add_argument("--session", help="hold this session")
    add.add_argument("--reason", required=True, help="why (a matter, a ticket), recorded")
    add.add_argument("--by", help=_BY)
    add.set_defaults(func=add_hold)
    lift = actions.add_parser("lift", help="lift a hold (it stays listed with --all)")
    lift.add_argument("hold_id", help="the hold's id, as `hold list` shows it")
    lift.add_argument("--by", help=_BY)
    lift.set_defaults(func=lift_hold)
    for sub in (listing, add, lift):
        add_database_url(sub)


def list_holds(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import holds  # noqa: PLC0415 - asyncpg
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    async def run() -> list[str]:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            found = await holds.list_holds(storage, lifted_too=args.all)
        return [hold.line() for hold in found] or ["no hold in force"]

    print("\n".join(asyncio.run(run())))
    return 0


def add_hold(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import holds  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    subject: holds.Subject = "user" if args.user is not None else "session"
    subject_id = args.user if args.user is not None else args.session

    async def run() -> str:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            hold = await holds.place_hold(
                storage, subject, subject_id, reason=args.reason, placed_by=args.by or login_name()
            )
        return "placed " + hold.line()

    print(asyncio.run(run()))
    return 0


def lift_hold(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import holds  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    async def run() -> str:
        async with PostgresStorage.from_url(database_url(args, settings)) as storage:
            hold = await holds.lift_hold(storage, args.hold_id, lifted_by=args.by or login_name())
        return "lifted " + hold.line()

    print(asyncio.run(run()))
    return 0
