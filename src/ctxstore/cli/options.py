"""What the commands share: the --database-url option and the argument types."""

from __future__ import annotations

import argparse
import getpass
import re
from datetime import UTC, datetime, time
from typing import TYPE_CHECKING, TypeAlias

#: ctxstore.db.engine.DATABASE_URL_ENV, named here without importing SQLAlchemy and
#: asyncpg for the parser (tests/unit/test_cli_imports.py holds the two equal).
DATABASE_URL_ENV = "CTXSTORE_DATABASE_URL"

if TYPE_CHECKING:
    from sqlalchemy import URL

    from ctxstore.settings import Settings
    from ctxstore.storage.postgres import PostgresStorage

    # What each command module's register() adds its parser to.  Each parser's
    # set_defaults(func=...) names the command's body: func(args, settings) -> exit code,
    # the settings read once by ctxstore.cli.main.
    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # argparse's class is not generic at run time
    Commands = argparse._SubParsersAction


def add_database_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help=f"PostgreSQL URL (postgresql:// or postgresql+asyncpg://); "
        f"default: ${DATABASE_URL_ENV}",
    )


def database_url(args: argparse.Namespace, settings: Settings) -> URL:
    """The command's database: --database-url, else CTXSTORE_DATABASE_URL."""
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415 - SQLAlchemy, asyncpg

    return normalize_url(settings.database_url_for(args.database_url))


def login_name() -> str:
    """Who runs the command, as recorded with what the owner sets (holds, periods)."""
    try:
        return getpass.getuser()
    except OSError:  # no login name (a container without a passwd entry)
        return "unknown"


def timestamp(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or timestamp: {value!r}") from None
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    try:
        parsed.astimezone(UTC)
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{value!r} is outside years 1-9999 in UTC") from None
    return parsed


def whole_day(value: str) -> datetime:
    """An analytics window's end: an ISO date, a month (YYYY-MM: its first day), or a
    timestamp at UTC midnight."""
    if re.fullmatch(r"[0-9]{4}-[0-9]{2}", value):
        value += "-01"
    parsed = timestamp(value)
    if parsed.astimezone(UTC).time() != time():
        raise argparse.ArgumentTypeError(
            f"not a whole day (UTC midnight): {value!r}; analytics windows are whole days, "
            "such as 2026-01-01"
        )
    return parsed


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return number


def add_batch_size(parser: argparse.ArgumentParser, default: int, unit: str) -> None:
    """``--batch-size``: how many of ``unit`` (such as "sessions deleted per
    transaction") a batch takes."""
    parser.add_argument(
        "--batch-size",
        type=positive_int,
        default=default,
        help=f"{unit} (default: %(default)s)",
    )


_DURATION = re.compile(r"\d+(\.\d+)?\s*(us|ms|s|min|h|d)?")


def duration(value: str) -> str:
    """A PostgreSQL duration setting such as 5s, 500ms or 2min (a bare number: ms)."""
    if not _DURATION.fullmatch(value.strip()):
        raise argparse.ArgumentTypeError(
            f"not a duration: {value!r} (e.g. 5s, 500ms, 2min; a bare number is milliseconds)"
        )
    return value.strip()


def open_keyed_store(args: argparse.Namespace, settings: Settings) -> PostgresStorage:
    """The database's store, with the master keys when they are configured (sealed text
    is opened: an export, an incident review of the ledger)."""
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415 - SQLAlchemy, asyncpg
    from ctxstore.encryption import Encryption  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415
    from ctxstore.tokens import TokenCounter  # noqa: PLC0415 - tiktoken

    encryption = Encryption.from_settings(settings) if settings.encryption_configured else None
    return PostgresStorage.from_url(
        normalize_url(settings.database_url_for(args.database_url)),
        encryption=encryption,
        token_counter=TokenCounter(settings.token_encoding),
    )
