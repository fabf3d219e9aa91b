"""The maintenance commands on a database's rows: ``upgrade-data``, ``recount``, ``purge-expired``,
``rotate-keys``, ``erase-user`` and ``seed-sample`` (each calls the library on a store)."""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING

from ctxstore.cli.options import (
    Commands,
    add_batch_size,
    add_database_url,
    database_url,
    positive_int,
)
from ctxstore.errors import ConfigurationError

if TYPE_CHECKING:
    from ctxstore.settings import Settings
    from ctxstore.storage.postgres import PostgresStorage


def register(commands: Commands) -> None:
    upgrade = commands.add_parser(
        "upgrade-data",
        help="rewrite every stored row in the current formats (resumable, safe while live)",
    )
    add_batch_size(upgrade, 500, "sessions listed per batch")
    upgrade.set_defaults(func=upgrade_data)

    recount = commands.add_parser(
        "recount",
        help="store the token counts of every message in another encoding (in batches, "
        "safe while live)",
    )
    target = recount.add_mutually_exclusive_group(required=True)
    target.add_argument("--encoding", help="the tiktoken encoding, e.g. o200k_base")
    target.add_argument("--model", help="the model whose encoding to use, e.g. gpt-4o")
    add_batch_size(recount, 500, "messages read and written per statement")
    recount.set_defaults(func=recount_counts)

    seed = commands.add_parser(
        "seed-sample", help="write realistic sample consultations through the public API"
    )
    seed.add_argument(
        "--sessions", type=positive_int, required=True, help="how many consultations to write"
    )
    seed.add_argument(
        "--seed",
        type=int,
        default=7,
        help="random seed: the same seed writes the same consultations (default: %(default)s)",
    )
    seed.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        help="consultations written at once (default: %(default)s)",
    )
    seed.set_defaults(func=seed_sample)

    purge = commands.add_parser("purge-expired", help="delete expired sessions in batches")
    add_batch_size(purge, 1000, "sessions deleted per transaction")
    purge.add_argument(
        "--older-than-days",
        type=positive_int,
        help="retention: also delete sessions whose last write is older than this many days",
    )
    purge.add_argument(
        "--dry-run",
        action="store_true",
        help="delete nothing: count what a run would delete now, and what it would keep "
        "under a legal hold",
    )
    purge.set_defaults(func=purge_expired)

    rotate = commands.add_parser(
        "rotate-keys",
        help="re-wrap data keys under the current master key (CTXSTORE_MASTER_KEYS)",
    )
    add_batch_size(rotate, 100, "sessions re-keyed per transaction")
    rotate.add_argument(
        "--reencrypt",
        action="store_true",
        help="also seal every row again under fresh data keys",
    )
    rotate.add_argument(
        "--status",
        action="store_true",
        help="change nothing: say which master keys wrap data keys and which can be "
        "destroyed (the erasure epochs of docs/threat-model.md)",
    )
    rotate.add_argument(
        "--seal-plaintext",
        action="store_true",
        help="with --reencrypt, also seal plaintext rows (data written before encryption "
        "was enabled); without it they are left as they are and listed, since a database "
        "writer without the keys could have forged them",
    )
    rotate.set_defaults(func=rotate_keys)

    erase = commands.add_parser(
        "erase-user",
        help="erase every session of a user (messages, summaries, states) and the profile",
    )
    erase.add_argument("user_id", help="the user id the sessions were saved with")
    erase.add_argument(
        "--no-vacuum",
        dest="vacuum",
        action="store_false",
        help="skip ANALYZE and VACUUM of the erased tables after the erasure (the receipt "
        "then says what is left and what to run; a later erase-user runs them)",
    )
    erase.set_defaults(func=erase_user)
    for sub in (upgrade, recount, seed, purge, rotate, erase):
        add_database_url(sub)


def open_store(args: argparse.Namespace, settings: Settings) -> PostgresStorage:
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415
    from ctxstore.tokens import TokenCounter  # noqa: PLC0415 - tiktoken

    return PostgresStorage.from_url(
        database_url(args, settings),
        backup_retention=settings.backup_retention,
        token_counter=TokenCounter(settings.token_encoding),
    )


def recount_counts(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.recount import recount_store  # noqa: PLC0415
    from ctxstore.tokens import TokenCounter  # noqa: PLC0415

    counter = TokenCounter.for_model(args.model) if args.model else TokenCounter(args.encoding)
    counter.count("")  # an unknown encoding is refused before anything connects

    async def run() -> int:
        async with open_store(args, settings) as storage:
            report = await recount_store(storage, counter, batch_size=args.batch_size)
        print(report.summary())
        return 0

    return asyncio.run(run())


def upgrade_data(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.upgrade import upgrade_store  # noqa: PLC0415

    async def run() -> int:
        async with open_store(args, settings) as storage:
            report = await upgrade_store(storage, batch_size=args.batch_size)
        print(report.summary())
        return 1 if report.failed else 0

    return asyncio.run(run())


def seed_sample(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.sample import seed_sample  # noqa: PLC0415

    async def run() -> str:
        async with open_store(args, settings) as storage:
            report = await seed_sample(
                storage, args.sessions, seed=args.seed, concurrency=args.concurrency
            )
        return report.summary()

    print(asyncio.run(run()))
    return 0


def purge_expired(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.expiry import purge_store  # noqa: PLC0415

    older_than = timedelta(days=args.older_than_days) if args.older_than_days else None

    async def run() -> str:
        async with open_store(args, settings) as storage:
            report = await purge_store(
                storage, batch_size=args.batch_size, older_than=older_than, dry_run=args.dry_run
            )
        return report.summary()

    print(asyncio.run(run()))
    return 0


def rotate_keys(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands.rotate_keys import master_key_status, rotate_store_keys  # noqa: PLC0415
    from ctxstore.encryption import Encryption  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

    url = database_url(args, settings)
    encryption = Encryption.from_settings(settings)
    if args.status and (args.reencrypt or args.seal_plaintext):
        raise ConfigurationError("--status changes nothing: it goes alone")
    if args.seal_plaintext:
        if not args.reencrypt:
            raise ConfigurationError("--seal-plaintext goes with --reencrypt")
        encryption.accept_plaintext = True

    async def run() -> str:
        async with PostgresStorage.from_url(url) as storage:
            if args.status:
                async with storage.maintenance("rotate-keys --status") as driver:
                    return (await master_key_status(driver, encryption)).summary()
            report = await rotate_store_keys(
                storage, encryption, batch_size=args.batch_size, reencrypt=args.reencrypt
            )
        return report.summary()

    print(asyncio.run(run()))
    return 0


def erase_user(args: argparse.Namespace, settings: Settings) -> int:
    async def run() -> str:
        async with open_store(args, settings) as storage:
            receipt = await storage.erase_user(args.user_id, vacuum=args.vacuum)
        return receipt.summary()

    print(asyncio.run(run()))
    return 0
