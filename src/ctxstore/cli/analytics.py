"""``ctxstore analytics REPORT``: reports over consultations (the analytics views only);
``ctxstore analytics refresh``: the owner's refresh of the free-text counts they show."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, whole_day
from ctxstore.commands.analytics import MONTHLY_REPORTS, REPORTS, first_of_month, run_report
from ctxstore.errors import InvalidInputError

if TYPE_CHECKING:
    from sqlalchemy import URL

    from ctxstore.settings import Settings

#: ctxstore.db.engine.REPLICA_URL_ENV (tests/unit/test_cli_imports.py holds the two equal).
REPLICA_URL_ENV = "CTXSTORE_REPLICA_DATABASE_URL"


def register(commands: Commands) -> None:
    analytics = commands.add_parser(
        "analytics", help="reports over consultations (reads the analytics views only)"
    )
    analytics.add_argument(
        "report",
        choices=(*REPORTS, "refresh"),
        help="a report, or refresh: publish the months due (as the owner, with the "
        "encryption keys; resumable). red-flags and the frequency reports count calendar "
        "months, each published 7 days after it ends",
    )
    add_database_url(analytics)
    analytics.add_argument(
        "--replica-url",
        help=f"read the reports from this replica instead (default: ${REPLICA_URL_ENV})",
    )
    analytics.add_argument(
        "--since",
        type=whole_day,
        help="first activity on or after this UTC day (YYYY-MM-DD); a month (YYYY-MM) for "
        "the monthly reports",
    )
    analytics.add_argument(
        "--until",
        type=whole_day,
        help="first activity before this UTC day (YYYY-MM-DD); a month (YYYY-MM) for the "
        "monthly reports",
    )
    analytics.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="output format (default: %(default)s)",
    )
    analytics.add_argument(
        "--limit",
        type=int,
        default=20,
        help="frequency reports: the most frequent this many of each month (default: %(default)s)",
    )
    analytics.set_defaults(func=run, parser=analytics)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415 - SQLAlchemy, asyncpg

    if args.report == "refresh":
        return refresh(args, settings)
    if args.report in MONTHLY_REPORTS:
        try:
            first_of_month("--since", args.since)
            first_of_month("--until", args.until)
        except InvalidInputError as error:
            args.parser.error(str(error))
    # Reports tolerate a replica's lag: read there when one is named.
    source = args.replica_url or settings.replica_database_url or args.database_url
    return asyncio.run(_report(args, normalize_url(settings.database_url_for(source))))


async def _report(args: argparse.Namespace, url: URL) -> int:
    from ctxstore.db.engine import create_engine  # noqa: PLC0415

    engine = create_engine(url)
    try:
        report = await run_report(
            engine, args.report, since=args.since, until=args.until, limit=args.limit
        )
    finally:
        await engine.dispose()
    print(report.render(args.format))
    if args.format == "csv" and report.notes:
        # A CSV holds one table: the months and the notes go beside it.
        if report.periods is not None:
            print(report.periods.render("csv"), file=sys.stderr, end="")
        print("\n".join(report.notes), file=sys.stderr)
    return 0


def refresh(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.aggregates import refresh_aggregates  # noqa: PLC0415
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415
    from ctxstore.encryption import Encryption  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    url = normalize_url(settings.database_url_for(args.database_url))
    encryption = Encryption.from_settings(settings) if settings.encryption_configured else None

    async def run() -> int:
        async with PostgresStorage.from_url(url) as storage:
            report = await refresh_aggregates(storage, encryption)
        print(report.summary())
        return 1 if report.failed else 0

    return asyncio.run(run())
