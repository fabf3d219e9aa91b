"""``ctxstore analytics REPORT``: reports over consultations (the analytics views only);
``ctxstore analytics refresh``: the owner's refresh of the free-text counts they show."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, whole_day
from ctxstore.commands.analytics import FREQUENCY_REPORTS, REPORTS, min_group_size, run_report

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
        help="a report, or refresh: recount free text for the days changed since the last "
        "refresh (as the owner, with the encryption keys; resumable)",
    )
    add_database_url(analytics)
    analytics.add_argument(
        "--replica-url",
        help=f"read the reports from this replica instead (default: ${REPLICA_URL_ENV})",
    )
    analytics.add_argument(
        "--since", type=whole_day, help="first activity on or after this UTC day (YYYY-MM-DD)"
    )
    analytics.add_argument(
        "--until", type=whole_day, help="first activity before this UTC day (YYYY-MM-DD)"
    )
    analytics.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="output format (default: %(default)s)",
    )
    analytics.add_argument(
        "--per",
        choices=("day", "week"),
        default="day",
        help="red-flags: one row per day or week (default: %(default)s)",
    )
    analytics.add_argument(
        "--limit",
        type=int,
        default=20,
        help="frequency reports: the most frequent this many (default: %(default)s)",
    )
    analytics.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415 - SQLAlchemy, asyncpg

    if args.report == "refresh":
        return refresh(args, settings)
    # Reports tolerate a replica's lag: read there when one is named.
    source = args.replica_url or settings.replica_database_url or args.database_url
    return asyncio.run(_report(args, normalize_url(settings.database_url_for(source))))


async def _report(args: argparse.Namespace, url: URL) -> int:
    from ctxstore.db.engine import create_engine  # noqa: PLC0415

    engine = create_engine(url)
    try:
        report = await run_report(
            engine, args.report, since=args.since, until=args.until, per=args.per, limit=args.limit
        )
        threshold = await min_group_size(engine) if args.report in FREQUENCY_REPORTS else 0
    finally:
        await engine.dispose()
    print(report.render(args.format))
    if args.report in FREQUENCY_REPORTS:
        print(f"(values fewer than {threshold} consultations share are not shown)", file=sys.stderr)
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
