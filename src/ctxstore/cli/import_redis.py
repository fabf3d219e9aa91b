"""``ctxstore import-redis``: copy sessions from the original Go service's Redis."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, TextIO

from ctxstore.cli.maintenance import open_store
from ctxstore.cli.options import Commands, add_database_url, positive_int
from ctxstore.errors import ConfigurationError
from ctxstore.redaction import redact

if TYPE_CHECKING:
    from ctxstore.commands.redis_import import KeyResult
    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    importer = commands.add_parser(
        "import-redis", help="copy sessions from the original Go service's Redis"
    )
    add_database_url(importer)
    importer.add_argument("--redis-url", required=True, help="redis://host:6379/0")
    importer.add_argument(
        "--prefix",
        default="ctx:session",
        help="the Go service's key prefix: keys {prefix}:{session_id} (default: %(default)s)",
    )
    importer.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        help="sessions imported at once (default: %(default)s)",
    )
    importer.add_argument(
        "--overwrite",
        action="store_true",
        help="replace PostgreSQL's messages with Redis's where the two diverged "
        "(default: report those sessions and leave both sides as they are)",
    )
    importer.add_argument(
        "--carry-ttl",
        action="store_true",
        help="a session the import writes expires when its Redis key would "
        "(a key without a TTL: never)",
    )
    importer.add_argument(
        "--report",
        metavar="FILE",
        help="write one JSON line per Redis key to FILE: its outcome (imported, appended, "
        "unchanged, diverged, replaced, skipped, failed) and the reason",
    )
    importer.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    storage = open_store(args, settings)
    try:
        import redis.asyncio as redis_asyncio  # noqa: PLC0415
    except ImportError:
        raise ConfigurationError(
            "import-redis needs the redis extra: pip install 'ctxstore[redis]'"
        ) from None
    from ctxstore.commands.redis_import import import_redis  # noqa: PLC0415

    try:
        client = redis_asyncio.from_url(args.redis_url, socket_timeout=10, socket_connect_timeout=5)
    except ValueError as error:  # redis-py's URL parsing, whose message may quote the URL
        raise ConfigurationError(
            f"--redis-url is not a usable Redis URL ({redact(str(error))}): use "
            "redis://[[user]:password@]host:6379/0"
        ) from None

    lines: TextIO | None = None
    if args.report is not None:
        try:
            lines = open(args.report, "w", encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as error:
            raise ConfigurationError(
                f"--report {args.report!r} can't be written: {error.strerror}"
            ) from None

    def write_line(result: KeyResult) -> None:
        if lines is not None:
            lines.write(result.to_json() + "\n")

    async def copy() -> int:
        try:
            async with storage:
                report = await import_redis(
                    client,
                    storage,
                    prefix=args.prefix,
                    concurrency=args.concurrency,
                    overwrite=args.overwrite,
                    carry_ttl=args.carry_ttl,
                    on_result=write_line,
                )
        finally:
            await client.aclose()
            if lines is not None:
                lines.close()
        print(report.summary())
        if lines is not None:
            print(f"every key's outcome: {args.report} ({report.seen:,} JSON lines)")
        return 1 if report.failed else 0

    return asyncio.run(copy())
