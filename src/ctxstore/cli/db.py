"""``ctxstore db``: migrations, distribution on Citus, the roles and the min group size."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, duration
from ctxstore.errors import ConfigurationError
from ctxstore.redaction import redact

if TYPE_CHECKING:
    from sqlalchemy import URL

    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    db = commands.add_parser("db", help="schema migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    up = db_commands.add_parser("upgrade", help="apply migrations (default: to head)")
    up.add_argument(
        "revision", nargs="?", default="head", help="target revision (default: %(default)s)"
    )
    up.set_defaults(func=upgrade)
    down = db_commands.add_parser("downgrade", help="revert migrations to REVISION")
    down.add_argument("revision", help="target revision, e.g. -1 or base")
    down.set_defaults(func=downgrade)
    cur = db_commands.add_parser("current", help="print the database's revision")
    cur.set_defaults(func=current)
    dist = db_commands.add_parser(
        "distribute",
        help="on a Citus coordinator: shard the session tables by session_id (docs/scaling.md)",
    )
    dist.set_defaults(func=distribute)
    roles = db_commands.add_parser(
        "roles", help="print this database's owner, app and analytics roles (to grant to logins)"
    )
    roles.set_defaults(func=print_roles)
    group = db_commands.add_parser(
        "min-group-size",
        help="print, or set (as the owner), how many consultations a free-text value needs "
        "to show in analytics (default 5)",
    )
    group.add_argument("size", nargs="?", type=int, help="the new value (at least 2)")
    group.set_defaults(func=min_group_size)
    for sub in (up, down, cur, dist, roles, group):
        add_database_url(sub)
    for sub in (up, down):
        sub.add_argument(
            "--lock-timeout",
            type=duration,
            help="how long DDL may wait for a table lock before failing (default 5s)",
        )


def _url(args: argparse.Namespace, settings: Settings) -> URL:
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415 - SQLAlchemy, asyncpg

    return normalize_url(settings.database_url_for(args.database_url, migrating=True))


def upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db import migrations  # noqa: PLC0415 - Alembic

    url = _url(args, settings)
    before = migrations.current(url)
    migrations.upgrade(url, args.revision, lock_timeout=args.lock_timeout, settings=settings)
    after = migrations.current(url)
    if before == after:
        print(f"{redact(url)} was already at revision {after}: nothing to apply")
    else:
        print(f"{redact(url)} upgraded from revision {before or '(empty)'} to {after}")
    return 0


def downgrade(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db import migrations  # noqa: PLC0415 - Alembic

    url = _url(args, settings)
    migrations.downgrade(url, args.revision, lock_timeout=args.lock_timeout, settings=settings)
    print(f"{redact(url)} is at revision {migrations.current(url) or 'base'}")
    return 0


def current(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db import migrations  # noqa: PLC0415 - Alembic

    revision = migrations.current(_url(args, settings))
    print(revision or "(empty database: no revision)")
    return 0


def distribute(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db.distribute import distribute  # noqa: PLC0415

    print(asyncio.run(distribute(_url(args, settings))).summary())
    return 0


def print_roles(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db.admin import database_roles  # noqa: PLC0415

    url = _url(args, settings)
    names = asyncio.run(database_roles(url))
    if names is None:
        raise ConfigurationError(
            f"{redact(url)} has no recorded roles (it has no ctxstore schema): run "
            "`ctxstore db upgrade` first"
        )
    print(f"owner      {names.owner}  (owns the schema: grant to the migrating login)")
    print(f"app        {names.app}  (DML on the tables: grant to the service's login)")
    print(f"analytics  {names.analytics}  (the analytics views: grant to analysts' logins)")
    return 0


def min_group_size(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.analytics import min_group_size, set_min_group_size  # noqa: PLC0415
    from ctxstore.db.engine import create_engine  # noqa: PLC0415

    async def run() -> str:
        engine = create_engine(_url(args, settings))
        try:
            if args.size is None:
                return str(await min_group_size(engine))
            before = await set_min_group_size(engine, args.size)
            return f"min group size {before} -> {args.size}"
        finally:
            await engine.dispose()

    print(asyncio.run(run()))
    if args.size is not None:  # the stored cells were counted under the previous k
        print(
            "run `ctxstore analytics refresh` to recount the refreshed days under it",
            file=sys.stderr,
        )
    return 0
