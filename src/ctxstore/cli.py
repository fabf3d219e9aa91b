"""The `ctxstore` command."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import URL

from ctxstore.analytics import REPORTS
from ctxstore.db import migrations
from ctxstore.db.engine import (
    DATABASE_URL_ENV,
    REPLICA_URL_ENV,
    create_engine,
    redact,
    url_from_environment,
)
from ctxstore.db.errors import schema_missing, translated
from ctxstore.errors import ConfigurationError, CtxStoreError, SchemaMissingError
from ctxstore.redaction import redact_log_records
from ctxstore.storage.postgres import PostgresStorage


def _add_database_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help=f"PostgreSQL URL (postgresql:// or postgresql+asyncpg://); "
        f"default: ${DATABASE_URL_ENV}",
    )


def _db_settings_parsers(
    db_commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> tuple[argparse.ArgumentParser, ...]:
    roles = db_commands.add_parser(
        "roles", help="print this database's owner, app and analytics roles (to grant to logins)"
    )
    group = db_commands.add_parser(
        "min-group-size",
        help="print, or set (as the owner), how many consultations a free-text value needs "
        "to show in analytics (default 5)",
    )
    group.add_argument("size", nargs="?", type=int, help="the new value (at least 2)")
    return roles, group


def _build_parser() -> argparse.ArgumentParser:  # noqa: PLR0915 - a block per command
    parser = argparse.ArgumentParser(
        prog="ctxstore", description="Durable conversation context on PostgreSQL."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    db = commands.add_parser("db", help="schema migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True)
    up = db_commands.add_parser("upgrade", help="apply migrations (default: to head)")
    up.add_argument("revision", nargs="?", default="head")
    down = db_commands.add_parser("downgrade", help="revert migrations to REVISION")
    down.add_argument("revision", help="target revision, e.g. -1 or base")
    cur = db_commands.add_parser("current", help="print the database's revision")
    dist = db_commands.add_parser(
        "distribute",
        help="on a Citus coordinator: shard the session tables by session_id (docs/scaling.md)",
    )
    for sub in (up, down, cur, dist, *_db_settings_parsers(db_commands)):
        _add_database_url(sub)
    for sub in (up, down):
        sub.add_argument(
            "--lock-timeout",
            type=_duration,
            help="how long DDL may wait for a table lock before failing (default 5s)",
        )

    upgrade_data = commands.add_parser(
        "upgrade-data",
        help="rewrite every stored row in the current formats (resumable, safe while live)",
    )
    _add_database_url(upgrade_data)
    upgrade_data.add_argument("--batch-size", type=_positive_int, default=500)

    importer = commands.add_parser(
        "import-redis", help="copy sessions from the original Go service's Redis"
    )
    _add_database_url(importer)
    importer.add_argument("--redis-url", required=True, help="redis://host:6379/0")
    importer.add_argument("--prefix", default="ctx:session", help="key prefix (ctx:session)")
    importer.add_argument("--concurrency", type=_positive_int, default=8)
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

    analytics = commands.add_parser(
        "analytics", help="reports over consultations (reads the analytics views only)"
    )
    analytics.add_argument("report", choices=REPORTS)
    _add_database_url(analytics)
    analytics.add_argument(
        "--replica-url",
        default=os.environ.get(REPLICA_URL_ENV),
        help=f"read the reports from this replica instead (default: ${REPLICA_URL_ENV})",
    )
    analytics.add_argument("--since", type=_timestamp, help="first activity on or after (ISO date)")
    analytics.add_argument("--until", type=_timestamp, help="first activity before (ISO date)")
    analytics.add_argument("--format", choices=("table", "json", "csv"), default="table")
    analytics.add_argument("--per", choices=("day", "week"), default="day", help="red-flags")
    analytics.add_argument("--limit", type=int, default=20, help="frequency reports")

    seed = commands.add_parser(
        "seed-sample", help="write realistic sample consultations through the public API"
    )
    _add_database_url(seed)
    seed.add_argument("--sessions", type=_positive_int, required=True)
    seed.add_argument("--seed", type=int, default=7)
    seed.add_argument("--concurrency", type=_positive_int, default=8)

    purge = commands.add_parser("purge-expired", help="delete expired sessions in batches")
    _add_database_url(purge)
    purge.add_argument("--batch-size", type=_positive_int, default=1000)
    purge.add_argument(
        "--older-than-days",
        type=_positive_int,
        help="retention: also delete sessions whose last write is older than this many days",
    )

    _add_rotate_keys(commands)
    _add_serve(commands)

    erase = commands.add_parser(
        "erase-user",
        help="erase every session of a user (messages, summaries, states) and the profile",
    )
    _add_database_url(erase)
    erase.add_argument("user_id", help="the user id the sessions were saved with")

    contract = commands.add_parser("contract", help="the Context Contract")
    contract_commands = contract.add_subparsers(dest="contract_command", required=True)
    contract_commands.add_parser(
        "schema", help="print the contract's JSON Schema (for the Go side)"
    )
    contract_commands.add_parser("example", help="print a complete example contract")

    demo = commands.add_parser(
        "demo", help="play a whole knee consultation (embedded PostgreSQL by default)"
    )
    _add_database_url(demo)
    demo.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".ctxstore/pgdata"),
        help="data folder of the embedded PostgreSQL (default: .ctxstore/pgdata)",
    )
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.command == "db":
        url = url_from_environment(args.database_url, migrating=True)
        if args.db_command in ("roles", "min-group-size"):
            return asyncio.run(_db_settings(url, args))
        if args.db_command == "distribute":
            from ctxstore.db.distribute import distribute  # noqa: PLC0415

            print(asyncio.run(distribute(url)).summary())
        elif args.db_command == "current":
            revision = migrations.current(url)
            print(revision or "(empty database: no revision)")
        elif args.db_command == "upgrade":
            migrations.upgrade(url, args.revision, lock_timeout=args.lock_timeout)
            print(f"{redact(url)} is at revision {migrations.current(url)}")
        else:
            migrations.downgrade(url, args.revision, lock_timeout=args.lock_timeout)
            print(f"{redact(url)} is at revision {migrations.current(url) or 'base'}")
        return 0
    if args.command == "contract":
        from ctxstore.contract import EXAMPLE, contract_json_schema  # noqa: PLC0415

        document = contract_json_schema() if args.contract_command == "schema" else EXAMPLE
        print(json.dumps(document, ensure_ascii=False, indent=2))
        return 0
    if args.command == "analytics":
        # Reports tolerate a replica's lag: read there when one is named.
        source = args.replica_url or args.database_url
        return asyncio.run(_analytics(url_from_environment(source), args))
    if args.command == "seed-sample":
        return asyncio.run(_seed(url_from_environment(args.database_url), args))
    if args.command == "purge-expired":
        return asyncio.run(_purge(url_from_environment(args.database_url), args))
    if args.command == "rotate-keys":
        return asyncio.run(_rotate_keys(url_from_environment(args.database_url), args))
    if args.command == "erase-user":
        return asyncio.run(_erase_user(url_from_environment(args.database_url), args.user_id))
    if args.command == "upgrade-data":
        return asyncio.run(_upgrade_data(url_from_environment(args.database_url), args))
    if args.command == "import-redis":
        return asyncio.run(_import_redis(url_from_environment(args.database_url), args))
    if args.command == "serve":
        return _serve(args)
    if args.command == "demo":
        from ctxstore.demo import run_demo  # noqa: PLC0415 - keeps `ctxstore db` light

        run_demo(args.database_url or os.environ.get(DATABASE_URL_ENV), args.data_dir)
        return 0
    raise AssertionError(args.command)


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser(
        "serve", help="the HTTP service (needs the http extra; docs/http.md)"
    )
    _add_database_url(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    serve.add_argument("--port", type=_positive_int, default=8080, help="port (8080)")
    serve.add_argument("--workers", type=_positive_int, default=1, help="processes (1)")
    serve.add_argument(
        "--tokens-file", type=Path, help="token grants, one a line (default: $CTXSTORE_HTTP_TOKENS)"
    )
    serve.add_argument("--max-body-bytes", type=_positive_int, help="default 16 MiB")
    serve.add_argument("--pool-size", type=_positive_int, help="connections per worker (10)")
    serve.add_argument(
        "--graceful-timeout",
        type=_positive_int,
        default=30,
        help="seconds SIGTERM waits for requests in flight (30)",
    )
    serve.add_argument(
        "--keep-alive", type=_positive_int, default=75, help="idle connection seconds (75)"
    )
    serve.add_argument("--ssl-certfile", type=Path, help="TLS certificate chain (PEM)")
    serve.add_argument("--ssl-keyfile", type=Path, help="TLS private key (PEM)")
    serve.add_argument(
        "--ssl-ca-certs", type=Path, help="require client certificates signed by these CAs"
    )
    serve.add_argument("--no-access-log", action="store_true", help="no line per request")
    serve.add_argument(
        "--new-token",
        metavar="NAME:SCOPES",
        help="print a new token and its grant line (e.g. go-backend:read,write), then exit",
    )
    serve.add_argument(
        "--openapi", action="store_true", help="print the OpenAPI document, then exit"
    )


def _serve(args: argparse.Namespace) -> int:
    try:
        from ctxstore.http import server  # noqa: PLC0415 - the http extra
    except ImportError as error:
        raise ConfigurationError(
            f"ctxstore serve needs the http extra ({error.name} is missing): "
            "pip install 'ctxstore[http]'"
        ) from None
    if args.new_token:
        return server.print_new_token(args.new_token)
    if args.openapi:
        return server.print_openapi()
    return server.serve(
        server.ServeOptions(
            host=args.host,
            port=args.port,
            workers=args.workers,
            database_url=args.database_url,
            tokens_file=args.tokens_file,
            max_body_bytes=args.max_body_bytes,
            pool_size=args.pool_size,
            graceful_timeout=args.graceful_timeout,
            keep_alive=args.keep_alive,
            ssl_certfile=args.ssl_certfile,
            ssl_keyfile=args.ssl_keyfile,
            ssl_ca_certs=args.ssl_ca_certs,
            access_log=not args.no_access_log,
        )
    )


def _add_rotate_keys(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rotate = commands.add_parser(
        "rotate-keys",
        help="re-wrap data keys under the current master key (CTXSTORE_MASTER_KEYS)",
    )
    _add_database_url(rotate)
    rotate.add_argument("--batch-size", type=_positive_int, default=100)
    rotate.add_argument(
        "--reencrypt",
        action="store_true",
        help="also seal every row again under fresh data keys (plaintext rows too)",
    )


def _timestamp(value: str) -> datetime:
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


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value!r}")
    return number


_DURATION = re.compile(r"\d+(\.\d+)?\s*(us|ms|s|min|h|d)?")


def _duration(value: str) -> str:
    """A PostgreSQL duration setting such as 5s, 500ms or 2min (a bare number: ms)."""
    if not _DURATION.fullmatch(value.strip()):
        raise argparse.ArgumentTypeError(
            f"not a duration: {value!r} (e.g. 5s, 500ms, 2min; a bare number is milliseconds)"
        )
    return value.strip()


async def _analytics(url: URL, args: argparse.Namespace) -> int:
    from ctxstore.analytics import FREQUENCY_REPORTS, min_group_size, run_report  # noqa: PLC0415

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


async def _db_settings(url: URL, args: argparse.Namespace) -> int:
    """`ctxstore db roles` and `ctxstore db min-group-size [K]`."""
    from ctxstore.analytics import min_group_size, set_min_group_size  # noqa: PLC0415
    from ctxstore.db.roles import recorded_role_names  # noqa: PLC0415

    engine = create_engine(url)
    try:
        if args.db_command == "min-group-size":
            if args.size is None:
                print(await min_group_size(engine))
            else:
                before = await set_min_group_size(engine, args.size)
                print(f"min group size {before} -> {args.size}")
            return 0
        with translated("reading the database's roles"):
            async with engine.connect() as conn:
                names = await conn.run_sync(recorded_role_names)
    finally:
        await engine.dispose()
    if names is None:
        raise ConfigurationError(
            f"{redact(url)} has no recorded roles (it is below revision 0008): run "
            "`ctxstore db upgrade` first"
        )
    print(f"owner      {names.owner}  (owns the schema: grant to the migrating login)")
    print(f"app        {names.app}  (DML on the tables: grant to the service's login)")
    print(f"analytics  {names.analytics}  (the analytics views: grant to analysts' logins)")
    return 0


async def _seed(url: URL, args: argparse.Namespace) -> int:
    from ctxstore.sample import seed_sample  # noqa: PLC0415

    async with PostgresStorage.from_url(url) as storage:
        report = await seed_sample(
            storage, args.sessions, seed=args.seed, concurrency=args.concurrency
        )
    print(report.summary())
    return 0


async def _purge(url: URL, args: argparse.Namespace) -> int:
    from ctxstore.expiry import purge_expired  # noqa: PLC0415

    # The raw connection's checkout is not translated by the store: a missing database
    # or a refused login would otherwise end in a traceback.
    with translated("purge-expired"):
        async with PostgresStorage.from_url(url) as storage, storage.driver() as driver:
            report = await purge_expired(
                driver,
                batch_size=args.batch_size,
                older_than=timedelta(days=args.older_than_days) if args.older_than_days else None,
            )
    print(report.summary())
    return 0


async def _rotate_keys(url: URL, args: argparse.Namespace) -> int:
    from ctxstore.encryption import Encryption  # noqa: PLC0415
    from ctxstore.rotate_keys import rotate_keys  # noqa: PLC0415

    encryption = Encryption.from_environment()
    with translated("rotate-keys"):  # as in _purge
        async with PostgresStorage.from_url(url) as storage, storage.driver() as driver:
            report = await rotate_keys(
                driver, encryption, batch_size=args.batch_size, reencrypt=args.reencrypt
            )
    print(report.summary())
    return 0


async def _erase_user(url: URL, user_id: str) -> int:
    async with PostgresStorage.from_url(url) as storage:
        receipt = await storage.erase_user(user_id)
    print(receipt.summary())
    return 0


async def _upgrade_data(url: URL, args: argparse.Namespace) -> int:
    from ctxstore.upgrade import upgrade_data  # noqa: PLC0415

    with translated("upgrade-data"):  # as in _purge
        async with PostgresStorage.from_url(url) as storage, storage.driver() as driver:
            report = await upgrade_data(driver, batch_size=args.batch_size)
    print(report.summary())
    return 1 if report.failed else 0


async def _import_redis(url: URL, args: argparse.Namespace) -> int:
    try:
        import redis.asyncio as redis_asyncio  # noqa: PLC0415
    except ImportError:
        raise ConfigurationError(
            "import-redis needs the redis extra: pip install 'ctxstore[redis]'"
        ) from None
    from ctxstore.redis_import import import_redis  # noqa: PLC0415

    try:
        client = redis_asyncio.from_url(args.redis_url, socket_timeout=10, socket_connect_timeout=5)
    except ValueError as error:  # redis-py's URL parsing, whose message may quote the URL
        raise ConfigurationError(
            f"--redis-url is not a usable Redis URL ({redact(str(error))}): use "
            "redis://[[user]:password@]host:6379/0"
        ) from None
    try:
        async with PostgresStorage.from_url(url) as storage:
            report = await import_redis(
                client,
                storage,
                prefix=args.prefix,
                concurrency=args.concurrency,
                overwrite=args.overwrite,
                carry_ttl=args.carry_ttl,
            )
    finally:
        await client.aclose()
    print(report.summary())
    return 1 if report.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    redact_log_records()  # ctxstore's, SQLAlchemy's and Alembic's records alike
    args = _build_parser().parse_args(argv)
    try:
        return _run(args)
    except SchemaMissingError as error:
        print(f"ctxstore: error: {_with_revision(error, args)}", file=sys.stderr)
        return 1
    except CtxStoreError as error:
        # Its message was redacted where it was made (redacting again would also mask the
        # postgresql://user:password@host examples the messages give).
        print(f"ctxstore: error: {error}", file=sys.stderr)
        return 1
    except Exception:
        # A bug, not a user error: its traceback, with any secret a message quoted masked.
        print(redact(traceback.format_exc()), file=sys.stderr, end="")
        return 1


def _with_revision(error: SchemaMissingError, args: argparse.Namespace) -> CtxStoreError:
    """The error again with the database's revision, read best-effort with one query."""
    if error.details.get("revision_read"):
        return error
    try:
        current = migrations.current(url_from_environment(getattr(args, "database_url", None)))
    except CtxStoreError:
        return error  # it already says to run `ctxstore db current`
    return schema_missing(
        str(error.details.get("action")),
        str(error.details.get("reason")),
        sqlstate=error.details.get("sqlstate"),
        current=current,
    )


if __name__ == "__main__":
    sys.exit(main())
